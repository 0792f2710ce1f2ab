"""Flow executors: streaming tables (append, incremental, one checkpoint per flow), materialized views
(atomic overwrite), once flows, APPLY CHANGES, snapshot CDC and sinks. The only place flows write data."""

from __future__ import annotations

import contextlib
import functools
import shutil
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from framework import internals
from framework.columns import (
    computed_columns,
    same_columns,
    stored_schema,
    with_defaults,
    without_column_clauses,
)
from framework.declarations import Dataset, DatasetKind, Flow, FlowKind
from framework.errors import PipelineError
from framework.failures import HandlerErrors
from framework.quality.engine import apply_expectations, metrics_from_row, observation_name, sum_observed
from framework.registry import normalize_name
from framework.runner.query import call_query_function
from framework.runner.reads import ExecuteReader, ReadRouter, SourceKey, ViewCheck, quote_identifier
from framework.runner.results import FlowResult, source_offsets
from framework.runner.streams import clear_partial_writes, output_mode, start_query
from framework.storage import state_files
from framework.storage.appends import BatchAppender
from framework.storage.driver import NeedsSpark, set_properties
from framework.storage.log import has_commit, latest_metadata
from framework.storage.overwrites import overwrite_small
from framework.storage.policy import for_stream

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.types import DataType, StructType

    from framework.graph import PipelineGraph
    from framework.runner.environment import UpdateEnvironment


def generation_id(checkpoint: str) -> str:
    """A per-checkpoint id that changes when the checkpoint is cleared (full refresh): used as the
    transaction app id of idempotent writes, so a restarted batch 0 is never mistaken for an old one."""
    path = f"{str(checkpoint).rstrip('/')}/_medallion_generation"  # beside the checkpoint, local or s3a
    if state_files.exists(path):
        return state_files.read_text(path).strip()
    value = uuid.uuid4().hex
    state_files.write_text(path, value)
    return value


