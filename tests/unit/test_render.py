"""Drawing the graph (framework.render): Mermaid text and a self-contained HTML page."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

import framework.shim.dlt as dlt
import framework.shim.dp as dp
from framework.graph import PipelineGraph, Read, build_graph
from framework.registry import registration_context
from framework.render import to_html, to_mermaid


def q():
    return None


@pytest.fixture
def graph() -> Iterator[PipelineGraph]:
    with registration_context() as reg:
        dlt.table(name="orders_raw", table_properties={"quality": "bronze"})(q)
        dlt.view(name="orders_valid")(q)
        dlt.table(name="orders_clean", table_properties={"quality": "silver"})(q)
        dlt.create_streaming_table("dim_customers", table_properties={"quality": "gold"})
        dlt.apply_changes(target="dim_customers", source="orders_valid", keys=["id"], sequence_by="ts",
                          flow_name="cdc_customers")
        dp.materialized_view(name="revenue", table_properties={"quality": "gold"})(q)
        dp.create_sink("export", "delta", {"path": "/tmp/export"})
        dlt.append_flow(target="export", name="to_export")(q)
    reads = {
        "orders_raw": [Read("samples.tpch.orders", True)],
        "orders_valid": [Read("orders_raw", True, via_live=True)],
        "orders_clean": [Read("orders_valid", True, via_live=True)],
        "revenue": [Read("orders_clean", False, via_live=True), Read("dim_customers", False, via_live=True)],
        "to_export": [Read("orders_clean", True, via_live=True)],
    }
    streaming = {"orders_raw": True, "orders_valid": True, "orders_clean": True, "to_export": True}
    yield build_graph(reg, reads, streaming)


def test_mermaid_has_a_subgraph_per_layer(graph) -> None:
    text = to_mermaid(graph)
    assert text.startswith("flowchart LR\n")
    for group in ('subgraph bronze["bronze"]', 'subgraph silver["silver"]', 'subgraph gold["gold"]',
                  'subgraph external["external sources"]', 'subgraph sinks["sinks"]'):
        assert group in text
    assert text.count("\n  end") == 5
    assert "style bronze fill:" in text and "style sinks fill:" in text


def test_mermaid_nodes_sit_in_their_layer(graph) -> None:
    text = to_mermaid(graph)
    gold = text.split('subgraph gold["gold"]')[1].split("  end")[0]
    assert "n_dim_customers" in gold and "n_revenue" in gold and "n_orders_clean" not in gold
    assert 'n_dim_customers[("dim_customers<br/>streaming_table")]' in text
    assert 'n_revenue[["revenue<br/>materialized_view"]]' in text
    assert 'n_orders_valid(["orders_valid<br/>view"])' in text
    assert 'n_export>"export (delta)"]' in text
    assert 'n_samples_tpch_orders{{"samples.tpch.orders"}}' in text


def test_mermaid_has_every_edge(graph) -> None:
    text = to_mermaid(graph)
    edges = set(re.findall(r"^  (n_\w+) -->(?:\|([^|]*)\|)? (n_\w+)$", text, flags=re.MULTILINE))
    assert edges == {
        ("n_samples_tpch_orders", "", "n_orders_raw"),
        ("n_orders_raw", "", "n_orders_valid"),
        ("n_orders_valid", "", "n_orders_clean"),
        ("n_orders_valid", "cdc_customers", "n_dim_customers"),
        ("n_orders_clean", "", "n_revenue"),
        ("n_dim_customers", "", "n_revenue"),
        ("n_orders_clean", "to_export", "n_export"),
    }


def test_html_is_self_contained(graph) -> None:
    page = to_html(graph, "sample pipeline")
    assert page.startswith("<!doctype html>") and page.rstrip().endswith("</html>")
    assert "<svg" in page and "</svg>" in page
    # nothing is fetched: no scripts, stylesheets or images from elsewhere (the SVG namespace is only a name)
    assert not re.search(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//""", page)
    assert "<script" not in page and "<link" not in page and "@import" not in page
    without_namespace = page.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "http://" not in without_namespace and "https://" not in without_namespace
    for name in ("orders_raw", "orders_valid", "orders_clean", "dim_customers", "revenue", "export",
                 "samples.tpch.orders"):
        assert name in page
    assert page.count('marker-end="url(#arrow)"') == 7  # one arrow per edge
    assert "<h3>Mermaid</h3>" in page


def test_html_escapes_names() -> None:
    with registration_context() as reg:
        dlt.table(name="<b>evil&name</b>")(q)
        dlt.table(name="reader")(q)
    graph = build_graph(reg, {"reader": [Read("ext<script>alert(1)</script>", False)]}, {})
    page = to_html(graph, "title <i>x</i>")
    assert "<b>evil" not in page and "<script>" not in page and "<i>x</i>" not in page
    assert "&lt;b&gt;evil&amp;name&lt;/b&gt;" in page or "&lt;b&gt;evil&amp;name&lt;/b…" in page
    assert "title &lt;i&gt;x&lt;/i&gt;" in page


def test_long_names_are_shortened_in_boxes_but_kept_in_tooltips() -> None:
    long_name = "a_really_long_dataset_name_that_does_not_fit"
    with registration_context() as reg:
        dlt.table(name=long_name)(q)
    page = to_html(build_graph(reg, {}, {}), "t")
    assert f"<title>{long_name} — " in page and "a_really_long_dataset_n…" in page


def test_empty_layers_are_omitted() -> None:
    with registration_context() as reg:
        dlt.table(name="only", table_properties={"quality": "silver"})(q)
    text = to_mermaid(build_graph(reg, {}, {}))
    assert 'subgraph silver["silver"]' in text
    assert "subgraph bronze" not in text and "subgraph gold" not in text and "external" not in text


def test_html_is_unchanged_by_the_to_html_split(graph) -> None:
    """The picture drawn before ``to_html`` was split into layout/edge/node helpers: every box and curve in place."""
    page = to_html(graph, "t")
    assert 'width="1460" height="260"' in page
    assert '<rect x="310" y="60" width="190" height="54" rx="6" fill="#cd7f3222" stroke="#cd7f32"' in page
    assert '<path d="M220,87 C265,87 265,87 310,87" fill="none" stroke="#555"' in page


def test_an_empty_pipeline_draws_an_empty_picture() -> None:
    with registration_context() as reg:
        pass
    page = to_html(build_graph(reg, {}, {}), "empty")
    assert "<svg" in page and "</svg>" in page
