"""Quarantine: keep the rows that fail a dataset's ``drop`` rules in ``<dataset>_quarantine``.

The quarantine table holds the original row plus three columns:

- ``_failed_rules`` (``array<string>``): the names of the drop rules the row failed (NULL counts as failing);
- ``_update_id`` (``string``): the pipeline update that wrote it — locally the runner's ``pipelines.updateId``
  Spark conf; on Databricks no such value is exposed to query code, so it is NULL there unless the pipeline
  configuration sets ``pipelines.updateId`` (or you pass ``update_id=``);
- ``_quarantined_at`` (``timestamp``): when the row was quarantined (``current_timestamp()``).

It is the usual Databricks pattern: the good table carries ``expect_all_or_drop(rules)``, the quarantine table
is another table over the same input with the inverted condition, so good + quarantined = input, and it
runs unchanged on Databricks. New source columns reach the quarantine table as new columns: appends to it must
allow schema evolution (DLT does for streaming tables; :func:`append_quarantine` uses ``mergeSchema``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import reduce
from typing import TYPE_CHECKING, Any

from framework.compat import resolve_dlt
from framework.quality.engine import passes
from framework.quality.rules import Rule, RuleSet, load_rules

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

QUARANTINE_SUFFIX = "_quarantine"
FAILED_RULES_COLUMN = "_failed_rules"
UPDATE_ID_COLUMN = "_update_id"
QUARANTINED_AT_COLUMN = "_quarantined_at"
QUARANTINE_COLUMNS = (FAILED_RULES_COLUMN, UPDATE_ID_COLUMN, QUARANTINED_AT_COLUMN)
UPDATE_ID_CONF = "pipelines.updateId"


def as_ruleset(rules: RuleSet | str) -> RuleSet:
    """A :class:`RuleSet` as given, or loaded by name/path from the ``expectations/`` folders."""
    return rules if isinstance(rules, RuleSet) else load_rules(rules)


def quarantine_table_name(dataset: str) -> str:
    """``orders_clean`` → ``orders_clean_quarantine``."""
    return f"{dataset}{QUARANTINE_SUFFIX}"


def _drop_rules(rules: RuleSet | Iterable[Rule]) -> list[Rule]:
    return [r for r in rules if r.action == "drop"]


def passes_all(rules: RuleSet | Iterable[Rule]) -> Column:
    """TRUE when a row passes every drop rule, FALSE otherwise (NULL results count as failures)."""
    from pyspark.sql import functions as F

    drop = _drop_rules(rules)
    if not drop:
        return F.lit(True)
    return reduce(lambda a, b: a & b, [passes(r.column()) for r in drop])


def failed_rules(rules: RuleSet | Iterable[Rule]) -> Column:
    """``array<string>`` of the drop rules a row fails, in rule order (empty when it passes them all)."""
    from pyspark.sql import functions as F

    drop = _drop_rules(rules)
    if not drop:
        return F.array().cast("array<string>")
    names = F.array(*[F.when(~passes(r.column()), F.lit(r.name)) for r in drop])
    return F.filter(names, lambda name: name.isNotNull())


def current_update_id(spark: SparkSession | None = None) -> str | None:
    """The running update's id: Spark conf ``pipelines.updateId`` (set by the local runner), else None."""
    if spark is None:
        from pyspark.sql import SparkSession

        spark = SparkSession.getActiveSession()
        if spark is None:
            return None
    try:
        value = spark.conf.get(UPDATE_ID_CONF, None)
    except Exception:
        return None
    return value or None


def quarantined_rows(
    df: DataFrame, rules: RuleSet | Iterable[Rule], *, update_id: str | None = None
) -> DataFrame:
    """The rows of ``df`` failing at least one drop rule, with the quarantine columns added.

    Args:
        df: the input of the dataset's expectations (batch or streaming).
        rules: the dataset's rules; only ``drop`` rules route rows to quarantine.
        update_id: overrides :func:`current_update_id`.
    """
    from pyspark.sql import functions as F

    uid = update_id if update_id is not None else current_update_id(df.sparkSession)
    return df.where(~passes_all(rules)).withColumns(
        {
            FAILED_RULES_COLUMN: failed_rules(rules),
            UPDATE_ID_COLUMN: F.lit(uid).cast("string"),
            QUARANTINED_AT_COLUMN: F.current_timestamp(),
        }
    )


def split_quarantine(
    df: DataFrame, rules: RuleSet | Iterable[Rule], *, update_id: str | None = None
) -> tuple[DataFrame, DataFrame]:
    """``(good, quarantined)``: rows passing every drop rule, and the rest with the quarantine columns."""
    return df.where(passes_all(rules)), quarantined_rows(df, rules, update_id=update_id)


def quarantine_table(
    dataset: str,
    source: str | Callable[[], DataFrame],
    rules: RuleSet | str | None = None,
    *,
    name: str | None = None,
    streaming: bool = True,
    comment: str | None = None,
    dlt_module: Any = None,
    **table_options: Any,
) -> Callable[[], DataFrame]:
    """Declare ``<dataset>_quarantine``: the rows of ``source`` failing the drop rules of ``rules``.

    One line in a pipeline file, next to the good table (which carries the same rules, e.g. with
    ``@expect_rules("orders_clean")``)::

        quarantine_table("orders_clean", "orders_raw")

    Args:
        dataset: the good dataset's name; default rule set and table name derive from it.
        source: the good table's input: a dataset name (read with ``dlt.read_stream`` / ``dlt.read``) or a
            function returning the DataFrame the rules are applied to.
        rules: rule set or rule file name (default: the rule file named like ``dataset``).
        name: the quarantine table's name (default ``<dataset>_quarantine``).
        streaming: with a dataset name, read it as a stream (``dlt.read_stream``) or in batch.
        comment: table comment.
        dlt_module: the module to declare with (default ``framework.compat.dlt_module()``).
        **table_options: passed on to ``dlt.table`` (``table_properties``, ``partition_cols``, ...).

    Returns:
        The registered query function.
    """
    ruleset = as_ruleset(rules if rules is not None else dataset)
    dlt = resolve_dlt(dlt_module)
    table_name = name or quarantine_table_name(dataset)

    def query() -> DataFrame:
        df = source() if callable(source) else dlt.read_stream(source) if streaming else dlt.read(source)
        return quarantined_rows(df, ruleset)

    query.__name__ = table_name
    query.__qualname__ = table_name
    drop_names = ", ".join(ruleset.drop) or "none"
    description = comment or f"Rows of {dataset} that failed its drop rules ({drop_names})."
    dlt.table(name=table_name, comment=description, **table_options)(query)
    return query


def append_quarantine(df: DataFrame, path: str) -> None:
    """Append quarantined rows to a Delta table at ``path``, adding new source columns (``mergeSchema``)."""
    df.write.format("delta").mode("append").option("mergeSchema", "true").save(path)
