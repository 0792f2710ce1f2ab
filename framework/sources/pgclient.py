"""PostgreSQL through the ADBC driver: the catalog lookup, the watermark bounds and the Arrow reads.

ADBC's PostgreSQL driver runs a query without parameters as ``COPY (query) TO STDOUT (FORMAT binary)`` and
decodes the stream into Arrow record batches in C, so a read costs about what the database's own export costs;
that is why every value here is inlined as a literal (``CAST('...' AS type)``, quoted) rather than bound.
Offsets are the watermark column's own text form, printed by PostgreSQL in a UTC session, so that they go
back into SQL unchanged.

Driver failures are classified by the DB-API exception class (ADBC maps libpq's states onto them):
``OperationalError`` (the server cannot be reached, the connection dropped) is a
:class:`~framework.sources.errors.SourceConnectionError`; any other database error a
:class:`~framework.sources.errors.SourceQueryError`. Both messages have the password scrubbed.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, Any

from framework.sources.errors import DatabaseSourceError, SourceConnectionError, SourceQueryError, scrub
from framework.sources.inflight import TRACKED_RELKINDS
from framework.sources.pgtypes import Column, literal, quote_ident, spark_type

if TYPE_CHECKING:
    import pyarrow as pa

    from framework.sources.options import JdbcIncrementalOptions


@contextmanager
def connection(opts: JdbcIncrementalOptions, autocommit: bool = True) -> Iterator[Any]:
    """A DB-API connection to the source database; driver errors become this package's typed errors."""
    try:
        from adbc_driver_postgresql import dbapi
    except ImportError:
        raise DatabaseSourceError("the jdbc_incremental source needs the Python package adbc-driver-postgresql "
                                  "(pip install adbc-driver-postgresql; on Databricks, a pipeline "
                                  "environment dependency)", code="SOURCE_DRIVER_MISSING") from None
    with translated_errors(opts, "connect"):
        conn = dbapi.connect(opts.libpq_uri(), autocommit=autocommit)
    try:
        with translated_errors(opts, "query"):
            yield conn
    finally:
        with suppress(Exception):  # a connection that already broke has nothing left to close
            conn.close()


@contextmanager
def translated_errors(opts: JdbcIncrementalOptions, action: str) -> Iterator[None]:
    """Turn the driver's DB-API errors into typed errors, by class, with the password scrubbed."""
    from adbc_driver_manager import DatabaseError, OperationalError

    where = f"{action} {opts.relation if len(opts.relation) < 200 else opts.relation[:200] + '...'}"
    try:
        yield
    except OperationalError as exc:
        raise SourceConnectionError(f"could not {where} at {_endpoint(opts.url)}: "
                                    f"{scrub(str(exc), opts.secrets())}") from None
    except DatabaseError as exc:
        raise SourceQueryError(f"PostgreSQL refused to {where}: {scrub(str(exc), opts.secrets())}") from None


def _endpoint(url: str) -> str:
    return url.removeprefix("jdbc:postgresql://").split("?", 1)[0]


def describe(opts: JdbcIncrementalOptions) -> list[Column]:
    """The columns of the relation read, from ``pg_catalog`` (for a ``query``: of a temporary view of it,
    created in a transaction that is rolled back)."""
    lookup = ("SELECT a.attname, pg_catalog.format_type(a.atttypid, a.atttypmod) FROM pg_catalog.pg_attribute a "
              "WHERE a.attrelid = CAST({rel} AS regclass) AND a.attnum > 0 AND NOT a.attisdropped "
              "ORDER BY a.attnum")
    with connection(opts, autocommit=False) as conn, conn.cursor() as cur:
        if opts.relation.startswith("("):
            cur.execute(f"CREATE TEMPORARY VIEW medallion_probe AS SELECT * FROM {opts.relation}")
            cur.execute(lookup.format(rel=literal("medallion_probe")))
        else:
            cur.execute(lookup.format(rel=literal(opts.relation)))
        rows = cur.fetchall()
        conn.rollback()
    if not rows:
        raise SourceQueryError(f"{opts.relation} has no columns")
    return [Column(str(name), str(db_type), spark_type(str(name), str(db_type))) for name, db_type in rows]


def scalar(opts: JdbcIncrementalOptions, sql: str) -> Any:
    """The first column of the first row of ``sql`` (None when there is no row)."""
    row = first_row(opts, sql)
    return None if row is None else row[0]


