"""How query functions read while an update runs: ``dlt.read``/``read_stream``, ``spark.read.table``,
``LIVE.x`` in SQL and ``format("cloudFiles")`` all reach the reader of the flow being resolved or executed.

:class:`ReadRouter` is the switchboard the session proxy talks to: it knows the active flow's reader (a
context variable, so concurrent flows on worker threads never see each other's) and records what the update
read. :class:`FlowReader` holds what both phases share; the resolution phase's reader lives in ``resolve.py``
and the execution phase's, :class:`ExecuteReader`, here.
"""

from __future__ import annotations

import contextvars
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from typing_extensions import override

from framework.context import reader_context
from framework.declarations import Dataset, DatasetKind, Expectation, Flow
from framework.errors import PipelineError
from framework.graph import NameResolver, Read, split_name
from framework.registry import Registry, normalize_name
from framework.runner.sizing import InputLog
from framework.runner.streams import first_batch_from_a_version
from framework.storage.log import appended_since_creation, created_with_id, protocol_and_metadata
from framework.storage.plain import pinned_parquet

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from framework.runner.environment import UpdateEnvironment

_NO_OPTIONS: Mapping[str, str] = {}
SourceKey = tuple[str, str, str, str]  # (flow key, path, options, schema): one Auto Loader source of a flow


@dataclass(frozen=True)
class CloudSource:
    """An Auto Loader source a flow read in execution: cleanSource runs over it once the flow succeeded."""

    path: str
    options: Mapping[str, str]
    checkpoint: str


@dataclass(frozen=True)
class ViewCheck:
    """A view's expectations, applied where a flow read the view: counted with that flow's run."""

    view_key: str
    dataset: str
    flow: str
    expectations: tuple[Expectation, ...]
    handle: Any  # a pyspark Observation (batch) or an observation name (streaming)


class ReadRouter:
    """Routes the session proxy's reads to the active flow's reader, and logs what the update read."""

    def __init__(self, env: UpdateEnvironment) -> None:
        self.env = env
        self.inputs = InputLog()  # what the query functions read (small updates)
        self.watched_paths: list[str] = []  # folders of file sources (for `medallion watch`)
        self.live_names = False  # a query read a dataset as LIVE.x (deprecated in the default publishing mode)
        self._current: contextvars.ContextVar[FlowReader | None] = contextvars.ContextVar(
            "medallion_flow_reader", default=None)

    @property
    def spark(self) -> SparkSession:
        """The real session."""
        return self.env.spark

    def current(self) -> FlowReader:
        """The reader of the flow whose query function is running."""
        reader = self._current.get()
        if reader is None:
            raise PipelineError("spark.read.table / spark.table of a pipeline dataset must be called inside a "
                                "query function", code="NO_ACTIVE_FLOW")
        return reader

    def table(self, name: str, streaming: bool, options: Mapping[str, str] | None = None) -> DataFrame:
        """``spark.read.table`` / ``spark.table`` / ``spark.readStream.table``: through the active flow's
        reader; outside query functions (a pipeline file's top level, e.g. reading a reference table's schema)
        a plain read of a table the catalog has, as on Databricks (a spec ``tables:`` entry, a published
        table). A name the catalog lacks may be a pipeline dataset, which only a query function reads."""
        reader = self._current.get()
        if reader is not None:
            return reader.table(name, streaming=streaming, options=options)
        if not self.spark.catalog.tableExists(catalog_table_name(self.spark, name)):
            return self.current().table(name, streaming=streaming, options=options)  # raises NO_ACTIVE_FLOW
        return external_read(self.spark, name, streaming, options or {})

    def current_or_none(self) -> FlowReader | None:
        """The active reader, or None outside query functions."""
        return self._current.get()

    @contextmanager
    def activate(self, reader: FlowReader) -> Iterator[FlowReader]:
        """Make ``reader`` the one ``dlt.read`` and the session proxy use, on this thread."""
        token = self._current.set(reader)
        try:
            with reader_context(reader):
                yield reader
        finally:
            self._current.reset(token)

    def file_source(self, path: str, *, streaming: bool) -> None:
        """Record a file source's folder (for sizing, and for `watch` when it streams)."""
        self.inputs.path(path)
        if streaming and path not in self.watched_paths:
            self.watched_paths.append(path)

    def cloud_files(self, path: str, options: dict[str, str], schema: Any) -> DataFrame:
        """``spark.readStream.format("cloudFiles")...load(path)`` inside the active flow."""
        self.file_source(path, streaming=True)
        return self.current().cloud_files(path, options, schema)


