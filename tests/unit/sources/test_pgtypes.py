"""PostgreSQL types → Spark types, as the issue lists them; the watermark column's kinds; SQL text."""

from __future__ import annotations

import pytest

from framework.sources import pgclient
from framework.sources.errors import UnsupportedColumnTypeError
from framework.sources.pgtypes import Column, ddl, literal, quote_ident, spark_type, watermark_kind


@pytest.mark.parametrize(("db_type", "expected"), [
    ("smallint", "smallint"), ("integer", "int"), ("bigint", "bigint"), ("numeric(12,2)", "decimal(12,2)"),
    ("numeric(5)", "decimal(5,0)"), ("numeric", "decimal(38,18)"), ("text", "string"),
    ("character varying(20)", "string"), ("character(3)", "string"), ("boolean", "boolean"), ("date", "date"),
    ("timestamp without time zone", "timestamp"), ("timestamp(3) with time zone", "timestamp"),
    ("json", "string"), ("jsonb", "string"), ("uuid", "string"), ("bytea", "binary"),
    ("double precision", "double"), ("real", "float"),
])
def test_supported_types(db_type: str, expected: str) -> None:
    assert spark_type("c", db_type) == expected


@pytest.mark.parametrize("db_type", ["integer[]", "point", "interval", "numeric(40,2)", "tsvector"])
def test_unsupported_types_name_the_column(db_type: str) -> None:
    with pytest.raises(UnsupportedColumnTypeError) as caught:
        spark_type("shape", db_type)
    assert caught.value.code == "UNSUPPORTED_COLUMN_TYPE"
    assert "'shape'" in str(caught.value)


def test_watermark_kinds() -> None:
    assert watermark_kind(Column("ts", "timestamp with time zone", "timestamp")) == "time"
    assert watermark_kind(Column("seq", "bigint", "bigint")) == "number"
    assert watermark_kind(Column("v", "numeric(10,0)", "decimal(10,0)")) == "number"
    with pytest.raises(UnsupportedColumnTypeError):
        watermark_kind(Column("name", "text", "string"))


def test_quoting() -> None:
    assert quote_ident('we"ird') == '"we""ird"'
    assert literal("it's") == "'it''s'"
    assert ddl([Column("a`b", "integer", "int")]) == "`a``b` int"


def test_range_sql_pushes_both_bounds_down() -> None:
    col = Column("updated_at", "timestamp with time zone", "timestamp")
    cols = [Column("id", "bigint", "bigint"), Column("amount", "numeric(10,2)", "decimal(10,2)"), col]
    lower = pgclient.lowered("2024-01-01 00:00:00+00", col, "1 hour", interval=True)
    sql = pgclient.range_sql("public.orders", cols, col, lower, pgclient.typed("2024-01-02 00:00:00+00", col))
    assert sql == ('SELECT "id", "amount"::text AS "amount", "updated_at" FROM public.orders WHERE "updated_at" > '
                   "(CAST('2024-01-01 00:00:00+00' AS timestamp with time zone) - CAST('1 hour' AS interval)) AND "
                   "\"updated_at\" <= CAST('2024-01-02 00:00:00+00' AS timestamp with time zone)")


def test_max_rows_end_never_splits_and_falls_back_to_the_max() -> None:
    col = Column("seq", "bigint", "bigint")
    sql = pgclient.max_watermark_sql("t", col, "10", None, 100)
    assert "OFFSET 99 LIMIT 1" in sql and "coalesce(" in sql and "\"seq\" > CAST('10' AS bigint)" in sql
