"""Run a user's pipeline in a test: :func:`run_pipeline` and what it returns, :class:`PipelineRun`.

A test names a spec file or a folder of pipeline files, the input files and external tables the pipeline
reads, and configuration. The run gets its own storage root and catalog schema (two tests of one spec never
share either), its inputs under the test's folder, and the spec's ``paths:`` pointed there; the spec file is
never changed. The result reads back the tables as DataFrames, the flows' metrics and expectation results,
and runs the pipeline again on more input for incremental tests.
"""

from __future__ import annotations

import io
import re
import tempfile
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from framework.errors import PipelineError
from framework.storage.log import has_log
from framework.testing.inputs import ExternalTables, InputFiles, write_external_tables, write_inputs

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from framework.quality.engine import ExpectationResult
    from framework.runner.results import FlowResult, UpdateResult
    from framework.spec import PipelineSpec

INPUTS = "{inputs}"  # in a configuration value: the absolute path of the run's input folder
_NOT_NAME = re.compile(r"[^a-z0-9_]+")


def unique_schema(hint: str) -> str:
    """A catalog schema name of its own for one test pipeline: ``hint`` made a valid name, plus a random tail."""
    base = _NOT_NAME.sub("_", hint.lower()).strip("_")[:40] or "test"
    return f"{base}_{uuid.uuid4().hex[:8]}"


def fresh_folder(base: Path) -> Path:
    """``base/pipeline``, or ``base/pipeline-2``, ``-3``, ... when a test runs several pipelines."""
    folder, n = base / "pipeline", 1
    while folder.exists():
        n += 1
        folder = base / f"pipeline-{n}"
    return folder


@dataclass
class TestPipeline:
    """One pipeline under test: its spec with the test's storage, schema, inputs folder and path mapping.

    Each :meth:`run` is one update of the same storage (incremental, as on Databricks).

    Attributes:
        spark: The session the updates run in.
        spec: The spec as run (storage, schema, paths and configuration are the test's).
        folder: The test's folder: ``inputs/``, ``storage/`` and ``external/`` (the external tables) inside.
    """

    __test__ = False  # not a test class, whatever its name says

    spark: SparkSession
    spec: PipelineSpec
    folder: Path
    _source: Path = field(repr=False)
    _overrides: dict[str, Any] = field(repr=False)
    _env: str | None = field(default=None, repr=False)

    @cached_property
    def small_bytes(self) -> int:
        """``small_updates.max_input_bytes`` of ``conf/spark.yaml``: tables under it are read from their files."""
        from framework.settings import load_local_settings

        return load_local_settings().small_updates.max_input_bytes

    @property
    def external_tables(self) -> list[str]:
        """The names of the external tables the runs registered in the catalog."""
        return sorted(self._overrides.get("tables", {}))

    @property
    def inputs_dir(self) -> Path:
        """Where input files are written; every Databricks path of the spec's ``paths:`` maps here."""
        return self.folder / "inputs"

    @classmethod
    def create(cls, spark: SparkSession, spec_or_folder: str | Path, *, folder: Path, schema: str | None = None,
               paths: Mapping[str, str] | None = None, env: str | None = None) -> TestPipeline:
        """Prepare ``spec_or_folder`` (a spec file, or a folder of pipeline files) to run under ``folder``.

        Args:
            spark: The session to run in.
            spec_or_folder: A YAML spec, a Databricks settings JSON, or a folder whose files are the libraries.
            folder: The test's own folder (created).
            schema: The catalog schema (default: the spec's, made unique).
            paths: Databricks path prefix → folder relative to the input folder. Default: every prefix in the
                spec's ``paths:`` maps to the input folder itself.
            env: An ``environments`` entry of the spec.
        """
        source = Path(spec_or_folder).resolve()
        folder.mkdir(parents=True, exist_ok=True)
        base = _load(source, env, {"storage": str(folder / "storage")})
        inputs = folder / "inputs"
        mapped = {prefix: str(inputs) for prefix in base.paths}
        mapped.update({prefix: str(inputs / rel) for prefix, rel in (paths or {}).items()})
        overrides: dict[str, Any] = {"storage": str(folder / "storage"), "paths": mapped, "target": None,
                                     "schema": schema or unique_schema(base.schema)}
        spec = _load(source, env, overrides)
        return cls(spark, spec, folder, source, overrides, env)

    def run(self, *, inputs: InputFiles | None = None, tables: ExternalTables | None = None,
            configuration: Mapping[str, str] | None = None, full_refresh: bool = False,
            reset_checkpoints: Sequence[str] = (),
            replace_where_overrides: Mapping[str, str] | None = None) -> PipelineRun:
        """Write ``inputs`` and ``tables``, then run one update with ``configuration`` over the spec's
        (``reset_checkpoints``: the streaming flows whose checkpoints the update clears, data kept;
        ``replace_where_overrides``: REPLACE WHERE flow name → the predicate of this update only, a backfill)."""
        from framework.runner.update import UpdateOptions, run_update

        write_inputs(self.inputs_dir, inputs)
        if tables:
            self._overrides.setdefault("tables", {}).update(
                write_external_tables(self.spark, self.folder / "external", tables))
        if configuration:
            inputs_path = str(self.inputs_dir)
            self._overrides.setdefault("configuration", {}).update(
                {str(k): str(v).replace(INPUTS, inputs_path) for k, v in configuration.items()})
        if tables or configuration:
            self.spec = _load(self._source, self._env, self._overrides)
        out = io.StringIO()
        options = UpdateOptions(full_refresh=full_refresh, out=out,
                                reset_checkpoint_selection=tuple(reset_checkpoints) or None,
                                replace_where_overrides=replace_where_overrides)
        result = run_update(self.spec, options, spark=self.spark)
        return PipelineRun(self, result, out.getvalue())


