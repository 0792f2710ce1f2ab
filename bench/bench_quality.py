"""Benchmark: expectations on a silver flow, and the cost of quarantine.

1. ``expectations``: 10 rules (5 drop, 5 warn) on ``2,000,000 * --scale`` orders read from Parquet and written to
   Delta. Framework: ``framework.quality.engine.apply_expectations`` (the engine the runner uses). Baseline: the same
   rules written by hand as filters plus per-rule counts, in one pass (``DataFrame.observe``), i.e. the best a
   careful engineer writes without the framework. Limit: ratio ≤ 1.2.
2. ``quarantine``: the same framework flow plus the ``<dataset>_quarantine`` table
   (``framework.quality.quarantine.quarantined_rows``) vs the flow without quarantine. Limit: ratio ≤ 1.3.

Both sides run in one process and Spark session, alternately (bench/harness.py); each run writes a fresh table and
the benchmark checks that both sides wrote the same number of rows and counted the same failures.

Run: ``.venv/bin/python -m bench.bench_quality [--scale 0.25] [--runs 3]``
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from functools import reduce
from pathlib import Path
from typing import Any

from pyspark.sql import Column, Observation, SparkSession
from pyspark.sql import functions as F

from bench.harness import alternate, common_args, write_json
from framework.declarations import Expectation
from framework.quality.quarantine import append_quarantine, quarantined_rows
from framework.quality.rules import Rule, RuleSet
from framework.runner.session import get_or_create_session

ROWS = 2_000_000
RULES = RuleSet(
    "orders_clean",
    (
        Rule("order_id_present", "order_id IS NOT NULL", "drop"),
        Rule("customer_id_present", "customer_id IS NOT NULL", "drop"),
        Rule("amount_positive", "amount > 0", "drop"),
        Rule("known_currency", "currency IN ('EUR', 'USD', 'GBP', 'CHF')", "drop"),
        Rule("order_ts_present", "order_ts IS NOT NULL", "drop"),
        Rule("known_status", "status IN ('NEW', 'PAID', 'SHIPPED', 'CANCELLED', 'REFUNDED')", "warn"),
        Rule("amount_plausible", "amount BETWEEN 0 AND 100000", "warn"),
        Rule("order_ts_not_in_future", "order_ts <= current_timestamp() + INTERVAL 1 DAY", "warn"),
        Rule("currency_code_length", "length(currency) = 3", "warn"),
        Rule("status_upper", "status = upper(status)", "warn"),
    ),
)


def generate(spark: SparkSession, path: Path, rows: int) -> None:
    """Orders with ~1% failures per rule, deterministic (xxhash64 of the id), written as Parquet."""
    h = lambda salt: F.pmod(F.xxhash64("id", F.lit(salt)), F.lit(1000))  # noqa: E731
    currencies = F.array(*[F.lit(c) for c in ("EUR", "USD", "GBP", "CHF")])
    statuses = F.array(*[F.lit(s) for s in ("NEW", "PAID", "SHIPPED", "CANCELLED", "REFUNDED")])
    df = spark.range(rows).select(
        F.when(h(1) < 5, None).otherwise(F.col("id")).alias("order_id"),
        F.when(h(2) < 5, None).otherwise(F.pmod("id", F.lit(50_000))).alias("customer_id"),
        F.when(h(3) < 8, -1.0).when(h(3) < 12, 250_000.0).otherwise(h(4) / 10.0 + 1).alias("amount"),
        F.when(h(5) < 6, F.lit("JPY"))
        .otherwise(F.element_at(currencies, (F.pmod("id", F.lit(4)) + 1).cast("int")))
        .alias("currency"),
        F.when(h(6) < 5, None)
        .otherwise(F.timestamp_seconds(F.lit(1_700_000_000) + F.col("id")))
        .alias("order_ts"),
        F.when(h(7) < 7, F.lit("lost"))
        .otherwise(F.element_at(statuses, (F.pmod("id", F.lit(5)) + 1).cast("int")))
        .alias("status"),
    )
    df.repartition(2).write.mode("overwrite").parquet(str(path))


def expectations() -> list[Expectation]:
    return [r.to_expectation() for r in RULES]


def run_engine(spark: SparkSession, source: str, target: str) -> dict[str, Any]:
    # ---- framework call site: the expectations engine (framework/quality/engine.py) ----
    from framework.quality.engine import apply_expectations

    out, observation = apply_expectations(
        spark.read.parquet(source), expectations(), dataset="orders_clean", flow="orders_clean"
    )
    out.write.format("delta").mode("overwrite").save(target)
    return dict(observation.get)


def run_by_hand(spark: SparkSession, source: str, target: str) -> dict[str, Any]:
    """The baseline: hand-written filters and counts, one pass over the data."""
    df = spark.read.parquet(source)
    checks = {r.name: F.coalesce(F.expr(r.constraint), F.lit(False)) for r in RULES}
    keep: Column = reduce(lambda a, b: a & b, [checks[r.name] for r in RULES if r.action == "drop"])
    observation = Observation("by_hand")
    counted = df.observe(
        observation,
        F.count(F.lit(1)).alias("total"),
        *[F.sum(F.when(c, 0).otherwise(1)).alias(n) for n, c in checks.items()],
        F.sum(F.when(keep, 0).otherwise(1)).alias("dropped"),
    )
    counted.where(keep).write.format("delta").mode("overwrite").save(target)
    return dict(observation.get)


def run_with_quarantine(spark: SparkSession, source: str, target: str) -> None:
    run_engine(spark, source, target)
    bad = quarantined_rows(spark.read.parquet(source), RULES, update_id="bench")
    append_quarantine(bad, target + "_quarantine")


def main(argv: list[str] | None = None) -> int:
    args = common_args(__doc__.splitlines()[0], default_scale=1.0).parse_args(argv)
    rows = int(ROWS * args.scale)
    spark = get_or_create_session()
    work = args.workdir or Path(tempfile.mkdtemp(prefix="bench_quality_"))
    source = str(work / "orders")
    print(f"generating {rows:,} orders in {source}", file=sys.stderr, flush=True)
    generate(spark, Path(source), rows)
    out = work / "out"

    def target(side: str, i: int) -> str:
        return str(out / f"{side}_{i}")

    print("warm-up (JIT, Delta writer): one untimed run of each side", file=sys.stderr, flush=True)
    run_with_quarantine(spark, source, target("warm_fw", 0))
    run_by_hand(spark, source, target("warm_bl", 0))

    counts: dict[str, dict[str, Any]] = {}
    first = alternate(
        "expectations",
        lambda i: counts.__setitem__("framework", run_engine(spark, source, target("fw", i))),
        lambda i: counts.__setitem__("baseline", run_by_hand(spark, source, target("bl", i))),
        runs=args.runs,
    )
    fw, bl = counts["framework"], counts["baseline"]
    failed_fw = {n: fw[f"failed_{i}"] for i, n in enumerate(RULES.names)}
    failed_bl = {n: bl[n] for n in RULES.names}
    assert failed_fw == failed_bl and fw["dropped"] == bl["dropped"], (fw, bl)
    first.extra.update(
        rows=rows, rules="10 (5 drop, 5 warn)", dropped=fw["dropped"], failed_per_rule=failed_fw
    )

    second = alternate(
        "quarantine",
        lambda i: run_with_quarantine(spark, source, target("q", i)),
        lambda i: run_engine(spark, source, target("nq", i)),
        runs=args.runs,
    )
    quarantined = spark.read.format("delta").load(target("q", args.runs - 1) + "_quarantine").count()
    assert quarantined == fw["dropped"], (quarantined, fw["dropped"])
    second.extra.update(rows=rows, quarantined=quarantined)

    print(first.report(1.2))
    print(second.report(1.3))
    write_json(args.json, first, second)
    if args.workdir is None:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
