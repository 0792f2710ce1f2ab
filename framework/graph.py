"""The dataset graph: name resolution, validation (unknown names, cycles, batch/streaming consistency),
topological order and medallion layers. Pure Python: the edges come from whoever discovered the reads
(the runner's resolution pass with Spark, or the static reader in ``framework.static_reads``)."""

from __future__ import annotations

import difflib
import fnmatch
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from framework.declarations import DatasetKind, Flow, FlowKind
from framework.errors import GraphError, Problem
from framework.registry import Registry, normalize_name

LAYERS = ("bronze", "silver", "gold")


@dataclass(frozen=True)
class Read:
    """One read a flow makes. ``via_live`` is True for dlt.read/read_stream and ``LIVE.`` names, which must be
    pipeline datasets; plain ``spark.read.table`` names may be external tables."""

    name: str
    streaming: bool
    via_live: bool = False


def split_name(name: str) -> list[str]:
    """``a.b.c`` into its parts. A part that starts with a backtick is SQL-quoted: it may hold dots, a doubled
    backtick stands for one, and the closing backtick ends it. A backtick elsewhere is part of the name, as
    Python code writes names (``dlt.read("a`b")`` is the dataset ``a`b``, and so is ``LIVE.`a``b```)."""
    parts: list[str] = []
    i = 0
    while True:
        while i < len(name) and name[i] == " ":
            i += 1
        if name[i:i + 1] == "`":
            part, i = _quoted_part(name, i + 1)
            end = name.find(".", i)
        else:
            end = name.find(".", i)
            part = name[i:end if end >= 0 else len(name)].strip()
        parts.append(part)
        if end < 0:
            return parts
        i = end + 1


def _quoted_part(name: str, i: int) -> tuple[str, int]:
    """The quoted part starting after its opening backtick at ``i``, and where the text after it starts."""
    out: list[str] = []
    while i < len(name):
        if name[i] == "`":
            if name[i + 1:i + 2] == "`":
                out.append("`")
                i += 2
                continue
            return "".join(out), i + 1
        out.append(name[i])
        i += 1
    return "".join(out), i  # unterminated: the rest is the name


def relative_name(parts: list[str], catalog: str | None, schema: str) -> list[str]:
    """``parts`` of a table name without the pipeline's default ``catalog`` and ``schema`` (case-insensitive;
    ``hive_metastore`` and ``spark_catalog`` count as the default catalog)."""
    if len(parts) == 3 and parts[0].lower() in {(catalog or "").lower(), "hive_metastore", "spark_catalog"}:
        parts = parts[1:]
    if len(parts) == 2 and parts[0].lower() == schema.lower():
        parts = parts[1:]
    return parts


@dataclass(frozen=True)
class NameResolver:
    """Resolves names as pipelines write them: bare, ``LIVE.x``, ``schema.x``, ``catalog.schema.x``."""

    datasets: frozenset[str]
    schema: str = "default"
    catalog: str | None = None

    def internal(self, name: str) -> str | None:
        """The pipeline dataset ``name`` refers to, or None if it is external. A dataset declared with a schema
        (``sales.orders``) or a catalog too is found by any name that means the same table."""
        parts = split_name(name.strip())
        if len(parts) == 2 and parts[0].upper() == "LIVE":
            parts = parts[1:]
        return self._by_table.get(self._table(parts))

    @cached_property
    def _by_table(self) -> dict[tuple[str, ...], str]:
        return {self._table(split_name(key)): key for key in self.datasets}

    def _table(self, parts: list[str]) -> tuple[str, ...]:
        """The parts of a name that tell tables apart: the default catalog and schema left out."""
        return tuple(relative_name([normalize_name(p) for p in parts], self.catalog, self.schema))

    @staticmethod
    def is_live(name: str) -> bool:
        """Whether ``name`` has the ``LIVE.`` prefix (any case), which only a pipeline dataset may follow."""
        return name.strip().upper().startswith("LIVE.")


