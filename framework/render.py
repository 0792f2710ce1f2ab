"""Draw the dataset graph: Mermaid text, and a self-contained HTML page with an SVG picture (no network)."""

from __future__ import annotations

import html
from collections import defaultdict

from framework.declarations import DatasetKind
from framework.graph import LAYERS, PipelineGraph
from framework.registry import normalize_name

_COLORS = {"bronze": "#cd7f32", "silver": "#8a9597", "gold": "#d4a017", "external": "#5b7db1", "sink": "#6a4c93"}
_SHAPES = {
    DatasetKind.STREAMING_TABLE: ("[(", ")]"),
    DatasetKind.MATERIALIZED_VIEW: ("[[", "]]"),
    DatasetKind.VIEW: ("([", "])"),
}


def _node_id(name: str) -> str:
    return "n_" + "".join(c if c.isalnum() else "_" for c in name)


def _edges(graph: PipelineGraph) -> list[tuple[str, str, str]]:
    """(source, target, label) with dataset names; external sources as-is."""
    out = []
    for key, flow in graph.registry.flows.items():
        target = normalize_name(flow.target)
        label = "" if flow.name.lower() == target else flow.name
        for source in graph.inputs.get(key, []) + graph.external.get(key, []):
            out.append((source, target, label))
    return out


def to_mermaid(graph: PipelineGraph) -> str:
    """Mermaid flowchart text with one subgraph per layer."""
    lines = ["flowchart LR"]
    by_layer: dict[str, list[str]] = defaultdict(list)
    for key in graph.registry.datasets:
        by_layer[graph.layers.get(key, "silver")].append(key)
    externals = sorted({e for exts in graph.external.values() for e in exts})
    if externals:
        lines.append("  subgraph external[\"external sources\"]")
        lines += [f"    {_node_id(e)}{{{{\"{e}\"}}}}" for e in externals]
        lines.append("  end")
    for layer in LAYERS:
        if not by_layer.get(layer):
            continue
        lines.append(f"  subgraph {layer}[\"{layer}\"]")
        for key in by_layer[layer]:
            dataset = graph.registry.datasets[key]
            left, right = _SHAPES.get(graph.kinds[key], ("[", "]"))
            lines.append(f"    {_node_id(key)}{left}\"{dataset.name}<br/>{graph.kinds[key].value}\"{right}")
        lines.append("  end")
    if graph.registry.sinks:
        lines.append("  subgraph sinks[\"sinks\"]")
        lines += [f"    {_node_id(k)}>\"{s.name} ({s.format})\"]" for k, s in graph.registry.sinks.items()]
        lines.append("  end")
    for source, target, label in _edges(graph):
        arrow = f" -->|{label}| " if label else " --> "
        lines.append(f"  {_node_id(source)}{arrow}{_node_id(target)}")
    present = [layer for layer in LAYERS if by_layer.get(layer)]
    present += ["external"] if externals else []
    present += ["sinks"] if graph.registry.sinks else []
    for group in present:
        color = _COLORS["sink" if group == "sinks" else group]
        lines.append(f"  style {group} fill:{color}22,stroke:{color}")
    return "\n".join(lines) + "\n"


_BOX_W, _BOX_H, _GAP_X, _GAP_Y, _PAD = 190, 54, 90, 26, 30


def to_html(graph: PipelineGraph, title: str) -> str:
    """A self-contained HTML page: the graph drawn as SVG in columns by depth, colored by layer."""
    nodes = list(graph.registry.datasets) + list(graph.registry.sinks)
    externals = sorted({e for exts in graph.external.values() for e in exts})
    edges = _edges(graph)
    pos, width, height = _layout(externals, nodes, edges)
    svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           'font-family="Helvetica,Arial,sans-serif" font-size="13">',
           '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" '
           'orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="#555"/></marker></defs>']
    for source, target, label in edges:
        svg += _svg_edge(pos[source], pos[target], label)
    svg += [_svg_node(graph, name, pos[name]) for name in externals + nodes]
    svg.append("</svg>")
    legend = " ".join(f'<span style="border:2px solid {c};background:{c}22;padding:2px 8px;border-radius:4px">'
                      f'{n}</span>' for n, c in _COLORS.items())
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title></head>"
            f"<body style='font-family:Helvetica,Arial,sans-serif;margin:24px'><h2>{html.escape(title)}</h2>"
            f"<p>{legend}</p>{''.join(svg)}<h3>Mermaid</h3><pre>{html.escape(to_mermaid(graph))}</pre>"
            "</body></html>")


