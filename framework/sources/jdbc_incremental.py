"""``jdbc_incremental``: a Spark Python data source that reads a PostgreSQL table or query incrementally by a
watermark column (a timestamp, date, integer or numeric column that grows as rows change).

It is a plain ``pyspark.sql.datasource.DataSource``, so the same pipeline file runs in a Databricks pipeline
once the source is registered there (``spark.dataSource.register(JdbcIncrementalDataSource)``). Locally the
framework's jar serves ``jdbc_incremental`` with a JVM twin of this module (``jvm/src/medallion/sources``: same
options, schema, SQL and offsets; see :mod:`framework.sources`), and this source runs as
``jdbc_incremental_python``.

Streaming contract (``DataSourceStreamReader``):

- the offset is ``{"watermark": <the column's text>, "nullRows": <rows without a watermark>}``, plus
  ``"inFlight": [{"after": <watermark or null>, "xids": [<64-bit ids>]}]`` when transactions were in flight
  at the offset query (absent otherwise, and in offsets written before it existed); the first start is
  ``startingWatermark`` (None: everything);
- ``latestOffset`` asks the database for the greatest watermark above the start (with ``maxRowsPerBatch``,
  the watermark of that many rows above it; rows sharing the end's value all come in, so a batch end never
  splits equal values) and, in the same statement, for the transactions in flight; it returns the start
  unchanged when there is nothing new and none of the start's transactions ended, so no empty batch runs;
- a batch reads ``start - lookback < column <= end`` without the rows of transactions in flight at ``end``,
  in ``numPartitions`` ranges, plus the rows of transactions in flight at ``start`` that ended since: no row
  of a transaction that commits late is skipped or read twice (the rule and its argument:
  :mod:`framework.sources.inflight`); the predicates are in the SQL sent to the database; NULL watermarks
  never satisfy them;
- Spark's checkpoint records each batch's offsets before the batch runs and its commit after the sink wrote
  it, so a batch interrupted (a failure, kill -9) is read again with the same bounds: exactly once into a
  Delta sink (with ``lookback``, rows of the lookback window come again on purpose: APPLY CHANGES or a dedup
  removes them);
- with ``Trigger.AvailableNow`` (the runner's triggered updates) the end is capped at the greatest watermark
  seen when the query started.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)

from framework.errors import Problem
from framework.sources import inflight, pgclient
from framework.sources.errors import SourceOptionsError, SourceQueryError
from framework.sources.inflight import InFlight
from framework.sources.options import PYTHON_SOURCE_NAME, SOURCE_NAME, JdbcIncrementalOptions, parse_options
from framework.sources.pgtypes import Column, ddl, literal, watermark_kind

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql.types import StructType


@dataclass(frozen=True)
class SourcePlan:
    """A checked read: the options, the relation's columns and the watermark column."""

    options: JdbcIncrementalOptions
    columns: list[Column]
    watermark: Column
    starting_watermark: str | None  # normalised by the database (its own text of the value)
    tracks_transactions: bool = False  # rows have an xmin: transactions in flight are tracked (inflight.py)

    @property
    def schema_ddl(self) -> str:
        """The Spark schema (DDL text)."""
        return ddl(self.columns)


def plan_read(options: Mapping[str, str]) -> SourcePlan:
    """Check the options against the database's catalog: the columns and their types, the watermark column
    (present, orderable), ``lookback`` fitting its type and ``startingWatermark`` a value of it.

    Raises:
        SourceOptionsError: unknown, missing or malformed options (every problem at once).
        UnsupportedColumnTypeError: a column without a Spark type (named).
        SourceConnectionError: the database cannot be reached.
        SourceQueryError: the table or query is refused.
    """
    opts = parse_options(options)
    columns = pgclient.describe(opts)
    by_name = {c.name: c for c in columns}
    watermark = by_name.get(opts.watermark_column) or next(
        (c for c in columns if c.name.lower() == opts.watermark_column.lower()), None)
    if watermark is None:
        raise SourceOptionsError(SOURCE_NAME, [Problem("UNKNOWN_WATERMARK_COLUMN", (
            f"watermarkColumn '{opts.watermark_column}' is not a column of {opts.relation} "
            f"(columns: {', '.join(c.name for c in columns)})"))])
    kind = watermark_kind(watermark)
    if opts.lookback is not None and opts.lookback_is_interval != (kind == "time"):
        want = "an interval such as '2 hours'" if kind == "time" else "a number"
        raise SourceOptionsError(SOURCE_NAME, [Problem("INVALID_LOOKBACK", (
            f"'lookback' must be {want} for the {watermark.db_type} column '{watermark.name}', "
            f"got '{opts.lookback}'"))])
    start = None
    if opts.starting_watermark is not None:
        start = _normalised(opts, watermark, opts.starting_watermark)
    return SourcePlan(opts, columns, watermark, start, pgclient.tracks_transactions(opts))


