"""Secret references (``{{secrets/<scope>/<key>}}``) in a spec's configuration: read locally as
``dbutils.secrets.get`` reads them, registered for redaction, and credentials written in clear found."""

from __future__ import annotations

from pathlib import Path

import pytest

from framework.dbutils import LocalSecrets, SecretNotFoundError
from framework.redaction import SECRETS, redact
from framework.secret_refs import credentials_in_clear, resolve_references


def test_references_read_as_secrets_and_are_redacted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DATABRICKS_SECRET_KAFKA_PW", "s3cr3t-value")
    (tmp_path / ".secrets.env").write_text("kafka/user=svc-user\n")
    secrets = LocalSecrets(tmp_path / ".secrets.env")
    SECRETS.clear()
    try:
        resolved = resolve_references({"a": "{{secrets/kafka/pw}}", "b": 'user="{{secrets/kafka/user}}" x',
                                       "c": "plain"}, secrets)
        assert resolved == {"a": "s3cr3t-value", "b": 'user="svc-user" x', "c": "plain"}
        assert redact("got s3cr3t-value") == "got [REDACTED]"
    finally:
        SECRETS.clear()


def test_a_missing_referenced_secret_says_how_to_set_it(tmp_path: Path) -> None:
    with pytest.raises(SecretNotFoundError) as info:
        resolve_references({"a": "{{secrets/nope/key}}"}, LocalSecrets(tmp_path / ".secrets.env"))
    assert "DATABRICKS_SECRET_NOPE_KEY" in str(info.value)


def test_credentials_in_clear() -> None:
    jaas = 'org.apache.kafka.common.security.scram.ScramLoginModule required username="u" password="{}";'
    assert credentials_in_clear({
        "k.jaas": jaas.format("clear"), "k.jaas.ref": jaas.format("{{secrets/s/k}}"),
        "kafka.ssl.key.password": "clear", "kafka.ssl.keystore.password": "{{secrets/s/ks}}",
        "kafka.security.protocol": "SASL_SSL", "empty.password": ""}) == ["k.jaas", "kafka.ssl.key.password"]