@dataclass
class PipelineGraph:
    """A validated graph. ``order`` lists flow names so that every flow runs after the flows it reads from."""

    registry: Registry
    inputs: dict[str, list[str]]  # flow -> internal datasets it reads
    external: dict[str, list[str]]  # flow -> external names it reads
    streaming: dict[str, bool]  # flow -> its query is streaming
    kinds: dict[str, DatasetKind]  # dataset -> resolved kind
    order: list[str]
    layers: dict[str, str] = field(default_factory=dict)

    def flow(self, name: str) -> Flow:
        """The flow named ``name``, in any spelling the registry normalizes.

        Raises:
            KeyError: The pipeline has no such flow.
        """
        return self.registry.flows[normalize_name(name)]

    def upstream_datasets(self, dataset: str) -> set[str]:
        """The pipeline datasets read by the flows into ``dataset`` (its direct inputs, not theirs)."""
        out: set[str] = set()
        for flow in self.registry.flows_into(dataset):
            out.update(self.inputs.get(normalize_name(flow.name), []))
        return out

    def downstream_flows(self, datasets: set[str]) -> set[str]:
        """Flows that (transitively) read any of ``datasets``."""
        result: set[str] = set()
        frontier = set(datasets)
        while frontier:
            new = {f for f, ins in self.inputs.items() if set(ins) & frontier and f not in result}
            result |= new
            frontier = {normalize_name(self.registry.flows[f].target) for f in new}
        return result


def build_graph(registry: Registry, reads: Mapping[str, Sequence[Read]], streaming: Mapping[str, bool], *,
                schema: str = "default", catalog: str | None = None,
                layer_rules: Mapping[str, str] | None = None) -> PipelineGraph:
    """Validate the declarations and their reads; raise :class:`GraphError` listing every problem."""
    problems: list[Problem] = []
    resolver = NameResolver(frozenset(registry.datasets), schema, catalog)
    names = [d.name for d in registry.datasets.values()]
    inputs: dict[str, list[str]] = {}
    external: dict[str, list[str]] = {}
    kinds = _resolve_kinds(registry, streaming, problems)

    for key, flow in registry.flows.items():
        loc = flow.location
        flow_reads = list(reads.get(key, ()))
        if flow.cdc is not None:
            flow_reads.append(Read(flow.cdc.source, streaming=not flow.once, via_live=False))
        if flow.snapshot_cdc is not None and isinstance(flow.snapshot_cdc.source, str):
            flow_reads.append(Read(flow.snapshot_cdc.source, streaming=False))
        ins: list[str] = []
        exts: list[str] = []
        for read in flow_reads:
            target = resolver.internal(read.name)
            if target is None:
                if read.via_live or NameResolver.is_live(read.name):
                    close = difflib.get_close_matches(read.name.split(".")[-1], names, n=1)
                    hint = f" Did you mean '{close[0]}'?" if close else ""
                    problems.append(Problem(
                        "UNRESOLVED_DATASET",
                        f"flow '{flow.name}' reads '{read.name}', which is not defined in this pipeline.{hint}",
                        loc.file, loc.line))
                elif read.name not in exts:
                    exts.append(read.name)
                continue
            if target not in ins:
                ins.append(target)
            if read.streaming:
                source = registry.datasets[target]
                if kinds[target] is DatasetKind.MATERIALIZED_VIEW:
                    problems.append(Problem(
                        "STREAMING_READ_OF_MATERIALIZED_VIEW",
                        f"flow '{flow.name}' streams from materialized view '{source.name}'; a materialized view "
                        "is recomputed, not appended to. " + _say(
                            loc.file, f"Use dlt.read(\"{source.name}\") (batch) or make '{source.name}' a "
                            "streaming table.", f"Read it without STREAM (FROM {source.name}) or make "
                            f"'{source.name}' a STREAMING TABLE."), loc.file, loc.line))
        inputs[key] = ins
        external[key] = exts

    _check_targets(registry, streaming, kinds, problems)
    order = _topological_order(registry, inputs, problems)
    if problems:
        raise GraphError(problems)
    graph = PipelineGraph(registry=registry, inputs=inputs, external=external,
                          streaming={k: bool(streaming.get(k, False)) for k in registry.flows}, kinds=kinds,
                          order=order)
    graph.layers = assign_layers(graph, layer_rules or {})
    return graph


