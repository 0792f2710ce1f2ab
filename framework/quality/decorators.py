"""One-line use of rule files in pipeline code, locally and on Databricks.

``@expect_rules("orders_clean")`` stacks the standard ``dlt.expect_all`` / ``expect_all_or_drop`` /
``expect_all_or_fail`` decorators built from ``expectations/orders_clean.yml``; with ``quarantine=True`` it also
declares ``orders_clean_quarantine`` (see :mod:`framework.quality.quarantine`). The ``dlt`` module comes from
``framework.compat.dlt_module()``: the framework's shim while the framework loads a pipeline, the real module on
Databricks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from framework.compat import resolve_dlt
from framework.quality.quarantine import as_ruleset, quarantine_table, quarantine_table_name
from framework.quality.rules import RuleSet

# `resolve_dlt` (framework.compat) and `as_ruleset` (quarantine) were defined here: still importable from here.
__all__ = ["as_ruleset", "expect_rules", "expectation_kwargs", "resolve_dlt"]

F = TypeVar("F", bound=Callable[..., Any])


def expect_rules(
    rules: RuleSet | str,
    *,
    quarantine: bool | str = False,
    dlt_module: Any = None,
    quarantine_comment: str | None = None,
) -> Callable[[F], F]:
    """Apply a rule set to a dataset's query function with the standard ``dlt.expect_all*`` decorators.

    Place it below ``@dlt.table`` / ``@dlt.view``, like any expectation decorator::

        @dlt.table
        @expect_rules("orders_clean", quarantine=True)
        def orders_clean():
            return dlt.read_stream("orders_raw")

    Args:
        rules: a :class:`RuleSet` or the name/path of a rule file.
        quarantine: also declare a quarantine table for the rows failing the ``drop`` rules: ``True`` names it
            ``<rule set name>_quarantine``, a string names it explicitly.
        dlt_module: the module to declare with (default ``framework.compat.dlt_module()``).
        quarantine_comment: the quarantine table's comment.

    Returns:
        A decorator returning the query function wrapped by the ``dlt`` expectation decorators.
    """
    ruleset = as_ruleset(rules)
    dlt = resolve_dlt(dlt_module)

    def decorate(function: F) -> F:
        wrapped: Any = function
        for action, decorator in (
            ("warn", dlt.expect_all),
            ("drop", dlt.expect_all_or_drop),
            ("fail", dlt.expect_all_or_fail),
        ):
            constraints = ruleset.constraints(action)  # type: ignore[arg-type]
            if constraints:
                wrapped = decorator(constraints)(wrapped)
        if quarantine:
            name = quarantine if isinstance(quarantine, str) else quarantine_table_name(ruleset.name)
            quarantine_table(
                ruleset.name, function, ruleset, name=name, comment=quarantine_comment, dlt_module=dlt
            )
        return wrapped

    return decorate


def expectation_kwargs(rules: RuleSet | str) -> dict[str, dict[str, Any]]:
    """The ``expect_all`` / ``expect_all_or_drop`` / ``expect_all_or_fail`` keyword arguments of a rule set.

    For ``dlt.create_streaming_table(name, **expectation_kwargs("orders_clean"))``; empty ones are left out.
    """
    ruleset = as_ruleset(rules)
    out = {"expect_all": ruleset.warn, "expect_all_or_drop": ruleset.drop, "expect_all_or_fail": ruleset.fail}
    return {k: v for k, v in out.items() if v}