def _load(source: Path, env: str | None, overrides: Mapping[str, Any]) -> PipelineSpec:
    """The spec of a spec file, or of a folder of pipeline files (named after the folder)."""
    from framework.spec import load_spec, parse_spec

    if not source.is_dir():
        return load_spec(source, env=env, overrides=overrides)
    raw = {"name": source.name, "libraries": [{"glob": {"include": f"{source.name}/**"}}]}
    return parse_spec(raw, source=str(source), default_root=source.parent, env=env, overrides=overrides)


@dataclass(frozen=True)
class FlowMetrics:
    """What one flow of a run did.

    Attributes:
        name: The flow.
        target: The dataset it writes.
        status: ``COMPLETED``, ``FAILED``, ``EXCLUDED``, ...
        rows_in: Rows read (None when the flow did not count them).
        rows_out: Rows written (upserted rows for APPLY CHANGES targets).
        dropped: Rows dropped by ``expect_or_drop`` rules.
        deleted: Rows deleted (APPLY CHANGES).
        expectations: Each expectation's result by name (passed and failed records, action).
        error: Why the flow failed, or None.
    """

    name: str
    target: str
    status: str
    rows_in: int | None
    rows_out: int | None
    dropped: int
    deleted: int | None
    expectations: Mapping[str, ExpectationResult]
    error: BaseException | None

    @classmethod
    def of(cls, flow: FlowResult) -> FlowMetrics:
        """The metrics of one flow's result."""
        return cls(flow.flow, flow.target, flow.status, flow.num_input_rows, flow.rows_out, flow.dropped_records,
                   flow.num_deleted_rows, {e.name: e for e in flow.expectations}, flow.error)


