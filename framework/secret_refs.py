"""Secret references in a spec's ``configuration``: ``{{secrets/<scope>/<key>}}``, the syntax Databricks
resolves in Spark configuration properties (the pipeline's configuration is added to its cluster's Spark
configuration), so that a credential is written in the spec as a reference, never as its value.

Locally a reference is read as ``dbutils.secrets.get(scope, key)`` reads it (``DATABRICKS_SECRET_<SCOPE>_<KEY>``
or ``.secrets.env``) when an update starts, and the value is registered for redaction; the spec, the event
log's ``create_update`` configuration and ``medallion deploy``'s bundle keep the reference as written.
``deploy`` refuses a credential written in clear (:func:`credentials_in_clear`): a ``*.password`` value, or a
JAAS entry (``...LoginModule required ... password="...";``, e.g. Kafka's ``sasl.jaas.config``) whose password
is not a reference.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Protocol

REFERENCE = re.compile(r"\{\{secrets/([^/{}\s]+)/([^/{}\s]+)\}\}")
JAAS_ENTRY = re.compile(r"LoginModule\s+(required|requisite|sufficient|optional)\b")  # a JAAS entry's syntax
JAAS_PASSWORD = re.compile(r"""password\s*=\s*"([^"]*)\"""")


class SecretReader(Protocol):
    """What reads a secret (``dbutils.secrets``): the value, registered for redaction."""

    def get(self, scope: str, key: str) -> str:
        """The secret's value."""


def resolve_references(values: Mapping[str, str], secrets: SecretReader) -> dict[str, str]:
    """``values`` with every ``{{secrets/<scope>/<key>}}`` replaced by the secret's value.

    Raises:
        SecretNotFoundError: A referenced secret is not set locally (the message says how to set it).
    """
    return {key: REFERENCE.sub(lambda found: secrets.get(found[1], found[2]), value)
            if isinstance(value, str) and "{{secrets/" in value else value for key, value in values.items()}


def credentials_in_clear(values: Mapping[str, object]) -> list[str]:
    """The keys of ``values`` that hold a credential in clear (see the module docstring), sorted."""
    found = []
    for key, value in values.items():
        if not isinstance(value, str) or not value:
            continue
        if JAAS_ENTRY.search(value):
            passwords = JAAS_PASSWORD.findall(value)
            if any(p and not REFERENCE.fullmatch(p) for p in passwords):
                found.append(key)
        elif key.lower().endswith(".password") and not REFERENCE.fullmatch(value.strip()):
            found.append(key)
    return sorted(found)
