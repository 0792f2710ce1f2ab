"""``medallion report``: the data-quality report (HTML + JSON) from the event log, and GX Data Docs.

The event log says how many rows passed or failed each expectation; what each rule does (drop, fail, warn) and
its constraint come from the pipeline's declarations (decorators and rule files alike), so the pipeline is loaded
when no registry is given.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from framework.errors import ObjectStoreError, PipelineError
from framework.runner.session import get_or_create_session
from framework.spec import PipelineSpec
from framework.storage.log import has_log
from framework.storage.url import StoragePath

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from framework.declarations import Expectation
    from framework.paths import PathMapper
    from framework.quality.rules import RuleSet
    from framework.registry import Registry


def write_reports(spec: PipelineSpec, update_id: str | None = None, out_dir: Path | None = None,
                  gx: bool = False, registry: Registry | None = None) -> list[StoragePath]:
    """Write ``dq_report.html``/``.json`` for an update (default: the latest).

    Args:
        spec: the pipeline's spec.
        update_id: the update to report on (default: the latest).
        out_dir: the output folder (default: ``<storage>/reports``, on the object store when the storage root is
            one).
        gx: also validate every dataset table with Great Expectations, from every expectation of the pipeline,
            and build Data Docs (``<out>/gx/<dataset>``); ``<out>/gx/mapping.json`` lists each rule's GX
            mapping and the rules left out, with the reason.
        registry: the pipeline's declarations, when the caller has them (else the pipeline is loaded).

    Returns:
        The files written.

    Raises:
        ObjectStoreError: ``OBJECT_STORE_UNSUPPORTED`` for ``gx`` on an object-store storage root without a
            local ``out_dir`` (Great Expectations builds Data Docs in a local folder).
    """
    from framework.paths import PathMapper
    from framework.quality.report import build_report

    out: StoragePath = out_dir or spec.storage / "reports"
    if gx and not isinstance(out, Path):
        raise ObjectStoreError(f"Great Expectations writes its Data Docs to a local folder, and {out} is on an "
                               "object store: pass a local --out folder for the report", code="OBJECT_STORE_UNSUPPORTED",
                               path=str(out))
    spark = get_or_create_session()
    mapper = PathMapper.from_spec(spec.paths, spec.root)
    if registry is None:
        registry = _load_registry(spec, spark)
    declared = declared_expectations(registry) if registry is not None else {}
    paths = build_report(spark, spec.storage, update_id, out, expectations=declared)
    written: list[StoragePath] = [paths.html, paths.json]
    if gx and isinstance(out, Path):
        written += _gx_docs(spark, spec, registry, mapper, declared, out / "gx")
    return written


def _load_registry(spec: PipelineSpec, spark: SparkSession) -> Registry | None:
    from framework.loader import load_pipeline

    try:  # without Spark: `spark.conf.get` serves the pipeline configuration, and no query runs
        return load_pipeline(spec).registry
    except PipelineError as exc:  # the report still has the event log's counts and the rule files' actions
        print(f"report: the pipeline could not be loaded, so rule actions come from rule files only: "
              f"{exc.render().splitlines()[0]}", file=sys.stderr)
        return None


def declared_expectations(registry: Registry) -> dict[str, list[Expectation]]:
    """Every declared expectation per dataset name (the dataset's own and its flows'), first declaration first."""
    out: dict[str, list[Expectation]] = {}
    for key, dataset in registry.datasets.items():
        found: dict[str, Expectation] = {e.name: e for e in dataset.expectations}
        for flow in registry.flows_into(key):
            for expectation in flow.expectations:
                found.setdefault(expectation.name, expectation)
        if found:
            out[dataset.name] = list(found.values())
    return out


def _gx_docs(spark: SparkSession, spec: PipelineSpec, registry: Registry | None, mapper: PathMapper,
             declared: dict[str, list[Expectation]], out: Path) -> list[Path]:
    from framework.quality.gx import build_data_docs, map_rule, pipeline_rulesets

    tables = _table_paths(spec, registry, mapper)
    rulesets, skipped = pipeline_rulesets(declared, _rule_files(set(tables) | set(declared)))
    written: list[Path] = []
    mapping: dict[str, dict[str, list[dict[str, str]]]] = {}
    for dataset, rules in sorted(rulesets.items()):
        entry = mapping.setdefault(dataset, {"mapped": [], "skipped": []})
        table = tables.get(dataset)
        if table is None:
            entry["skipped"] += [{"rule": r.name, "reason": "the dataset has no Delta table to validate (a view, "
                                  "or not written yet)"} for r in rules]
            continue
        entry["mapped"] += [{"rule": r.name, "mapping": map_rule(r).kind} for r in rules]
        written.append(build_data_docs(spark, str(table), rules, out / dataset))
    for item in skipped:
        mapping.setdefault(item.dataset, {"mapped": [], "skipped": []})["skipped"].append(
            {"rule": item.rule, "reason": item.reason})
    out.mkdir(parents=True, exist_ok=True)
    (out / "mapping.json").write_text(json.dumps(mapping, indent=2) + "\n", encoding="utf-8")
    for dataset, entry in sorted(mapping.items()):
        for left_out in entry["skipped"]:
            print(f"gx: {dataset}.{left_out['rule']} is not in the suite: {left_out['reason']}", file=sys.stderr)
    return [*written, out / "mapping.json"]


def _table_paths(spec: PipelineSpec, registry: Registry | None, mapper: PathMapper) -> dict[str, Path]:
    """Dataset name → its Delta table folder, for the tables that exist."""
    tables: dict[str, Path] = {}
    tables_dir = spec.tables_dir
    if isinstance(tables_dir, Path) and tables_dir.is_dir():
        tables.update({p.name: p for p in tables_dir.iterdir() if has_log(p)})
    for dataset in registry.datasets.values() if registry is not None else ():
        if dataset.path:
            path = Path(mapper.map(dataset.path) if mapper.is_databricks_path(dataset.path) else dataset.path)
            if has_log(path):
                tables[dataset.name] = path
    return tables


def _rule_files(datasets: Iterable[str]) -> dict[str, RuleSet]:
    """Each dataset's rule file (``expectations/<dataset>.yaml``), for those that have one."""
    from framework.quality.rules import find_rule_file, load_rules

    found: dict[str, RuleSet] = {}
    for name in datasets:
        try:
            found[name] = load_rules(find_rule_file(name))
        except PipelineError:
            continue  # no rule file (or an invalid one, reported when the pipeline runs)
    return found