@dataclass
class FlowReader(ABC):
    """Implements ``dlt.read``/``read_stream``/``spark.read.table`` for one flow, recording every read."""

    router: ReadRouter
    registry: Registry
    names: NameResolver
    flow_key: str
    reads: list[Read] = field(default_factory=list)

    @property
    def env(self) -> UpdateEnvironment:
        """The update's environment."""
        return self.router.env

    @property
    def flow(self) -> Flow:
        """The flow this reader serves."""
        return self.registry.flows[self.flow_key]

    def read(self, name: str) -> DataFrame:
        """``dlt.read(name)``."""
        return self._read(name, streaming=False, via_live=True)

    def read_stream(self, name: str) -> DataFrame:
        """``dlt.read_stream(name)``."""
        return self._read(name, streaming=True, via_live=True)

    def table(self, name: str, streaming: bool, options: Mapping[str, str] | None = None) -> DataFrame:
        """``spark.read.table(name)`` / ``spark.readStream.table(name)``, with the reader's options
        (``readChangeFeed``, ``startingVersion``, ``skipChangeCommits``, ...)."""
        return self._read(name, streaming=streaming, via_live=NameResolver.is_live(name), options=options or {})

    def sql_reference(self, name: str) -> str:
        """What ``LIVE.name`` in SQL becomes: a temp view over the dataset's DataFrame."""
        self.router.live_names = True
        df = self._read(name, streaming=False, via_live=True)
        view = f"__live_{normalize_name(name)}"
        df.createOrReplaceTempView(view)
        return view

    def _read(self, name: str, *, streaming: bool, via_live: bool,
              options: Mapping[str, str] | None = None) -> DataFrame:
        self.reads.append(Read(name, streaming, via_live))
        self.router.live_names |= NameResolver.is_live(name)  # dlt.read("x") is not the LIVE schema
        internal = self.names.internal(name)
        if internal is None:
            if via_live:
                return self.unknown_dataset(name)
            self.router.inputs.unknown(f"table {name}")
            return external_read(self.env.spark, name, streaming, options or {})
        return self.dataset(internal, self.registry.datasets[internal], streaming, options or {})

    @abstractmethod
    def unknown_dataset(self, name: str) -> DataFrame:
        """A ``dlt.read``/``LIVE.`` name that is no dataset of the pipeline."""

    @abstractmethod
    def dataset(self, key: str, dataset: Dataset, streaming: bool,
                options: Mapping[str, str] = _NO_OPTIONS) -> DataFrame:
        """A read of pipeline dataset ``key`` (``options``: the reader's, e.g. ``readChangeFeed``)."""

    @abstractmethod
    def cloud_files(self, path: str, options: dict[str, str], schema: Any) -> DataFrame:
        """An Auto Loader source of this flow."""

    def build_cloud_files(self, path: str, options: dict[str, str], schema: Any) -> DataFrame:
        """A new Auto Loader source with this flow's schema location and checkpoint."""
        from framework.autoloader import load_cloud_files

        return load_cloud_files(self.env.spark, path, options, schema,
                                default_schema_location=self.env.schema_location(self.flow),
                                checkpoint_location=self.env.checkpoint_path(self.flow))


def source_key(flow_key: str, path: str, options: Mapping[str, str], schema: Any) -> SourceKey:
    """How resolution and execution name the same Auto Loader source."""
    return (flow_key, path, repr(sorted(options.items())), repr(schema))


