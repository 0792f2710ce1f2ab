"""Resolution: call every query function once (lazily, no Spark jobs) to discover what each flow reads,
whether it is streaming, and its output schema; check every expectation against that schema; then build and
validate the graph. Every problem is reported at once, before any flow runs."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from typing_extensions import override

from framework.columns import declared_schema, with_computed_columns
from framework.declarations import Dataset, DatasetKind, Expectation, Flow, FlowKind
from framework.errors import GraphError, PipelineError, Problem, ProblemsError, RuleFileError
from framework.graph import NameResolver, PipelineGraph, Read, build_graph
from framework.registry import Registry, normalize_name
from framework.runner.query import call_query_function
from framework.runner.reads import FlowReader, ReadRouter, SourceKey, external_read, source_key
from framework.stand_ins import empty_frame

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


class _Unresolvable(Exception):
    """A flow read a dataset that has no schema yet (unknown, or part of a cycle): stop resolving that flow."""


@dataclass(frozen=True)
class Resolution:
    """What resolution found: the validated graph, each dataset's output (an unexecuted DataFrame), and the
    Auto Loader sources it built."""

    graph: PipelineGraph
    stand_ins: Mapping[str, DataFrame]
    sources: Mapping[SourceKey, DataFrame]

    def reusable_sources(self, cleared: set[str]) -> dict[SourceKey, DataFrame]:
        """The sources execution may take instead of building them again: those of flows whose target was not
        cleared by a full refresh (which removed their schema location and checkpoint), and whose stream
        re-checks what it reads (``reusable_source``)."""
        flows = self.graph.registry.flows
        return {key: df for key, df in self.sources.items()
                if normalize_name(flows[key[0]].target) not in cleared}


@dataclass
class Resolver:
    """Owns the state of one resolution; :meth:`resolve` runs it."""

    router: ReadRouter
    registry: Registry
    stand_ins: dict[str, DataFrame] = field(default_factory=dict)  # dataset -> output DataFrame
    reads: dict[str, list[Read]] = field(default_factory=dict)
    streaming: dict[str, bool] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    sources: dict[SourceKey, DataFrame] = field(default_factory=dict)
    resolving: list[str] = field(default_factory=list)
    rule_problems: list[Problem] = field(default_factory=list)  # in rule files: RuleFileError when alone

    @property
    def names(self) -> NameResolver:
        """Name resolution over this pipeline's datasets."""
        spec = self.router.env.spec
        return NameResolver(frozenset(self.registry.datasets), spec.schema, spec.catalog)

    def resolve(self) -> Resolution:
        """Resolve every flow and build the validated graph (raises GraphError with every problem)."""
        for key in self.registry.datasets:
            self.resolve_dataset(key)
        for key in self.registry.flows:
            if key not in self.reads:
                self._resolve_flow(key)
        self._check_expectations()
        spec = self.router.env.spec
        try:
            graph = build_graph(self.registry, self.reads, self.streaming, schema=spec.schema,
                                catalog=spec.catalog, layer_rules=spec.layers)
        except GraphError as exc:
            raise GraphError([*self.problems, *self.rule_problems, *exc.problems]) from None
        if self.problems:
            raise GraphError([*self.problems, *self.rule_problems])
        if self.rule_problems:
            raise RuleFileError("the pipeline's rule files", self.rule_problems)
        return Resolution(graph, dict(self.stand_ins), dict(self.sources))

    def resolve_dataset(self, key: str) -> None:
        """Resolve every flow into dataset ``key`` (once)."""
        if key in self.stand_ins or key in self.resolving:
            return
        self.resolving.append(key)
        try:
            for flow in self.registry.flows_into(key):
                self._resolve_flow(normalize_name(flow.name))
        finally:
            self.resolving.remove(key)

    def _resolve_flow(self, key: str) -> None:
        if key in self.reads:
            return
        flow = self.registry.flows[key]
        self.reads[key] = []
        try:
            self._resolve_output(key, flow)
        except _Unresolvable:
            self.streaming.setdefault(key, False)
        except PipelineError as exc:
            if exc.file is None and not isinstance(exc, ProblemsError):  # e.g. a connector missing: its line
                from framework.failures import user_frame

                exc.locate(*(user_frame(exc) or (flow.location.file, flow.location.line)))
            raise
        except Exception as exc:  # Spark's analysis of the user's query, reported with its place
            from framework.failures import headline, user_frame

            # the line of the user's code that raised (the query function's, or a helper's), else the flow's
            file, line = user_frame(exc) or (flow.location.file, flow.location.line)
            self.problems.append(Problem("QUERY_ANALYSIS_FAILED",
                                         f"flow '{flow.name}' failed analysis: {headline(exc)}", file, line))
            self.streaming.setdefault(key, False)

    def _resolve_output(self, key: str, flow: Flow) -> None:
        from framework.cdc.schema import target_stand_in

        target = normalize_name(flow.target)
        spark = self.router.spark
        if flow.query_function is not None:
            reader = ResolveReader(self.router, self.registry, self.names, key, resolver=self)
            self.reads[key] = reader.reads  # kept when the flow stops at an unknown name: the graph reports it
            with self.router.activate(reader):
                df = call_query_function(flow)
            self.streaming[key] = bool(df.isStreaming)
            self.stand_ins.setdefault(target, self._as_declared(target, df))
        elif flow.cdc is not None:
            self.streaming[key] = not flow.once
            source = self._stand_in_for(flow.cdc.source, streaming=not flow.once)
            if source is not None:
                self.stand_ins.setdefault(target, target_stand_in(spark, source, flow.cdc))
        elif flow.snapshot_cdc is not None:
            self.streaming[key] = False
            src = flow.snapshot_cdc.source
            source = self._stand_in_for(src, streaming=False) if isinstance(src, str) else None
            if source is not None:
                self.stand_ins.setdefault(target, target_stand_in(spark, source, flow.snapshot_cdc))

    def _as_declared(self, target: str, df: DataFrame) -> DataFrame:
        """A query's output as its table reads: with the generated columns of a declared schema, so that
        downstream queries and expectations see them (a schema that does not parse is the flow's error)."""
        dataset = self.registry.datasets.get(target)
        if dataset is None or dataset.schema is None:
            return df
        try:
            declared = declared_schema(self.router.spark, dataset.schema)
        except Exception:  # reported with the dataset's place when its flow runs (INVALID_SCHEMA)
            return df
        return with_computed_columns(df, declared)

    def _stand_in_for(self, name: str, streaming: bool) -> DataFrame | None:
        internal = self.names.internal(name)
        if internal is None:
            return external_read(self.router.spark, name, streaming)
        self.resolve_dataset(internal)
        return self.stand_ins.get(internal)

    def _check_expectations(self) -> None:
        """Every expectation analysed against the output it checks, before any flow runs (as on Databricks):
        a dataset's rule file (``expectations/<dataset>.yml``) with all of its problems, and every other rule
        by itself, an error naming the expectation and its dataset."""
        for key, dataset in self.registry.datasets.items():
            df = self.stand_ins.get(key)
            if df is None:
                continue
            rules = [*dataset.expectations, *(e for f in self.registry.flows_into(key) for e in f.expectations)]
            if rules and not self._check_rule_file(dataset, df):
                for expectation in rules:
                    self._check_expectation(df, expectation, dataset.name)

    def _check_rule_file(self, dataset: Dataset, df: DataFrame) -> bool:
        """Validate the dataset's rule file, if it has one (False when it has none)."""
        from framework.quality.rules import find_rule_file, validate_rules

        try:
            path = find_rule_file(dataset.name)
        except PipelineError:
            return False
        try:
            validate_rules(path, schema=df.schema, spark=self.router.spark)
        except RuleFileError as exc:
            self.rule_problems.extend(exc.problems)
        return True

    def _check_expectation(self, df: DataFrame, expectation: Expectation, dataset: str) -> None:
        from framework.quality.engine import constraint_column

        try:
            _ = df.select(constraint_column(expectation)).schema  # analysis only
        except Exception as exc:  # Spark's analysis of the rule, reported with its place
            loc = expectation.location
            self.problems.append(Problem(
                "INVALID_EXPECTATION",
                f"expectation '{expectation.name}' of dataset '{dataset}' ({expectation.constraint_sql}) is not "
                f"valid: {_first_line(exc)}", loc.file or None, loc.line or None))


