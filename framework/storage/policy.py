"""Which engine commits a write: the one rule of the storage package.

The driver's own writer (:mod:`framework.storage.driver`: pyarrow Parquet and one JSON commit, milliseconds)
commits a write when every one of these holds; otherwise Spark's Delta writer does (a write job and Delta's
commit, 0.25-1 s of a warm session on two cores even for a few rows):

1. the table is on the local file system: the driver puts its commit in place with a hard link, the same atomic
   put-if-absent as the project's log store for ``file:`` paths; object stores get Spark's log store
   (:mod:`framework.storage.url`);
2. small writes are on (``small_updates.max_input_bytes`` of ``conf/spark.yaml`` above 0) and the data's
   estimated size, with the table's live files for an append or a rewrite, stays within it;
3. every column is of a type the driver's Parquet writer stores as Spark does (:func:`~framework.storage.plain.
   arrow_writable`);
4. the table, if it exists, has a protocol and metadata the driver writes (no partitions, column mapping,
   constraints, generated or identity columns) and no live file with a deletion vector;
5. an append's columns are the table's (a new column is schema evolution: Delta's ``mergeSchema``);
6. a rewrite (rows replaced in place, as a small SCD target's batch) goes to a table without a change data
   feed: a consumer of the feed must see a MERGE's updates, not every row deleted and inserted again.

The event log's appends (``kind="log"``) are a few rows each and its readers scan it whole: rules 2 and 5 do not
apply, and 4 is left to the writer's own check at commit time (no replay of a long log before every flush).

The driver's writer checks 1 and 4 again when it commits (another writer may have changed the table since) and
raises :class:`~framework.storage.driver.NeedsSpark`; the caller then hands the same rows to Spark. Every commit
says who wrote it (``commitInfo.engineInfo``), and the event log's ``flow_progress`` reports it per flow:
``commits`` counts each engine's commits (:func:`framework.storage.log.committers_since`), and
``spark_commit_reason`` says why the policy last chose Spark for the flow's target (:func:`spark_reason`).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from framework.storage.url import is_local

if TYPE_CHECKING:
    from pyspark.sql.types import StructType

DRIVER = "driver"
SPARK = "spark"
Kind = Literal["append", "overwrite", "rewrite", "log"]
_NOT_ARROW = "a column type the driver does not write as Spark does"
_OFF = "small writes are off (small_updates.max_input_bytes is 0)"


@dataclass(frozen=True)
class Choice:
    """The engine that commits a write, and why Spark does when it does.

    Attributes:
        engine: :data:`DRIVER` or :data:`SPARK`.
        reason: why Spark commits (empty for the driver).
        version: the table's version the choice read (-1: no table yet; None when it read no log).
    """

    engine: str
    reason: str = ""
    version: int | None = None

    @property
    def driver(self) -> bool:
        """Whether the driver's writer commits."""
        return self.engine == DRIVER


_REASONS: dict[str, str] = {}  # table path -> why the policy last chose Spark for it
_REASONS_LOCK = threading.Lock()  # flows choose on threads of their own


def spark(reason: str) -> Choice:
    """A choice for Spark's writer, for ``reason``."""
    return Choice(SPARK, reason)


def spark_reason(path: str) -> str | None:
    """Why the policy last chose Spark to commit to the table at ``path`` (None: it has not), and forget it."""
    with _REASONS_LOCK:
        return _REASONS.pop(_key(path), None)


def _key(path: str) -> str:
    return str(path).removeprefix("file:").rstrip("/")


def choose(path: str, schema: StructType | None, *, kind: Kind, data_bytes: int | Callable[[], int],
           max_bytes: int) -> Choice:
    """Which engine commits ``data_bytes`` (estimated; a function is called only when the size decides) of rows
    of ``schema`` (None: the table's own) to the Delta table at ``path``, as an append, an overwrite of every
    row, a rewrite of some, or an event log append (see the module). Reads the table's log on the driver;
    nothing is written. A choice for Spark is remembered for :func:`spark_reason`."""
    choice = _choose(path, schema, kind, data_bytes, max_bytes)
    if not choice.driver:
        with _REASONS_LOCK:
            _REASONS[_key(path)] = choice.reason
    return choice