class FlowExecutor:
    """Runs one flow of an update (one attempt).

    Args:
        router: the update's read router (its environment, and the session proxy's reads).
        graph: the validated graph.
        flow_key: the flow to run.
        prebuilt: Auto Loader sources the resolution built that this attempt may take (see ``reads.py``).
    """

    def __init__(self, router: ReadRouter, graph: PipelineGraph, flow_key: str,
                 prebuilt: dict[SourceKey, DataFrame] | None = None) -> None:
        self.router = router
        self.env: UpdateEnvironment = router.env
        self.graph = graph
        self.registry = graph.registry
        self.flow: Flow = self.registry.flows[flow_key]
        self.key = flow_key
        self.target_key = normalize_name(self.flow.target)
        self.sink = self.registry.sinks.get(self.target_key)
        self.dataset: Dataset | None = self.registry.datasets.get(self.target_key)
        self.kind = graph.kinds.get(self.target_key, DatasetKind.STREAMING_TABLE)
        self.reader = ExecuteReader(router, self.registry, _names(router, self.registry), flow_key,
                                    prebuilt=prebuilt if prebuilt is not None else {},
                                    pinned_reads=self.kind is DatasetKind.MATERIALIZED_VIEW)
        self.handler_errors = HandlerErrors()  # what a foreachBatch handler raised (see failures.py)
        self.view_results: list[FlowResult] = []
        # triggered updates process what is there and stop; continuous mode sets a processing-time trigger
        # (runner/continuous.py), and the same code then runs until the query is stopped
        self.trigger: dict[str, Any] = {"availableNow": True}

    @property
    def table_path(self) -> str | None:
        """Where the flow's target table is (None for sinks)."""
        return None if self.sink is not None else self.env.table_path(self.registry, self.target_key)

    @property
    def expectations(self) -> tuple[Any, ...]:
        """The expectations this flow applies: its target's (for its query or append flows) and its own."""
        own = self.dataset.expectations if self.dataset is not None and self.flow.kind is FlowKind.QUERY else ()
        if self.dataset is not None and self.flow.kind is FlowKind.APPEND:
            own = self.dataset.expectations
        return (*own, *self.flow.expectations)

    def run(self, result: FlowResult) -> None:
        """Run the flow once with the executor of its kind, recording what it did in ``result``."""
        flow = self.flow
        activate_session(self.env.spark)
        if flow.kind is FlowKind.AUTO_CDC:
            self._run_cdc(result)
        elif flow.kind is FlowKind.AUTO_CDC_SNAPSHOT:
            self._run_snapshot_cdc(result)
        elif self.sink is not None:
            self._run_sink(result)
        elif flow.replace_using:
            from framework.runner.replace_using import run_replace_using

            run_replace_using(self, result)
        elif flow.replace_where is not None:
            from framework.runner.replace_where import run_replace_where

            run_replace_where(self, result)
        elif flow.once:
            self._run_once(result)
        elif self.kind is DatasetKind.MATERIALIZED_VIEW:
            self._run_materialized_view(result)
        else:
            self._run_streaming(result)

    # ----------------------------------------------------------------------------------------- helpers
    def _query(self) -> DataFrame:
        from framework.rescued import collect_rescued_columns

        with self.router.activate(self.reader), collect_rescued_columns() as rescued:
            df = call_query_function(self.flow)
        self._rescued_names = sorted(rescued)
        return df

    def _rescued_column(self) -> str | None:
        """The rescued data column whose non-NULL rows this flow counts: the one its Auto Loader source made
        (``rescuedDataColumn``; by default ``_rescued_data``), for a flow that reads no dataset of the pipeline
        (where values are rescued, so that a row passed on downstream is not counted again by every dataset that
        keeps the column)."""
        # imported here: Auto Loader's modules load only when a flow uses them
        from framework.autoloader.source import RESCUED_DEFAULT

        if self.graph.inputs.get(self.key):
            return None
        return next(iter(getattr(self, "_rescued_names", ())), RESCUED_DEFAULT)

    def _dataset_name(self) -> str:
        return self.dataset.name if self.dataset is not None else self.flow.target

    def _prepare_table(self, path: str, df: DataFrame, *, replace: bool = False) -> bool:
        """Create the Delta table with its declared layout before the first write when the first commit must
        already have it: clustering, a declared schema, or ``delta.*`` table properties (such as
        ``delta.enableChangeDataFeed``, which must cover the first batch). Returns True when it created the
        table.

        Informational properties and the comment alone do not need it: :meth:`_apply_properties` adds them
        after the first write. A table created empty costs the first write more than the creation itself:
        Delta's streaming sink and an overwrite reconstruct the state of an existing table with Spark jobs,
        which a write that creates the table skips.

        ``replace``: replace an existing table's columns and layout with the declared ones (Delta's REPLACE
        TABLE: one commit, the table's history kept), for a write that must not change the schema itself."""
        dataset = self.dataset
        if dataset is None or (state_files.exists(path) and not replace) or not (
                dataset.cluster_by or dataset.schema is not None
                or any(k.lower().startswith("delta.") for k in dataset.table_properties)):
            return False
        from framework.runner.refresh import build_table

        declared = self._declared
        build_table(self.env.spark, path, dataset, declared if declared is not None else _nullable(df.schema),
                    replace=replace)
        return True

    def _apply_properties(self, path: str, created: bool) -> None:
        """Give a table its declared comment and table properties when it lacks them: after the write that
        created it (when :meth:`_prepare_table` had no reason to create it first), after an update that died
        before this step, or when the declaration changed. One metadata-only commit, and none when the
        table's newest metadata (read from its log) already matches."""
        dataset = self.dataset
        if dataset is None or not (dataset.comment or dataset.table_properties) or not state_files.exists(path):
            return
        wanted = {k: str(v) for k, v in dataset.table_properties.items()}
        current = latest_metadata(path)
        if current is None:
            if not created:
                return  # a long-lived table whose metadata is in a checkpoint: it was set when it was created
            missing = dict(wanted)
            comment = dataset.comment
        else:
            configuration = current.get("configuration") or {}
            missing = {k: v for k, v in wanted.items() if configuration.get(k) != v}
            comment = dataset.comment if dataset.comment and current.get("description") != dataset.comment else None
        if not missing and not comment:
            return
        with contextlib.suppress(NeedsSpark):
            set_properties(path, missing, comment)  # a metadata-only commit by the driver
            return
        settings = [f"'{_sql_str(k)}' = '{_sql_str(v)}'" for k, v in missing.items()]
        if comment:
            settings.append(f"'comment' = '{_sql_str(comment)}'")
        self.env.spark.sql(f"ALTER TABLE delta.{quote_identifier(path)} SET TBLPROPERTIES ({', '.join(settings)})")

    def _restore_clustering(self, path: str) -> None:
        """Open-source Delta drops a table's clustering columns when a DataFrame overwrite replaces it (a
        materialized view's recompute): declare them again."""
        if self.dataset is not None and self.dataset.cluster_by:
            columns = ", ".join(quote_identifier(c) for c in self.dataset.cluster_by)
            self.env.spark.sql(f"ALTER TABLE delta.{quote_identifier(path)} CLUSTER BY ({columns})")

    @functools.cached_property
    def _declared(self) -> StructType | None:
        """The dataset's ``schema`` (a DDL string or a StructType) as a StructType; None when not declared."""
        from framework.columns import declared_schema

        schema = self.dataset.schema if self.dataset is not None else None
        try:
            return declared_schema(self.env.spark, schema)
        except Exception as exc:
            assert self.dataset is not None
            raise PipelineError(f"dataset '{self.dataset.name}': schema {schema!r} is not a valid DDL column "
                                f"list ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})",
                                code="INVALID_SCHEMA", file=self.dataset.location.file,
                                line=self.dataset.location.line) from None

    def _conform(self, df: DataFrame) -> DataFrame:
        """The query's output in the declared ``schema``: the declared columns in the declared order, each cast
        to its declared type when the query's type widens safely to it (int → bigint, float → double,
        date → timestamp). A generated or identity column the query leaves out stays out: Delta's writer
        computes it from the table's column metadata (and checks a generated value the query returns). A missing
        or extra column, or a type that would need a lossy cast, is an error
        (Spark's USER_SPECIFIED_AND_INFERRED_SCHEMA_NOT_COMPATIBLE): cast in the query instead. Without a
        declared schema, the columns lose identity and generation metadata read from other tables."""
        declared = self._declared
        if declared is None:
            return without_column_clauses(df)
        from pyspark.sql import functions as F

        df = with_defaults(df, declared)  # the columns it leaves out that declare DEFAULT expr

        assert self.dataset is not None
        by_name = {f.name.lower(): f for f in df.schema.fields}
        declared_names = {f.name.lower() for f in declared.fields}
        computed = computed_columns(declared)  # generated and identity columns: Delta computes them on write
        problems = [f"column '{f.name}' is declared but the query does not return it"
                    for f in declared.fields if f.name.lower() not in by_name and f.name.lower() not in computed]
        problems += [f"the query returns column '{f.name}', which the declared schema lacks"
                     for f in df.schema.fields if f.name.lower() not in declared_names]
        columns = []
        for field_ in declared.fields:
            source = by_name.get(field_.name.lower())
            if source is None:
                continue
            if not _widens(source.dataType, field_.dataType):
                problems.append(f"column '{field_.name}' is {source.dataType.simpleString()} in the query but "
                                f"declared {field_.dataType.simpleString()}")
            columns.append(F.col(f"`{source.name}`").cast(field_.dataType).alias(field_.name))
        if problems:
            raise PipelineError(
                f"the output of flow '{self.flow.name}' does not match the schema declared for "
                f"'{self.dataset.name}': {'; '.join(problems)}. Select and cast the columns in the query.",
                code="USER_SPECIFIED_AND_INFERRED_SCHEMA_NOT_COMPATIBLE", file=self.dataset.location.file,
                line=self.dataset.location.line)
        return df.select(*columns)

    def _checkpoint(self) -> str:
        """The flow's streaming checkpoint, cleared of what a killed update left half-written in its logs."""
        checkpoint = self.env.checkpoint_path(self.flow)
        clear_partial_writes(checkpoint)
        return checkpoint

    def _delta_options(self) -> dict[str, str]:
        if self.dataset is None:
            return {}
        return {k: v for k, v in self.dataset.table_properties.items() if k.startswith("delta.")}

    # -------------------------------------------------------------------------------------- executors
    def _run_materialized_view(self, result: FlowResult) -> None:
        from framework.incremental.refresh import ViewRefresh  # issue 37: REFRESH POLICY and its techniques

        refresh = ViewRefresh(self)
        if refresh.incrementally(result):
            return
        df = self._conform(refresh.full_query())
        path = self.env.table_path(self.registry, self.target_key)
        created = not state_files.exists(path)
        out, observation = apply_expectations(df, self.expectations, dataset=self._dataset_name(),
                                              flow=self.flow.name, rescued_column=self._rescued_column())
        refresh.before_commit()
        if not self._overwrite_on_driver(path, out, refresh.txn):
            writer = out.write.format("delta").mode("overwrite").options(**refresh.writer_options())
            if self._declared is None:
                self._prepare_table(path, out)
                writer = writer.option("overwriteSchema", "true")
            else:  # the overwrite keeps the declared columns (overwriteSchema would drop NOT NULL, generated
                # and identity columns: the schema would become the rows'), so a changed declaration goes first
                stored = stored_schema(self.env.spark, path)
                self._prepare_table(path, out, replace=stored is not None and not same_columns(stored,
                                                                                               self._declared))
            writer = writer.options(**self._delta_options())
            if self.dataset is not None and self.dataset.partition_cols:
                writer = writer.partitionBy(*self.dataset.partition_cols)
            writer.save(path)
            self._restore_clustering(path)
        self._record(result, dict(observation.get), batches=1)
        self._apply_properties(path, created)

    def _plain_layout(self) -> bool:
        """Whether the target's layout is one the driver writes: no partitions, clustering, declared schema or
        ``delta.*`` property (``framework.storage.driver``)."""
        dataset = self.dataset
        return dataset is not None and not (
            dataset.cluster_by or dataset.partition_cols or dataset.schema is not None
            or any(k.lower().startswith("delta.") for k in dataset.table_properties))

    def _overwrite_on_driver(self, path: str, out: DataFrame, txn: tuple[str, int] | None = None) -> bool:
        """A small view's recompute committed by the driver (``storage/overwrites.py``); False: Spark writes it."""
        if not self._plain_layout():
            return False
        assert self.dataset is not None
        return overwrite_small(out, path, self.env.small_input_bytes, description=self.dataset.comment,
                               configuration=dict(self.dataset.table_properties), txn=txn)

    def _run_once(self, result: FlowResult) -> None:
        checkpoint = self.env.checkpoint_path(self.flow)
        marker = f"{checkpoint.rstrip('/')}/once.done"
        if state_files.exists(marker):
            result.status = "COMPLETED"
            result.num_output_rows = 0
            return
        df = self._conform(self._query())
        if df.isStreaming:
            raise PipelineError(f"once flow '{self.flow.name}' must return a batch DataFrame (spark.read)",
                                code="ONCE_FLOW_NOT_BATCH")
        path = self.env.table_path(self.registry, self.target_key)
        created = not state_files.exists(path)
        app_id = f"once-{generation_id(checkpoint)}"
        if self._once_committed(path, app_id):  # killed after its commit, before the marker: done already
            state_files.write_text(marker, datetime.now(UTC).isoformat())
            result.status = "COMPLETED"
            result.num_output_rows = 0
            return
        out, observation = apply_expectations(df, self.expectations, dataset=self._dataset_name(),
                                              flow=self.flow.name, rescued_column=self._rescued_column())
        self._prepare_table(path, out)
        writer = (out.write.format("delta").mode("append").option("mergeSchema", "true")
                  .option("txnAppId", app_id).option("txnVersion", "0").options(**self._delta_options()))
        if self.dataset is not None and self.dataset.partition_cols:
            writer = writer.partitionBy(*self.dataset.partition_cols)
        writer.save(path)
        values = observation.get
        state_files.write_text(marker, datetime.now(UTC).isoformat())
        self._record(result, dict(values), batches=1)
        self._apply_properties(path, created)

    def _once_committed(self, path: str, app_id: str) -> bool:
        """Whether the once flow's ``txn`` is in the target's log. Delta would skip the write as already
        committed, and the flow would then wait forever for the Observation of a query that never ran."""
        from framework.cdc.storage import last_txn_version

        return last_txn_version(self.env.spark, path, app_id) is not None

    def _run_streaming(self, result: FlowResult) -> None:
        df = self._conform(self._query())
        if not df.isStreaming:
            raise PipelineError(f"flow '{self.flow.name}' into streaming table '{self.flow.target}' returned a "
                                "batch DataFrame", code="FLOW_NOT_STREAMING")
        path = self.env.table_path(self.registry, self.target_key)
        created = not state_files.exists(path)
        name = observation_name(self.key)
        out, observation = apply_expectations(df, self.expectations, dataset=self._dataset_name(),
                                              flow=self.flow.name, observation_name=name,
                                              rescued_column=self._rescued_column())
        self._prepare_table(path, out)
        checkpoint = self._checkpoint()

        query = start_query(out, self._stream_writer(out, path, checkpoint))
        try:
            query.awaitTermination()
        except Exception:
            # the micro-batches committed before the failure count (the event log and the report add them up)
            with contextlib.suppress(Exception):
                self._streamed(result, list(query.recentProgress), observation, failed=True)
            raise
        self._streamed(result, list(query.recentProgress), observation, failed=False)
        self._apply_properties(path, created)

    def _stream_writer(self, out: DataFrame, path: str, checkpoint: str) -> Callable[[], Any]:
        """What starts a streaming table's query: Delta's streaming sink, or batches committed by the driver
        while they are small (``storage/appends.py``)."""
        mode = output_mode(out)  # complete for aggregations without a watermark, as DLT does
        writer = (out.writeStream.outputMode(mode).option("checkpointLocation", checkpoint)
                  .trigger(**self.trigger).queryName(self.flow.name))
        if for_stream(path, plain_layout=self._plain_layout(), output_mode=mode,
                      max_bytes=self.env.small_input_bytes).driver:
            assert self.dataset is not None
            appender = BatchAppender(path, checkpoint, self.env.small_input_bytes, self._delta_options(),
                                     self.dataset.comment, {str(k): str(v) for k, v in
                                                            self.dataset.table_properties.items()})
            return writer.foreachBatch(self.handler_errors.wrap(appender)).start
        writer = writer.format("delta").option("mergeSchema", "true").options(**self._delta_options())
        if self.dataset is not None and self.dataset.partition_cols:
            writer = writer.partitionBy(*self.dataset.partition_cols)
        return lambda: writer.start(path)

    def _streamed(self, result: FlowResult, progresses: list[Any], observation: str, *, failed: bool) -> None:
        """Record the metrics of a streaming query's committed micro-batches (``progresses``); after a failure,
        only when some batch with data was committed."""
        batches = sum(1 for p in progresses if p.numInputRows)
        if failed and not batches:
            return
        observed = [dict(p.observedMetrics.get(observation, {}).asDict()) if p.observedMetrics.get(observation)
                    else {} for p in progresses]
        result.num_input_rows = sum(int(p.numInputRows or 0) for p in progresses)
        result.sources = source_offsets(progresses)
        self._record(result, sum_observed(observed), batches=batches)
        self._views_streamed(progresses)

    def _run_sink(self, result: FlowResult) -> None:
        assert self.sink is not None
        df = self._query()
        checkpoint = self._checkpoint()
        if not df.isStreaming:
            raise PipelineError(f"flow '{self.flow.name}' into sink '{self.sink.name}' must be streaming",
                                code="FLOW_NOT_STREAMING")
        name = observation_name(self.key)
        out, observation = apply_expectations(df, (), dataset=self.sink.name, flow=self.flow.name,
                                              observation_name=name)
        writer = (out.writeStream.option("checkpointLocation", checkpoint).trigger(**self.trigger)
                  .queryName(self.flow.name).outputMode(self.flow.output_mode))
        if self.sink.format == "foreach":  # @dp.foreach_sink: a row function or a writer object
            query = start_query(out, writer.foreach(self.sink.row_writer).start)
        elif self.sink.format == "foreach_batch":
            handler = self.sink.handler
            assert handler is not None
            query = start_query(out, writer.foreachBatch(self.handler_errors.wrap(_counted_once(handler))).start)
        elif self.sink.format == "delta":
            opts = dict(self.sink.options)
            writer = writer.format("delta")
            if "path" in opts:
                sink_path = self.env.map_path(opts["path"])
                writer = writer.options(**{k: v for k, v in opts.items() if k != "path"})
                query = start_query(out, lambda: writer.start(sink_path))
            else:
                query = start_query(out, lambda: writer.toTable(opts["tableName"]))
        else:
            if self.sink.format == "kafka":
                from framework.kafka import check_kafka_sink

                check_kafka_sink(out.sparkSession, self.sink.options)  # brokers answer, the topic exists
            query = start_query(out, writer.format(self.sink.format).options(**self.sink.options).start)
        query.awaitTermination()
        progresses = list(query.recentProgress)
        observed = [dict(p.observedMetrics[observation].asDict()) for p in progresses
                    if p.observedMetrics.get(observation)]
        result.num_input_rows = sum(int(p.numInputRows or 0) for p in progresses)
        result.sources = source_offsets(progresses)
        self._record(result, sum_observed(observed), batches=len(observed))

    def _run_cdc(self, result: FlowResult) -> None:
        from framework.cdc import ApplyChangesTarget

        spec = self.flow.cdc
        assert spec is not None and self.dataset is not None
        path = self.env.table_path(self.registry, self.target_key)
        created = not state_files.exists(path)
        checkpoint = self._checkpoint()
        target = ApplyChangesTarget(self.env.spark, spec, self.dataset.name, path, self._cdc_state_path(),
                                    target_schema=self.dataset.schema, small_bytes=self.env.small_input_bytes)
        target.check_compatible()
        app_id = f"{self.key}-{generation_id(checkpoint)}"
        with self.router.activate(self.reader) as reader:
            source = reader.table(spec.source, streaming=not self.flow.once)  # a pipeline dataset or a catalog table
        metrics: list[Any] = []
        try:
            self._apply_cdc_source(source, target, checkpoint, app_id, metrics, result)
        except Exception:
            if metrics:  # the batches applied before the failure are committed: they count
                _cdc_counts(result, metrics)
            raise
        _cdc_counts(result, metrics)
        self._apply_properties(path, created)

    def _apply_cdc_source(self, source: DataFrame, target: Any, checkpoint: str, app_id: str,
                          metrics: list[Any], result: FlowResult) -> None:
        """Apply ``source`` to the APPLY CHANGES ``target``, batch by batch; each batch's metrics are appended
        to ``metrics`` once it committed."""
        if not source.isStreaming:
            marker = f"{checkpoint.rstrip('/')}/once.done"
            if not state_files.exists(marker):
                metrics.append(target.apply_batch(source, 0, app_id))
                state_files.write_text(marker, datetime.now(UTC).isoformat())
            return
        writer = (source.writeStream.option("checkpointLocation", checkpoint).trigger(**self.trigger)
                  .queryName(self.flow.name)
                  .foreachBatch(self.handler_errors.wrap(lambda batch, batch_id: metrics.append(
                      target.apply_batch(batch, batch_id, app_id)))))
        query = start_query(source, writer.start)
        try:
            query.awaitTermination()
        finally:
            with contextlib.suppress(Exception):  # a failed query's committed batches still had input
                result.num_input_rows = sum(int(p.numInputRows or 0) for p in query.recentProgress)
                result.sources = source_offsets(list(query.recentProgress))

    def _run_snapshot_cdc(self, result: FlowResult) -> None:
        from framework.cdc import SnapshotTarget

        spec = self.flow.snapshot_cdc
        assert spec is not None and self.dataset is not None
        marker = f"{self.env.checkpoint_path(self.flow).rstrip('/')}/once.done"
        if self.flow.once and state_files.exists(marker):  # a once flow ran; a full refresh clears the marker
            result.batches = 0
            return
        path = self.env.table_path(self.registry, self.target_key)
        created = not state_files.exists(path)
        target = SnapshotTarget(self.env.spark, spec, self.dataset.name, path,
                                self._cdc_state_path(), target_schema=self.dataset.schema)

        def resolve_source(name: str) -> DataFrame:
            with self.router.activate(self.reader) as reader:
                return reader.table(name, streaming=False)

        metrics = target.run(resolve_source, self.env.update_time)
        result.num_upserted_rows = sum(int(m.num_upserted_rows) for m in metrics)
        result.num_deleted_rows = sum(int(m.num_deleted_rows) for m in metrics)
        result.batches = len(metrics)
        self._apply_properties(path, created)
        if self.flow.once:
            state_files.write_text(marker, datetime.now(UTC).isoformat())

    def _cdc_state_path(self) -> str:
        return self.env.cdc_state_path(self.target_key)

    def _record(self, result: FlowResult, values: dict[str, Any], batches: int) -> None:
        quality = metrics_from_row(values, self.expectations, self._dataset_name())
        if result.num_input_rows is None:
            result.num_input_rows = quality.input_rows
        result.num_output_rows = quality.output_rows
        result.dropped_records = quality.dropped_records
        result.num_rescued_rows = quality.rescued_records
        result.expectations = list(quality.expectations)
        result.batches = batches
        for check in self.reader.views:
            if not isinstance(check.handle, str):
                self._view_result(check, dict(check.handle.get))

    def _views_streamed(self, progresses: list[Any]) -> None:
        """The expectation counts of the views a streaming flow read, from its micro-batches' progress."""
        for check in self.reader.views:
            if isinstance(check.handle, str):
                observed = [dict(p.observedMetrics[check.handle].asDict()) for p in progresses
                            if p.observedMetrics.get(check.handle)]
                self._view_result(check, sum_observed(observed))

    def _view_result(self, check: ViewCheck, values: dict[str, Any]) -> None:
        quality = metrics_from_row(values, check.expectations, check.dataset)
        self.view_results.append(FlowResult(
            check.flow, check.dataset, DatasetKind.VIEW.value, status="COMPLETED",
            num_input_rows=quality.input_rows, num_output_rows=quality.output_rows,
            dropped_records=quality.dropped_records, expectations=list(quality.expectations), batches=1))


