"""REPLACE WHERE flows (SQL ``FLOW REPLACE WHERE predicate BY NAME query``, ``CREATE FLOW ... AS INSERT INTO
target BY NAME REPLACE WHERE predicate query``): a batch flow that, on every update, deletes the target's rows
matching the predicate and inserts the query's rows for that same range, in one commit.

Databricks evaluates the source query for the predicate's range; here the query's rows are filtered by the
predicate, and Delta's ``replaceWhere`` overwrite does the delete and the insert in one commit (its check that
every written row matches the predicate then always holds). Rows outside the predicate are left untouched.
The predicate must be a boolean expression over the query's columns: anything else is an error naming the
dataset, the file and the line before anything is written. Python declares it as ``@dp.table(replace_where=...)``
(a SQL string or a Column, as Databricks' REPLACE WHERE page shows). A backfill overrides the predicate for one
update (Databricks' start-update ``replace_where_overrides``: ``[{"flow_name", "predicate_override"}]``;
``medallion run --replace-where-override FLOW=PREDICATE`` here); the next update uses the declared one again.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from framework.errors import PipelineError, UpdateError
from framework.internals import column_sql
from framework.quality.engine import apply_expectations

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from framework.runner.results import FlowResult


def checked_predicate(df: DataFrame, predicate: Any, *, dataset: str, flow: Any) -> str:
    """``predicate`` (SQL text, or a Column given as its SQL) when it is a boolean expression over ``df``'s
    columns, else PipelineError (REPLACE_WHERE_NOT_BOOLEAN) naming the dataset and where the flow was declared."""
    from pyspark.errors import AnalysisException, ParseException
    from pyspark.sql import functions as F
    from pyspark.sql.types import BooleanType

    where = {"file": flow.location.file, "line": flow.location.line}
    try:
        if not isinstance(predicate, str):  # a Column (Python's replace_where=col(...) >= ...): Delta takes text
            predicate = column_sql(df, predicate)
        kind = df.select(F.expr(predicate).alias("__predicate")).schema["__predicate"].dataType
    except (AnalysisException, ParseException) as exc:
        raise PipelineError(f"REPLACE WHERE of '{dataset}' (flow '{flow.name}'): the predicate '{predicate}' does "
                            f"not resolve against the query's columns ({exc.getCondition()})",
                            code="REPLACE_WHERE_INVALID", **where) from None
    if not isinstance(kind, BooleanType):
        raise PipelineError(f"REPLACE WHERE of '{dataset}' (flow '{flow.name}'): the predicate '{predicate}' is "
                            f"a {kind.simpleString()}, not a boolean condition; write a comparison such as "
                            "date >= current_date() - 7", code="REPLACE_WHERE_NOT_BOOLEAN", **where)
    return predicate


def run_replace_where(executor: Any, result: FlowResult) -> None:
    """Run ``executor``'s REPLACE WHERE flow (a ``FlowExecutor``): the query's rows matching the predicate,
    with the target's expectations, replace the target's rows matching it, in one Delta commit."""
    from framework.storage import state_files

    flow = executor.flow
    dataset = executor._dataset_name()
    df = executor._conform(executor._query())
    if df.isStreaming:
        raise PipelineError(f"REPLACE WHERE flow '{flow.name}' into '{dataset}' must return a batch DataFrame "
                            "(read its sources without STREAM)", code="REPLACE_WHERE_NOT_BATCH",
                            file=flow.location.file, line=flow.location.line)
    override = executor.env.replace_where_overrides.get(flow.name.lower())
    predicate = checked_predicate(df, override if override is not None else flow.replace_where, dataset=dataset,
                                  flow=flow)
    path = executor.env.table_path(executor.registry, executor.target_key)
    created = not state_files.exists(path)
    out, observation = apply_expectations(df.where(predicate), executor.expectations, dataset=dataset,
                                          flow=flow.name, rescued_column=executor._rescued_column())
    executor._prepare_table(path, out)
    writer = (out.write.format("delta").mode("overwrite").option("replaceWhere", predicate)
              .option("mergeSchema", "true").options(**executor._delta_options()))
    if executor.dataset is not None and executor.dataset.partition_cols:
        writer = writer.partitionBy(*executor.dataset.partition_cols)
    writer.save(path)
    executor._record(result, dict(observation.get), batches=1)
    executor._apply_properties(path, created)


def check_overrides(flows: Iterable[Any], overrides: Mapping[str, str]) -> dict[str, str]:
    """The update's predicate overrides (flow name -> predicate, the start-update API's
    ``replace_where_overrides``; ``--replace-where-override`` here) keyed by lower-case flow name; UpdateError
    (REPLACE_WHERE_OVERRIDE_UNKNOWN_FLOW) when one names no REPLACE WHERE flow of the pipeline."""
    known = {f.name.lower(): f.name for f in flows if f.replace_where is not None}
    unknown = [name for name in overrides if name.lower() not in known]
    if unknown:
        raise UpdateError(f"replace_where override for {', '.join(unknown)}: not a REPLACE WHERE flow of the "
                          f"pipeline (its REPLACE WHERE flows: {', '.join(sorted(known.values())) or 'none'})",
                          code="REPLACE_WHERE_OVERRIDE_UNKNOWN_FLOW")
    return {name.lower(): predicate for name, predicate in overrides.items()}
