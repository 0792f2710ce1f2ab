"""Render a :class:`~framework.quality.report_model.Report` as one self-contained HTML page.

No JavaScript and no external assets: inline CSS and an inline SVG chart. Every value that comes from data
(names, ids, constraints, errors, row values) goes through :func:`esc`; a Content-Security-Policy that allows no
scripts is a second line of defence.
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable
from datetime import datetime

from framework.quality.report_model import QuarantineSample, Report, RuleStats, UpdateStats

_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"


def esc(value: object) -> str:
    """HTML-escape any value (quotes too, so it is safe in attributes); None becomes an empty string."""
    return "" if value is None else html.escape(str(value), quote=True)


def _n(value: int | None) -> str:
    return "—" if value is None else f"{value:,}"


def _pct(value: float | None, digits: int = 1) -> str:
    return "—" if value is None else f"{value * 100:.{digits}f}%"


def _when(value: datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S UTC") if value else "—"


def _status_class(status: str | None) -> str:
    return {
        "COMPLETED": "ok",
        "FAILED": "bad",
        "RUNNING": "info",
        "SKIPPED": "muted",
        "EXCLUDED": "muted",
        "CANCELED": "muted",
    }.get(status or "", "muted")


def _pill(status: str | None) -> str:
    return f'<span class="pill {_status_class(status)}">{esc(status or "UNKNOWN")}</span>'


def render_html(report: Report) -> str:
    """The report as a complete HTML document."""
    update = report.update
    title = "Data quality report"
    if update and update.pipeline_name:
        title += f" · {update.pipeline_name}"
    body = [_header(report)]
    if update is None:
        body.append('<section class="card"><p class="empty">The event log has no updates yet.</p></section>')
    else:
        body += [
            _kpis(update),
            _trend(report.history, update),
            _datasets(update),
            _rules(update),
            _samples(report.samples),
        ]
    body.append(
        f"<footer>Generated {esc(_when(report.generated_at))} from the event log at "
        f"<code>{esc(report.storage_root)}/system/events</code> · medallion framework</footer>"
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>{_CSS}</style></head>\n<body><main>"
        + "\n".join(body)
        + "</main></body></html>\n"
    )


def _header(report: Report) -> str:
    u = report.update
    if u is None:
        return "<header><div><h1>Data quality report</h1></div></header>"
    refresh = {True: "full refresh", False: "incremental", None: ""}[u.full_refresh]
    meta = [f"Update <code>{esc(u.update_id)}</code>", f"started {esc(_when(u.started_at))}"]
    if u.ended_at and u.started_at:
        meta.append(f"duration {esc(_duration(u.started_at, u.ended_at))}")
    if refresh:
        meta.append(esc(refresh))
    return (
        f'<header><div><p class="eyebrow">Data quality report</p>'
        f"<h1>{esc(u.pipeline_name or 'pipeline')}</h1>"
        f'<p class="meta">{" · ".join(meta)}</p></div><div class="state">{_pill(u.state)}</div></header>'
    )


def _duration(start: datetime, end: datetime) -> str:
    seconds = int((end - start).total_seconds())
    return f"{seconds // 60}m {seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


def _kpis(u: UpdateStats) -> str:
    failing = sum(len(d.failing_rules) for d in u.datasets)
    total_rules = sum(len(d.rules) for d in u.datasets)
    drop_rate = u.dropped / u.rows_in if u.rows_in else None
    cards = [
        ("Rows processed", _n(u.rows_in), f"across {len(u.datasets)} datasets", ""),
        ("Rows written", _n(u.rows_out), "", ""),
        ("Dropped", _n(u.dropped), f"{_pct(drop_rate, 2)} of input", "bad" if u.dropped else ""),
        ("Quarantined", _n(u.quarantined), "kept for review", "warn" if u.quarantined else ""),
        ("Rescued", _n(u.rescued), "values outside the schema", "warn" if u.rescued else ""),
        (
            "Expectations passed",
            _pct(u.pass_rate, 2),
            f"{failing} of {total_rules} rules with failures",
            "bad" if failing else "ok",
        ),
    ]
    items = "".join(
        f'<div class="kpi {cls}"><div class="label">{esc(label)}</div>'
        f'<div class="value">{esc(value)}</div><div class="sub">{esc(sub)}</div></div>'
        for label, value, sub, cls in cards
    )
    return f'<section class="kpis">{items}</section>'


def _nice_max(value: float) -> float:
    if value <= 0:
        return 1.0
    exponent = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 2.5, 5, 10):
        if value <= step * exponent:
            return step * exponent
    return 10 * exponent


_CHART = {"width": 960, "height": 280, "left": 64, "right": 56, "top": 20, "bottom": 56}


def _trend(history: list[UpdateStats], selected: UpdateStats) -> str:
    c = _CHART
    width, height, left, right, top = c["width"], c["height"], c["left"], c["right"], c["top"]
    plot_h = height - top - c["bottom"]
    top_value = _nice_max(max((u.rows_out + u.dropped for u in history), default=0))
    slot = (width - left - right) / max(len(history), 1)
    parts = [
        f'<svg viewBox="0 0 {width} {height}" role="img" aria-label="Rows and pass rate per update" '
        'xmlns="http://www.w3.org/2000/svg" class="chart">'
    ]
    for i in range(5):
        value = top_value * i / 4
        y = top + plot_h - plot_h * i / 4
        parts.append(
            f'<line x1="{left}" x2="{width - right}" y1="{y:.1f}" y2="{y:.1f}" class="grid"/>'
            f'<text x="{left - 8}" y="{y + 4:.1f}" class="axis" text-anchor="end">{esc(_short(value))}'
            f'</text><text x="{width - right + 8}" y="{y + 4:.1f}" class="axis">{25 * i}%</text>'
        )
    every = max(1, math.ceil(len(history) / 12))
    line: list[str] = []
    for i, u in enumerate(history):
        cx = left + slot * i + slot / 2
        labelled = not (len(history) - 1 - i) % every or u.update_id == selected.update_id
        parts += _trend_bar(u, cx, min(48.0, slot * 0.6), top_value, u.update_id == selected.update_id, labelled)
        if u.pass_rate is not None:
            line.append(f"{cx:.1f},{top + plot_h - plot_h * u.pass_rate:.1f}")
    if line:
        parts.append(f'<polyline points="{" ".join(line)}" class="rate"/>')
        parts += [
            f'<circle cx="{p.split(",")[0]}" cy="{p.split(",")[1]}" r="3.5" class="rate-dot"/>' for p in line
        ]
    parts.append("</svg>")
    legend = (
        '<div class="legend"><span><i class="sw out"></i>rows written</span>'
        '<span><i class="sw drop"></i>rows dropped</span>'
        '<span><i class="sw rate"></i>expectation pass rate (right axis)</span></div>'
    )
    return (
        f'<section class="card"><h2>Trend <span class="muted">last {len(history)} update(s)</span></h2>'
        f"{''.join(parts)}{legend}</section>"
    )


def _trend_bar(u: UpdateStats, cx: float, bar_w: float, top_value: float, selected: bool,
               labelled: bool) -> list[str]:
    """One update's stacked bar (written, dropped), its failure mark and its axis label."""
    c = _CHART
    plot_h, top, height = c["height"] - c["top"] - c["bottom"], c["top"], c["height"]
    x = cx - bar_w / 2
    h_out = plot_h * u.rows_out / top_value
    h_drop = plot_h * u.dropped / top_value
    y_out = top + plot_h - h_out
    tip = (
        f"{u.update_id} ({_when(u.started_at)}): {u.rows_out:,} written, {u.dropped:,} dropped, "
        f"{u.quarantined:,} quarantined, pass rate {_pct(u.pass_rate, 2)}, {u.state}"
    )
    cls = " selected" if selected else ""
    out = [
        f'<g class="bar{cls}"><title>{esc(tip)}</title>'
        f'<rect x="{x:.1f}" y="{y_out:.1f}" width="{bar_w:.1f}" height="{h_out:.1f}" class="out"/>'
        f'<rect x="{x:.1f}" y="{y_out - h_drop:.1f}" width="{bar_w:.1f}" height="{h_drop:.1f}" '
        f'class="drop"/></g>'
    ]
    if u.state == "FAILED":
        out.append(f'<text x="{cx:.1f}" y="{top + plot_h - 4:.1f}" class="failmark" text-anchor="middle">✕</text>')
    if labelled:  # labels are thinned out; the selected update always has one
        date = u.started_at.strftime("%m-%d %H:%M") if u.started_at else ""
        out.append(
            f'<text x="{cx:.1f}" y="{height - c["bottom"] + 18}" class="axis{cls}" text-anchor="middle">'
            f'{esc(u.update_id[:8])}</text><text x="{cx:.1f}" y="{height - c["bottom"] + 32}" '
            f'class="axis small" text-anchor="middle">{esc(date)}</text>'
        )
    return out


