"""Great Expectations 1.x bridge: rule sets as expectation suites, validation through Spark, Data Docs.

Mapping of constraints to native GX expectations (column name: a plain or back-quoted identifier):

===========================================  =============================================================
constraint                                   GX expectation
===========================================  =============================================================
``c IS NOT NULL``                            ``ExpectColumnValuesToNotBeNull``
``c > n``, ``c >= n``, ``c < n``, ``c <= n``  ``ExpectColumnValuesToBeBetween`` (``strict_min/max``)
(also ``n < c`` ...)
``c BETWEEN a AND b``                        ``ExpectColumnValuesToBeBetween``
``c IN (v, ...)``, ``c = v``                 ``ExpectColumnValuesToBeInSet``
``c NOT IN (v, ...)``                        ``ExpectColumnValuesToNotBeInSet``
``c RLIKE 'r'``, ``c REGEXP 'r'``,           ``ExpectColumnValuesToMatchRegex``
``rlike(c, 'r')``, ``regexp(c, 'r')``
anything else                                ``UnexpectedRowsExpectation`` with
                                             ``SELECT * FROM {batch} WHERE NOT coalesce((<constraint>), false)``
===========================================  =============================================================

NULLs: Databricks counts a row whose constraint is NULL as failing; GX's column expectations skip NULLs.
So native mappings other than ``IS NOT NULL`` do not count NULL values (each expectation's ``meta`` says so).
``exact=True`` maps every rule to the unexpected-rows fallback, whose counts equal the pipeline's.
Each expectation's ``meta`` carries the rule's name, constraint, action, severity and tags.

:func:`pipeline_rulesets` gathers every expectation of a pipeline, declared with decorators or rule files, into one
rule set per dataset; a constraint given as a PySpark ``Column`` (not SQL text) cannot be handed to GX and is
listed as skipped, with the reason.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from framework.quality.rules import Rule, RuleSet

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from framework.declarations import Expectation

_IDENT = r"(?P<col>`[^`]+`|[A-Za-z_][A-Za-z0-9_]*)"
_NUM = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_LIT = rf"(?:'(?:[^'\\]|\\.)*'|{_NUM})"
_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("not_null", re.compile(rf"^{_IDENT}\s+IS\s+NOT\s+NULL$", re.I)),
    ("compare", re.compile(rf"^{_IDENT}\s*(?P<op>>=|<=|>|<)\s*(?P<num>{_NUM})$", re.I)),
    ("compare_rev", re.compile(rf"^(?P<num>{_NUM})\s*(?P<op>>=|<=|>|<)\s*{_IDENT}$", re.I)),
    ("between", re.compile(rf"^{_IDENT}\s+BETWEEN\s+(?P<lo>{_NUM})\s+AND\s+(?P<hi>{_NUM})$", re.I)),
    (
        "in",
        re.compile(rf"^{_IDENT}\s+(?P<neg>NOT\s+)?IN\s*\((?P<items>\s*{_LIT}(?:\s*,\s*{_LIT})*\s*)\)$", re.I),
    ),
    ("equals", re.compile(rf"^{_IDENT}\s*==?\s*(?P<lit>{_LIT})$", re.I)),
    ("regex", re.compile(rf"^{_IDENT}\s+(?:RLIKE|REGEXP)\s+(?P<rx>'(?:[^'\\]|\\.)*')$", re.I)),
    (
        "regex_fn",
        re.compile(rf"^(?:RLIKE|REGEXP)\s*\(\s*{_IDENT}\s*,\s*(?P<rx>'(?:[^'\\]|\\.)*')\s*\)$", re.I),
    ),
]
_SEVERITY = {
    "critical": "critical",
    "high": "critical",
    "medium": "warning",
    "low": "warning",
    "info": "info",
}


@dataclass(frozen=True)
class MappedRule:
    """How one rule became a GX expectation: ``kind`` is the pattern matched, or ``"fallback"``."""

    rule: Rule
    kind: str
    expectation: Any  # great_expectations.expectations.Expectation


def _unquote_ident(text: str) -> str:
    return text[1:-1] if text.startswith("`") else text


def _literal(text: str) -> Any:
    if text.startswith("'"):
        return re.sub(r"\\(.)", r"\1", text[1:-1])
    number = float(text)
    return int(number) if re.fullmatch(r"[-+]?\d+", text) else number


def _split_literals(items: str) -> list[Any]:
    return [_literal(m.group(0)) for m in re.finditer(_LIT, items)]


def _strip_parens(sql: str) -> str:
    text = sql.strip()
    while text.startswith("(") and text.endswith(")") and _balanced(text[1:-1]):
        text = text[1:-1].strip()
    return text


def _balanced(text: str) -> bool:
    depth = 0
    for ch in text:
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth < 0:
            return False
    return depth == 0


def map_rule(rule: Rule, *, exact: bool = False) -> MappedRule:
    """Turn one rule into a GX expectation (native where the constraint is simple, else the fallback)."""
    import great_expectations.expectations as gxe

    meta: dict[str, Any] = {
        "rule": rule.name,
        "constraint": rule.constraint_sql,
        "action": rule.action,
        "severity": rule.severity,
        "tags": list(rule.tags),
    }
    common: dict[str, Any] = {"severity": _SEVERITY.get(rule.severity, "warning")}
    if rule.description:
        common["description"] = rule.description
    text = _strip_parens(rule.constraint_sql) if isinstance(rule.constraint, str) else ""
    for kind, pattern in [] if exact or not text else _PATTERNS:
        match = pattern.match(text)
        if not match:
            continue
        column = _unquote_ident(match.group("col"))
        if kind != "not_null":
            meta["nulls"] = "GX skips NULL values; the pipeline counts a NULL result as a failure"
        native = _native(gxe, kind, match, column, meta | {"mapping": kind}, common)
        if native is not None:
            return MappedRule(rule, kind, native)
    query = f"SELECT * FROM {{batch}} WHERE NOT coalesce(({rule.constraint_sql}), false)"
    expectation = gxe.UnexpectedRowsExpectation(
        unexpected_rows_query=query,
        meta=meta | {"mapping": "fallback"},
        **{**common, "description": rule.description or f"{rule.name}: {rule.constraint_sql}"},
    )
    return MappedRule(rule, "fallback", expectation)


def _native(
    gxe: Any, kind: str, match: re.Match[str], column: str, meta: dict[str, Any], common: dict[str, Any]
) -> Any:
    if kind == "not_null":
        return gxe.ExpectColumnValuesToNotBeNull(column=column, meta=meta, **common)
    if kind in ("compare", "compare_rev"):
        op, number = match.group("op"), _literal(match.group("num"))
        if kind == "compare_rev":  # n < c  ==  c > n
            op = {">": "<", "<": ">", ">=": "<=", "<=": ">="}[op]
        if op in (">", ">="):
            return gxe.ExpectColumnValuesToBeBetween(
                column=column, min_value=number, strict_min=op == ">", meta=meta, **common
            )
        return gxe.ExpectColumnValuesToBeBetween(
            column=column, max_value=number, strict_max=op == "<", meta=meta, **common
        )
    if kind == "between":
        return gxe.ExpectColumnValuesToBeBetween(
            column=column,
            min_value=_literal(match.group("lo")),
            max_value=_literal(match.group("hi")),
            meta=meta,
            **common,
        )
    if kind == "in":
        values = _split_literals(match.group("items"))
        cls = gxe.ExpectColumnValuesToNotBeInSet if match.group("neg") else gxe.ExpectColumnValuesToBeInSet
        return cls(column=column, value_set=values, meta=meta, **common)
    if kind == "equals":
        return gxe.ExpectColumnValuesToBeInSet(
            column=column, value_set=[_literal(match.group("lit"))], meta=meta, **common
        )
    if kind in ("regex", "regex_fn"):
        return gxe.ExpectColumnValuesToMatchRegex(
            column=column, regex=_literal(match.group("rx")), meta=meta, **common
        )
    return None


@dataclass(frozen=True)
class SkippedRule:
    """An expectation of the pipeline that is not in its GX suite, and why."""

    dataset: str
    rule: str
    reason: str


_COLUMN_REASON = ("its constraint is a PySpark Column, not SQL text; Great Expectations runs SQL, so declare it as "
                  "a SQL string (e.g. @dlt.expect('name', 'amount > 0')) to include it")


def pipeline_rulesets(
    declared: Mapping[str, Iterable[Expectation]], rule_files: Mapping[str, RuleSet] | None = None
) -> tuple[dict[str, RuleSet], list[SkippedRule]]:
    """Every expectation of a pipeline as one rule set per dataset, for GX suites.

    Args:
        declared: each dataset's declared expectations (decorators, ``expect_rules``, flow expectations).
        rule_files: each dataset's rule file, when it has one: its rules are added, and give the declared rules
            of the same name their severity, tags and description.

    Returns:
        The rule sets (datasets without a rule left out) and the expectations left out, with the reason.
    """
    files = dict(rule_files or {})
    out: dict[str, RuleSet] = {}
    skipped: list[SkippedRule] = []
    for dataset in sorted(set(declared) | set(files)):
        from_file = {rule.name: rule for rule in files.get(dataset, RuleSet(dataset))}
        rules: dict[str, Rule] = {}
        for expectation in declared.get(dataset, ()):
            if not isinstance(expectation.constraint, str):
                skipped.append(SkippedRule(dataset, expectation.name, _COLUMN_REASON))
                continue
            known = from_file.get(expectation.name)
            extra = ({"severity": known.severity, "tags": known.tags, "description": known.description}
                     if known is not None else {})
            rules[expectation.name] = Rule.from_expectation(expectation, **extra)
        for name, rule in from_file.items():
            rules.setdefault(name, rule)
        if rules:
            source = files[dataset].source if dataset in files else "pipeline declarations"
            out[dataset] = RuleSet(dataset, tuple(rules.values()), source=source)
    return out, skipped


def to_expectation_suite(
    ruleset: RuleSet, *, exact: bool = False, name: str | None = None, context: Any = None
) -> Any:
    """Export a rule set as a GX 1.x ``ExpectationSuite`` (not yet added to any context).

    Args:
        ruleset: the rules (``load_rules("orders_clean")``).
        exact: map every rule to the unexpected-rows fallback so that NULL handling matches the pipeline.
        name: the suite's name (default: the rule set's name).
        context: the GX data context to build it in (default: a new ephemeral one).

    Returns:
        A ``great_expectations.ExpectationSuite``; ``suite.to_json_dict()`` gives its JSON.
    """
    _quiet_gx()
    import great_expectations as gx

    if context is None:
        gx.get_context(mode="ephemeral")  # GX 1.x builds suites only with an active context
    mapped = [map_rule(rule, exact=exact) for rule in ruleset]
    suite = gx.ExpectationSuite(
        name=name or ruleset.name,
        meta={
            "source": ruleset.source,
            "description": ruleset.description,
            "generated_by": "medallion framework",
        },
    )
    for item in mapped:
        suite.add_expectation(item.expectation)
    return suite


def validate_with_gx(
    spark: SparkSession,
    data: DataFrame | str | os.PathLike[str],
    ruleset: RuleSet,
    *,
    exact: bool = False,
    data_docs_dir: str | os.PathLike[str] | None = None,
) -> Any:
    """Validate a DataFrame or a Delta table (path) with GX through Spark, as one whole-DataFrame batch.

    Args:
        spark: the session (reads ``data`` when it is a path).
        data: a DataFrame or the path of a Delta table.
        ruleset: the rules to check.
        exact: see :func:`to_expectation_suite`.
        data_docs_dir: also build GX Data Docs into this folder.

    Returns:
        The GX ``CheckpointResult`` (``.success``, ``.run_results``).
    """
    _quiet_gx()
    import great_expectations as gx
    from great_expectations.checkpoint import UpdateDataDocsAction
    from great_expectations.data_context.types.base import ProgressBarsConfig

    df = data if not isinstance(data, str | os.PathLike) else spark.read.format("delta").load(os.fspath(data))
    asset_name = Path(os.fspath(data)).name if isinstance(data, str | os.PathLike) else ruleset.name
    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False, metric_calculations=False)
    actions: list[Any] = []
    if data_docs_dir is not None:
        site: Any = {
            "class_name": "SiteBuilder",
            "store_backend": {
                "class_name": "TupleFilesystemStoreBackend",
                "base_directory": str(Path(data_docs_dir).resolve()),
            },
            "site_index_builder": {"class_name": "DefaultSiteIndexBuilder"},
        }
        context.add_data_docs_site(site_name="medallion", site_config=site)
        actions.append(UpdateDataDocsAction(name="data_docs", site_names=["medallion"]))
    batch = (
        context.data_sources.add_spark("spark")
        .add_dataframe_asset(asset_name)
        .add_batch_definition_whole_dataframe("whole")
    )
    suite = context.suites.add(to_expectation_suite(ruleset, exact=exact, context=context))
    validation = context.validation_definitions.add(
        gx.ValidationDefinition(name=f"{ruleset.name}_validation", data=batch, suite=suite)
    )
    checkpoint = context.checkpoints.add(
        gx.Checkpoint(name=f"{ruleset.name}_checkpoint", validation_definitions=[validation], actions=actions)
    )
    cached = df.cache()  # GX computes many metrics: read the data once
    try:
        return checkpoint.run(batch_parameters={"dataframe": cached})
    finally:
        cached.unpersist()


def build_data_docs(
    spark: SparkSession,
    dataset_df_or_path: DataFrame | str | os.PathLike[str],
    ruleset: RuleSet,
    out_dir: str | os.PathLike[str],
    *,
    exact: bool = False,
) -> Path:
    """Validate with GX and build Data Docs into ``out_dir``; return the path of its ``index.html``."""
    validate_with_gx(spark, dataset_df_or_path, ruleset, exact=exact, data_docs_dir=out_dir)
    index = Path(out_dir).resolve() / "index.html"
    if not index.is_file():
        from framework.errors import PipelineError

        raise PipelineError(
            f"Great Expectations did not write Data Docs to {out_dir}", code="GX_DATA_DOCS_FAILED"
        )
    return index


def validation_summary(result: Any) -> list[dict[str, Any]]:
    """One dict per expectation of a ``CheckpointResult``: rule, mapping, success, unexpected count."""
    rows = []
    for run in result.run_results.values():
        for item in run.results:
            meta = item.expectation_config.meta or {}
            res = item.result or {}
            count = res.get("unexpected_count")
            if count is None:
                count = res.get("observed_value")
            rows.append(
                {
                    "rule": meta.get("rule"),
                    "mapping": meta.get("mapping"),
                    "type": item.expectation_config.type,
                    "success": bool(item.success),
                    "unexpected_count": count,
                }
            )
    return rows


def _quiet_gx() -> None:
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("GX_HOME", str(Path(tempfile.gettempdir()) / "medallion-gx"))
