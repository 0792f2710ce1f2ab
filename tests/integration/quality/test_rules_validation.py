"""Rule validation with Spark's parser and against a dataset schema (analysis only, no jobs)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from pyspark.sql.types import StructType

from framework.errors import RuleFileError
from framework.quality.rules import check_against_schema, load_rules, validate_rules
from framework.quality.sqlcheck import parse_problem

from .conftest import ORDERS_DDL

pytestmark = pytest.mark.spark


def orders_schema(spark) -> StructType:  # type: ignore[no-untyped-def]
    return spark.createDataFrame([], ORDERS_DDL).schema


def test_sample_rules_resolve_against_the_orders_schema(spark) -> None:  # type: ignore[no-untyped-def]
    assert validate_rules("orders_clean", schema=orders_schema(spark), spark=spark).name == "orders_clean"


def test_spark_parser_finds_what_the_lexical_check_cannot(spark) -> None:  # type: ignore[no-untyped-def]
    assert parse_problem("amount > 0 AND currency IN ('EUR')") is None
    message = parse_problem("amount >> > 0")
    assert message is not None and "PARSE_SYNTAX_ERROR" in message and "pos" in message
    assert parse_problem("amount IS NOT") is not None


def test_all_problems_with_schema_at_once(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "orders_clean.yml"
    path.write_text(textwrap.dedent("""
        rules:
          - name: amount_positive
            constraint: amount > 0
            action: drop
          - name: typo_column
            constraint: ammount > 0
          - name: unknown_function
            constraint: is_valid_currency(currency)
          - name: not_boolean
            constraint: amount + 1
          - name: syntax
            constraint: amount >> > 0
          - name: amount_positive
            constraint: amount >= 0
        """).lstrip())
    with pytest.raises(RuleFileError) as caught:
        validate_rules(path, spark=spark)
    assert sorted(caught.value.codes) == ["CONSTRAINT_SYNTAX", "DUPLICATE_RULE"]
    good = path.read_text().replace("amount >> > 0", "amount < 1e6").replace(
        "- name: amount_positive\n    constraint: amount >= 0", "- name: amount_non_negative\n    constraint: amount >= 0")
    path.write_text(good)
    with pytest.raises(RuleFileError) as caught:
        validate_rules(path, schema=orders_schema(spark), spark=spark)
    by_code = {p.code: p for p in caught.value.problems}
    assert set(by_code) == {"UNKNOWN_COLUMN", "CONSTRAINT_INVALID", "CONSTRAINT_NOT_BOOLEAN"}
    assert by_code["UNKNOWN_COLUMN"].line == 6 and by_code["UNKNOWN_COLUMN"].file == str(path)
    assert "`ammount`" in by_code["UNKNOWN_COLUMN"].message and "`amount`" in by_code["UNKNOWN_COLUMN"].message
    assert "is_valid_currency" in by_code["CONSTRAINT_INVALID"].message


def test_check_against_schema_returns_or_raises(spark) -> None:  # type: ignore[no-untyped-def]
    rules = load_rules("customers")
    schema = spark.createDataFrame([], "customer_id BIGINT, name STRING, email STRING").schema
    problems = check_against_schema(rules, schema, spark=spark, raise_on_error=False)
    assert sorted(p.message.split("`")[1] for p in problems) == ["country", "updated_at"]
    with pytest.raises(RuleFileError):
        check_against_schema(rules, schema, spark=spark)
