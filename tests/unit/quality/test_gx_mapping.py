"""Rules → GX 1.x expectations (no Spark): native mappings and the unexpected-rows fallback."""

from __future__ import annotations

import pytest

from framework.quality.gx import map_rule, to_expectation_suite
from framework.quality.rules import Rule, load_rules


@pytest.mark.parametrize("constraint, kind, gx_type, kwargs", [
    ("order_id IS NOT NULL", "not_null", "expect_column_values_to_not_be_null", {"column": "order_id"}),
    ("amount > 0", "compare", "expect_column_values_to_be_between",
     {"column": "amount", "min_value": 0, "strict_min": True}),
    ("(amount <= 1e5)", "compare", "expect_column_values_to_be_between",
     {"column": "amount", "max_value": 100000.0}),
    ("0 < amount", "compare_rev", "expect_column_values_to_be_between",
     {"column": "amount", "min_value": 0, "strict_min": True}),
    ("amount BETWEEN 0 AND 100000", "between", "expect_column_values_to_be_between",
     {"column": "amount", "min_value": 0, "max_value": 100000}),
    ("currency IN ('EUR', 'USD', 'it\\'s')", "in", "expect_column_values_to_be_in_set",
     {"column": "currency", "value_set": ["EUR", "USD", "it's"]}),
    ("`odd col` NOT IN (1, 2)", "in", "expect_column_values_to_not_be_in_set",
     {"column": "odd col", "value_set": [1, 2]}),
    ("status = 'NEW'", "equals", "expect_column_values_to_be_in_set", {"column": "status", "value_set": ["NEW"]}),
    ("country RLIKE '^[A-Z]{2}$'", "regex", "expect_column_values_to_match_regex",
     {"column": "country", "regex": "^[A-Z]{2}$"}),
    ("rlike(email, '^\\\\S+@\\\\S+$')", "regex_fn", "expect_column_values_to_match_regex",
     {"column": "email", "regex": "^\\S+@\\S+$"}),
])
def test_simple_constraints_map_to_native_expectations(constraint: str, kind: str, gx_type: str,
                                                       kwargs: dict) -> None:
    mapped = map_rule(Rule("r", constraint, "drop", severity="high"))
    config = mapped.expectation.configuration
    assert (mapped.kind, config.type) == (kind, gx_type)
    assert {k: config.kwargs[k] for k in kwargs} == kwargs
    assert config.meta["rule"] == "r" and config.meta["constraint"] == constraint
    assert mapped.expectation.severity == "critical"


@pytest.mark.parametrize("constraint", [
    "name IS NOT NULL AND trim(name) <> ''", "order_ts <= current_timestamp()", "a > b", "length(x) < 5",
])
def test_other_constraints_use_the_unexpected_rows_fallback(constraint: str) -> None:
    mapped = map_rule(Rule("r", constraint))
    assert mapped.kind == "fallback"
    query = mapped.expectation.configuration.kwargs["unexpected_rows_query"]
    assert query == f"SELECT * FROM {{batch}} WHERE NOT coalesce(({constraint}), false)"


def test_suite_from_rule_file() -> None:
    rules = load_rules("orders_clean")
    suite = to_expectation_suite(rules)
    assert suite.name == "orders_clean" and len(suite.expectations) == len(rules)
    kinds = [e.meta["mapping"] for e in suite.expectations]
    assert kinds.count("fallback") == 1  # order_ts <= current_timestamp() + INTERVAL 1 DAY
    exact = to_expectation_suite(rules, exact=True)
    assert {e.meta["mapping"] for e in exact.expectations} == {"fallback"}
    assert suite.to_json_dict()["expectations"][0]["meta"]["action"] == "drop"