def _layout(externals: list[str], nodes: list[str], edges: list[tuple[str, str, str]]
            ) -> tuple[dict[str, tuple[int, int]], int, int]:
    """Each box's top-left corner (one column per depth from the sources), and the picture's width and height."""
    depth: dict[str, int] = {e: 0 for e in externals}
    for _ in range(len(nodes) + 1):
        for source, target, _label in edges:
            depth[target] = max(depth.get(target, 0), depth.get(source, 0) + 1)
    for n in nodes:
        depth.setdefault(n, 0)
    columns: dict[int, list[str]] = defaultdict(list)
    for name in externals + nodes:
        columns[depth[name]].append(name)
    pos: dict[str, tuple[int, int]] = {}
    for col, names in sorted(columns.items()):
        for row, name in enumerate(names):
            pos[name] = (_PAD + col * (_BOX_W + _GAP_X), _PAD + 30 + row * (_BOX_H + _GAP_Y))
    width = _PAD * 2 + (max(columns, default=0) + 1) * (_BOX_W + _GAP_X)
    height = _PAD * 2 + 40 + max((len(v) for v in columns.values()), default=0) * (_BOX_H + _GAP_Y)
    return pos, width, height


def _svg_edge(start: tuple[int, int], end: tuple[int, int], label: str) -> list[str]:
    (x1, y1), (x2, y2) = start, end
    sx, sy, tx, ty = x1 + _BOX_W, y1 + _BOX_H // 2, x2, y2 + _BOX_H // 2
    mid = (sx + tx) // 2
    out = [f'<path d="M{sx},{sy} C{mid},{sy} {mid},{ty} {tx},{ty}" fill="none" stroke="#555" '
           'stroke-width="1.4" marker-end="url(#arrow)"/>']
    if label:
        out.append(f'<text x="{mid}" y="{(sy + ty) // 2 - 4}" fill="#555" font-size="11" '
                   f'text-anchor="middle">{html.escape(label)}</text>')
    return out


def _svg_node(graph: PipelineGraph, name: str, at: tuple[int, int]) -> str:
    x, y = at
    if name in graph.registry.datasets:
        dataset = graph.registry.datasets[name]
        layer, kind, title_text = graph.layers.get(name, "silver"), graph.kinds[name].value, dataset.name
    elif name in graph.registry.sinks:
        sink = graph.registry.sinks[name]
        layer, kind, title_text = "sink", f"sink ({sink.format})", sink.name
    else:
        layer, kind, title_text = "external", "external source", name
    color = _COLORS[layer]
    radius = 18 if kind == "view" else 6
    dash = ' stroke-dasharray="5,3"' if layer == "external" or kind == "view" else ""
    return (f'<g><title>{html.escape(title_text)} — {html.escape(kind)} ({layer})</title>'
            f'<rect x="{x}" y="{y}" width="{_BOX_W}" height="{_BOX_H}" rx="{radius}" fill="{color}22" '
            f'stroke="{color}" stroke-width="2"{dash}/>'
            f'<text x="{x + _BOX_W // 2}" y="{y + 22}" text-anchor="middle" font-weight="bold">'
            f'{html.escape(_short(title_text))}</text>'
            f'<text x="{x + _BOX_W // 2}" y="{y + 40}" text-anchor="middle" fill="#444" font-size="11">'
            f'{html.escape(kind)} · {layer}</text></g>')


def _short(text: str, limit: int = 24) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