def _short(value: float) -> str:
    for unit, size in (("B", 1e9), ("M", 1e6), ("k", 1e3)):
        if value >= size:
            return f"{value / size:g}{unit}"
    return f"{value:g}"


def _datasets(u: UpdateStats) -> str:
    rows = []
    for d in u.datasets:
        failing = len(d.failing_rules)
        cls = "row-bad" if d.status == "FAILED" else ("row-warn" if d.dropped or failing else "")
        rules = f"{failing} / {len(d.rules)}" if d.rules else "—"
        error = f'<div class="error">{esc(d.error)}</div>' if d.error else ""
        if d.note:
            error += f'<div class="note muted">{esc(d.note)}</div>'
        rows.append(
            f'<tr class="{cls}"><td><strong>{esc(d.dataset)}</strong>{error}</td><td>{_pill(d.status)}</td>'
            f'<td class="num">{_n(d.rows_in)}</td><td class="num">{_n(d.rows_out)}</td>'
            f'<td class="num">{_n(d.dropped)}</td><td class="num">{_n(d.quarantined)}</td>'
            f'<td class="num">{_n(d.rescued)}</td><td class="num">{esc(rules)}</td></tr>'
        )
    if not rows:
        return (
            '<section class="card"><h2>Datasets</h2><p class="empty">No flow progress recorded.</p></section>'
        )
    return (
        '<section class="card"><h2>Datasets</h2><table><thead><tr><th>Dataset</th><th>Status</th>'
        '<th class="num">Rows in</th><th class="num">Rows out</th><th class="num">Dropped</th>'
        '<th class="num">Quarantined</th><th class="num">Rescued</th><th class="num">Rules failing</th>'
        f"</tr></thead><tbody>{''.join(rows)}</tbody></table></section>"
    )


