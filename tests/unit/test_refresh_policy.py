"""REFRESH POLICY in SQL and refresh_policy= in Python (issue 37): parsed, checked, the same declaration."""

from __future__ import annotations

import pytest

from framework.errors import DeclarationError
from framework.refresh_policy import RefreshPolicy, parse_policy, policy_of
from framework.sql.envelope import EnvelopeError, parse_statement


@pytest.mark.parametrize(("text", "policy"), [
    (None, RefreshPolicy.AUTO), ("auto", RefreshPolicy.AUTO), ("INCREMENTAL", RefreshPolicy.INCREMENTAL),
    ("incremental_strict", RefreshPolicy.INCREMENTAL_STRICT), ("INCREMENTAL STRICT", RefreshPolicy.INCREMENTAL_STRICT),
    ("full", RefreshPolicy.FULL), ("sometimes", None)])
def test_spellings(text: str | None, policy: RefreshPolicy | None) -> None:
    assert parse_policy(text) is policy


@pytest.mark.parametrize(("clause", "expected"), [
    ("REFRESH POLICY INCREMENTAL STRICT", "INCREMENTAL STRICT"), ("REFRESH POLICY incremental", "INCREMENTAL"),
    ("COMMENT 'c' REFRESH POLICY FULL", "FULL"), ("REFRESH POLICY AUTO", "AUTO"), ("", None)])
def test_sql_clause(clause: str, expected: str | None) -> None:
    parsed = parse_statement(f"CREATE OR REFRESH MATERIALIZED VIEW m {clause} AS SELECT 1 AS a")
    assert parsed.refresh_policy == expected  # type: ignore[union-attr]
    assert policy_of(expected) is (parse_policy(expected) or RefreshPolicy.AUTO)


def test_sql_unknown_policy() -> None:
    with pytest.raises(EnvelopeError):
        parse_statement("CREATE MATERIALIZED VIEW m REFRESH POLICY SOMETIMES AS SELECT 1")


def test_python_unknown_policy() -> None:
    from framework import api
    from framework.registry import Registry, registration_context

    with registration_context(Registry()), pytest.raises(DeclarationError) as caught:
        api.materialized_view_decorator("dp.materialized_view")(refresh_policy="sometimes")(lambda: None)
    assert caught.value.code == "DECLARATION_REFRESH_POLICY"