def _normalised(opts: JdbcIncrementalOptions, column: Column, value: str) -> str:
    try:
        return str(pgclient.scalar(opts, f"SELECT CAST({literal(value)} AS {column.db_type})::text"))
    except SourceQueryError:
        raise SourceOptionsError(SOURCE_NAME, [Problem("INVALID_STARTING_WATERMARK", (
            f"'startingWatermark' must be a {column.db_type} value for '{column.name}', got '{value}'"))]) from None


class JdbcIncrementalDataSource(DataSource):
    """``spark.readStream.format("jdbc_incremental")`` (and a batch ``spark.read`` of everything)."""

    @classmethod
    def name(cls) -> str:
        """The format name."""
        return SOURCE_NAME

    def schema(self) -> str:
        """The relation's columns from the database's catalog, as Spark DDL."""
        return plan_read(self.options).schema_ddl

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        """The incremental reader (see the module docstring)."""
        return JdbcIncrementalStreamReader(plan_read(self.options))

    def reader(self, schema: StructType) -> DataSourceReader:
        """A batch read of every row with a watermark above ``startingWatermark``."""
        return JdbcBatchReader(plan_read(self.options))


class JdbcIncrementalPythonDataSource(JdbcIncrementalDataSource):
    """The same source as ``jdbc_incremental_python``: where the framework's jar serves ``jdbc_incremental`` with
    its JVM twin (local runs), this name runs the Python source, as a Databricks pipeline does."""

    @classmethod
    def name(cls) -> str:
        """The format name."""
        return PYTHON_SOURCE_NAME


class RangePartition(InputPartition):
    """One range of one batch: the SQL that reads it (``value``, as Spark pickles it to a worker)."""

    def __init__(self, sql: str) -> None:
        super().__init__(sql)
        self.sql = sql


def _offset(watermark: str | None, null_rows: int, groups: Sequence[InFlight] = ()) -> dict[str, Any]:
    offset: dict[str, Any] = {"watermark": watermark, "nullRows": null_rows}
    if groups:  # absent when none: offsets read as before, and those written before still read
        offset["inFlight"] = [g.to_json() for g in groups]
    return offset


def batch_partitions(plan: SourcePlan, start: dict[str, Any], end: dict[str, Any]) -> list[RangePartition]:
    """A batch ``start -> end``: the ranges of ``(start - lookback, end]`` without the rows of transactions in
    flight at ``end``, and one more for the rows of those in flight at ``start`` that ended since (see
    :mod:`framework.sources.inflight`)."""
    before, after = start.get("watermark"), end.get("watermark")
    out: list[RangePartition] = []
    if after is not None and before != after:
        out = range_partitions(plan, before, str(after), inflight.excluded(inflight.from_offset(end)))
    gone = inflight.ended(inflight.from_offset(start), inflight.from_offset(end))
    if gone and before is not None:
        opts, column = plan.options, plan.watermark
        upper = pgclient.lowered(before, column, opts.lookback, opts.lookback_is_interval)
        floors = [None if g.after is None else pgclient.typed(g.after, column) for g in gone]
        condition = inflight.ended_condition(gone, column.quoted, floors, upper)
        out.append(RangePartition(pgclient.rows_sql(opts.relation, plan.columns, condition)))
    return out


def range_partitions(plan: SourcePlan, start: str | None, end: str,
                     excluded: str | None = None) -> list[RangePartition]:
    """The partitions of a batch ``(start - lookback, end]``, split into ``numPartitions`` ranges, without the
    rows ``excluded`` names."""
    opts, column = plan.options, plan.watermark
    lower = None if start is None else pgclient.lowered(start, column, opts.lookback, opts.lookback_is_interval)
    upper = pgclient.typed(end, column)
    bounds: list[str | None] = [lower]
    if opts.num_partitions > 1:
        points = _split_points(plan, lower, upper)
        bounds += [pgclient.typed(p, column) for p in points]
    bounds.append(upper)
    return [RangePartition(pgclient.range_sql(opts.relation, plan.columns, column, lo, hi, excluded))
            for lo, hi in pairwise(bounds) if hi is not None]