def _say(file: str | None, python: str, sql: str) -> str:
    """A fix in the language of the declaration at ``file``: SQL for a ``.sql`` library, else Python."""
    return sql if file is not None and str(file).lower().endswith(".sql") else python


def _resolve_kinds(registry: Registry, streaming: Mapping[str, bool], problems: list[Problem]
                   ) -> dict[str, DatasetKind]:
    kinds: dict[str, DatasetKind] = {}
    for key, dataset in registry.datasets.items():
        kind = dataset.kind
        if kind is DatasetKind.TABLE:
            own = registry.flows.get(key)
            kind = DatasetKind.STREAMING_TABLE if own is not None and streaming.get(key) else \
                DatasetKind.MATERIALIZED_VIEW
            if any(f.kind is FlowKind.APPEND for f in registry.flows_into(key)):
                kind = DatasetKind.STREAMING_TABLE
        if kind is DatasetKind.MATERIALIZED_VIEW and streaming.get(key):
            loc = dataset.location
            problems.append(Problem(
                "STREAMING_QUERY_FOR_MATERIALIZED_VIEW",
                f"materialized view '{dataset.name}' " + _say(
                    loc.file, "returns a streaming DataFrame; use @dp.table (streaming table) or read its inputs "
                    "with spark.read / dlt.read.", "reads with STREAM; declare it as a STREAMING TABLE, or read "
                    "its inputs without STREAM."), loc.file, loc.line))
        kinds[key] = kind
    return kinds


def _check_sink_flow(registry: Registry, flow: Flow, target: str, problems: list[Problem]) -> bool:
    """The checks of a flow into a sink, or of an update flow (which only sinks take); True when ``flow`` is
    either (the target checks of tables do not apply)."""
    loc = flow.location
    if target in registry.sinks:
        if flow.kind is not FlowKind.APPEND:
            problems.append(Problem("INVALID_SINK_FLOW", f"flow '{flow.name}' targets sink '{flow.target}': "
                                    "only @append_flow may write to a sink", loc.file, loc.line))
        if flow.expectations:
            problems.append(Problem("EXPECTATIONS_ON_SINK", f"flow '{flow.name}' targets sink "
                                    f"'{flow.target}': expectations are not allowed on sinks", loc.file, loc.line))
        return True
    if flow.output_mode == "update":
        problems.append(Problem("UPDATE_FLOW_TARGET_NOT_SINK", f"update flow '{flow.name}' targets "
                                f"'{flow.target}', which is not a sink: update flows write to sinks only "
                                "(dp.create_sink, @dp.foreach_sink); use @dp.append_flow for a table",
                                loc.file, loc.line))
        return True
    return False


