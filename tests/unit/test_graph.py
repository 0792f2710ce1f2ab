"""The dataset graph (framework.graph): resolution, validation, order, layers; static read discovery."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import framework.shim.dlt as dlt
import framework.shim.dp as dp
from framework.declarations import Dataset, DatasetKind, Flow, FlowKind, SourceLocation
from framework.errors import GraphError
from framework.graph import NameResolver, PipelineGraph, Read, build_graph
from framework.loader import load_pipeline
from framework.registry import Registry, registration_context
from framework.spec import load_spec, parse_spec
from framework.static_reads import static_reads

FIXTURES = Path(__file__).parent / "fixtures"
THIS_FILE = __file__


def q():
    return None


@pytest.fixture
def reg() -> Iterator[Registry]:
    with registration_context() as registry:
        yield registry


def table(name: str, **kwargs) -> None:
    dlt.table(name=name, **kwargs)(q)


def mv(name: str, **kwargs) -> None:
    dp.materialized_view(name=name, **kwargs)(q)


def view(name: str) -> None:
    dlt.view(name=name)(q)


def graph_problems(reg: Registry, reads: dict, streaming: dict | None = None, **kwargs) -> GraphError:
    with pytest.raises(GraphError) as info:
        build_graph(reg, reads, streaming or {}, **kwargs)
    assert info.value.code == "INVALID_GRAPH"
    return info.value


def by_code(err: GraphError, code: str) -> list:
    return [p for p in err.problems if p.code == code]


# ------------------------------------------------------------------------------------------------ resolution
def test_unknown_live_name_with_did_you_mean(reg) -> None:
    table("orders_clean")
    table("report")
    err = graph_problems(reg, {"report": [Read("orders_clen", False, via_live=True)]})
    [problem] = by_code(err, "UNRESOLVED_DATASET")
    assert "flow 'report' reads 'orders_clen', which is not defined in this pipeline. Did you mean 'orders_clean'?" \
        in problem.message
    assert problem.file == THIS_FILE and problem.line > 0
    assert "[UNRESOLVED_DATASET]" in str(err)


def test_unknown_live_prefixed_name_from_spark_read_table(reg) -> None:
    table("orders")
    table("report")
    err = graph_problems(reg, {"report": [Read("LIVE.order", False)]})
    assert "Did you mean 'orders'?" in by_code(err, "UNRESOLVED_DATASET")[0].message


def test_external_names_are_allowed_for_spark_read_table(reg) -> None:
    table("report")
    graph = build_graph(reg, {"report": [Read("samples.nyctaxi.trips", False), Read("ext_table", False),
                                         Read("ext_table", False)]}, {})
    assert graph.external["report"] == ["samples.nyctaxi.trips", "ext_table"]
    assert graph.inputs["report"] == []


@pytest.mark.parametrize("name", ["orders", "ORDERS", "LIVE.orders", "live.orders", "sales.orders",
                                  "main.sales.orders", "hive_metastore.sales.orders", "spark_catalog.sales.orders",
                                  "`sales`.`orders`", " orders "])
def test_qualified_names_resolve_to_pipeline_datasets(reg, name) -> None:
    table("orders")
    table("report")
    graph = build_graph(reg, {"report": [Read(name, False)]}, {}, schema="sales", catalog="main")
    assert graph.inputs["report"] == ["orders"] and graph.external["report"] == []


@pytest.mark.parametrize(("declared", "read", "found"), [
    ("reporting.by_region", "reporting.by_region", True), ("reporting.by_region", "main.reporting.by_region", True),
    ("reporting.by_region", "by_region", False), ("reporting.by_region", "other.reporting.by_region", False),
    ("main.sales.orders", "orders", True), ("main.sales.orders", "sales.orders", True),
    ("dev.marts.seen", "dev.marts.seen", True), ("dev.marts.seen", "marts.seen", False),
    ("`odd.name`", "odd.name", False), ("`odd.name`", "`odd.name`", True)])
def test_datasets_named_with_a_schema_or_catalog(declared, read, found) -> None:
    """The default publishing mode: a dataset of another schema or catalog is read by any name of that table."""
    resolver = NameResolver(frozenset({declared.lower()}), "sales", "main")
    assert (resolver.internal(read) == declared.lower()) is found


@pytest.mark.parametrize("name", ["other.orders", "other_catalog.sales.orders", "main.other.orders"])
def test_other_schemas_are_external(reg, name) -> None:
    table("orders")
    table("report")
    graph = build_graph(reg, {"report": [Read(name, False)]}, {}, schema="sales", catalog="main")
    assert graph.inputs["report"] == [] and graph.external["report"] == [name]


def test_name_resolver_directly() -> None:
    resolver = NameResolver(frozenset({"a"}), schema="s")
    assert resolver.internal("LIVE.a") == "a" and resolver.internal("s.A") == "a"
    assert resolver.internal("b") is None and resolver.internal("x.y.z.a") is None
    assert NameResolver.is_live("live.x") and not NameResolver.is_live("x")


# ---------------------------------------------------------------------------------------------------- cycles
def test_cycle_is_reported_with_its_path(reg) -> None:
    table("a")
    table("b")
    table("c")
    err = graph_problems(reg, {"a": [Read("c", False)], "b": [Read("a", False)], "c": [Read("b", False)]})
    [cycle] = by_code(err, "CYCLE")
    path = cycle.message.split("cycle: ")[1].split(".")[0]
    nodes = path.split(" -> ")
    assert len(nodes) == 4 and nodes[0] == nodes[-1] and set(nodes) == {"a", "b", "c"}
    assert "Break it" in cycle.message


def test_self_read_is_a_cycle(reg) -> None:
    table("a")
    err = graph_problems(reg, {"a": [Read("a", False)]})
    assert "a -> a" in by_code(err, "CYCLE")[0].message


# ----------------------------------------------------------------------------------------- batch / streaming
def test_streaming_read_of_a_materialized_view(reg) -> None:
    mv("agg")
    table("downstream")
    err = graph_problems(reg, {"downstream": [Read("agg", True, via_live=True)]}, {"downstream": True})
    [problem] = by_code(err, "STREAMING_READ_OF_MATERIALIZED_VIEW")
    assert "streams from materialized view 'agg'" in problem.message and 'dlt.read("agg")' in problem.message


def test_streaming_read_of_a_batch_dlt_table(reg) -> None:
    table("agg")  # batch query → materialized view
    table("downstream")
    err = graph_problems(reg, {"downstream": [Read("agg", True, via_live=True)]}, {"agg": False, "downstream": True})
    assert by_code(err, "STREAMING_READ_OF_MATERIALIZED_VIEW")


def test_streaming_query_for_a_materialized_view(reg) -> None:
    mv("agg")
    err = graph_problems(reg, {}, {"agg": True})
    assert by_code(err, "STREAMING_QUERY_FOR_MATERIALIZED_VIEW")


def test_table_kind_follows_the_query(reg) -> None:
    table("streamed")
    table("batch")
    view("v")
    table("with_append")
    dlt.append_flow(target="with_append", name="extra")(q)
    graph = build_graph(reg, {}, {"streamed": True, "batch": False, "extra": True})
    assert graph.kinds == {"streamed": DatasetKind.STREAMING_TABLE, "batch": DatasetKind.MATERIALIZED_VIEW,
                           "v": DatasetKind.VIEW, "with_append": DatasetKind.STREAMING_TABLE}
    assert graph.streaming == {"streamed": True, "batch": False, "v": False, "with_append": False, "extra": True}


def test_append_flow_targeting_a_materialized_view(reg) -> None:
    mv("agg")
    dlt.append_flow(target="agg", name="more")(q)
    err = graph_problems(reg, {}, {"more": True})
    [problem] = by_code(err, "FLOW_TARGET_NOT_STREAMING_TABLE")
    assert "flow 'more' (append) targets 'agg', a materialized_view" in problem.message
    assert 'dlt.create_streaming_table("agg")' in problem.message


def test_append_flow_batch_without_once(reg) -> None:
    dlt.create_streaming_table("events")
    dlt.append_flow(target="events", name="batchy")(q)
    dlt.append_flow(target="events", name="backfill", once=True)(q)
    err = graph_problems(reg, {}, {"batchy": False, "backfill": False})
    [problem] = by_code(err, "APPEND_FLOW_NOT_STREAMING")
    assert "append flow 'batchy'" in problem.message and "once=True" in problem.message


def test_apply_changes_target_not_declared(reg) -> None:
    view("changes")
    dlt.apply_changes(target="dim_customer", source="changes", keys=["id"], sequence_by="ts")
    err = graph_problems(reg, {})
    [problem] = by_code(err, "UNKNOWN_FLOW_TARGET")
    assert "writes to 'dim_customer', which is not declared" in problem.message
    assert 'dlt.create_streaming_table("dim_customer")' in problem.message


def test_unknown_flow_target_did_you_mean(reg) -> None:
    dlt.create_streaming_table("dim_customers")
    view("changes")
    dlt.apply_changes(target="dim_customers", source="changes", keys=["id"], sequence_by="ts")
    dlt.append_flow(target="dim_customer", name="f")(q)
    err = graph_problems(reg, {}, {"f": True})
    assert "Did you mean 'dim_customers'?" in by_code(err, "UNKNOWN_FLOW_TARGET")[0].message


def test_expectations_on_an_apply_changes_target(reg) -> None:
    dlt.create_streaming_table("dim", expect_all={"valid": "id IS NOT NULL"})
    view("changes")
    dlt.apply_changes(target="dim", source="changes", keys=["id"], sequence_by="ts")
    err = graph_problems(reg, {})
    [problem] = by_code(err, "EXPECTATIONS_ON_APPLY_CHANGES_TARGET")
    assert "put the expectations on the source view" in problem.message


def test_streaming_table_without_flows(reg) -> None:
    dlt.create_streaming_table("lonely")
    err = graph_problems(reg, {})
    [problem] = by_code(err, "NO_FLOWS")
    assert "streaming table 'lonely' has no flows" in problem.message
    assert problem.file == THIS_FILE


def test_apply_changes_target_mixed_with_append_flows(reg) -> None:
    dlt.create_streaming_table("dim")
    view("changes")
    dlt.apply_changes(target="dim", source="changes", keys=["id"], sequence_by="ts")
    dlt.append_flow(target="dim", name="extra")(q)
    err = graph_problems(reg, {}, {"extra": True})
    assert "(extra)" in by_code(err, "MIXED_FLOWS")[0].message


def test_one_target_of_snapshot_and_change_flows_is_refused_as_databricks_does(reg) -> None:
    dlt.create_streaming_table("dim")
    view("changes")
    view("snapshot")
    dlt.create_auto_cdc_flow(target="dim", source="changes", keys=["id"], sequence_by="ts", name="from_changes")
    dlt.create_auto_cdc_from_snapshot_flow(target="dim", source="snapshot", keys=["id"])
    err = graph_problems(reg, {})
    [problem] = by_code(err, "MIXED_CDC_FLOWS")
    assert "'dim'" in problem.message and "from_changes" in problem.message
    assert problem.file == THIS_FILE and not by_code(err, "MIXED_FLOWS")


def test_sink_rules(reg) -> None:
    dp.create_sink("out", "delta", {"path": "/tmp/out"})
    dlt.create_streaming_table("src")
    dlt.append_flow(target="src", name="feed")(q)
    dlt.append_flow(target="out", name="to_out")(dlt.expect("e", "a > 0")(lambda: None))
    view("changes")
    dlt.apply_changes(target="out", source="changes", keys=["id"], sequence_by="ts", flow_name="cdc_to_sink")
    err = graph_problems(reg, {"to_out": [Read("src", True)]}, {"feed": True, "to_out": True})
    assert "only @append_flow may write to a sink" in by_code(err, "INVALID_SINK_FLOW")[0].message
    assert by_code(err, "EXPECTATIONS_ON_SINK")[0].message.startswith("flow 'to_out' targets sink 'out'")


def test_every_problem_is_reported_at_once(reg) -> None:
    mv("agg")
    table("a")
    table("b")
    dlt.create_streaming_table("lonely")
    err = graph_problems(reg, {"a": [Read("b", False), Read("missing", False, via_live=True)],
                               "b": [Read("a", False), Read("agg", True)]}, {"b": True})
    assert {"UNRESOLVED_DATASET", "CYCLE", "STREAMING_READ_OF_MATERIALIZED_VIEW", "NO_FLOWS"} <= set(err.codes)
    assert str(err).startswith(f"[INVALID_GRAPH] the pipeline graph is invalid: {len(err.problems)} problem(s)")


# ------------------------------------------------------------------------------------------------------- order
def test_topological_order_respects_dependencies(reg) -> None:
    # declared downstream-first, on purpose
    table("gold_report")
    view("silver_view")
    dlt.create_streaming_table("dim")
    dlt.apply_changes(target="dim", source="silver_view", keys=["id"], sequence_by="ts")
    table("bronze_raw")
    snapshot_source = "bronze_raw"
    dlt.create_streaming_table("snap_dim")
    dlt.apply_changes_from_snapshot(target="snap_dim", source=snapshot_source, keys=["id"])
    reads = {"gold_report": [Read("dim", False), Read("silver_view", False)],
             "silver_view": [Read("bronze_raw", True)]}
    graph = build_graph(reg, reads, {"bronze_raw": True, "silver_view": True})
    order = graph.order
    assert sorted(order) == sorted(reg.flows)
    for before, after in [("bronze_raw", "silver_view"), ("silver_view", "dim"), ("dim", "gold_report"),
                          ("bronze_raw", "snap_dim")]:
        assert order.index(before) < order.index(after), (before, after, order)
    assert graph.inputs["dim"] == ["silver_view"]  # the CDC source is an edge
    assert graph.inputs["snap_dim"] == ["bronze_raw"]
    assert graph.upstream_datasets("gold_report") == {"dim", "silver_view"}
    assert graph.downstream_flows({"bronze_raw"}) == {"silver_view", "dim", "gold_report", "snap_dim"}
    assert graph.flow("DIM").kind is FlowKind.AUTO_CDC
    assert isinstance(graph, PipelineGraph)


# ------------------------------------------------------------------------------------------------------ layers
def _registry_with_files(*datasets: tuple[str, str, dict]) -> Registry:
    registry = Registry()
    for name, file, props in datasets:
        loc = SourceLocation(file, 1)
        registry.add_dataset(Dataset(name, DatasetKind.TABLE, loc, table_properties=props))
        registry.add_flow(Flow(name, name, FlowKind.QUERY, loc, query_function=q))
    return registry


def test_layers_from_table_properties_first(reg) -> None:
    table("orders_gold_named", table_properties={"quality": "Bronze"})
    table("plain", table_properties={"quality": "silver"})
    graph = build_graph(reg, {}, {})
    assert graph.layers == {"orders_gold_named": "bronze", "plain": "silver"}


def test_layers_from_spec_rules_then_names() -> None:
    registry = _registry_with_files(("raw_orders", "/p/x.py", {}), ("dim_customers", "/p/x.py", {}),
                                    ("silver_orders", "/p/x.py", {}), ("gold_kpis", "/p/x.py", {}))
    graph = build_graph(registry, {}, {}, layer_rules={"raw_*": "bronze", "dim_*": "GOLD"})
    assert graph.layers == {"raw_orders": "bronze", "dim_customers": "gold", "silver_orders": "silver",
                            "gold_kpis": "gold"}


def test_layers_from_file_names() -> None:
    registry = _registry_with_files(("a", "/p/bronze.py", {}), ("b", "/p/02_silver_clean.py", {}),
                                    ("c", "/p/gold.py", {}))
    graph = build_graph(registry, {"a": [Read("c", False)]}, {})  # position would say otherwise
    assert graph.layers == {"a": "bronze", "b": "silver", "c": "gold"}


def test_layers_from_position(reg) -> None:
    table("source_a")
    table("middle")
    table("final")
    table("isolated")
    graph = build_graph(reg, {"middle": [Read("source_a", True)], "final": [Read("middle", False)]},
                        {"source_a": True, "middle": True})
    assert graph.layers == {"source_a": "bronze", "middle": "silver", "final": "gold", "isolated": "bronze"}


# ------------------------------------------------------------------------------------------------ static reads
@pytest.fixture(scope="module")
def static_pipeline():
    path = FIXTURES / "static" / "reads_pipeline.py"
    spec = parse_spec({"name": "static", "libraries": [{"file": {"path": str(path)}}]}, source="s",
                      default_root=path.parent)
    loaded = load_pipeline(spec)
    return loaded.registry, *static_reads(loaded.registry)


def test_static_reads_find_every_literal_read(static_pipeline) -> None:
    _registry, reads, streaming = static_pipeline
    assert reads["ingest"] == [] and streaming["ingest"] is True
    # (order within a function is not significant)
    assert set(reads["via_dlt_read"]) == {Read("ingest", False, True), Read("LIVE.lookup", False, True)}
    assert streaming["via_dlt_read"] is False
    assert set(reads["via_dlt_read_stream"]) == {Read("ingest", True, True), Read("other_stream", True, True)}
    assert streaming["via_dlt_read_stream"] is True
    assert set(reads["via_spark_read_table"]) == {Read("via_dlt_read", False, False),
                                                  Read("main.sales.lookup", False, False)}
    assert reads["via_spark_read_stream_table"] == [Read("LIVE.ingest", True, True)]
    assert streaming["via_spark_read_stream_table"] is True
    assert set(reads["via_sql"]) == {Read("ingest", True, True), Read("via_dlt_read", False, True)}
    assert streaming["via_sql"] is True
    assert reads["lookup"] == [Read("samples.tpch.nation", False, False)]


def test_static_reads_through_reader_options(static_pipeline) -> None:
    _registry, reads, _streaming = static_pipeline
    assert reads["with_options"] == [Read("ingest", True, False)]


def test_static_graph_of_the_fixture_pipeline(static_pipeline) -> None:
    registry, reads, streaming = static_pipeline
    graph = build_graph(registry, reads, streaming, schema="sales", catalog="main")
    order = graph.order
    assert order.index("ingest") < order.index("via_dlt_read") < order.index("via_spark_read_table")
    assert order.index("lookup") < order.index("via_dlt_read")
    assert graph.external["lookup"] == ["samples.tpch.nation"]
    assert sorted(graph.inputs["via_spark_read_table"]) == ["lookup", "via_dlt_read"]
    assert graph.kinds["via_dlt_read"] is DatasetKind.MATERIALIZED_VIEW
    assert graph.kinds["ingest"] is DatasetKind.STREAMING_TABLE


def test_static_reads_for_flows_without_query_functions(reg) -> None:
    dlt.create_streaming_table("dim")
    dlt.apply_changes(target="dim", source="src", keys=["id"], sequence_by="ts")
    dlt.apply_changes(target="dim", source="src", keys=["id"], sequence_by="ts", flow_name="once_flow", once=True)
    reads, streaming = static_reads(reg)
    assert reads == {"dim": [], "once_flow": []}
    assert streaming == {"dim": True, "once_flow": False}


def test_basic_fixture_graph_end_to_end() -> None:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loaded = load_pipeline(load_spec(FIXTURES / "basic" / "conf" / "basic.yaml"))
    reads, streaming = static_reads(loaded.registry)
    graph = build_graph(loaded.registry, reads, streaming, schema=loaded.spec.schema)
    assert graph.order == ["raw_orders", "clean_orders", "gold_summary"]
    assert graph.layers == {"raw_orders": "bronze", "clean_orders": "silver", "gold_summary": "gold"}


@pytest.mark.parametrize(("name", "expected"), [
    ("orders", ("sales", "orders", None)), ("reporting.t", ("reporting", "t", None)),
    ("main.reporting.t", ("reporting", "t", None)), ("dev.marts.t", ("marts", "t", "dev")),
    ("`odd.name`", ("sales", "`odd.name`", None))])
def test_published_names(name, expected) -> None:
    """Where a dataset is published: its name's schema and catalog, else the spec's; the spec's catalog is the
    session catalog under its name (no catalog of its own)."""
    from framework.runner.catalog import PublishedTable

    table = PublishedTable.of(name, "/p", schema="sales", catalog="main")
    assert (table.schema, table.name, table.catalog) == expected
