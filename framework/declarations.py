"""Declarations: what pipeline code registers. Plain frozen dataclasses, no Spark actions.

Every declaration remembers where it was defined (``location``) so that errors can name the file and line.
Constraints, sequence columns and conditions are kept as given (a SQL string or a ``pyspark.sql.Column``);
the execution side turns them into Spark expressions.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

ExpectationAction = Literal["warn", "drop", "fail"]


@dataclass(frozen=True)
class SourceLocation:
    """Where a declaration was made."""

    file: str
    line: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


UNKNOWN_LOCATION = SourceLocation("<unknown>", 0)


class DatasetKind(enum.Enum):
    """What a dataset is. ``TABLE`` is decided at resolution: streaming query → streaming table, else MV."""

    TABLE = "table"
    STREAMING_TABLE = "streaming_table"
    MATERIALIZED_VIEW = "materialized_view"
    VIEW = "view"


@dataclass(frozen=True)
class Expectation:
    """A named data-quality constraint. A row fails when ``constraint`` is not TRUE (NULL fails too)."""

    name: str
    constraint: Any  # SQL boolean expression (str) or pyspark.sql.Column
    action: ExpectationAction = "warn"
    location: SourceLocation = UNKNOWN_LOCATION

    @property
    def constraint_sql(self) -> str:
        """The constraint as text, for messages, reports and the event log."""
        if isinstance(self.constraint, str):
            return self.constraint
        return str(self.constraint)


@dataclass(frozen=True)
class Dataset:
    """A table, materialized view, streaming table or view."""

    name: str
    kind: DatasetKind
    location: SourceLocation = UNKNOWN_LOCATION
    comment: str | None = None
    spark_conf: Mapping[str, str] = field(default_factory=dict)
    table_properties: Mapping[str, str] = field(default_factory=dict)
    partition_cols: tuple[str, ...] = ()
    cluster_by: tuple[str, ...] = ()
    cluster_by_auto: bool = False
    path: str | None = None
    schema: Any = None  # DDL string or pyspark StructType
    private: bool = False  # `temporary=True` (dlt) / `private=True` (dp): not published to the catalog
    row_filter: str | None = None
    refresh_policy: str | None = None
    expectations: tuple[Expectation, ...] = ()
    # True when declared by create_streaming_table (flows are declared separately).
    declared_without_query: bool = False

    @property
    def is_view(self) -> bool:
        """Whether the dataset is a temporary view (computed when read, never stored)."""
        return self.kind is DatasetKind.VIEW


class FlowKind(enum.Enum):
    """How a flow is declared, which decides how the runner executes it."""

    QUERY = "query"  # the default flow of a @table/@view: the decorated function
    APPEND = "append"  # @append_flow
    AUTO_CDC = "auto_cdc"  # apply_changes / create_auto_cdc_flow
    AUTO_CDC_SNAPSHOT = "auto_cdc_snapshot"  # apply_changes_from_snapshot


@dataclass(frozen=True)
class ApplyChanges:
    """Arguments of ``apply_changes`` / ``create_auto_cdc_flow``, validated and normalized.

    ``keys`` are column names; ``sequence_by`` is a column name, a Column or a struct Column;
    conditions are SQL strings or Columns. ``stored_as_scd_type`` is normalized to 1 or 2.
    """

    source: str
    keys: tuple[Any, ...]
    sequence_by: Any
    where: Any = None
    ignore_null_updates: bool = False
    apply_as_deletes: Any = None
    apply_as_truncates: Any = None
    column_list: tuple[Any, ...] | None = None
    except_column_list: tuple[Any, ...] | None = None
    stored_as_scd_type: int = 1
    track_history_column_list: tuple[Any, ...] | None = None
    track_history_except_column_list: tuple[Any, ...] | None = None
    ignore_null_updates_column_list: tuple[Any, ...] | None = None
    ignore_null_updates_except_column_list: tuple[Any, ...] | None = None
    columns_to_update: Any = None


@dataclass(frozen=True)
class ApplyChangesFromSnapshot:
    """Arguments of ``apply_changes_from_snapshot`` / ``create_auto_cdc_from_snapshot_flow``.

    ``source`` is a dataset/table name (a snapshot per update, versioned by the update time) or a function
    ``next_snapshot_and_version(latest_version) -> (DataFrame, version) | None``.
    """

    source: str | Callable[[Any], Any]
    keys: tuple[Any, ...]
    stored_as_scd_type: int = 1
    track_history_column_list: tuple[Any, ...] | None = None
    track_history_except_column_list: tuple[Any, ...] | None = None


@dataclass(frozen=True)
class Flow:
    """A flow writes into one target (a dataset or a sink)."""

    name: str
    target: str
    kind: FlowKind
    location: SourceLocation = UNKNOWN_LOCATION
    query_function: Callable[[], Any] | None = None
    once: bool = False
    comment: str | None = None
    spark_conf: Mapping[str, str] = field(default_factory=dict)
    cdc: ApplyChanges | None = None
    snapshot_cdc: ApplyChangesFromSnapshot | None = None
    expectations: tuple[Expectation, ...] = ()  # expectation decorators stacked on an @append_flow function
    replace_where: Any = None  # REPLACE WHERE flow (a SQL string or a Column): matching rows replaced each update
    output_mode: str = "append"  # "update" for @dp.update_flow (into a sink only)
    replace_using: tuple[str, ...] = ()  # REPLACE USING flow: key columns of partial snapshots ...
    sequence_by: Any = None  # ... and the column (or Column) that orders them
    depends_on: tuple[str, ...] = ()  # flows this one starts after (``depends_on=``; a scheduling edge only)


@dataclass(frozen=True)
class Sink:
    """An external target for append flows: ``create_sink`` (delta/kafka) or ``@foreach_batch_sink``."""

    name: str
    format: str
    options: Mapping[str, str] = field(default_factory=dict)
    location: SourceLocation = UNKNOWN_LOCATION
    handler: Callable[[Any, int], Any] | None = None  # foreach_batch_sink(df, batch_id)
    row_writer: Any = None  # foreach_sink: a function of one row, or an object with process (open, close)


@dataclass(frozen=True)
class EventHook:
    """``@on_event_hook``: called with every event the pipeline emits."""

    name: str
    function: Callable[[dict[str, Any]], Any]
    max_allowable_consecutive_failures: int | None = None
    location: SourceLocation = UNKNOWN_LOCATION