def _rule_row(r: RuleStats) -> str:
    rate = r.failure_rate
    severe = r.action in ("drop", "fail", None)
    failed = bool(r.failed or r.violation is not None)
    cls = ("row-bad" if severe else "row-warn") if failed else ""
    action = (
        f'<span class="tag {esc(r.action)}">{esc(r.action)}</span>'
        if r.action
        else '<span class="muted">—</span>'
    )
    constraint = f'<code class="constraint">{esc(r.constraint)}</code>' if r.constraint else ""
    description = f'<div class="desc">{esc(r.description)}</div>' if r.description else ""
    if r.violation is not None:  # the first violating record stopped the flow; it has no counts of its own
        description += (f'<div class="error">failed the update: the record <code>{esc(r.violation)}</code> '
                        "violated it; nothing of that batch was written</div>")
    failed_cell = f"≥ {_n(r.failed + 1)}" if r.violation is not None else _n(r.failed)
    bar_cls = "bad" if failed and severe else ("warn" if failed else "ok")
    width = max(rate * 100, 0.8 if failed else 0)
    return (
        f'<tr class="{cls}"><td><strong>{esc(r.name)}</strong>{description}{constraint}</td>'
        f"<td>{esc(r.dataset)}</td><td>{action}</td><td>{esc(r.severity or '—')}</td>"
        f'<td class="num">{_n(r.passed)}</td><td class="num">{failed_cell}</td>'
        f'<td class="rate"><div class="meter"><div class="fill {bar_cls}" style="width:{width:.2f}%"></div>'
        f"</div><span>{_pct(rate, 2)}</span></td></tr>"
    )