def _split_points(plan: SourcePlan, lower: str | None, upper: str) -> list[str]:
    """``numPartitions - 1`` inner bounds of ``(lower, upper]``: quantiles from the planner's histogram of the
    column when the relation is a table with statistics (ranges then hold about as many rows each, even when
    the values are skewed: rows updated long after the others), else evenly spaced values."""
    col, rel, parts = plan.watermark, plan.options.relation, plan.options.num_partitions
    with pgclient.connection(plan.options) as conn, conn.cursor() as cur:
        if not rel.startswith("("):
            cur.execute(pgclient.histogram_sql(rel, col, lower, upper))
            quantiles = [str(row[0]) for row in cur.fetchall() if row[0] is not None]
            if len(quantiles) >= parts - 1:
                return list(dict.fromkeys(quantiles[k * len(quantiles) // parts] for k in range(1, parts)))
        cur.execute(pgclient.split_points_sql(rel, col, lower, upper, parts))
        return [str(row[0]) for row in cur.fetchall() if row[0] is not None]


def read_partition(plan: SourcePlan, partition: InputPartition) -> Iterator[pa.RecordBatch]:
    """The rows of one range, as Arrow record batches of the source's schema."""
    sql = partition.sql if isinstance(partition, RangePartition) else str(partition.value)
    yield from pgclient.read_batches(plan.options, sql, pgclient.arrow_schema(plan.columns), plan.columns)


class JdbcIncrementalStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """The streaming side: offsets are watermarks (see the module docstring)."""

    def __init__(self, plan: SourcePlan) -> None:
        self.plan = plan
        self._target: str | None = None
        self._capped = False

    def initialOffset(self) -> dict[str, Any]:
        """``startingWatermark`` (None: before every row)."""
        return _offset(self.plan.starting_watermark, 0)

    def getDefaultReadLimit(self) -> ReadLimit:
        """``maxRowsPerBatch`` as Spark's row limit, or everything."""
        rows = self.plan.options.max_rows_per_batch
        return ReadMaxRows(rows) if rows else ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        """Remember the greatest watermark now: this run reads no further."""
        opts, column = self.plan.options, self.plan.watermark
        self._target = pgclient.scalar(opts, pgclient.max_watermark_sql(opts.relation, column, None, None, None))
        self._capped = True

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        """The next batch's end, or ``start`` when nothing is new: no value above its watermark and none of
        its transactions in flight ended (see the module docstring and :mod:`framework.sources.inflight`)."""
        opts, column = self.plan.options, self.plan.watermark
        groups = inflight.from_offset(start)
        reached = self._capped and (self._target is None or self._target == start.get("watermark"))
        if reached and not groups:
            return start  # read up to the cap, nothing left in flight: no query
        bound = None
        if not reached:
            max_rows = limit.max_rows if isinstance(limit, ReadMaxRows) else None
            bound = pgclient.max_watermark_sql(opts.relation, column, start.get("watermark"), self._target, max_rows)
        if not self.plan.tracks_transactions:
            end = None if bound is None else pgclient.scalar(opts, bound)
            now: list[int] = []
        else:  # the end and the transactions in flight, from one statement's snapshot
            end, snapshot, running = pgclient.first_row(opts, pgclient.offset_sql(bound)) or (None, "0:0:", None)
            now = inflight.in_flight(str(snapshot), running)
        if end is None:
            if not inflight.ended(groups, [InFlight(None, tuple(now))]):
                return start
            end = start.get("watermark")
        nulls = pgclient.scalar(opts, pgclient.null_count_sql(opts.relation, column))
        return _offset(str(end), int(nulls or 0), inflight.carried(groups, start.get("watermark"), now))

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        """The ranges of ``(start - lookback, end]`` and the rows of transactions that ended."""
        return batch_partitions(self.plan, start, end)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """One range, read in a Python worker."""
        return read_partition(self.plan, partition)

    def commit(self, end: dict[str, Any]) -> None:
        """Nothing to release: the database keeps no state for the reader."""


class JdbcBatchReader(DataSourceReader):
    """``spark.read.format("jdbc_incremental")``: every row with a watermark above ``startingWatermark``."""

    def __init__(self, plan: SourcePlan) -> None:
        self.plan = plan

    def partitions(self) -> Sequence[InputPartition]:
        """The ranges up to the greatest watermark now."""
        opts, column = self.plan.options, self.plan.watermark
        end = pgclient.scalar(opts, pgclient.max_watermark_sql(opts.relation, column, self.plan.starting_watermark,
                                                               None, None))
        if end is None:
            return [RangePartition(f"SELECT {pgclient.select_list(self.plan.columns)} FROM {opts.relation} "
                                   "WHERE false")]
        return range_partitions(self.plan, self.plan.starting_watermark, str(end))

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """One range, read in a Python worker."""
        return read_partition(self.plan, partition)