@dataclass(frozen=True)
class PipelineRun:
    """One update of a pipeline under test.

    Attributes:
        pipeline: The pipeline under test (storage, schema, inputs folder); ``run_again`` runs it again.
        result: The runner's own result (every flow, the update id, the event log's path).
        output: What the update printed (progress and summary).
    """

    pipeline: TestPipeline
    result: UpdateResult
    output: str

    @property
    def succeeded(self) -> bool:
        """Whether every selected flow completed."""
        return self.result.succeeded

    @property
    def error(self) -> BaseException | None:
        """Why the update failed: the update's error, else the first failed flow's; None when it succeeded."""
        if self.result.error is not None:
            return self.result.error
        return next((f.error for f in self.result.flows if f.error is not None), None)

    @property
    def spec(self) -> PipelineSpec:
        """The spec the update ran (the test's storage, schema and paths)."""
        return self.pipeline.spec

    @property
    def flows(self) -> dict[str, FlowMetrics]:
        """Every flow's metrics, by flow name."""
        return {f.flow: FlowMetrics.of(f) for f in self.result.flows}

    def flow(self, name: str) -> FlowMetrics:
        """The metrics of flow ``name`` (case-insensitive).

        Raises:
            PipelineError: ``UNKNOWN_FLOW``, with the flows there are.
        """
        for flow in self.result.flows:
            if flow.flow.lower() == name.lower():
                return FlowMetrics.of(flow)
        known = ", ".join(sorted(f.flow for f in self.result.flows))
        raise PipelineError(f"no flow {name!r} in this run (flows: {known or 'none'})", code="UNKNOWN_FLOW")

    @property
    def expectations(self) -> list[ExpectationResult]:
        """Every expectation's result, flow by flow (passed and failed records summed over micro-batches)."""
        return [e for f in self.result.flows for e in f.expectations]

    def table(self, name: str) -> DataFrame:
        """The Delta table of dataset ``name`` (case-insensitive), as a DataFrame: the table as it is now (a
        small one read from the Parquet files live in its log, see :func:`small_table`).

        Raises:
            PipelineError: ``TABLE_NOT_STORED`` for a view, an unknown name, or a table never written.
        """
        kind = next((k for n, k in self.result.kinds.items() if n.lower() == name.lower()), None)
        path = self._stored_path(name)
        if kind == "view" or (path is None and kind is None):
            known = ", ".join(sorted(self.tables)) or "none"
            what = "is a view (views are not stored)" if kind == "view" else "is not a dataset of this pipeline"
            raise PipelineError(f"{name!r} {what}; stored tables: {known}", code="TABLE_NOT_STORED")
        spark = self.pipeline.spark
        if path is not None:
            return small_table(spark, path, self.pipeline.small_bytes) or spark.read.format("delta").load(str(path))
        try:  # a table with a declared `path`: read through the catalog, where the update published it
            return spark.read.table(f"`{self.spec.schema}`.`{name}`")
        except Exception as exc:
            raise PipelineError(f"table {name!r} has no data: its flow never wrote it", code="TABLE_NOT_STORED",
                                ) from exc

    def _stored_path(self, name: str) -> Path | None:
        tables_dir = self.spec.tables_dir
        if not isinstance(tables_dir, Path) or not tables_dir.is_dir():  # on an object store: read the catalog
            return None
        return next((p for p in tables_dir.iterdir() if p.name.lower() == name.lower()
                     and has_log(p)), None)

    @property
    def tables(self) -> Mapping[str, DataFrame]:
        """The stored tables by name (each read when looked up)."""
        return _Tables(self)

    def run_again(self, *, inputs: InputFiles | None = None, tables: ExternalTables | None = None,
                  configuration: Mapping[str, str] | None = None, full_refresh: bool = False,
                  reset_checkpoints: Sequence[str] = (),
                  replace_where_overrides: Mapping[str, str] | None = None) -> PipelineRun:
        """Add ``inputs`` (and tables, configuration) and run the next update of the same storage
        (``reset_checkpoints``: streaming flows whose checkpoints it clears first, their tables' data kept;
        ``replace_where_overrides``: REPLACE WHERE flow name → the predicate of this update only, a backfill)."""
        return self.pipeline.run(inputs=inputs, tables=tables, configuration=configuration,
                                 full_refresh=full_refresh, reset_checkpoints=reset_checkpoints,
                                 replace_where_overrides=replace_where_overrides)


