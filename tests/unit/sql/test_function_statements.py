"""The name of a SQL function statement, found on its tokens (issue 36: functions under Unity Catalog names)."""

from __future__ import annotations

import pytest

from framework.sql import envelope as env
from framework.sql.functions import function_name, is_function_statement, schema_catalog


@pytest.mark.parametrize(("text", "parts"), [
    ("CREATE FUNCTION main.util.f(x INT) RETURNS INT RETURN x", ("main", "util", "f")),
    ("create or replace function `dev`.util.`my f`(x INT) RETURNS INT RETURN x", ("dev", "util", "my f")),
    ("CREATE FUNCTION IF NOT EXISTS u.f(x INT) RETURNS INT RETURN x", ("u", "f")),
    ("CREATE OR REPLACE TEMPORARY FUNCTION f() RETURNS INT RETURN 1", ("f",)),
    ("CREATE TEMP FUNCTION f() RETURNS INT RETURN 1", ("f",)),
    ("DROP FUNCTION IF EXISTS dev.util.f", ("dev", "util", "f")),
    ("DROP TEMPORARY FUNCTION f", ("f",)),
    ("DESCRIBE FUNCTION EXTENDED dev.util.f", ("dev", "util", "f")),
    ("DESC FUNCTION dev.util.f", ("dev", "util", "f")),
])
def test_function_name(text: str, parts: tuple[str, ...]) -> None:
    name = function_name(text)
    assert name is not None and name.parts == parts
    assert text[name.start:name.end].replace("`", "").replace(" ", "") == ".".join(parts).replace(" ", "")


@pytest.mark.parametrize("text", [
    "CREATE OR REFRESH MATERIALIZED VIEW f AS SELECT 1", "SELECT dev.util.f(1)", "DROP TABLE a.b.c",
    "DESCRIBE TABLE a.b", "CREATE VIEW 'unterminated",
])
def test_other_statements_have_no_function_name(text: str) -> None:
    assert function_name(text) is None
    assert not is_function_statement(text)


def test_schema_catalog() -> None:
    assert schema_catalog("CREATE SCHEMA IF NOT EXISTS fx.util") == "fx"
    assert schema_catalog("create database `a b`.c") == "a b"
    assert schema_catalog("CREATE SCHEMA util") is None
    assert schema_catalog("CREATE TABLE a.b (x INT)") is None


def test_a_pipeline_sql_file_takes_create_function() -> None:
    parsed = env.parse_statement("CREATE OR REPLACE FUNCTION main.util.f(x BIGINT) RETURNS BIGINT RETURN x + 1")
    assert isinstance(parsed, env.FunctionStatement)
    assert isinstance(env.parse_statement("CREATE TEMPORARY FUNCTION f() RETURNS INT RETURN 1"),
                      env.FunctionStatement)