def _cdc_counts(result: FlowResult, metrics: list[Any]) -> None:
    """The rows the committed APPLY CHANGES batches upserted and deleted."""
    result.num_upserted_rows = sum(int(m.num_upserted_rows) for m in metrics)
    result.num_deleted_rows = sum(int(m.num_deleted_rows) for m in metrics)
    result.batches = len(metrics)


def _counted_once(handler: Any) -> Any:
    """Wrap a foreach_batch sink handler so that the batch is computed once however many actions the handler
    runs on it: Spark adds up a micro-batch's input rows and observed metrics over every execution of its
    plan, so a handler that writes and counts would otherwise report each row twice."""

    def run(batch: DataFrame, batch_id: int) -> Any:
        batch.persist()
        try:
            return handler(batch, batch_id)
        finally:
            batch.unpersist()

    return run


def activate_session(spark: Any) -> None:
    """Make ``spark`` the JVM's active session on the calling thread. Flows run on worker threads, which have
    none; without it ``writeStream.toTable`` of an existing Delta catalog table fails with
    DELTA_INVALID_V1_TABLE_CALL (the table resolves as a path-based DeltaTableV2). The class is named whole, one
    look-up that ``runner/py4j_lookups.py`` keeps (``jvm.org.apache...`` is a round trip to the JVM per package)."""
    internals.set_active_session(spark)