@dataclass(frozen=True)
class _Tables(Mapping[str, "DataFrame"]):
    run: PipelineRun

    def _names(self) -> list[str]:
        folder = self.run.spec.tables_dir
        if not isinstance(folder, Path) or not folder.is_dir():  # on an object store: the catalog's tables
            return sorted(row.name for row in self.run.pipeline.spark.catalog.listTables(self.run.spec.schema))
        return sorted(p.name for p in folder.iterdir() if has_log(p))

    def __getitem__(self, name: str) -> DataFrame:
        if name not in self._names():
            raise KeyError(name)
        return self.run.table(name)

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __len__(self) -> int:
        return len(self._names())


def run_pipeline(spark: SparkSession, spec_or_folder: str | Path, *, inputs: InputFiles | None = None,
                 tables: ExternalTables | None = None, configuration: Mapping[str, str] | None = None,
                 tmp_path: Path | None = None, paths: Mapping[str, str] | None = None, schema: str | None = None,
                 env: str | None = None) -> PipelineRun:
    """Run one update of a pipeline in a folder and catalog schema of its own.

    Args:
        spark: The session (the ``spark`` fixture).
        spec_or_folder: A spec file (YAML or Databricks settings JSON) or a folder of pipeline files.
        inputs: Input files: relative path → text, bytes, or rows (dicts, written as JSON lines or CSV by the
            file's suffix), written under ``<tmp_path>/inputs``. Every Databricks path prefix of the spec's
            ``paths:`` maps there (see ``paths``); configuration values may say ``{inputs}`` for it.
        tables: External tables pipeline code reads: ``schema.table`` → a DataFrame or ``(rows, schema)``.
        configuration: Pipeline configuration over the spec's (``spark.conf.get`` in pipeline code).
        tmp_path: The test's folder (pytest's ``tmp_path``); a new temporary folder when None. The run's own
            folder is ``<tmp_path>/pipeline`` (``pipeline-2``, ... for more pipelines in one test).
        paths: Databricks path prefix → folder relative to the input folder, over the default mapping.
        schema: The catalog schema the tables are published in (default: the spec's, made unique).
        env: An ``environments`` entry of the spec.

    Returns:
        The run: ``.succeeded``, ``.error``, ``.table(name)``, ``.tables``, ``.flow(name)``,
        ``.expectations``, ``.run_again(inputs=...)``.

    Raises:
        SpecError: The spec is invalid, or ``inputs`` / ``tables`` are (every problem at once).
    """
    base = Path(tmp_path) if tmp_path is not None else Path(tempfile.mkdtemp(prefix="medallion-test-"))
    pipeline = TestPipeline.create(spark, spec_or_folder, folder=fresh_folder(base), schema=schema, paths=paths,
                                   env=env)
    return pipeline.run(inputs=inputs, tables=tables, configuration=configuration)


def small_table(spark: SparkSession, path: Path, max_bytes: int) -> DataFrame | None:
    """A small table of a run as a Parquet read of the files live in its Delta log now (the same rows and
    schema), or None: read it through Delta. A test reads a table right after an update, and Delta would first
    rebuild the table's state for its new version in Spark jobs: 0.5-1 s for a table of a few rows on two cores,
    against about 0.1 s. Only tables whose live files add up to at most ``max_bytes`` (the pipeline's
    ``small_updates.max_input_bytes``) and whose columns are all nullable qualify (a Parquet read reports every
    column nullable; Delta keeps NOT NULL)."""
    from framework.storage.plain import pinned_parquet

    return pinned_parquet(spark, str(path), max_bytes, same_schema=True)
