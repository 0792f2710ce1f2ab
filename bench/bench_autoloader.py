"""Bronze ingestion through ``cloudFiles`` (rescued data on) vs a hand-written file-stream baseline.

Scenarios (each alternating framework/baseline runs on the same generated files, medians compared):

* ``json``: 2,000,000 rows in 200 JSON-lines files at scale 1 (0.1 % of rows carry a value of the wrong type);
* ``csv``: the same rows as CSV files with a header;
* ``small_files``: 10,000 JSON files of 3 rows each; files/s reported.

Framework: ``load_cloud_files`` with inferred types (``cloudFiles.inferColumnTypes``, sample of 50 files, the hint
``amount DOUBLE`` so that the ``"n/a"`` values are rescued), ``_rescued_data`` and the ``addNewColumns`` guard,
written with ``writeStream.format("delta")``, available-now.
Baseline: ``spark.readStream.format(json|csv)`` with a fixed schema, same trigger, sink and batch size.

The headline ratio is steady-state ingestion: the schema is inferred once (untimed) and kept at the schema
location, as on every update after a stream's first; checkpoint and table start empty on every run. The first
update's schema inference is timed separately and reported as ``inference_s``.

Run: ``.venv/bin/python -m bench.bench_autoloader [--scale X] [--runs N] [--only json,csv,small_files]``.
"""

from __future__ import annotations

import json
import random
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench.harness import Comparison, alternate, common_args, write_json

LIMIT = 1.25
SCHEMA = "id BIGINT, ts TIMESTAMP, customer STRING, amount DOUBLE, qty INT, status STRING, country STRING, note STRING"
FRAMEWORK_OPTIONS = {"cloudFiles.inferColumnTypes": "true", "cloudFiles.schemaInference.sampleSize.numFiles": "50",
                     "cloudFiles.maxFilesPerTrigger": "1000", "cloudFiles.schemaHints": "amount DOUBLE"}


def _row(rng: random.Random, i: int) -> dict[str, object]:
    row: dict[str, object] = {
        "id": i, "ts": f"2024-{1 + i % 12:02d}-{1 + i % 28:02d}T{i % 24:02d}:{i % 60:02d}:00",
        "customer": f"c{rng.randrange(100000)}", "amount": round(rng.random() * 1000, 2),
        "qty": rng.randrange(1, 20), "status": rng.choice(["new", "paid", "shipped", "returned"]),
        "country": rng.choice(["DE", "FR", "US", "JP", "BR"]), "note": "x" * rng.randrange(0, 20)}
    if i % 1000 == 7:
        row["amount"] = "n/a"  # a type mismatch: rescued by the framework, NULL in the baseline
    return row


def generate(root: Path, files: int, rows_per_file: int, fmt: str, seed: int = 7) -> Path:
    target = root / f"{fmt}_{files}x{rows_per_file}"
    marker = target / "_COMPLETE"
    if marker.exists():
        return target
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    rng = random.Random(seed)
    n = 0
    cols = ["id", "ts", "customer", "amount", "qty", "status", "country", "note"]
    for f in range(files):
        rows = [_row(rng, n + r) for r in range(rows_per_file)]
        n += rows_per_file
        if fmt == "json":
            text = "\n".join(json.dumps(r) for r in rows) + "\n"
        else:
            text = ",".join(cols) + "\n" + "\n".join(",".join(str(r[c]) for c in cols) for r in rows) + "\n"
        (target / f"part-{f:05d}.{fmt}").write_text(text)
    marker.write_text(str(n))
    return target


