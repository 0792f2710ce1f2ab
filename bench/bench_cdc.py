"""Benchmark: APPLY CHANGES SCD 1 and SCD 2 vs a hand-written dedup + Delta MERGE (bench/cdc_baseline.py).

Data: 1,000,000 change events over 200,000 keys (times --scale), 10% deletes, 10% out-of-order (delivered one batch
late), in 5 batches of Parquet files. Both sides read the same files, in the same session, alternately, after one
untimed warm-up run of each; each run writes fresh tables, and the benchmark asserts that both sides produced
identical tables. Then a batch touching 1% of the keys is applied to the large SCD 2 target, and the Delta MERGE
metrics are reported per changed row.

Run: ``.venv/bin/python -m bench.bench_cdc [--scale 0.1] [--runs 3] [--only scd1|scd2]``
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

from delta.tables import DeltaTable
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from bench import cdc_baseline
from bench.harness import Comparison, alternate, common_args, write_json
from framework.cdc import ApplyChangesTarget
from framework.declarations import ApplyChanges
from framework.runner.session import get_or_create_session

BATCHES = 5


def generate(spark: SparkSession, root: Path, events: int, keys: int) -> list[str]:
    """Write the change events as one Parquet folder per batch; returns the folders."""
    per_batch = events // BATCHES
    h = F.xxhash64  # deterministic pseudo-randomness, no Python UDFs
    df = spark.range(events).select(
        F.pmod(h("id", F.lit(1)), F.lit(keys)).alias("key"),
        F.col("id").alias("seq"),
        F.when(F.pmod(h("id", F.lit(2)), F.lit(10)) == 0, F.lit("D")).otherwise(F.lit("U")).alias("op"),
        F.concat(F.lit("name-"), F.col("id").cast("string")).alias("name"),
        F.concat(F.lit("city-"), F.pmod(h("id", F.lit(4)), F.lit(500)).cast("string")).alias("city"),
        (F.col("id") * 1.5).alias("amount"),
        F.least(F.floor(F.col("id") / per_batch) + F.when(F.pmod(h("id", F.lit(3)), F.lit(10)) == 0, 1)
                .otherwise(0), F.lit(BATCHES - 1)).cast("int").alias("batch"),
    )
    df.repartition(2).write.partitionBy("batch").mode("overwrite").parquet(str(root / "events"))
    return [str(root / "events" / f"batch={b}") for b in range(BATCHES)]


def spec(scd: int) -> ApplyChanges:
    return ApplyChanges(source="events", keys=("key",), sequence_by="seq", apply_as_deletes="op = 'D'",
                        except_column_list=("op",) if scd == 1 else ("op", "seq"), stored_as_scd_type=scd)


def run_framework(spark: SparkSession, batches: list[str], out: Path, scd: int) -> None:
    target = ApplyChangesTarget(spark, spec(scd), "bench", str(out / "table"), str(out / "state"))
    for i, path in enumerate(batches):
        target.apply_batch(spark.read.parquet(path), i, "bench")


def run_baseline(spark: SparkSession, batches: list[str], out: Path, scd: int) -> None:
    apply = cdc_baseline.scd1_batch if scd == 1 else cdc_baseline.scd2_batch
    for path in batches:
        apply(spark, spark.read.parquet(path), str(out / "table"), str(out / "tombstones"))


def same_table(spark: SparkSession, a: str, b: str) -> bool:
    left: DataFrame = spark.read.format("delta").load(a)
    right: DataFrame = spark.read.format("delta").load(b).select(*left.columns)
    return left.count() == right.count() and left.exceptAll(right).isEmpty() and right.exceptAll(left).isEmpty()


def compare(spark: SparkSession, batches: list[str], root: Path, scd: int, runs: int) -> Comparison:
    def fresh(name: str) -> Path:
        # a leftover table from an earlier invocation (--workdir) would turn the runs into idempotent no-ops
        out = root / name
        shutil.rmtree(out, ignore_errors=True)
        return out

    def framework(i: int) -> None:
        run_framework(spark, batches, fresh(f"fw{scd}_{i}"), scd)

    def baseline(i: int) -> None:
        run_baseline(spark, batches, fresh(f"bl{scd}_{i}"), scd)

    result = alternate(f"scd{scd}", framework, baseline, runs=runs, warmup=True)
    shutil.rmtree(root / f"fw{scd}_-1", ignore_errors=True)
    shutil.rmtree(root / f"bl{scd}_-1", ignore_errors=True)
    for i in range(runs):
        fw, bl = str(root / f"fw{scd}_{i}" / "table"), str(root / f"bl{scd}_{i}" / "table")
        assert same_table(spark, fw, bl), f"SCD {scd} run {i}: framework and baseline tables differ"
        if i < runs - 1:
            shutil.rmtree(root / f"bl{scd}_{i}", ignore_errors=True)
    rows = spark.read.format("delta").load(str(root / f"fw{scd}_0" / "table")).count()
    result.extra["target_rows"] = rows
    result.extra["identical_tables"] = "yes (all runs)"
    return result


def one_percent(spark: SparkSession, root: Path, scd2_dir: Path, keys: int, events: int) -> dict[str, object]:
    """Apply a batch touching 1% of the keys to the large SCD 2 target; report MERGE metrics per changed row."""
    target_path = str(scd2_dir / "table")
    changed = max(1, keys // 100)
    batch = spark.range(changed).select(
        (F.col("id") * 100).alias("key"), (F.col("id") + events * 10).alias("seq"), F.lit("U").alias("op"),
        F.lit("name-changed").alias("name"), F.lit("city-changed").alias("city"), F.lit(0.0).alias("amount"))
    path = str(root / "one_percent")
    batch.write.mode("overwrite").parquet(path)
    target_rows = spark.read.format("delta").load(target_path).count()
    detail = DeltaTable.forPath(spark, target_path).detail().first()
    num_files = detail["numFiles"] if detail is not None else 0
    target = ApplyChangesTarget(spark, spec(2), "bench", target_path, str(scd2_dir / "state"))
    target.apply_batch(spark.read.parquet(path), BATCHES, "bench")
    history = DeltaTable.forPath(spark, target_path).history(1).first()
    assert history is not None
    m = {k: int(v) for k, v in history["operationMetrics"].items() if str(v).isdigit()}
    rewritten_rows = m.get("numTargetRowsCopied", 0) + m.get("numTargetRowsUpdated", 0)
    return {
        "target_rows": target_rows, "target_files": num_files, "changed_keys": changed,
        "rows_updated": m.get("numTargetRowsUpdated", 0), "rows_inserted": m.get("numTargetRowsInserted", 0),
        "rows_copied": m.get("numTargetRowsCopied", 0), "files_removed": m.get("numTargetFilesRemoved", 0),
        "files_added": m.get("numTargetFilesAdded", 0),
        "deletion_vectors_added": m.get("numTargetDeletionVectorsAdded", 0),
        "rows_rewritten_per_changed_row": round(rewritten_rows / changed, 3),
        "files_rewritten_per_changed_row": round(m.get("numTargetFilesRemoved", 0) / changed, 5),
    }


def main(argv: list[str] | None = None) -> int:
    parser = common_args(__doc__ or "", default_scale=1.0)
    parser.add_argument("--only", choices=("scd1", "scd2"), default=None, help="measure one SCD type only")
    args = parser.parse_args(argv)
    types = (1, 2) if args.only is None else (int(args.only[-1]),)
    events, keys = int(1_000_000 * args.scale), int(200_000 * args.scale)
    root = args.workdir or Path(tempfile.mkdtemp(prefix="bench_cdc_"))
    root.mkdir(parents=True, exist_ok=True)
    spark = get_or_create_session()
    print(f"generating {events:,} events over {keys:,} keys in {BATCHES} batches under {root}", file=sys.stderr)
    batches = generate(spark, root, events, keys)
    results = [compare(spark, batches, root, scd, args.runs) for scd in types]
    for r in results:
        print(r.report(limit=1.1))
    if 2 in types:
        extra = one_percent(spark, root, root / f"fw2_{args.runs - 1}", keys, events)
        print("[scd2 1% keys] " + ", ".join(f"{k}={v}" for k, v in extra.items()))
        results[-1].extra["one_percent_batch"] = extra
    write_json(args.json, *results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