def _check_targets(registry: Registry, streaming: Mapping[str, bool], kinds: Mapping[str, DatasetKind],
                   problems: list[Problem]) -> None:
    names = [d.name for d in registry.datasets.values()] + [s.name for s in registry.sinks.values()]
    for key, flow in registry.flows.items():
        loc = flow.location
        target = normalize_name(flow.target)
        if _check_sink_flow(registry, flow, target, problems):
            continue
        dataset = registry.datasets.get(target)
        if dataset is None:
            close = difflib.get_close_matches(flow.target, names, n=1)
            hint = f" Did you mean '{close[0]}'?" if close else " Declare it first: " + _say(
                loc.file, f"dlt.create_streaming_table(\"{flow.target}\").",
                f"CREATE OR REFRESH STREAMING TABLE {flow.target};")
            problems.append(Problem("UNKNOWN_FLOW_TARGET",
                                    f"flow '{flow.name}' writes to '{flow.target}', which is not declared.{hint}",
                                    loc.file, loc.line))
            continue
        kind = kinds[target]
        if flow.kind in (FlowKind.APPEND, FlowKind.AUTO_CDC, FlowKind.AUTO_CDC_SNAPSHOT):
            if kind is not DatasetKind.STREAMING_TABLE:
                problems.append(Problem(
                    "FLOW_TARGET_NOT_STREAMING_TABLE",
                    f"flow '{flow.name}' ({flow.kind.value}) targets '{dataset.name}', a {kind.value}; its target "
                    "must be a streaming table: " + _say(loc.file, f"dlt.create_streaming_table(\"{dataset.name}\")",
                                                         f"CREATE OR REFRESH STREAMING TABLE {dataset.name}"),
                    loc.file, loc.line))
            if flow.kind is FlowKind.APPEND and not flow.once and flow.replace_where is None \
                    and not streaming.get(key, True):
                problems.append(Problem(
                    "APPEND_FLOW_NOT_STREAMING",
                    f"append flow '{flow.name}' " + _say(
                        loc.file, "returns a batch DataFrame; use spark.readStream / dlt.read_stream, or pass "
                        "once=True for a one-time backfill", "reads without STREAM; read its source with "
                        "STREAM(...), or write INSERT INTO ONCE for a one-time backfill"), loc.file, loc.line))
        if flow.kind in (FlowKind.AUTO_CDC, FlowKind.AUTO_CDC_SNAPSHOT) and dataset.expectations:
            problems.append(Problem(
                "EXPECTATIONS_ON_APPLY_CHANGES_TARGET",
                f"'{dataset.name}' is an APPLY CHANGES target and declares expectations; put the expectations "
                "on the source view instead", dataset.location.file, dataset.location.line))
    for key, dataset in registry.datasets.items():
        if dataset.declared_without_query and not registry.flows_into(key):
            problems.append(Problem(
                "NO_FLOWS", f"streaming table '{dataset.name}' has no flows writing to it: " + _say(
                    dataset.location.file, "add an @append_flow or dlt.apply_changes(...) with this target",
                    f"add a CREATE FLOW ... AS INSERT INTO {dataset.name} BY NAME ... or an APPLY CHANGES INTO "
                    f"{dataset.name} ..."), dataset.location.file, dataset.location.line))
        _check_mixed_flows(registry, key, problems)


def _check_mixed_flows(registry: Registry, key: str, problems: list[Problem]) -> None:
    """An APPLY CHANGES target takes only CDC flows, and not both kinds: Databricks' reference says a streaming
    table cannot be the target of both ``create_auto_cdc_from_snapshot_flow()`` and ``create_auto_cdc_flow()``."""
    dataset = registry.datasets[key]
    flows = registry.flows_into(key)
    cdc = [f for f in flows if f.kind in (FlowKind.AUTO_CDC, FlowKind.AUTO_CDC_SNAPSHOT)]
    others = [f for f in flows if f not in cdc]
    if cdc and others:
        problems.append(Problem(
            "MIXED_FLOWS", f"'{dataset.name}' mixes APPLY CHANGES flows with other flows "
            f"({', '.join(f.name for f in others)}); an APPLY CHANGES target only takes CDC flows",
            dataset.location.file, dataset.location.line))
    snapshots = [f.name for f in cdc if f.kind is FlowKind.AUTO_CDC_SNAPSHOT]
    changes = [f.name for f in cdc if f.kind is FlowKind.AUTO_CDC]
    if snapshots and changes:
        problems.append(Problem(
            "MIXED_CDC_FLOWS", f"'{dataset.name}' is the target of AUTO CDC FROM SNAPSHOT ({', '.join(snapshots)}) "
            f"and of AUTO CDC ({', '.join(changes)}), which Databricks does not allow: give each its own target "
            "and combine them downstream", dataset.location.file, dataset.location.line))