def first_row(opts: JdbcIncrementalOptions, sql: str) -> tuple[Any, ...] | None:
    """The first row of ``sql`` (None when there is none), run in a statement of its own (autocommit)."""
    with connection(opts) as conn, conn.cursor() as cur:
        cur.execute(sql)
        row = cur.fetchone()
    return None if row is None else tuple(row)


def tracks_transactions(opts: JdbcIncrementalOptions) -> bool:
    """Whether the relation's rows have an ``xmin`` to compare with the transactions in flight: a table or a
    partitioned table named by ``dbtable`` (a ``query``, a view or a foreign table has none)."""
    if opts.relation.startswith("("):
        return False
    kind = scalar(opts, f"SELECT c.relkind::text FROM pg_catalog.pg_class c WHERE c.oid = CAST({literal(opts.relation)} "
                        "AS regclass)")
    return kind in TRACKED_RELKINDS


def read_batches(opts: JdbcIncrementalOptions, sql: str, schema: pa.Schema,
                 columns: list[Column]) -> Iterator[pa.RecordBatch]:
    """Run ``sql`` (no parameters: binary COPY) and yield its rows as record batches of ``schema``, at most
    ``fetchSize`` rows each."""
    with connection(opts) as conn, conn.cursor() as cur:
        cur.execute(sql)
        reader = cur.fetch_record_batch()
        for batch in reader:
            for start in range(0, batch.num_rows, opts.fetch_size):
                yield conform(batch.slice(start, opts.fetch_size), schema, columns)


def conform(batch: pa.RecordBatch, schema: pa.Schema, columns: list[Column]) -> pa.RecordBatch:
    """``batch`` with each column cast to the Arrow type of its Spark type (decimals from their text,
    ``timestamp`` without a zone read as UTC)."""
    import pyarrow as pa

    arrays = []
    for index, field in enumerate(schema):
        array = batch.column(index)
        if isinstance(array.type, pa.ExtensionType) or isinstance(array, pa.ExtensionArray):
            array = array.storage
        if not array.type.equals(field.type):
            array = array.cast(field.type)
        arrays.append(array)
    del columns  # the types are all in the schema; kept in the signature for the reader's call
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def arrow_schema(columns: list[Column]) -> pa.Schema:
    """The Arrow schema Spark takes for ``columns``' Spark types."""
    import pyarrow as pa

    simple = {"smallint": pa.int16(), "int": pa.int32(), "bigint": pa.int64(), "float": pa.float32(),
              "double": pa.float64(), "boolean": pa.bool_(), "string": pa.string(), "date": pa.date32(),
              "timestamp": pa.timestamp("us", tz="UTC"), "binary": pa.binary()}
    fields = []
    for column in columns:
        if column.spark_type.startswith("decimal("):
            precision, scale = column.spark_type[8:-1].split(",")
            fields.append(pa.field(column.name, pa.decimal128(int(precision), int(scale))))
        else:
            fields.append(pa.field(column.name, simple[column.spark_type]))
    return pa.schema(fields)


def select_list(columns: list[Column]) -> str:
    """The select list of a read: every column, those read as text cast to ``text`` (a ``numeric`` without a
    scale rounded to the 18 places of its ``decimal(38,18)`` first, half away from zero, as Spark's JDBC reader
    and the JVM twin round it)."""
    return ", ".join(_selected(c) for c in columns)


def _selected(column: Column) -> str:
    if not column.read_as_text:
        return column.quoted
    if column.base_type == "numeric" and column.spark_type == "decimal(38,18)":
        return f"round({column.quoted}, 18)::text AS {column.quoted}"
    return f"{column.quoted}::text AS {column.quoted}"


def typed(value: str, column: Column) -> str:
    """An offset's text as a value of the watermark column's type in SQL."""
    return f"CAST({literal(value)} AS {column.db_type})"


def lowered(value: str, column: Column, lookback: str | None, interval: bool) -> str:
    """The lower bound of a batch: the start offset less ``lookback`` (an interval or a number)."""
    base = typed(value, column)
    if not lookback:
        return base
    if interval:
        return f"({base} - CAST({literal(lookback)} AS interval))"
    return f"({base} - {lookback.strip()})"