@dataclass
class ResolveReader(FlowReader):
    """Resolution-phase reads: another dataset's unexecuted output stands in for its table."""

    resolver: Resolver | None = None

    @property
    def _resolver(self) -> Resolver:
        assert self.resolver is not None
        return self.resolver

    @override
    def unknown_dataset(self, name: str) -> DataFrame:
        raise _Unresolvable(name)  # the graph reports the unknown name, with a "did you mean"

    @override
    def cloud_files(self, path: str, options: dict[str, str], schema: Any) -> DataFrame:
        from framework.autoloader import reusable_source
        from framework.rescued import collect_rescued_columns, remember_rescued_columns

        with collect_rescued_columns() as rescued:
            df = self.build_cloud_files(path, options, schema)
        if reusable_source(options, user_schema=schema is not None):
            remember_rescued_columns(df, rescued)  # the flow that takes it counts them (framework/rescued.py)
            self._resolver.sources[source_key(self.flow_key, path, options, schema)] = df
        return df

    @override
    def dataset(self, key: str, dataset: Dataset, streaming: bool,
                options: Mapping[str, str] | None = None) -> DataFrame:
        df = self._stand_in(key, dataset, streaming)
        if str((options or {}).get("readChangeFeed", "")).lower() == "true":
            df = _with_change_columns(df)  # Delta's change data feed adds these to the table's columns
        return df

    def _stand_in(self, key: str, dataset: Dataset, streaming: bool) -> DataFrame:
        resolver = self._resolver
        if key in resolver.resolving:
            path = " -> ".join([*resolver.resolving[resolver.resolving.index(key):], key])
            loc = self.flow.location
            resolver.problems.append(Problem("CYCLE", f"the datasets form a cycle: {path}", loc.file, loc.line))
            raise _Unresolvable(key)
        resolver.resolve_dataset(key)
        df = resolver.stand_ins.get(key)
        spark = self.env.spark
        if df is None:
            if dataset.schema is not None:
                return empty_frame(spark, declared_schema(spark, dataset.schema))
            raise _Unresolvable(key)
        if df.isStreaming and not streaming:
            return empty_frame(spark, df.schema)
        return df


def _with_change_columns(df: DataFrame) -> DataFrame:
    from pyspark.sql import functions as F

    return df.withColumns({"_change_type": F.lit(None).cast("string"),
                           "_commit_version": F.lit(None).cast("bigint"),
                           "_commit_timestamp": F.lit(None).cast("timestamp")})


def flow_kind_label(flow: Flow, kinds: Mapping[str, DatasetKind], *, sink: bool = False) -> str:
    """How the summary and the event log name a flow's kind."""
    if flow.kind in (FlowKind.AUTO_CDC, FlowKind.AUTO_CDC_SNAPSHOT):
        return flow.kind.value
    if sink:
        return "sink"
    return kinds.get(normalize_name(flow.target), DatasetKind.TABLE).value


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