def _topological_order(registry: Registry, inputs: Mapping[str, list[str]], problems: list[Problem]
                       ) -> list[str]:
    # dataset -> flows writing it; flow -> datasets it reads
    writers: dict[str, list[str]] = {}
    for key, flow in registry.flows.items():
        writers.setdefault(normalize_name(flow.target), []).append(key)
    deps = {key: sorted({w for d in inputs.get(key, []) for w in writers.get(d, []) if w != key}
                        | _self_cycle(key, inputs, registry) | _ordered_after(registry, key, problems))
            for key in registry.flows}
    order: list[str] = []
    state: dict[str, int] = {}
    stack: list[str] = []
    reported: set[frozenset[str]] = set()

    def visit(node: str) -> None:
        if state.get(node) == 2:
            return
        if state.get(node) == 1:
            cycle = [*stack[stack.index(node):], node]
            signature = frozenset(cycle)
            if signature not in reported:
                reported.add(signature)
                path = " -> ".join(registry.flows[n].target for n in cycle)
                loc = registry.flows[node].location
                problems.append(Problem("CYCLE", f"the datasets form a cycle: {path}. Break it by reading one of "
                                        "them from an earlier snapshot or a separate pipeline.", loc.file, loc.line))
            return
        state[node] = 1
        stack.append(node)
        for dep in deps[node]:
            visit(dep)
        stack.pop()
        state[node] = 2
        order.append(node)

    for key in registry.flows:
        visit(key)
    return order


def _ordered_after(registry: Registry, key: str, problems: list[Problem]) -> set[str]:
    """The flows ``key`` names in ``depends_on`` (a scheduling edge); an unknown name is FLOW_DEPENDS_ON_UNKNOWN."""
    flow = registry.flows[key]
    found = set()
    for name in flow.depends_on:
        other = normalize_name(name)
        if other in registry.flows:
            found.add(other)
        else:
            close = difflib.get_close_matches(name, [f.name for f in registry.flows.values()], n=1)
            hint = f" Did you mean '{close[0]}'?" if close else ""
            problems.append(Problem("FLOW_DEPENDS_ON_UNKNOWN", f"flow '{flow.name}' depends_on '{name}', which is "
                                    f"not a flow of this pipeline.{hint}", flow.location.file, flow.location.line))
    return found


def _self_cycle(key: str, inputs: Mapping[str, list[str]], registry: Registry) -> set[str]:
    return {key} if normalize_name(registry.flows[key].target) in inputs.get(key, []) and \
        registry.flows[key].kind is FlowKind.QUERY else set()


def assign_layers(graph: PipelineGraph, rules: Mapping[str, str]) -> dict[str, str]:
    """The layer (bronze, silver or gold) of every dataset: the ``quality`` table property (DLT's
    convention), then the spec's ``layers`` rules (name glob → layer), then a name prefix or suffix, then the
    file name, then the position in the graph (sources bronze, sinks gold)."""
    layers: dict[str, str] = {}
    for key, dataset in graph.registry.datasets.items():
        layer = str(dataset.table_properties.get("quality", "")).lower()
        if layer not in LAYERS:
            layer = next((v.lower() for pattern, v in rules.items() if fnmatch.fnmatch(dataset.name, pattern)), "")
        if layer not in LAYERS:
            layer = next((name for name in LAYERS if name in dataset.name.lower()), "")
        if layer not in LAYERS:
            stem = Path(dataset.location.file).stem.lower()
            layer = next((name for name in LAYERS if name in stem), "")
        if layer not in LAYERS:
            has_inputs = bool(graph.upstream_datasets(key))
            readers = graph.downstream_flows({key})
            layer = "bronze" if not has_inputs else ("gold" if not readers else "silver")
        layers[key] = layer
    return layers