@dataclass
class ExecuteReader(FlowReader):
    """The execution phase's reads: the pipeline's real tables, views computed where they are read.

    ``prebuilt`` holds Auto Loader sources the resolution built for this update and that are still valid
    (see ``Resolution.reusable_sources``); each is taken at most once. ``sources`` and ``views`` collect what
    the flow read, for cleanSource and for the views' expectation metrics.
    """

    prebuilt: dict[SourceKey, DataFrame] = field(default_factory=dict)
    sources: list[CloudSource] = field(default_factory=list)
    views: list[ViewCheck] = field(default_factory=list)
    # batch reads of small pipeline tables may be pinned to their live files (storage.plain.pinned_parquet): a
    # materialized view's query, built at each recompute and run at once
    pinned_reads: bool = False
    # a materialized view's refresh reads its inputs as it chooses (framework/incremental/refresh.py): (key,
    # path) -> the DataFrame read instead (the rows as of a pinned version, or only the appended ones), or None
    substitute: Callable[[str, str], DataFrame | None] | None = None

    @override
    def unknown_dataset(self, name: str) -> DataFrame:
        raise PipelineError(f"'{name}' is not a dataset of this pipeline"
                            f"{self.registry.did_you_mean(name.split('.')[-1])}", code="UNRESOLVED_DATASET")

    @override
    def cloud_files(self, path: str, options: dict[str, str], schema: Any) -> DataFrame:
        self.sources.append(CloudSource(path, dict(options), self.env.checkpoint_path(self.flow)))
        built = self.prebuilt.pop(source_key(self.flow_key, path, options, schema), None)
        if built is None:
            return self.build_cloud_files(path, options, schema)
        from framework.rescued import note_rescued_columns_of

        note_rescued_columns_of(built)
        return built

    @override
    def dataset(self, key: str, dataset: Dataset, streaming: bool,
                options: Mapping[str, str] = _NO_OPTIONS) -> DataFrame:
        if dataset.kind is DatasetKind.VIEW:
            return self._view(key)
        path = self.env.table_path(self.registry, key)
        spark = self.env.spark
        if not Path(path).exists() and not path.startswith(("s3", "abfss", "gs")):
            raise PipelineError(
                f"dataset '{dataset.name}' has no data yet ({path} does not exist): run the update without "
                "a selection, or include it in --select", code="DATASET_NOT_MATERIALIZED")
        if not streaming and not options and self.substitute is not None:
            chosen = self.substitute(key, path)
            if chosen is not None:
                return chosen
        if streaming:
            stream = spark.readStream.format("delta").options(**options)
            if not options and self._from_version_zero(path):
                stream = stream.option("startingVersion", "0")
            return stream.load(path)
        if not options and self.pinned_reads:
            pinned = pinned_parquet(spark, path, self.env.small_input_bytes)
            if pinned is not None:
                return pinned
        return spark.read.format("delta").options(**options).load(path)

    def _view(self, key: str) -> DataFrame:
        """A view is its query, computed where it is read, with its expectations (counted for this read)."""
        from framework.quality.engine import apply_expectations
        from framework.runner.query import call_query_function

        view_flow = self.registry.flows[key]
        nested = ExecuteReader(self.router, self.registry, self.names, key, prebuilt=self.prebuilt,
                               sources=self.sources, views=self.views, pinned_reads=self.pinned_reads,
                               substitute=self.substitute)
        with self.router.activate(nested):
            df = call_query_function(view_flow)
        dataset = self.registry.datasets[key]
        if not dataset.expectations:
            return df
        name = f"view_{len(self.views)}_{key}"
        out, handle = apply_expectations(df, dataset.expectations, dataset=dataset.name, flow=view_flow.name,
                                         observation_name=name)
        self.views.append(ViewCheck(key, dataset.name, view_flow.name, tuple(dataset.expectations), handle))
        return out

    def _from_version_zero(self, path: str) -> bool:
        """Whether this flow streams the table at ``path`` from version 0 instead of from an initial snapshot.

        A new stream does when that yields the same rows (``storage.log.appended_since_creation``): it spares
        the snapshot's state reconstruction (0.6-0.9 s of Spark jobs on two cores). A restarted stream keeps
        what its batch 0 did: Delta ignores the option once a checkpoint has offsets, except when batch 0 is
        the newest batch, which Delta's source builds again on restart (unused) from its start, an initial
        snapshot of the table unless the option says otherwise."""
        checkpoint = Path(self.env.checkpoint_path(self.flow))
        offsets = checkpoint / "offsets"
        if not offsets.is_dir() or not any(offsets.iterdir()):
            return appended_since_creation(path)
        found = protocol_and_metadata(path)
        metadata = found[2] if found is not None else None
        table_id = str(metadata.get("id")) if metadata is not None else ""
        return metadata is not None and first_batch_from_a_version(checkpoint, table_id) \
            and created_with_id(path, table_id)  # a replaced table's version 0 is another table to Delta


def external_read(spark: SparkSession, name: str, streaming: bool,
                  options: Mapping[str, str] = _NO_OPTIONS) -> DataFrame:
    """A table outside the pipeline, from the local catalog, with the reader's options."""
    local = catalog_table_name(spark, name)
    reader = spark.readStream if streaming else spark.read
    return reader.options(**options).table(local)


def quote_identifier(part: str) -> str:
    """One SQL identifier in backticks, backticks inside doubled."""
    return "`" + part.replace("`", "``") + "`"


def catalog_table_name(spark: SparkSession, name: str) -> str:
    """``name`` as the session resolves it, each part quoted: a three-part name through its catalog's plugin
    (registered here on first use, ``catalogs.py``); a catalog that is the session catalog under another name,
    and any catalog without the framework's jar, as ``spark_catalog`` (which reads every kind of table)."""
    from framework.runner.catalogs import SESSION_CATALOG, ensure_catalog, is_alias

    parts = split_name(name)
    if len(parts) == 3 and (not ensure_catalog(spark, parts[0]) or is_alias(spark, parts[0])):
        parts = [SESSION_CATALOG, *parts[1:]]
    return ".".join(quote_identifier(p) for p in parts)


def local_table_name(name: str) -> str:
    """A name in the session catalog (``spark_catalog``, its catalog part replaced), each part quoted."""
    parts = split_name(name)
    if len(parts) == 3:
        parts = ["spark_catalog", *parts[1:]]
    return ".".join(quote_identifier(p) for p in parts)


