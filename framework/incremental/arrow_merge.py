"""``GROUP_AGGREGATE`` on the driver: a small view's rows and the changed groups' partial aggregates merged in
Arrow, without a Spark job.

The partial aggregates (the view's query over the appended rows, collected: one row per changed group) are joined
with the view's rows on the grouping columns, NULL-safely (a NULL key is a group: each key is joined as its value
with NULLs filled and whether it was NULL), in a full outer join; then ``count`` adds, ``sum`` adds (NULL when
both are NULL; an overflow fails as Spark's ANSI ``sum`` does), ``min``/``max`` keep the smaller/greater with
Spark's ordering (NULLs skipped, NaN greater than every number). The result is cast back to the view's column
types (a sum of two ``DECIMAL(p, s)`` sums widens by one digit). Groups keyed by floating-point columns are left
to Spark's merge (Spark's grouping normalises ``-0.0`` and NaN; an Arrow join compares bits).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from framework.incremental.analysis import OutputColumn

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql.types import StructType


def mergeable_keys(schema: StructType, columns: tuple[OutputColumn, ...]) -> bool:
    """Whether the view's grouping columns are of types an Arrow join matches as Spark groups them."""
    from pyspark.sql import types as T

    keys = {c.name for c in columns if c.kind == "key"}
    allowed = (T.BooleanType, T.ByteType, T.ShortType, T.IntegerType, T.LongType, T.DecimalType, T.StringType,
               T.BinaryType, T.DateType, T.TimestampType)
    return all(isinstance(f.dataType, allowed) for f in schema.fields if f.name in keys)


def merged_rows(existing: pa.Table, partial: pa.Table, columns: tuple[OutputColumn, ...],
                schema: pa.Schema) -> pa.Table:
    """The view's new rows (``schema``): ``existing`` with ``partial``'s groups merged in."""
    import pyarrow as pa

    kinds = {c.name: c.kind for c in columns}
    names = schema.names
    keys = [n for n in names if kinds[n] == "key"]
    left = _with_join_keys(existing.select(names), keys, "l")
    right = _with_join_keys(partial.select(names), keys, "r")
    join_keys = [f"__j{i}" for i in range(2 * len(keys))] or ["__j"]
    joined = left.join(right, join_keys, join_type="full outer", coalesce_keys=True)
    out = [_merge(kinds[n], joined[f"l{i}"], joined[f"r{i}"]).cast(schema.field(n).type) for i, n in enumerate(names)]
    return pa.Table.from_arrays([_combined(c) for c in out], schema=schema)


def _with_join_keys(table: pa.Table, keys: list[str], side: str) -> pa.Table:
    """The table's columns renamed ``<side><i>`` plus the join keys: per grouping column its value with NULLs
    filled and whether it was NULL (no grouping column: one constant key, the global aggregate's one row)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    arrays: dict[str, Any] = {f"{side}{i}": table.column(i) for i in range(table.num_columns)}
    for i, name in enumerate(keys):
        column = table.column(name)
        arrays[f"__j{2 * i}"] = pc.fill_null(column, _zero(column.type))
        arrays[f"__j{2 * i + 1}"] = pc.is_null(column)
    if not keys:
        arrays["__j"] = pa.array([0] * table.num_rows, pa.int8())
    return pa.table(arrays)


def _zero(data_type: pa.DataType) -> pa.Scalar:
    import datetime
    from decimal import Decimal

    import pyarrow as pa

    if pa.types.is_string(data_type) or pa.types.is_large_string(data_type):
        value: Any = ""
    elif pa.types.is_binary(data_type) or pa.types.is_large_binary(data_type):
        value = b""
    elif pa.types.is_boolean(data_type):
        value = False
    elif pa.types.is_decimal(data_type):
        value = Decimal(0)
    elif pa.types.is_date(data_type):
        value = datetime.date(1970, 1, 1)
    elif pa.types.is_timestamp(data_type):
        value = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC if data_type.tz else None)
    else:
        value = 0
    return pa.scalar(value, data_type)


def _merge(kind: str, old: Any, new: Any) -> Any:
    import pyarrow.compute as pc

    if kind == "key":
        return pc.coalesce(old, new)
    if kind == "count":
        return pc.add_checked(pc.fill_null(old, 0), pc.fill_null(new, 0))
    if kind == "sum":
        return pc.if_else(pc.is_null(old), new, pc.if_else(pc.is_null(new), old, pc.add_checked(old, new)))
    if kind in ("min", "max"):
        pick_new = _before(new, old) if kind == "min" else _before(old, new)
        return pc.if_else(pc.is_null(old), new, pc.if_else(pc.is_null(new), old, pc.if_else(pick_new, new, old)))
    raise ValueError(f"no merge for {kind}")


def _before(a: Any, b: Any) -> Any:
    """``a < b`` in Spark's ordering: NaN is greater than every number (and equal to itself)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not pa.types.is_floating(a.type):
        return pc.less(a, b)
    return pc.and_(pc.invert(pc.is_nan(a)), pc.or_(pc.is_nan(b), pc.less(a, b)))


def _combined(column: Any) -> Any:
    return column.combine_chunks() if hasattr(column, "combine_chunks") else column
