"""``expect_rules`` turns a rule file into the standard dlt expectation decorators (no Spark)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from framework.quality.decorators import expect_rules, expectation_kwargs
from framework.quality.rules import load_rules


class RecordingDlt:
    """Records calls made with Databricks' dlt signatures (expect_all*(dict), table(name=..., comment=...))."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def _expect(self, kind: str) -> Callable[[dict[str, str]], Callable[[Any], Any]]:
        def factory(expectations: dict[str, str]) -> Callable[[Any], Any]:
            def decorator(function: Any) -> Any:
                self.calls.append((kind, dict(expectations)))
                return function
            return decorator
        return factory

    def __getattr__(self, name: str) -> Any:
        if name.startswith("expect_all"):
            return self._expect(name)
        raise AttributeError(name)

    def table(self, query_function: Any = None, **kwargs: Any) -> Any:
        def decorator(function: Any) -> Any:
            self.calls.append(("table", kwargs | {"function": function}))
            return function
        return decorator


def test_expect_rules_stacks_the_standard_decorators() -> None:
    dlt = RecordingDlt()
    rules = load_rules("orders_clean")

    @expect_rules("orders_clean", dlt_module=dlt)
    def orders_clean() -> str:
        return "df"

    assert orders_clean() == "df"
    assert dlt.calls == [("expect_all", rules.warn), ("expect_all_or_drop", rules.drop)]


def test_expect_rules_with_quarantine_declares_the_quarantine_table() -> None:
    dlt = RecordingDlt()

    @expect_rules("customers", quarantine=True, dlt_module=dlt)
    def customers() -> None:
        return None

    kinds = [kind for kind, _ in dlt.calls]
    assert kinds == ["expect_all", "expect_all_or_drop", "table"]
    table = dlt.calls[-1][1]
    assert table["name"] == "customers_quarantine"
    assert "name_present" in table["comment"]
    assert table["function"].__name__ == "customers_quarantine"


def test_expectation_kwargs_for_create_streaming_table() -> None:
    kwargs = expectation_kwargs("customers")
    assert set(kwargs) == {"expect_all", "expect_all_or_drop"}
    assert "valid_email" in kwargs["expect_all"]


def test_with_the_framework_dlt_shim() -> None:
    """Inside a registration context, ``framework.compat.dlt_module()`` is the shim: real declarations."""
    from framework.registry import registration_context

    with registration_context() as registry:
        from framework.compat import dlt_module

        dlt = dlt_module()

        @dlt.table(comment="silver orders")
        @expect_rules("orders_clean", quarantine=True)
        def orders_clean() -> None:
            return None

    rules = load_rules("orders_clean")
    clean = registry.datasets["orders_clean"]
    assert {(e.name, e.constraint, e.action) for e in clean.expectations} == {
        (r.name, r.constraint, r.action) for r in rules}
    quarantine = registry.datasets["orders_clean_quarantine"]
    assert quarantine.expectations == ()
    assert "orders_clean_quarantine" in registry.flows


def test_quarantine_table_declares_without_the_decorators_module() -> None:
    """quarantine.py stands on its own (no import of decorators.py, which builds on it): no import cycle."""
    from framework.compat import resolve_dlt
    from framework.quality import decorators, quarantine

    dlt = RecordingDlt()
    query = quarantine.quarantine_table("orders_clean", "orders_raw", dlt_module=dlt, table_properties={"q": "x"})
    assert query.__name__ == "orders_clean_quarantine"
    assert dlt.calls[0][0] == "table" and dlt.calls[0][1]["table_properties"] == {"q": "x"}
    assert decorators.as_ruleset is quarantine.as_ruleset and decorators.resolve_dlt is resolve_dlt
    assert resolve_dlt(dlt) is dlt
