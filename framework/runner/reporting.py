"""``medallion report``: the data-quality report (HTML + JSON) from the event log, and GX Data Docs."""

from __future__ import annotations

from pathlib import Path

from framework.runner.session import get_or_create_session
from framework.spec import PipelineSpec


def write_reports(spec: PipelineSpec, update_id: str | None = None, out_dir: Path | None = None,
                  gx: bool = False) -> list[Path]:
    """Write ``dq_report.html``/``.json`` for an update (default: the latest); with ``gx``, also validate
    every dataset that has a rule file with Great Expectations and build Data Docs."""
    from framework.quality.report import build_report

    spark = get_or_create_session()
    out = out_dir or spec.storage / "reports"
    paths = build_report(spark, spec.storage, update_id, out)
    written = [paths.html, paths.json]
    if gx:
        written += _gx_docs(spec, out / "gx")
    return written


def _gx_docs(spec: PipelineSpec, out: Path) -> list[Path]:
    from framework.errors import PipelineError
    from framework.quality.gx import build_data_docs
    from framework.quality.rules import find_rule_file, load_rules

    spark = get_or_create_session()
    written = []
    for table in sorted(p for p in spec.tables_dir.iterdir() if (p / "_delta_log").is_dir()) \
            if spec.tables_dir.exists() else []:
        try:
            rules = load_rules(find_rule_file(table.name))
        except PipelineError:
            continue  # no rule file for this dataset
        written.append(build_data_docs(spark, str(table), rules, out / table.name))
    return written