def main() -> None:
    parser = common_args(__doc__ or "")
    parser.add_argument("--only", default="json,csv,small_files")
    args = parser.parse_args()
    from framework.autoloader import load_cloud_files
    from framework.runner.session import get_or_create_session

    spark = get_or_create_session()
    work = args.workdir or Path(tempfile.mkdtemp(prefix="bench_autoloader_"))
    work.mkdir(parents=True, exist_ok=True)
    out = work / "out"
    results: list[Comparison] = []

    def run_stream(df: object, name: str) -> None:
        q = (df.writeStream.format("delta")  # type: ignore[attr-defined]
             .option("checkpointLocation", str(out / name / "_checkpoint"))
             .trigger(availableNow=True).start(str(out / name / "table")))
        q.awaitTermination()

    def framework(src: Path, fmt: str, extra: dict[str, str]) -> Callable[[int], object]:
        def run(_: int) -> None:
            # each run starts from an empty table and checkpoint; the schema location keeps the inferred schema
            shutil.rmtree(out / "fw" / "table", ignore_errors=True)
            shutil.rmtree(out / "fw" / "_checkpoint", ignore_errors=True)
            opts = {"cloudFiles.format": fmt, **FRAMEWORK_OPTIONS, **extra}
            df = load_cloud_files(spark, str(src), opts, default_schema_location=str(out / "fw_schema"),
                                  checkpoint_location=str(out / "fw" / "_checkpoint"))
            run_stream(df, "fw")
        return run

    def inference(src: Path, fmt: str, extra: dict[str, str]) -> float:
        """Time the first update's schema inference (from an empty schema location) and keep its result."""
        shutil.rmtree(out / "fw_schema", ignore_errors=True)
        opts = {"cloudFiles.format": fmt, **FRAMEWORK_OPTIONS, **extra}
        start = time.perf_counter()
        load_cloud_files(spark, str(src), opts, default_schema_location=str(out / "fw_schema"))
        return round(time.perf_counter() - start, 2)

    def baseline(src: Path, fmt: str, extra: dict[str, str]) -> Callable[[int], object]:
        def run(_: int) -> None:
            shutil.rmtree(out / "base", ignore_errors=True)
            df = (spark.readStream.format(fmt).schema(SCHEMA).option("maxFilesPerTrigger", "1000")
                  .options(**extra).load(str(src)))
            run_stream(df, "base")
        return run

    def count(name: str, where: str = "true") -> int:
        return spark.read.format("delta").load(str(out / name / "table")).where(where).count()

    scenarios = [s.strip() for s in args.only.split(",") if s.strip()]
    files = max(2, int(200 * args.scale))
    rows = 10_000
    for fmt in ("json", "csv"):
        if fmt not in scenarios:
            continue
        src = generate(work / "data", files, rows, fmt)
        extra = {"header": "true"} if fmt == "csv" else {}
        print(f"[{fmt}] {files} files x {rows} rows = {files * rows} rows in {src}", flush=True)
        inference(src, fmt, extra)  # once to warm up, then timed
        inferred_s = inference(src, fmt, extra)
        cmp_ = alternate(f"bronze_{fmt}", framework(src, fmt, extra), baseline(src, fmt, extra), args.runs,
                         warmup=True)
        fw_rows, base_rows = count("fw"), count("base")
        rescued = count("fw", "_rescued_data IS NOT NULL")
        cmp_.extra.update({"rows": files * rows, "framework_rows": fw_rows, "baseline_rows": base_rows,
                           "rescued_rows": rescued, "inference_s": inferred_s,
                           "framework_rows_per_s": round(files * rows / cmp_.framework_median),
                           "baseline_rows_per_s": round(files * rows / cmp_.baseline_median)})
        print(cmp_.report(LIMIT), flush=True)
        results.append(cmp_)
    if "small_files" in scenarios:
        n_files = max(10, int(10_000 * args.scale))
        src = generate(work / "data", n_files, 3, "json")
        print(f"[small_files] {n_files} files x 3 rows in {src}", flush=True)
        inference(src, "json", {})
        cmp_ = alternate("small_files", framework(src, "json", {}), baseline(src, "json", {}), args.runs,
                         warmup=True)
        cmp_.extra.update({"files": n_files, "framework_rows": count("fw"), "baseline_rows": count("base"),
                           "framework_files_per_s": round(n_files / cmp_.framework_median, 1),
                           "baseline_files_per_s": round(n_files / cmp_.baseline_median, 1)})
        print(cmp_.report(), flush=True)
        results.append(cmp_)
    write_json(args.json, *results)


if __name__ == "__main__":
    main()
