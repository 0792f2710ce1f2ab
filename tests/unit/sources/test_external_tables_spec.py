"""The spec's `tables`: external tables parsed and checked with every mistake at once; their CREATE TABLE."""

from __future__ import annotations

from pathlib import Path

import pytest

from framework.errors import SpecError
from framework.sources.external import create_table_sql
from framework.spec import ExternalTable, parse_spec


def _spec(tmp_path: Path, tables: object, **extra: object) -> object:
    raw = {"name": "p", "libraries": [{"glob": {"include": "x/**"}}], "tables": tables, **extra}
    return parse_spec(raw, source="spec.yaml", default_root=tmp_path)


def test_file_delta_and_jdbc_tables(tmp_path: Path) -> None:
    spec = _spec(tmp_path, {
        "cdc_data.users": {"path": "data/users", "format": "json", "schema": "id bigint, name string"},
        "ref.countries": {"path": "/abs/countries"},
        "shop.orders": {"url": "jdbc:postgresql://h:5432/shop", "dbtable": "public.orders", "user": "u",
                        "password": "pw", "options": {"fetchsize": 1000}},
        "landing.events": {"path": "dbfs:/mnt/landing/events", "format": "parquet"},
    }, paths={"dbfs:/mnt/landing": "runs/landing"})
    by_name = {t.name: t for t in spec.tables}  # type: ignore[attr-defined]
    assert by_name["cdc_data.users"] == ExternalTable("cdc_data.users", "json", tmp_path / "data" / "users", {},
                                                      "id bigint, name string")
    assert by_name["ref.countries"].format == "delta" and by_name["ref.countries"].path == Path("/abs/countries")
    assert by_name["shop.orders"].format == "jdbc" and by_name["shop.orders"].path is None
    assert by_name["shop.orders"].options == {"fetchsize": "1000", "url": "jdbc:postgresql://h:5432/shop",
                                              "dbtable": "public.orders", "user": "u", "password": "pw"}
    assert by_name["landing.events"].path == (tmp_path / "runs" / "landing" / "events").resolve()


def test_every_mistake_at_once(tmp_path: Path) -> None:
    with pytest.raises(SpecError) as caught:
        _spec(tmp_path, {
            "users": {"path": "x"},
            "a.b": {"format": "json"},
            "a.c": {"format": "jdbc", "dbtable": "t", "query": "select 1"},
            "a.d": {"path": "x", "formt": "json"},
            "a.e": {"path": "x", "format": "excel"},
            "a.f": "data/f",
            "a.g": {"path": "dbfs:/unmapped/g"},
        })
    codes = sorted(p.code for p in caught.value.problems)
    assert codes == sorted(["INVALID_TABLE_NAME", "MISSING_TABLE_PATH", "MISSING_TABLE_URL", "INVALID_TABLE",
                            "UNKNOWN_TABLE_KEY", "UNKNOWN_TABLE_FORMAT", "INVALID_TABLE", "UNMAPPED_TABLE_PATH"])
    assert "did you mean 'format'?" in str(caught.value)


def test_tables_must_be_a_mapping(tmp_path: Path) -> None:
    with pytest.raises(SpecError) as caught:
        _spec(tmp_path, ["cdc_data.users"])
    assert [p.code for p in caught.value.problems] == ["INVALID_TABLES"]


def test_create_table_statements() -> None:
    assert create_table_sql(ExternalTable("a.b", "delta", Path("/d/b"))) == \
        "CREATE TABLE `a`.`b` USING DELTA LOCATION '/d/b'"
    assert create_table_sql(ExternalTable("a.c", "json", Path("/d/it's"), {"multiLine": "true"}, "id bigint")) == \
        "CREATE TABLE `a`.`c` (id bigint) USING json OPTIONS ('multiLine' 'true', 'path' '/d/it\\'s')"
    jdbc = create_table_sql(ExternalTable("s.o", "jdbc", None, {"url": "jdbc:postgresql://h/db", "dbtable": "o"}))
    assert jdbc == "CREATE TABLE `s`.`o` USING jdbc OPTIONS ('dbtable' 'o', 'url' 'jdbc:postgresql://h/db')"
