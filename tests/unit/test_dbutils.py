"""The local dbutils: fs through the path mapping, widgets from configuration, secrets from env/.secrets.env."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from framework import redaction
from framework.dbutils import FileInfo, LocalDbutils, SecretNotFoundError
from framework.errors import PathMappingError, PipelineError
from framework.paths import PathMapper


@pytest.fixture
def dbutils(tmp_path: Path) -> LocalDbutils:
    mapper = PathMapper.from_spec({"dbfs:/mnt/lake": "lake", "/Volumes/main/s/v": "vol"}, tmp_path)
    return LocalDbutils(mapper, {"env": "dev", "run.date": "2024-01-01"}, tmp_path / ".secrets.env")


@pytest.fixture(autouse=True)
def clean_registry() -> Iterator[None]:
    """Secrets read here are registered process-wide: forget them after each test."""
    saved = redaction.SECRETS.values()
    redaction.SECRETS.clear()
    yield
    redaction.SECRETS.clear()
    for value in saved:
        redaction.SECRETS.register(value)


# ------------------------------------------------------------------------------------------------------------ fs
def test_put_head_ls(dbutils, tmp_path) -> None:
    assert dbutils.fs.mkdirs("dbfs:/mnt/lake/in") is True
    assert dbutils.fs.put("dbfs:/mnt/lake/in/a.txt", "hello world") is True
    assert (tmp_path / "lake" / "in" / "a.txt").read_text() == "hello world"
    assert dbutils.fs.head("/dbfs/mnt/lake/in/a.txt") == "hello world"
    assert dbutils.fs.head("dbfs:/mnt/lake/in/a.txt", 5) == "hello"
    dbutils.fs.mkdirs("dbfs:/mnt/lake/in/sub")
    entries = dbutils.fs.ls("dbfs:/mnt/lake/in")
    assert all(isinstance(e, FileInfo) for e in entries)
    assert [(e.name, e.size) for e in entries] == [("a.txt", 11), ("sub/", 0)]
    assert entries[1].path.endswith("/sub/") and entries[0].modificationTime > 0
    assert dbutils.fs.ls("dbfs:/mnt/lake/in/a.txt")[0].name == "a.txt"  # ls of a file lists the file


def test_put_refuses_to_overwrite_by_default(dbutils) -> None:
    dbutils.fs.put("dbfs:/mnt/lake/a.txt", "1")
    with pytest.raises(FileExistsError, match="overwrite=True"):
        dbutils.fs.put("dbfs:/mnt/lake/a.txt", "2")
    dbutils.fs.put("dbfs:/mnt/lake/a.txt", "2", overwrite=True)
    assert dbutils.fs.head("dbfs:/mnt/lake/a.txt") == "2"


def test_ls_paths_round_trip_into_other_calls(dbutils, tmp_path) -> None:
    dbutils.fs.put("dbfs:/mnt/lake/in/a.txt", "x")
    entry = dbutils.fs.ls("dbfs:/mnt/lake/in")[0]
    assert entry.path.startswith("file:")
    dbutils.fs.cp(entry.path, "dbfs:/mnt/lake/out/a.txt")
    assert (tmp_path / "lake" / "out" / "a.txt").read_text() == "x"


def test_cp_mv_rm(dbutils, tmp_path) -> None:
    dbutils.fs.put("dbfs:/mnt/lake/src/a.txt", "a")
    dbutils.fs.put("dbfs:/mnt/lake/src/deep/b.txt", "b")
    with pytest.raises(IsADirectoryError, match="recurse=True"):
        dbutils.fs.cp("dbfs:/mnt/lake/src", "dbfs:/mnt/lake/copy")
    assert dbutils.fs.cp("dbfs:/mnt/lake/src", "dbfs:/mnt/lake/copy", recurse=True) is True
    assert (tmp_path / "lake" / "copy" / "deep" / "b.txt").read_text() == "b"
    assert dbutils.fs.cp("dbfs:/mnt/lake/src/a.txt", "/Volumes/main/s/v/a.txt") is True
    assert (tmp_path / "vol" / "a.txt").read_text() == "a"
    assert dbutils.fs.mv("/Volumes/main/s/v/a.txt", "dbfs:/mnt/lake/archive/a.txt") is True
    assert not (tmp_path / "vol" / "a.txt").exists()
    assert (tmp_path / "lake" / "archive" / "a.txt").read_text() == "a"
    assert dbutils.fs.rm("dbfs:/mnt/lake/archive/a.txt") is True
    assert dbutils.fs.rm("dbfs:/mnt/lake/archive/a.txt") is False
    with pytest.raises(IsADirectoryError, match="recurse=True"):
        dbutils.fs.rm("dbfs:/mnt/lake/copy")
    assert dbutils.fs.rm("dbfs:/mnt/lake/copy", recurse=True) is True
    assert not (tmp_path / "lake" / "copy").exists()


def test_ls_missing_path(dbutils) -> None:
    with pytest.raises(FileNotFoundError, match="dbfs:/mnt/lake/nope does not exist"):
        dbutils.fs.ls("dbfs:/mnt/lake/nope")


def test_unmapped_dbfs_path(dbutils) -> None:
    with pytest.raises(PathMappingError) as info:
        dbutils.fs.ls("dbfs:/mnt/elsewhere")
    assert info.value.code == "UNMAPPED_DATABRICKS_PATH"


def test_local_paths_work_unmapped(dbutils, tmp_path) -> None:
    target = tmp_path / "plain" / "x.txt"
    dbutils.fs.put(str(target), "p")
    assert dbutils.fs.head(f"file:{target}") == "p"


# ------------------------------------------------------------------------------------------------------- widgets
def test_widgets_come_from_configuration(dbutils) -> None:
    assert dbutils.widgets.get("env") == "dev"
    assert dbutils.widgets.getArgument("run.date") == "2024-01-01"
    dbutils.widgets.text("env", "ignored-default")
    assert dbutils.widgets.get("env") == "dev"  # configuration wins over the widget default
    dbutils.widgets.text("new", "d", "label")
    dbutils.widgets.dropdown("choice", "a", ["a", "b"])
    assert dbutils.widgets.get("new") == "d" and dbutils.widgets.get("choice") == "a"
    dbutils.widgets.remove("new")
    with pytest.raises(PipelineError) as info:
        dbutils.widgets.get("new")
    assert info.value.code == "WIDGET_NOT_DEFINED" and "configuration" in info.value.message
    dbutils.widgets.removeAll()
    with pytest.raises(PipelineError):
        dbutils.widgets.get("env")


def test_widgets_do_not_modify_the_spec_configuration(tmp_path) -> None:
    configuration = {"a": "1"}
    dbutils = LocalDbutils(PathMapper(), configuration, tmp_path / ".secrets.env")
    dbutils.widgets.text("b", "2")
    dbutils.widgets.removeAll()
    assert configuration == {"a": "1"}


# ------------------------------------------------------------------------------------------------------- secrets
def test_secret_from_environment_variable(dbutils, monkeypatch) -> None:
    monkeypatch.setenv("DATABRICKS_SECRET_MY_SCOPE_API_KEY", "from-env")
    assert dbutils.secrets.get("my-scope", "api.key") == "from-env"


def test_secret_from_secrets_file(dbutils, tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("DATABRICKS_SECRET_KV_TOKEN", raising=False)
    (tmp_path / ".secrets.env").write_text("# local secrets\nkv/token = abc=123\nkv/other=x\n")
    assert dbutils.secrets.get("kv", "token") == "abc=123"
    monkeypatch.setenv("DATABRICKS_SECRET_KV_TOKEN", "env-wins")
    assert dbutils.secrets.get("kv", "token") == "env-wins"


def test_missing_secret_says_how_to_provide_it(dbutils, tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("DATABRICKS_SECRET_JDBC_PASSWORD", raising=False)
    with pytest.raises(SecretNotFoundError) as info:
        dbutils.secrets.get("jdbc", "password")
    err = info.value
    assert err.code == "SECRET_NOT_FOUND" and isinstance(err, PipelineError)
    assert "secret 'password' in scope 'jdbc' is not set locally" in err.message
    assert "export DATABRICKS_SECRET_JDBC_PASSWORD=..." in err.message
    assert "'jdbc/password=...'" in err.message and str(tmp_path / ".secrets.env") in err.message


def test_secrets_list_is_empty(dbutils) -> None:
    assert dbutils.secrets.list("any") == []


def test_secrets_read_are_registered_for_redaction(dbutils, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("DATABRICKS_SECRET_API_TOKEN", "tok-from-env")
    monkeypatch.delenv("DATABRICKS_SECRET_KV_PW", raising=False)
    (tmp_path / ".secrets.env").write_text("kv/pw='file pw'\n")
    assert redaction.redact("tok-from-env file pw") == "tok-from-env file pw"  # nothing read yet
    assert dbutils.secrets.get("api", "token") == "tok-from-env"  # the real value, not [REDACTED]
    assert dbutils.secrets.get("kv", "pw") == "file pw"
    assert redaction.SECRETS.values() == {"tok-from-env", "file pw"}
    assert redaction.redact("tok-from-env file pw") == "[REDACTED] [REDACTED]"


def test_get_bytes(dbutils, monkeypatch) -> None:
    monkeypatch.setenv("DATABRICKS_SECRET_API_KEY", "clé-1")
    assert dbutils.secrets.getBytes("api", "key") == "clé-1".encode()
    assert redaction.redact("key clé-1") == "key [REDACTED]"


def test_missing_secret_registers_nothing(dbutils, monkeypatch) -> None:
    monkeypatch.delenv("DATABRICKS_SECRET_NO_SUCH", raising=False)
    with pytest.raises(SecretNotFoundError):
        dbutils.secrets.getBytes("no", "such")
    assert redaction.SECRETS.values() == frozenset()