def _rules(u: UpdateStats) -> str:
    rules: list[RuleStats] = [r for d in u.datasets for r in d.rules]
    if not rules:
        return (
            '<section class="card"><h2>Expectations</h2><p class="empty">No expectations ran in this update.'
            "</p></section>"
        )
    rules.sort(key=lambda r: (r.violation is None, -r.failure_rate, r.dataset, r.name))
    return (
        '<section class="card"><h2>Expectations <span class="muted">sorted by failure rate</span></h2>'
        "<table><thead><tr><th>Rule</th><th>Dataset</th><th>Action</th><th>Severity</th>"
        '<th class="num">Passed</th><th class="num">Failed</th><th>Failure rate</th></tr></thead>'
        f"<tbody>{''.join(_rule_row(r) for r in rules)}</tbody></table></section>"
    )


def _cell(value: str | None) -> str:
    if value is None:
        return '<td class="null">NULL</td>'
    return f'<td title="{esc(value)}">{esc(value)}</td>'


def _chips(names: Iterable[str]) -> str:
    return '<td class="chips">' + "".join(f'<span class="chip">{esc(n)}</span>' for n in names) + "</td>"


def _samples(samples: Iterable[QuarantineSample]) -> str:
    blocks = []
    for s in samples:
        head = "<th>failed rules</th>" + "".join(f"<th>{esc(c)}</th>" for c in s.columns)
        failed = s.failed_rules or [[] for _ in s.rows]
        body = "".join(
            "<tr>" + _chips(names) + "".join(_cell(v) for v in row) + "</tr>"
            for row, names in zip(s.rows, failed, strict=False)
        )
        blocks.append(
            f'<details open><summary><strong>{esc(s.dataset)}</strong> <span class="muted">'
            f"{len(s.rows)} of {s.total:,} quarantined rows · {esc(s.table)}</span></summary>"
            f'<div class="scroll"><table class="sample"><thead><tr>{head}</tr></thead>'
            f"<tbody>{body}</tbody></table></div></details>"
        )
    if not blocks:
        return (
            '<section class="card"><h2>Quarantined rows</h2><p class="empty">No quarantine tables with rows '
            "for this update.</p></section>"
        )
    return (
        '<section class="card"><h2>Quarantined rows <span class="muted">samples, newest first</span></h2>'
        f"{''.join(blocks)}</section>"
    )