def _nullable(schema: StructType) -> StructType:
    """A query's schema as a new table's columns: nullable, as a table created by a DataFrame write."""
    from pyspark.sql.types import StructField, StructType

    return StructType([StructField(f.name, f.dataType, True, f.metadata) for f in schema.fields])


_WIDER: dict[str, tuple[str, ...]] = {
    "tinyint": ("smallint", "int", "bigint", "float", "double"),
    "smallint": ("int", "bigint", "float", "double"),
    "int": ("bigint", "double"),
    "bigint": (),
    "float": ("double",),
    "date": ("timestamp", "timestamp_ntz"),
}


def _widens(source: DataType, target: DataType) -> bool:
    """True when ``source`` values fit ``target`` without loss (or the types are the same)."""
    src, dst = source.simpleString(), target.simpleString()
    return src == dst or src == "void" or dst in _WIDER.get(src, ())


def _sql_str(value: str) -> str:
    return str(value).replace("\\", "\\\\").replace("'", "\\'")


def timed_run(executor: FlowExecutor, result: FlowResult) -> None:
    """Run the flow, recording its wall time in ``result`` (also when it fails)."""
    start = time.perf_counter()
    try:
        executor.run(result)
        result.status = "COMPLETED"
    finally:
        result.seconds = time.perf_counter() - start


def discard_failed_first_write(path: str, existed: bool) -> None:
    """After a failed flow: a table that had no commit before keeps none, and leaves no folder that looks like
    a table (a failed first write can leave ``_delta_log/_staged_commits``, which ``CREATE TABLE ... LOCATION``
    then refuses)."""
    target = Path(path)
    if has_commit(target) or not target.exists():
        return
    shutil.rmtree(target if not existed else target / "_delta_log", ignore_errors=True)


def _names(router: ReadRouter, registry: Any) -> Any:
    from framework.graph import NameResolver

    spec = router.env.spec
    return NameResolver(frozenset(registry.datasets), spec.schema, spec.catalog)


