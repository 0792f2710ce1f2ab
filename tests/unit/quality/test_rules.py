"""Rule files: loading, every mistake reported at once with file and line, and the dlt dicts. No Spark."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from framework.declarations import Expectation
from framework.errors import RuleFileError
from framework.quality.rules import Rule, RuleSet, find_rule_file, load_rules, parse_rules, rules_from_dict
from framework.quality.sqlcheck import lexical_problems

REPO = Path(__file__).resolve().parents[3]


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip())
    return path


def test_sample_rule_files_load_with_includes_first() -> None:
    orders = load_rules(REPO / "expectations" / "orders_clean.yml")
    assert orders.name == "orders_clean"
    assert orders.names[0] == "customer_id_present"  # from include: [common_ids]
    assert set(orders.drop) >= {"valid_order_id", "positive_amount", "valid_status"}
    assert orders.warn["known_currency"].startswith("currency IN")
    assert orders.fail == {}
    assert orders["positive_amount"].severity == "high"
    assert orders["positive_amount"].tags == ("silver", "orders", "validity")
    for name in ("customers", "customers_changes", "common_ids"):
        assert len(load_rules(name)) > 0
    assert load_rules("customers").source == str(REPO / "expectations" / "customers.yml")


def test_rules_are_the_framework_expectations() -> None:
    rule = Rule("positive_amount", "amount > 0", "drop")
    assert rule.to_expectation() == Expectation("positive_amount", "amount > 0", "drop", rule.location)
    loaded = load_rules("orders_clean")["positive_amount"]
    exp = loaded.to_expectation()
    assert (exp.name, exp.constraint, exp.action) == ("positive_amount", "amount > 0", "drop")
    assert exp.location.file.endswith("orders_clean.yml") and exp.location.line > 1
    assert Rule.from_expectation(exp).to_expectation() == exp


def test_every_mistake_is_reported_at_once_with_lines(tmp_path: Path) -> None:
    path = write(tmp_path, "bad.yml", """
        dataset: bad
        colour: blue
        rules:
          - name: ok
            constraint: a > 0
            action: drop
          - name: ok
            constraint: b > 0
          - name: wrong_action
            constraint: a > 0
            action: quarantine
          - name: broken_sql
            constraint: "a > (1"
          - constraint: a IS NOT NULL
          - name: bad_severity
            constraint: a < 10
            severity: urgent
          - name: dangling
            constraint: a >
        """)
    with pytest.raises(RuleFileError) as caught:
        load_rules(path, check_sql=False)
    error = caught.value
    assert error.code == "INVALID_RULE_FILE"
    found = {(p.code, p.line) for p in error.problems}
    assert found == {
        ("UNKNOWN_FIELD", 2), ("DUPLICATE_RULE", 7), ("UNKNOWN_ACTION", 11), ("CONSTRAINT_SYNTAX", 13),
        ("MISSING_FIELD", 14), ("UNKNOWN_SEVERITY", 17), ("CONSTRAINT_SYNTAX", 19),
    }
    assert all(p.file == str(path) for p in error.problems)
    text = str(error)
    assert f"{path}:11: [UNKNOWN_ACTION] rule 'wrong_action': unknown action 'quarantine'; use one of warn, " \
           "drop, fail" in text
    assert "first at" in text and "7 problem(s)" in text


def test_bad_yaml_is_reported_with_its_line(tmp_path: Path) -> None:
    path = write(tmp_path, "broken.yml", """
        rules:
          - name: a
            constraint: x > 0
          - name: [unclosed
        """)
    with pytest.raises(RuleFileError) as caught:
        load_rules(path)
    [problem] = caught.value.problems
    assert problem.code == "YAML_SYNTAX" and problem.line == 5


@pytest.mark.parametrize("text, code", [
    ("", "EMPTY_RULE_FILE"),
    ("- a\n- b\n", "NOT_A_MAPPING"),
    ("dataset: x\n", "MISSING_FIELD"),
    ("rules: {a: 1}\n", "NOT_A_LIST"),
    ("rules:\n  - just a string\n", "INVALID_RULE"),
    ("rules:\n  - name: a\n    constraint: x > 0\n    tags: {a: 1}\n", "INVALID_TAGS"),
    ("rules:\n  - name: a\n    name: b\n    constraint: x > 0\n", "DUPLICATE_KEY"),
    ("include: [no_such_group]\nrules: []\n", "INCLUDE_NOT_FOUND"),
])
def test_structural_mistakes(text: str, code: str) -> None:
    with pytest.raises(RuleFileError) as caught:
        parse_rules(text, source="x.yml")
    assert code in caught.value.codes


def test_include_cycle(tmp_path: Path) -> None:
    write(tmp_path, "a.yml", "include: [b]\nrules: []\n")
    write(tmp_path, "b.yml", "include: [a]\nrules: []\n")
    with pytest.raises(RuleFileError) as caught:
        load_rules(tmp_path / "a.yml")
    assert caught.value.codes == ["INCLUDE_CYCLE"]


def test_rule_file_not_found_names_the_folders(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    with pytest.raises(RuleFileError) as caught:
        find_rule_file("nope")
    assert caught.value.codes == ["RULE_FILE_NOT_FOUND"]
    assert "expectations" in str(caught.value)
    write(tmp_path, "nope.yaml", "rules: [{name: a, constraint: x > 0}]\n")
    monkeypatch.setenv("MEDALLION_EXPECTATIONS", str(tmp_path))
    assert load_rules("nope").names == ["a"]


def test_ruleset_selection_and_combination() -> None:
    rules = load_rules("orders_clean")
    assert set(rules.select(actions=["warn"]).names) == set(rules.warn)
    assert "known_currency" not in rules.select(min_severity="high").names
    assert rules.select(tags=["timeliness"]).names == ["order_ts_not_in_future"]
    assert set(rules.with_action("warn").warn) == set(rules.names)
    extra = rules_from_dict("extra", {"big": "amount < 1e9"}, "warn")
    assert (rules + extra).names[-1] == "big"
    with pytest.raises(RuleFileError) as caught:
        rules + RuleSet("dup", (Rule("POSITIVE_AMOUNT", "amount > 1"),))
    assert caught.value.codes == ["DUPLICATE_RULE"]


@pytest.mark.parametrize("sql, ok", [
    ("a > 0", True),
    ("name <> ''", True),
    ("email RLIKE '^[^@]+@x\\\\.com$'", True),
    ("`odd col` IN ('a;b', 'c)')", True),
    ("", False), ("a > (1", False), ("a > 1)", False), ("a = 1; DROP TABLE t", False), ("'abc", False),
    ("SELECT 1", False), ("a AND", False), ("OR b", False),
])
def test_lexical_check(sql: str, ok: bool) -> None:
    assert (lexical_problems(sql) == []) is ok
