"""De-duplication helpers for silver tables, on batch and streaming DataFrames.

- :func:`drop_exact_duplicates`: rows equal in every column (or in ``subset``).
- :func:`latest_by_key`: one row per key, the one with the greatest ordering column; ties broken
  deterministically by the remaining columns.
- :func:`dedup_within_watermark`: streams — the first row per key within an event-time watermark
  (``dropDuplicatesWithinWatermark``), with bounded state.

All three are plain DataFrame → DataFrame functions: use them inside a query function, on Databricks too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame
    from pyspark.sql.types import DataType


def _names(columns: str | Sequence[str]) -> list[str]:
    return [columns] if isinstance(columns, str) else list(columns)


def _orderable(data_type: DataType) -> bool:
    from pyspark.sql.types import ArrayType, MapType, StructType, VariantType

    if isinstance(data_type, MapType | VariantType):
        return False
    if isinstance(data_type, ArrayType):
        return _orderable(data_type.elementType)
    if isinstance(data_type, StructType):
        return all(_orderable(f.dataType) for f in data_type.fields)
    return True


def _check_columns(df: DataFrame, columns: Sequence[str], what: str) -> None:
    from framework.errors import PipelineError

    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise PipelineError(
            f"{what} column(s) {missing} not in the DataFrame; it has {df.columns}",
            code="DEDUP_UNKNOWN_COLUMN",
        )


def drop_exact_duplicates(
    df: DataFrame, subset: Sequence[str] | None = None, *, watermark: tuple[str, str] | None = None
) -> DataFrame:
    """Remove rows that repeat every column (or every column of ``subset``).

    Args:
        df: batch or streaming DataFrame.
        subset: compare only these columns (the first row seen is kept; on batch input ties are broken by
            the other columns, so the result is deterministic).
        watermark: ``(event_time_column, delay)`` for streams: state is kept only within the watermark
            (``dropDuplicatesWithinWatermark``). Without it a stream keeps every key seen in its state.
    """
    columns = list(subset) if subset else list(df.columns)
    _check_columns(df, columns, "de-duplication")
    if df.isStreaming:
        if watermark is not None:
            event_time, delay = watermark
            return df.withWatermark(event_time, delay).dropDuplicatesWithinWatermark(columns)
        return df.dropDuplicates(columns)
    if not subset or set(columns) == set(df.columns):
        return df.distinct()
    types = {f.name: f.dataType for f in df.schema.fields}
    others = [c for c in df.columns if c not in columns and _orderable(types[c])]
    return _keep_extreme(df, columns, [], others, latest=False)


def latest_by_key(
    df: DataFrame,
    keys: str | Sequence[str],
    order_by: str | Sequence[str],
    *,
    tie_breakers: Sequence[str] | None = None,
) -> DataFrame:
    """Keep one row per key: the one with the greatest ``order_by`` value(s).

    Rows whose ordering value is NULL lose to any non-NULL one. Ties (equal ordering values) are broken by
    ``tie_breakers`` (default: every other column of an orderable type, in column order), greatest wins, so
    the result does not depend on partitioning or arrival order.

    On a batch DataFrame this is one aggregation (``max_by`` over a struct, no window sort). On a stream it
    is a stateful aggregation: run it in ``complete``/``update`` mode (the runner picks the mode for
    aggregations), or use ``dlt.apply_changes`` (SCD type 1) for an unbounded key space.

    Args:
        df: batch or streaming DataFrame.
        keys: the business key column(s).
        order_by: column(s) that order versions of a row, e.g. ``updated_at`` or a sequence number.
        tie_breakers: columns that decide between rows with equal ``order_by`` values.
    """
    from pyspark.sql import functions as F

    key_cols, order_cols = _names(keys), _names(order_by)
    _check_columns(df, key_cols, "key")
    _check_columns(df, order_cols, "ordering")
    if tie_breakers is None:
        types = {f.name: f.dataType for f in df.schema.fields}
        ties = [c for c in df.columns if c not in key_cols + order_cols and _orderable(types[c])]
    else:
        ties = list(tie_breakers)
        _check_columns(df, ties, "tie-breaker")
    if df.isStreaming:
        ordering = F.struct(*[F.col(c) for c in order_cols + ties])
        row = F.struct(*[F.col(c) for c in df.columns])
        return df.groupBy(*key_cols).agg(F.max_by(row, ordering).alias("__row")).select("__row.*")
    return _keep_extreme(df, key_cols, order_cols, ties, latest=True)


def _keep_extreme(
    df: DataFrame, keys: list[str], order_cols: list[str], ties: list[str], *, latest: bool
) -> DataFrame:
    from pyspark.sql import functions as F

    ordering: Column = F.struct(*[F.col(c) for c in order_cols + ties]) if order_cols + ties else F.lit(0)
    row = F.struct(*[F.col(c) for c in df.columns])
    pick = F.max_by(row, ordering) if latest else F.min_by(row, ordering)
    return df.groupBy(*keys).agg(pick.alias("__row")).select("__row.*")


def dedup_within_watermark(
    df: DataFrame, keys: str | Sequence[str], event_time: str, delay: str
) -> DataFrame:
    """Drop repeated keys that arrive within ``delay`` of each other (streams: bounded state).

    On a stream this is ``withWatermark(event_time, delay).dropDuplicatesWithinWatermark(keys)``: the first
    row of a key is kept and repeats are dropped until the watermark passes it. On a batch DataFrame the
    same call keeps one row per key, the one with the earliest ``event_time`` (ties broken by the other
    columns): a batch has no arrival order, so every repeat of a key counts as within the watermark.

    Args:
        df: batch or streaming DataFrame.
        keys: the column(s) that identify a duplicate (e.g. an event id).
        event_time: the timestamp column the watermark tracks.
        delay: how late a duplicate may arrive, e.g. ``"10 minutes"``.
    """
    key_cols = _names(keys)
    _check_columns(df, [*key_cols, event_time], "de-duplication")
    if df.isStreaming:
        return df.withWatermark(event_time, delay).dropDuplicatesWithinWatermark(key_cols)
    types = {f.name: f.dataType for f in df.schema.fields}
    ties = [c for c in df.columns if c not in [*key_cols, event_time] and _orderable(types[c])]
    return _keep_extreme(df, key_cols, [event_time], ties, latest=False)