def for_stream(path: str, *, plain_layout: bool, output_mode: str, max_bytes: int) -> Choice:
    """Whether a streaming table's micro-batches may be committed by the driver, each then asking :func:`choose`
    (``storage/appends.py``), or all go to Delta's streaming sink: not for a layout only Delta writes
    (partitions, clustering, a declared schema, ``delta.*`` properties), the complete output mode (each batch
    rewrites the table), small writes turned off, or an object store. A choice for Spark is remembered for
    :func:`spark_reason`."""
    if not is_local(path):
        choice = spark("the table is on an object store: Spark's Delta log store commits there")
    elif max_bytes <= 0:
        choice = spark(_OFF)
    elif output_mode != "append":
        choice = spark(f"the {output_mode} output mode rewrites the table every micro-batch")
    elif not plain_layout:
        choice = spark("a layout only Delta writes (partitions, clustering, a declared schema, delta.* properties)")
    else:
        return Choice(DRIVER)
    with _REASONS_LOCK:
        _REASONS[_key(path)] = choice.reason
    return choice


def _choose(path: str, schema: StructType | None, kind: Kind, data_bytes: int | Callable[[], int],
            max_bytes: int) -> Choice:
    """:func:`choose` without the memory of reasons."""
    from framework.storage.plain import arrow_writable

    if not is_local(path):
        return spark("the table is on an object store: Spark's Delta log store commits there")
    if kind == "log":
        return Choice(DRIVER) if schema is None or arrow_writable(schema) else spark(_NOT_ARROW)
    if max_bytes <= 0:
        return spark(_OFF)
    if schema is not None and not arrow_writable(schema):
        return spark(_NOT_ARROW)
    size = data_bytes() if callable(data_bytes) else data_bytes
    if size > max_bytes:
        return spark(f"the data ({size} bytes estimated) is over small_updates.max_input_bytes ({max_bytes})")
    return _table_choice(path, schema, kind, max_bytes - size)


def _table_choice(path: str, schema: StructType | None, kind: Kind, budget: int) -> Choice:
    """The checks of the existing table (4 to 6 of the module's list)."""
    from pyspark.sql.types import StructType

    from framework.storage.driver import NeedsSpark, check_overwrite, check_writable
    from framework.storage.log import has_commit
    from framework.storage.plain import arrow_writable, nullable, plain_files

    if not has_commit(path):
        return spark("a rewrite needs an existing table") if kind == "rewrite" else Choice(DRIVER, version=-1)
    if kind == "overwrite" and schema is not None:  # every live file is removed: its size does not count
        try:
            return Choice(DRIVER, version=check_overwrite(path, schema))
        except NeedsSpark as why:
            return spark(str(why))
    found = plain_files(path, budget)
    if found is None:
        return spark("the table is over the size limit, has a live deletion vector, or a layout only Delta reads")
    try:
        check_writable(found.protocol, found.metadata)
    except NeedsSpark as why:
        return spark(str(why))
    table_schema = StructType.fromJson(json.loads(found.metadata["schemaString"]))
    if schema is None and not arrow_writable(table_schema):
        return spark(_NOT_ARROW)
    if kind == "rewrite" and _change_data_feed(found.metadata):
        return spark("the table records a change data feed")
    if kind == "append" and schema is not None and table_schema != nullable(schema):
        return spark("the rows' columns differ from the table's (schema evolution)")
    return Choice(DRIVER, version=found.version)


def _change_data_feed(metadata: dict[str, object]) -> bool:
    configuration = metadata.get("configuration") or {}
    assert isinstance(configuration, dict)
    return str(configuration.get("delta.enableChangeDataFeed", "false")).lower() == "true"
