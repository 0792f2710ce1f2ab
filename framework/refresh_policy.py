"""``REFRESH POLICY {AUTO | INCREMENTAL | INCREMENTAL STRICT | FULL}`` (SQL) and ``refresh_policy=`` (Python)."""

from __future__ import annotations

import enum


class RefreshPolicy(enum.Enum):
    """How a materialized view may be refreshed (Databricks' names)."""

    AUTO = "AUTO"  # the cost model chooses (the default)
    INCREMENTAL = "INCREMENTAL"  # incremental when the query allows it, else a full recompute
    INCREMENTAL_STRICT = "INCREMENTAL STRICT"  # incremental, or the flow fails with the reason
    FULL = "FULL"  # always a full recompute; changes are never read


_SPELLINGS = {"AUTO": RefreshPolicy.AUTO, "INCREMENTAL": RefreshPolicy.INCREMENTAL,
              "INCREMENTAL STRICT": RefreshPolicy.INCREMENTAL_STRICT, "INCREMENTAL_STRICT": RefreshPolicy.INCREMENTAL_STRICT,
              "FULL": RefreshPolicy.FULL}
SPELLINGS = ("auto", "incremental", "incremental_strict", "full")


def parse_policy(text: str | None) -> RefreshPolicy | None:
    """The policy ``text`` names (any case, ``incremental_strict`` or ``INCREMENTAL STRICT``): AUTO when unset,
    None for a spelling that is no policy (the caller reports it)."""
    if text is None:
        return RefreshPolicy.AUTO
    return _SPELLINGS.get(" ".join(str(text).replace("_", " ").upper().split()))


def policy_of(text: str | None) -> RefreshPolicy:
    """The policy of a declaration whose ``refresh_policy`` was checked when it was declared (AUTO when unset)."""
    return parse_policy(text) or RefreshPolicy.AUTO