def max_watermark_sql(relation: str, column: Column, lower: str | None, upper: str | None,
                      max_rows: int | None) -> str:
    """The end offset of the next batch: the greatest watermark above ``lower`` (and at most ``upper``), or
    with ``max_rows`` the watermark of the ``max_rows``-th row above ``lower`` (rows with that same watermark
    all come into the batch: an end never splits equal values)."""
    col = column.quoted
    where = [f"{col} IS NOT NULL"]
    if lower is not None:
        where.append(f"{col} > {typed(lower, column)}")
    if upper is not None:
        where.append(f"{col} <= {typed(upper, column)}")
    cond = " AND ".join(where)
    if max_rows is None:
        return f"SELECT max({col})::text FROM {relation} WHERE {cond}"
    # ordered by the column itself, not by its text (an output column named like it would win in ORDER BY)
    return (f"SELECT coalesce((SELECT w::text FROM (SELECT {col} AS w FROM {relation} WHERE {cond} ORDER BY {col} "
            f"OFFSET {max_rows - 1} LIMIT 1) AS o), (SELECT max({col})::text FROM {relation} WHERE {cond}))")


def offset_sql(bound_sql: str | None) -> str:
    """``bound_sql``'s value (a batch's end; NULL when None) with, from the same statement's snapshot, the
    transactions in flight: ``pg_current_snapshot()``, and the ids from its ``xmin`` to the next one to be
    assigned (``xmax + age(xmax)``) found in progress (see :mod:`framework.sources.inflight`)."""
    bound = "NULL" if bound_sql is None else f"({bound_sql})"
    xmax = "pg_snapshot_xmax(s)::text::bigint"
    return (f"SELECT {bound}, s::text, (SELECT string_agg(x::text, ',') FROM generate_series("
            f"pg_snapshot_xmin(s)::text::bigint, {xmax} + age(CAST(({xmax} % 4294967296)::text AS xid)) - 1) AS x "
            "WHERE pg_xact_status(x::text::xid8) = 'in progress') FROM (SELECT pg_current_snapshot() AS s) AS snap")


def null_count_sql(relation: str, column: Column) -> str:
    """How many rows have no watermark (never read: reported in the offsets)."""
    return f"SELECT count(*) FROM {relation} WHERE {column.quoted} IS NULL"


def range_sql(relation: str, columns: list[Column], column: Column, lower: str | None, upper: str,
              excluded: str | None = None) -> str:
    """The read of one range: ``lower < column <= upper`` (no lower bound: everything up to ``upper``), less
    the rows ``excluded`` names (those of transactions in flight)."""
    col = column.quoted
    cond = f"{col} <= {upper}" if lower is None else f"{col} > {lower} AND {col} <= {upper}"
    if excluded:
        cond += f" AND {excluded}"
    return f"SELECT {select_list(columns)} FROM {relation} WHERE {cond}"


def rows_sql(relation: str, columns: list[Column], condition: str) -> str:
    """The read of the rows ``condition`` selects (those of transactions that ended since the last offset)."""
    return f"SELECT {select_list(columns)} FROM {relation} WHERE {condition}"


def split_points_sql(relation: str, column: Column, lower: str | None, upper: str, parts: int) -> str:
    """``parts - 1`` evenly spaced inner bounds of ``(lower, upper]`` (from the smallest watermark when there
    is no lower bound), computed by the database in the column's own arithmetic, as text."""
    col = column.quoted
    low = lower if lower is not None else f"(SELECT min({col}) FROM {relation} WHERE {col} <= {upper})"
    return (f"SELECT p::text FROM (SELECT CAST(({low} + ({upper} - {low}) * k / {parts}) AS {column.db_type}) AS p "
            f"FROM generate_series(1, {parts - 1}) AS k) AS s WHERE p > {low} AND p < {upper} GROUP BY p ORDER BY p")


def histogram_sql(relation: str, column: Column, lower: str | None, upper: str) -> str:
    """The planner's histogram bounds of the watermark column inside ``(lower, upper)``, in order (no rows
    when the table has no statistics)."""
    cond = f"b < {upper}" + ("" if lower is None else f" AND b > {lower}")
    return (f"SELECT b::text FROM (SELECT unnest(s.histogram_bounds::text::{column.db_type}[]) AS b "
            "FROM pg_catalog.pg_stats s WHERE (s.schemaname, s.tablename) = (SELECT n.nspname, c.relname "
            "FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace "
            f"WHERE c.oid = CAST({literal(relation)} AS regclass)) AND s.attname = {literal(column.name)}) AS h "
            f"WHERE {cond} ORDER BY b")


def quoted_column(name: str) -> str:
    """The watermark column as an identifier (re-exported for the reader)."""
    return quote_ident(name)
