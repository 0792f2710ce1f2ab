"""REPLACE WHERE predicate overrides for a backfill (issue 36): ``medallion run --replace-where-override
FLOW=PREDICATE`` and the check that each names a REPLACE WHERE flow, without Spark."""

from __future__ import annotations

import pytest

from framework.cli import build_parser
from framework.declarations import Flow, FlowKind, SourceLocation
from framework.errors import UpdateError
from framework.runner.replace_where import check_overrides


def test_the_cli_takes_overrides_whose_predicate_holds_equals_signs() -> None:
    args = build_parser().parse_args(["run", "spec.yaml", "--replace-where-override",
                                      "orders=date >= '2020-01-01' AND region = 'asia'",
                                      "--replace-where-override", "daily = day = 1"])
    assert args.replace_where_override == [("orders", "date >= '2020-01-01' AND region = 'asia'"),
                                           ("daily", "day = 1")]


def test_a_malformed_override_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["run", "spec.yaml", "--replace-where-override", "orders"])
    assert "expected FLOW=PREDICATE" in capsys.readouterr().err


def _flow(name: str, replace_where: str | None) -> Flow:
    return Flow(name=name, target=name, kind=FlowKind.QUERY, location=SourceLocation("p.py", 1),
                query_function=lambda: None, replace_where=replace_where)


def test_overrides_name_replace_where_flows() -> None:
    flows = [_flow("Orders", "date >= current_date()"), _flow("plain", None)]
    assert check_overrides(flows, {"orders": "true"}) == {"orders": "true"}
    with pytest.raises(UpdateError) as info:
        check_overrides(flows, {"plain": "true"})
    assert info.value.code == "REPLACE_WHERE_OVERRIDE_UNKNOWN_FLOW" and "Orders" in str(info.value)