_CSS = """
:root{--bg:#f5f7fa;--card:#fff;--ink:#1b2430;--muted:#687385;--line:#e3e8ef;--accent:#2f6fde;
--ok:#1f8a4c;--ok-bg:#e6f4ec;--warn:#b76e00;--warn-bg:#fff4e0;--bad:#c62828;--bad-bg:#fdecec;--info:#2f6fde}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--ink);font:14px/1.5 -apple-system,BlinkMacSystemFont,"Segoe UI",
Roboto,"Helvetica Neue",Arial,sans-serif}
main{max-width:1180px;margin:0 auto;padding:28px 24px 40px}
header{display:flex;justify-content:space-between;align-items:flex-end;margin-bottom:20px;padding-bottom:16px;
border-bottom:1px solid var(--line)}
h1{margin:2px 0 4px;font-size:26px;font-weight:650;letter-spacing:-.01em}
h2{margin:0 0 14px;font-size:16px;font-weight:650}
.eyebrow{margin:0;color:var(--accent);font-size:12px;font-weight:650;text-transform:uppercase;letter-spacing:.08em}
.meta{margin:0;color:var(--muted)}
code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12.5px;background:#eef1f6;
padding:1px 5px;border-radius:4px;word-break:break-all}
.muted{color:var(--muted);font-weight:400}
.pill{display:inline-block;padding:3px 10px;border-radius:999px;font-size:12px;font-weight:650;letter-spacing:.03em}
.pill.ok{background:var(--ok-bg);color:var(--ok)}.pill.bad{background:var(--bad-bg);color:var(--bad)}
.pill.info{background:#e8f0fd;color:var(--info)}.pill.muted{background:#eef1f6;color:var(--muted)}
.state .pill{font-size:14px;padding:6px 14px}
.kpis{display:grid;grid-template-columns:repeat(6,1fr);gap:12px;margin-bottom:16px}
.kpi{background:var(--card);border:1px solid var(--line);border-radius:10px;padding:14px 16px;
border-top:3px solid var(--line)}
.kpi.ok{border-top-color:var(--ok)}.kpi.warn{border-top-color:var(--warn)}.kpi.bad{border-top-color:var(--bad)}
.kpi .label{color:var(--muted);font-size:12px;text-transform:uppercase;letter-spacing:.05em}
.kpi .value{font-size:24px;font-weight:650;margin:4px 0 2px;font-variant-numeric:tabular-nums}
.kpi.bad .value{color:var(--bad)}.kpi.warn .value{color:var(--warn)}
.kpi .sub{color:var(--muted);font-size:12px;min-height:18px}
.card{background:var(--card);border:1px solid var(--line);border-radius:10px;padding:18px 20px;margin-bottom:16px}
table{width:100%;border-collapse:collapse}
th{text-align:left;font-size:12px;color:var(--muted);font-weight:600;text-transform:uppercase;letter-spacing:.04em;
padding:8px 10px;border-bottom:1px solid var(--line);white-space:nowrap}
td{padding:9px 10px;border-bottom:1px solid var(--line);vertical-align:top}
tbody tr:last-child td{border-bottom:none}
.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
tr.row-bad td:first-child{box-shadow:inset 3px 0 0 var(--bad)}tr.row-bad{background:#fff8f8}
tr.row-warn td:first-child{box-shadow:inset 3px 0 0 var(--warn)}tr.row-warn{background:#fffcf5}
.desc{color:var(--muted);font-size:12.5px}.constraint{display:inline-block;margin-top:4px}
.error{color:var(--bad);font-size:12.5px;margin-top:4px;white-space:pre-wrap;word-break:break-word}
.note{font-size:12.5px;margin-top:4px;word-break:break-word}
.tag{display:inline-block;padding:1px 8px;border-radius:4px;font-size:12px;font-weight:600;background:#eef1f6}
.tag.drop{background:var(--warn-bg);color:var(--warn)}.tag.fail{background:var(--bad-bg);color:var(--bad)}
.tag.warn{background:#e8f0fd;color:var(--info)}
td.rate{min-width:170px;white-space:nowrap}
.meter{display:inline-block;vertical-align:middle;width:100px;height:8px;background:#eef1f6;border-radius:4px;
overflow:hidden;margin-right:8px}
.fill{height:100%}.fill.ok{background:var(--ok)}.fill.warn{background:var(--warn)}.fill.bad{background:var(--bad)}
.chart{width:100%;height:auto;display:block}
.chart .grid{stroke:var(--line);stroke-width:1}
.chart .axis{fill:var(--muted);font-size:11px}.chart .axis.small{font-size:10px}
.chart .axis.selected{fill:var(--ink);font-weight:700}
.chart .out{fill:#7aa7ef}.chart .drop{fill:#e57373}.chart .selected .out{fill:var(--accent)}
.chart .selected .drop{fill:var(--bad)}
.chart .rate{fill:none;stroke:var(--ok);stroke-width:2.5}.chart .rate-dot{fill:#fff;stroke:var(--ok);stroke-width:2}
.chart .failmark{fill:var(--bad);font-size:14px;font-weight:700}
.legend{display:flex;gap:18px;color:var(--muted);font-size:12px;margin-top:6px}
.sw{display:inline-block;width:12px;height:12px;border-radius:2px;margin-right:6px;vertical-align:-1px}
.sw.out{background:var(--accent)}.sw.drop{background:var(--bad)}.sw.rate{background:var(--ok);height:3px;vertical-align:3px}
details{border:1px solid var(--line);border-radius:8px;margin-bottom:10px}
summary{cursor:pointer;padding:10px 14px;background:#fafbfd;border-radius:8px}
.scroll{overflow-x:auto}
table.sample td{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12.5px;max-width:240px;
overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
td.null{color:#a0a8b5;font-style:italic}
table.sample td.chips{white-space:normal;min-width:150px;max-width:260px}
.chip{display:inline-block;background:var(--bad-bg);color:var(--bad);border-radius:4px;padding:1px 6px;margin:0 4px 2px 0;
font-family:-apple-system,BlinkMacSystemFont,"Segoe UI",Roboto,sans-serif;font-size:12px;font-weight:600}
.empty{color:var(--muted);margin:0}
footer{color:var(--muted);font-size:12px;text-align:center;margin-top:24px}
@media (max-width:900px){.kpis{grid-template-columns:repeat(2,1fr)}}
"""
