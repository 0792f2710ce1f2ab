"""A top ``Aggregate`` evaluated in Arrow for :mod:`arrow_eval`: grouping columns and ``count(*)``,
``count(x)``, ``sum(x)`` (of integers: Spark's ``bigint``; a sum that could overflow is left to Spark),
``min(x)``, ``max(x)`` (not DISTINCT, no FILTER). A NULL key is a group; without grouping columns the result is
one row, also over no rows (``count`` 0, the others NULL), as Spark's global aggregate. Anything else raises
``ValueError`` (the caller runs the query on Spark)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa

    from framework.incremental.arrow_eval import Expr

_FUNCTIONS = {"Sum": "sum", "Min": "min", "Max": "max"}
_LONG_MAX = (1 << 63) - 1


def aggregate(table: pa.Table, keys: list[str], outputs: list[Expr],
              evaluate: Callable[[Expr, pa.Table], Any]) -> tuple[pa.Table, list[str]]:
    """The aggregate's rows, each column named ``#<exprId>``, and its output columns in order."""
    import pyarrow as pa

    columns: dict[str, Any] = {k: table.column(k) for k in keys}
    specs: list[tuple[str, str, str]] = []  # (output column, function, argument column)
    for i, out in enumerate(outputs):
        name = f"#{int(out.fields['exprId']['id'])}"
        target = out.children[0] if out.cls == "Alias" else out
        if target.cls == "AttributeReference":
            specs.append((name, "key", f"#{int(target.fields['exprId']['id'])}"))
            continue
        function, argument = _function(target)
        if argument is not None:
            columns[f"__a{i}"] = _argument(function, evaluate(argument, table), table.num_rows)
        specs.append((name, function, f"__a{i}" if argument is not None else ""))
    source = pa.table(columns) if columns else pa.table({"__rows": pa.nulls(table.num_rows)})
    result = _grouped(source, keys, specs) if keys else _global(source, specs)
    return result, [name for name, _, _ in specs]


def _function(expr: Expr) -> tuple[str, Expr | None]:
    """The aggregate's function (``count_all``, ``count``, ``sum``, ``min``, ``max``) and its argument."""
    if expr.cls != "AggregateExpression" or expr.fields.get("isDistinct") or \
            expr.fields.get("filter") not in (None, [], "None"):
        raise ValueError("not a plain aggregate")
    function = expr.children[0]
    if function.cls == "Count":
        if len(function.children) != 1:
            raise ValueError("count of several columns")
        argument = function.children[0]
        if argument.cls == "Literal" and argument.fields.get("value") is not None:
            return "count_all", None
        return "count", argument
    if function.cls not in _FUNCTIONS or len(function.children) < 1:
        raise ValueError(function.cls)
    return _FUNCTIONS[function.cls], function.children[0]


def _argument(function: str, values: Any, rows: int) -> Any:
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(values, pa.Scalar):
        values = pa.repeat(values, rows)
    if function != "sum":
        return values
    if not pa.types.is_integer(values.type):
        raise ValueError("sum of non-integers")
    bounds = pc.min_max(values)
    low, high = bounds["min"].as_py(), bounds["max"].as_py()
    if low is not None and max(abs(low), abs(high)) * max(rows, 1) > _LONG_MAX:
        raise ValueError("a sum that could overflow")
    return values.cast(pa.int64())


def _grouped(source: pa.Table, keys: list[str], specs: list[tuple[str, str, str]]) -> pa.Table:
    import pyarrow as pa
    import pyarrow.compute as pc

    wanted: dict[tuple[str, str], tuple[Any, ...]] = {}
    for _, function, argument in specs:
        if function == "count_all":
            wanted[("", function)] = ([], "count_all")
        elif function == "count":
            wanted[(argument, function)] = (argument, "count", pc.CountOptions(mode="only_valid"))
        elif function != "key":
            wanted[(argument, function)] = (argument, function)
    grouped = source.group_by(keys, use_threads=False).aggregate(list(wanted.values()))
    arrays = []
    for _, function, argument in specs:
        column = argument if function == "key" else ("count_all" if function == "count_all"
                                                     else f"{argument}_{function}")
        arrays.append(grouped.column(column))
    return pa.table(dict(zip([name for name, _, _ in specs], arrays, strict=True)))


def _global(source: pa.Table, specs: list[tuple[str, str, str]]) -> pa.Table:
    import pyarrow as pa
    import pyarrow.compute as pc

    values: dict[str, Any] = {}
    for name, function, argument in specs:
        if function == "count_all":
            values[name] = pa.array([source.num_rows], pa.int64())
        elif function == "count":
            values[name] = pa.array([pc.count(source.column(argument), mode="only_valid").as_py()], pa.int64())
        elif function in ("sum", "min", "max"):
            column = source.column(argument)
            scalar = getattr(pc, function)(column) if function == "sum" else pc.min_max(column)[function]
            values[name] = pa.array([scalar.as_py()], column.type)
        else:
            raise ValueError("a grouping column without GROUP BY")
    return pa.table(values)
