"""A small view rewritten on the driver (``rewrite_on_driver``: ``GROUP_AGGREGATE``'s merge, ``arrow_merge.py``,
and the keyed recomputes). The keyed recomputes (``WINDOW_FUNCTION``, ``PARTITION_OVERWRITE``, ``GROUP_AGGREGATE``
by changed groups, ``ROW_BASED`` by the join key) of a small view on the driver: the query over the touched key values collected
(the refresh's one Spark job), the view's live files read with pyarrow, its rows of those values left out and the
recomputed ones added, in one overwrite commit carrying the refresh's ``txn`` and refused if the view moved since
its files were read. Through Spark the same replace is a Delta ``replaceWhere`` write: its write and commit jobs
cost about a second on two cores, for a view of a few rows.

The rows left out are exactly those ``keyed.predicate`` selects: the key equal to a touched value (Arrow's
``is_in`` compares values as Spark's ``IN`` does for integers, strings, dates, booleans and decimals, the key
types ``keyed.py`` allows) or NULL when NULL was touched. One key column only; a view keyed by several, or one
the storage policy does not let the driver rewrite, goes through Spark.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame

    from framework.incremental.keyed import Keyed
    from framework.incremental.refresh import ViewRefresh


def replace_on_driver(refresh: ViewRefresh, out: DataFrame, keyed: Keyed) -> bool:
    """Replace the view's rows of ``keyed``'s touched values with ``out`` (the query over those values, with
    the view's expectations) on the driver; False: nothing committed (Spark replaces them)."""
    import pyarrow as pa

    if keyed.keys is None or len(keyed.keys.view) != 1:
        return False
    column = keyed.keys.view[0]
    return rewrite_on_driver(refresh, out, out.toArrow, lambda existing, new: pa.concat_tables(
        [existing.filter(_unselected(existing.column(column), keyed.values)), new])) is not None


def rewrite_on_driver(refresh: ViewRefresh, df: DataFrame, new_rows: Callable[[], pa.Table],
                      rewrite: Callable[[pa.Table, pa.Table], pa.Table]) -> int | None:
    """Rewrite a view the storage policy lets the driver rewrite whole: ``new_rows()`` (of ``df``, the query
    of the refresh's one Spark job) collected, the view's live files read with pyarrow, ``rewrite(view's rows,
    new rows)`` committed as one overwrite carrying the refresh's ``txn`` and refused if the view moved since
    its files were read. Returns the rows written; None: nothing committed (Spark writes)."""
    from pyspark.sql.types import StructType

    from framework.storage.driver import NeedsSpark, checkpoint_if_due, overwrite_arrow
    from framework.storage.plain import input_bytes, plain_files
    from framework.storage.policy import choose

    ex, limit = refresh.ex, refresh.ex.env.small_input_bytes
    if not ex._plain_layout() or not choose(refresh.path, df.schema, kind="overwrite", max_bytes=limit,
                                            data_bytes=lambda: max(refresh.view_bytes, 0) + input_bytes(df)).driver:
        return None
    found = plain_files(refresh.path, limit)
    if found is None:
        return None
    new = new_rows()
    rows = rewrite(read_files(refresh.path, list(found.files), new.schema), new)
    refresh.before_commit()
    try:
        overwrite_arrow(refresh.path, StructType.fromJson(json.loads(found.metadata["schemaString"])), rows,
                        txn=refresh.txn, read_version=found.version)
    except NeedsSpark:
        return None  # the view changed meanwhile into one only Spark writes
    checkpoint_if_due(df.sparkSession, refresh.path)
    return rows.num_rows


def _unselected(column: pa.ChunkedArray, values: frozenset[tuple[Any, ...]]) -> pa.ChunkedArray:
    """True for the rows whose key is not a touched value (nor NULL when NULL was touched)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    present = [v[0] for v in values if v[0] is not None]
    selected = pc.fill_null(pc.is_in(column, value_set=pa.array(present, type=column.type)), False)
    if any(v[0] is None for v in values):
        selected = pc.or_(selected, pc.is_null(column))
    return pc.invert(selected)


def read_files(table: str, names: list[str], schema: pa.Schema) -> pa.Table:
    """The view's rows from its live Parquet files (``add`` paths), as ``schema``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from framework.storage.plain import file_path

    parts = [pq.read_table(file_path(table, n).removeprefix("file:")).select(schema.names).cast(schema)
             for n in names]
    return pa.concat_tables(parts) if parts else schema.empty_table()
