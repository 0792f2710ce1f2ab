"""Resolution: call every query function once (lazily, no Spark jobs) to discover what each flow reads,
whether it is streaming, and its output schema; then build and validate the graph.

The same :class:`FlowReader` serves the execution phase, where reads return the pipeline's real tables.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from framework.context import reader_context
from framework.declarations import Dataset, DatasetKind, Flow, FlowKind
from framework.errors import PipelineError, Problem
from framework.graph import NameResolver, PipelineGraph, Read, build_graph
from framework.registry import Registry, normalize_name
from framework.runner.delta_log import appended_since_creation
from framework.runner.sizing import InputLog

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from framework.loader import LoadedPipeline
    from framework.paths import PathMapper
    from framework.spec import PipelineSpec

Phase = Literal["resolve", "execute"]


class _Unresolvable(Exception):
    """A flow read a LIVE name that is not in the pipeline: stop resolving that flow."""


@dataclass
class UpdateContext:
    """Everything an update knows: the session, the spec, the declarations, where things are stored."""

    spark: SparkSession
    spec: PipelineSpec
    configuration: dict[str, str]
    mapper: PathMapper
    loaded: LoadedPipeline | None = None
    stand_ins: dict[str, DataFrame] = field(default_factory=dict)  # resolution: dataset -> output DataFrame
    reads: dict[str, list[Read]] = field(default_factory=dict)
    streaming: dict[str, bool] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    watched_paths: list[str] = field(default_factory=list)  # folders of file sources (for `medallion watch`)
    cloud_sources: dict[str, list[tuple[str, dict[str, str], str]]] = field(default_factory=dict)
    inputs: InputLog = field(default_factory=InputLog)  # what the query functions read (small updates)
    # Auto Loader DataFrames built while resolving, taken again by the same flow's execution (see cloud_files)
    resolved_sources: dict[tuple[str, str, str, str], DataFrame] = field(default_factory=dict)
    _resolving: list[str] = field(default_factory=list)
    _current: contextvars.ContextVar[FlowReader | None] = field(
        default_factory=lambda: contextvars.ContextVar("medallion_flow_reader", default=None))

    @property
    def registry(self) -> Registry:
        assert self.loaded is not None, "the pipeline is not loaded yet"
        return self.loaded.registry

    @property
    def resolver(self) -> NameResolver:
        return NameResolver(frozenset(self.registry.datasets), self.spec.schema, self.spec.catalog)

    # ------------------------------------------------------------------------------------------- storage
    def table_path(self, name: str) -> str:
        dataset = self.registry.dataset(name)
        if dataset is not None and dataset.path:
            return self.map_path(dataset.path)
        return str(self.spec.tables_dir / (dataset.name if dataset else name))

    def checkpoint_path(self, flow: Flow) -> str:
        return str(self.spec.checkpoints_dir / normalize_name(flow.target) / normalize_name(flow.name))

    def map_path(self, path: str) -> str:
        return self.mapper.map(path)

    # ------------------------------------------------------------------------------------------- readers
    def current_reader(self) -> FlowReader:
        reader = self._current.get()
        if reader is None:
            raise PipelineError("spark.read.table / spark.table of a pipeline dataset must be called inside a "
                                "query function", code="NO_ACTIVE_FLOW")
        return reader

    def current_reader_or_none(self) -> FlowReader | None:
        return self._current.get()

    @contextmanager
    def flow_reader(self, flow_key: str, phase: Phase) -> Iterator[FlowReader]:
        reader = FlowReader(self, flow_key, phase)
        token = self._current.set(reader)
        try:
            with reader_context(reader):
                yield reader
        finally:
            self._current.reset(token)

    def cloud_files(self, path: str, options: dict[str, str], schema: Any) -> DataFrame:
        from framework.autoloader import load_cloud_files, reusable_source

        reader = self.current_reader()
        flow = self.registry.flows[reader.flow_key]
        if path not in self.watched_paths:
            self.watched_paths.append(path)
        self.inputs.path(path)
        key = (reader.flow_key, path, repr(sorted(options.items())), repr(schema))
        if reader.phase == "execute":
            self.cloud_sources.setdefault(reader.flow_key, []).append(
                (path, dict(options), self.checkpoint_path(flow)))
            # Resolution built this very source moments ago, with the same schema location and checkpoint (a full
            # refresh, which clears them, drops it: see forget_resolved_sources), and its stream checks the
            # records it reads itself (see reusable_source). Building it again would cost a second file listing
            # and ~0.2 s of DataFrame construction on the critical path.
            resolved = self.resolved_sources.pop(key, None)
            if resolved is not None:
                return resolved
        df = load_cloud_files(
            self.spark, path, options, schema,
            default_schema_location=str(self.spec.autoloader_dir / normalize_name(flow.target)
                                        / normalize_name(flow.name)),
            checkpoint_location=self.checkpoint_path(flow))
        if reader.phase == "resolve" and reusable_source(options, user_schema=schema is not None):
            self.resolved_sources[key] = df
        return df

    def forget_resolved_sources(self) -> None:
        """Build every Auto Loader source again at execution (after a full refresh cleared their state)."""
        self.resolved_sources.clear()

    def view_dataframe(self, key: str) -> DataFrame:
        """Execution: a view is its query (with its drop/fail expectations), computed where it is read."""
        from framework.quality.engine import apply_expectations

        flow = self.registry.flows[key]
        with self.flow_reader(key, "execute"):
            df = call_query_function(flow)
        dataset = self.registry.datasets[key]
        if dataset.expectations:
            df, _ = apply_expectations(df, dataset.expectations, dataset=dataset.name, flow=flow.name,
                                       observation_name=f"view_{key}")
        return df

    # --------------------------------------------------------------------------------------- resolution
    def resolve(self) -> PipelineGraph:
        """Resolve every flow and build the validated graph (raises GraphError with all problems)."""
        for key in self.registry.datasets:
            self._resolve_dataset(key)
        for key in self.registry.flows:
            if key not in self.reads:
                self._resolve_flow(key)
        graph = build_graph(self.registry, self.reads, self.streaming, schema=self.spec.schema,
                            catalog=self.spec.catalog, layer_rules=self.spec.layers)
        if self.problems:
            from framework.errors import GraphError

            raise GraphError(self.problems)
        return graph

    def _resolve_dataset(self, key: str) -> None:
        if key in self.stand_ins or key in self._resolving:
            return
        self._resolving.append(key)
        try:
            for flow in self.registry.flows_into(key):
                self._resolve_flow(normalize_name(flow.name))
        finally:
            self._resolving.remove(key)

    def _resolve_flow(self, key: str) -> None:
        if key in self.reads:
            return
        flow = self.registry.flows[key]
        target = normalize_name(flow.target)
        self.reads[key] = []
        try:
            if flow.query_function is not None:
                with self.flow_reader(key, "resolve") as reader:
                    df = call_query_function(flow)
                self.reads[key] = reader.reads
                self.streaming[key] = bool(df.isStreaming)
                self.stand_ins.setdefault(target, df)
            elif flow.cdc is not None:
                source = self._stand_in_for(flow.cdc.source, streaming=not flow.once)
                self.streaming[key] = not flow.once
                if source is not None:
                    self.stand_ins.setdefault(target, cdc_output_stand_in(self.spark, source, flow))
            elif flow.snapshot_cdc is not None:
                self.streaming[key] = False
                src = flow.snapshot_cdc.source
                if isinstance(src, str):
                    source = self._stand_in_for(src, streaming=False)
                    if source is not None:
                        self.stand_ins.setdefault(target, cdc_output_stand_in(self.spark, source, flow))
        except _Unresolvable:
            self.streaming.setdefault(key, False)
        except PipelineError:
            raise
        except Exception as exc:
            loc = flow.location
            self.problems.append(Problem("QUERY_ANALYSIS_FAILED",
                                         f"flow '{flow.name}' failed analysis: {_first_line(exc)}",
                                         loc.file, loc.line))
            self.streaming.setdefault(key, False)

    def _stand_in_for(self, name: str, streaming: bool) -> DataFrame | None:
        internal = self.resolver.internal(name)
        if internal is None:
            return external_read(self.spark, name, streaming)
        self._resolve_dataset(internal)
        return self.stand_ins.get(internal)


def call_query_function(flow: Flow) -> DataFrame:
    from pyspark.sql import DataFrame as ClassicDataFrame

    assert flow.query_function is not None
    result = flow.query_function()
    if not isinstance(result, ClassicDataFrame):
        loc = flow.location
        raise PipelineError(
            f"the query function of '{flow.name}' returned {type(result).__name__}, not a DataFrame: "
            "return the DataFrame (e.g. `return spark.read.table(...)`)", code="QUERY_FUNCTION_RETURNED_NON_DATAFRAME",
            file=loc.file, line=loc.line)
    return result


def cdc_output_stand_in(spark: SparkSession, source: DataFrame, flow: Flow) -> DataFrame:
    """An empty batch DataFrame shaped like an APPLY CHANGES target (for downstream resolution)."""
    from pyspark.sql import Column
    from pyspark.sql import functions as F

    from framework.cdc.columns import simple_name
    from framework.cdc.events import sequence_column

    spec = flow.cdc or flow.snapshot_cdc
    assert spec is not None
    columns = list(source.columns)
    column_list = getattr(spec, "column_list", None)
    except_list = getattr(spec, "except_column_list", None)
    if column_list:
        columns = [simple_name(c) or str(c) for c in column_list]
    elif except_list:
        drop = {(simple_name(c) or str(c)).lower() for c in except_list}
        columns = [c for c in columns if c.lower() not in drop]
    extra: list[Column] = []
    if spec.stored_as_scd_type == 2:
        # computed on the source: the sequence column is usually excluded from the target's columns
        seq = getattr(spec, "sequence_by", None)
        seq_col = sequence_column(seq) if seq is not None else F.current_timestamp()
        extra = [seq_col.alias("__START_AT"), seq_col.alias("__END_AT")]
    df = source.select(*columns, *extra)
    return spark.createDataFrame([], df.schema)


def external_read(spark: SparkSession, name: str, streaming: bool) -> DataFrame:
    local = local_table_name(name)
    return spark.readStream.table(local) if streaming else spark.read.table(local)


def local_table_name(name: str) -> str:
    """Unity Catalog / Hive names → the local catalog (one catalog, ``spark_catalog``)."""
    parts = [p.strip("`") for p in name.split(".")]
    if len(parts) == 3:
        parts = ["spark_catalog", *parts[1:]]
    return ".".join(f"`{p}`" for p in parts)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


@dataclass
class FlowReader:
    """Implements ``dlt.read``/``read_stream``/``spark.read.table`` for one flow, recording every read."""

    ctx: UpdateContext
    flow_key: str
    phase: Phase
    reads: list[Read] = field(default_factory=list)

    def read(self, name: str) -> DataFrame:
        return self._read(name, streaming=False, via_live=True)

    def read_stream(self, name: str) -> DataFrame:
        return self._read(name, streaming=True, via_live=True)

    def table(self, name: str, streaming: bool) -> DataFrame:
        return self._read(name, streaming=streaming, via_live=NameResolver.is_live(name))

    def sql_reference(self, name: str) -> str:
        """What ``LIVE.name`` in SQL becomes: a temp view over the dataset's DataFrame."""
        df = self._read(name, streaming=False, via_live=True)
        view = f"__live_{normalize_name(name)}"
        df.createOrReplaceTempView(view)
        return view

    def _read(self, name: str, *, streaming: bool, via_live: bool) -> DataFrame:
        self.reads.append(Read(name, streaming, via_live))
        internal = self.ctx.resolver.internal(name)
        if internal is None:
            if via_live:
                if self.phase == "resolve":
                    raise _Unresolvable(name)
                raise PipelineError(f"'{name}' is not a dataset of this pipeline"
                                    f"{self.ctx.registry.did_you_mean(name.split('.')[-1])}",
                                    code="UNRESOLVED_DATASET")
            self.ctx.inputs.unknown(f"table {name}")
            return external_read(self.ctx.spark, name, streaming)
        dataset = self.ctx.registry.datasets[internal]
        if self.phase == "resolve":
            return self._stand_in(internal, dataset, streaming)
        return self._execute_read(internal, dataset, streaming)

    def _stand_in(self, key: str, dataset: Dataset, streaming: bool) -> DataFrame:
        if key in self.ctx._resolving:
            path = " -> ".join([*self.ctx._resolving[self.ctx._resolving.index(key):], key])
            flow = self.ctx.registry.flows[self.flow_key]
            self.ctx.problems.append(Problem("CYCLE", f"the datasets form a cycle: {path}",
                                             flow.location.file, flow.location.line))
            raise _Unresolvable(key)
        self.ctx._resolve_dataset(key)
        df = self.ctx.stand_ins.get(key)
        if df is None:
            if dataset.schema is not None:
                return self.ctx.spark.createDataFrame([], dataset.schema)
            raise _Unresolvable(key)
        if df.isStreaming and not streaming:
            return self.ctx.spark.createDataFrame([], df.schema)
        return df

    def _execute_read(self, key: str, dataset: Dataset, streaming: bool) -> DataFrame:
        if dataset.kind is DatasetKind.VIEW:
            return self.ctx.view_dataframe(key)
        path = self.ctx.table_path(key)
        spark = self.ctx.spark
        if not Path(path).exists() and not path.startswith(("s3", "abfss", "gs")):
            raise PipelineError(
                f"dataset '{dataset.name}' has no data yet ({path} does not exist): run the update without "
                "a selection, or include it in --select", code="DATASET_NOT_MATERIALIZED")
        if streaming:
            stream = spark.readStream.format("delta")
            if self._fresh_checkpoint() and appended_since_creation(path):
                # same rows as the initial snapshot, without its state reconstruction (see delta_log)
                stream = stream.option("startingVersion", "0")
            return stream.load(path)
        return spark.read.format("delta").load(path)

    def _fresh_checkpoint(self) -> bool:
        """True when the reading flow has no stream offsets yet (Delta ignores a starting version otherwise)."""
        flow = self.ctx.registry.flows.get(self.flow_key)
        if flow is None:
            return False
        offsets = Path(self.ctx.checkpoint_path(flow)) / "offsets"
        return not offsets.is_dir() or not any(offsets.iterdir())


def flow_kind_label(flow: Flow, kinds: dict[str, DatasetKind]) -> str:
    if flow.kind in (FlowKind.AUTO_CDC, FlowKind.AUTO_CDC_SNAPSHOT):
        return flow.kind.value
    return kinds.get(normalize_name(flow.target), DatasetKind.TABLE).value
