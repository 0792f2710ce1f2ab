"""CDC peer comparison (issue 5): APPLY CHANGES SCD 1 on the framework vs open-source Spark Declarative Pipelines.

What is compared: the *same* pipeline file, ``bench/runner_pipelines/cdc_peer/customers.py`` (``from pyspark import
pipelines as dp``: a streaming view over the change events, ``dp.create_streaming_table("customers_scd1")`` and
``dp.create_auto_cdc_flow(keys=["key"], sequence_by="seq", apply_as_deletes="op = 'D'",
except_column_list=["op", "batch"], stored_as_scd_type=1)``), on the events of ``bench_cdc`` (its ``generate``:
1,000,000 events over 200,000 keys at scale 1, 10% deletes, 10% delivered one batch late, Parquet), run as one
fresh process per update from empty storage on both sides, with the same Spark settings (``conf/spark.yaml``) and
Delta Lake as the table format:

* framework: ``python -m framework.cli run SPEC --storage TMP --no-report``;
* peer: ``spark-pipelines run`` from the separate virtualenv of ``bench_peer`` (``.cache/bench-sdp-venv``).

Open-source SDP 4.2 accepts every argument above but refuses to *run* an AutoCDC flow into a Delta table
(``AUTOCDC_TARGET_DOES_NOT_SUPPORT_MERGE``: it needs a DSv2 table implementing ``SupportsRowLevelOperations``, which
delta-spark 4.4's ``DeltaTableV2`` does not). ``--peer`` says what to do about it:

* ``auto`` (default): one untimed probe of ``create_auto_cdc_flow`` on the peer; if it is refused for that reason,
  the peer runs the same file with ``bench.cdc_peer.target=mv`` instead: ``customers_scd1`` as a materialized view
  computing the same table (latest event per key, deleted keys left out) in one batch query; the report says so;
* ``auto_cdc``: the peer must run ``create_auto_cdc_flow`` (fails with the peer's error otherwise);
* ``mv``: the peer runs the materialized view directly (no probe).

Wall times alternate between the two sides (``--runs`` each, medians); the ratio framework / spark-pipelines is
printed last. Both sides' target tables are read back and compared (row count, ``exceptAll`` both ways on the user
columns key, seq, name, city, amount); rows only on one side are classified against the latest event of their key.

Run: ``.venv/bin/python -m bench.bench_cdc_peer [--scale X] [--runs N] [--peer auto|auto_cdc|mv]``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import statistics
import sys
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Any

from bench.bench_peer import (
    REPO,
    ensure_sdp_venv,
    run_process,
    sdp_env,
    sdp_phases,
    write_framework_spec,
    write_sdp_project,
)
from bench.harness import alternate, common_args, write_json

PIPELINE_FILE = REPO / "bench" / "runner_pipelines" / "cdc_peer" / "customers.py"
NAME = "bench_cdc_peer"
TABLE = "customers_scd1"
USER_COLUMNS = ("key", "seq", "name", "city", "amount")
TARGET_KEY = "bench.cdc_peer.target"
REFUSED = "AUTOCDC_TARGET_DOES_NOT_SUPPORT_MERGE"


def ensure_events(work: Path, events: int, keys: int) -> Path:
    """The bench_cdc events under ``work/data/events`` (generated once per size)."""
    from bench.bench_cdc import generate

    data = work / "data"
    marker = data / "events.json"
    wanted = {"events": events, "keys": keys}
    if not marker.exists() or json.loads(marker.read_text()) != wanted:
        from framework.runner.session import get_or_create_session

        shutil.rmtree(data, ignore_errors=True)
        spark = get_or_create_session()
        generate(spark, data, events, keys)
        spark.stop()  # the benchmark itself must not hold a JVM while the two sides run
        marker.write_text(json.dumps(wanted))
    return data / "events"


def framework_flow_s(log: Path) -> float | None:
    """The framework's own time for the APPLY CHANGES flow (its run summary), without JVM start and set-up."""
    match = re.search(rf"^\s*\[\d+/\d+\] {TABLE}\s+COMPLETED\s+\d+ rows\s+([\d.]+)s",
                      log.read_text(errors="replace"), flags=re.M)
    return float(match.group(1)) if match else None


def sdp_flow_s(log: Path) -> float | None:
    """SDP's flow time from its event timestamps (RUNNING to COMPLETED, one-second resolution)."""
    text = log.read_text(errors="replace")
    stamps = []
    for what in (r"is RUNNING\.", r"has COMPLETED\."):
        match = re.search(rf"^(\S+ \S+): Flow \S*{TABLE} {what}", text, flags=re.M)
        if match is None:
            return None
        stamps.append(datetime.strptime(match.group(1), "%Y-%m-%d %H:%M:%S"))
    return (stamps[1] - stamps[0]).total_seconds()


def median_or_none(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return round(statistics.median(known), 2) if known else None


class Peer:
    """``spark-pipelines run`` of the pipeline file, from empty storage, in the SDP virtualenv."""

    def __init__(self, venv: Path, work: Path, landing: Path) -> None:
        self.venv, self.work, self.landing = venv, work, landing
        self.warehouse = work / "sdp_warehouse"

    def run(self, target: str, log: Path) -> float:
        project, storage = self.work / "sdp_project", self.work / "sdp_storage"
        for path in (project, storage, self.warehouse):
            shutil.rmtree(path, ignore_errors=True)
        spec = write_sdp_project(project, self.landing, storage, self.warehouse, PIPELINE_FILE, NAME,
                                 {TARGET_KEY: target})
        elapsed = run_process([str(self.venv / "bin" / "spark-pipelines"), "run", "--spec", str(spec)], project,
                              sdp_env(self.venv, project / "conf"), log)
        print(f"    spark-pipelines phases: {sdp_phases(log)}; flow {sdp_flow_s(log)}s", file=sys.stderr,
              flush=True)
        return elapsed

    def probe_auto_cdc(self, log: Path) -> str | None:
        """Run ``create_auto_cdc_flow`` once; ``None`` if it ran, else the reason the peer refused it."""
        try:
            self.run("auto_cdc", log)
        except RuntimeError:
            text = log.read_text(errors="replace")
            match = re.search(rf"\[{REFUSED}\][^\n]*", text)
            if match is None:
                raise
            return match.group(0)
        return None


def main(argv: list[str] | None = None) -> int:
    parser = common_args(__doc__ or "")
    parser.add_argument("--peer", choices=("auto", "auto_cdc", "mv"), default="auto",
                        help="what the peer runs (default: create_auto_cdc_flow if OSS accepts a Delta target, "
                             "else the materialized view)")
    args = parser.parse_args(argv)
    events, keys = int(1_000_000 * args.scale), int(200_000 * args.scale)
    venv = ensure_sdp_venv()
    work = args.workdir or Path(tempfile.mkdtemp(prefix="bench_cdc_peer_"))
    work.mkdir(parents=True, exist_ok=True)
    landing = ensure_events(work, events, keys)
    print(f"data: {events:,} change events over {keys:,} keys in {landing}; load average {os.getloadavg()}",
          flush=True)
    logs = work / "logs"
    logs.mkdir(exist_ok=True)
    fw_spec = write_framework_spec(work, landing, PIPELINE_FILE.parent, NAME)
    fw_storage = work / "fw_storage"
    peer = Peer(venv, work, landing)

    target, refused = args.peer, None
    if args.peer == "auto":
        print("probing open-source create_auto_cdc_flow on a Delta target (untimed)", file=sys.stderr, flush=True)
        refused = peer.probe_auto_cdc(logs / "sdp-probe.log")
        target = "auto_cdc" if refused is None else "mv"
        if refused is not None:
            print(f"  refused: {refused}\n  peer falls back to the materialized view ({TARGET_KEY}=mv)",
                  file=sys.stderr, flush=True)

    flow_s: dict[str, list[float | None]] = {"framework": [], "spark-pipelines": []}

    def framework(i: int) -> None:
        shutil.rmtree(fw_storage, ignore_errors=True)
        log = logs / f"framework-{i}.log"
        run_process([sys.executable, "-m", "framework.cli", "run", str(fw_spec), "--storage", str(fw_storage),
                     "--no-report"], REPO, None, log)
        flow_s["framework"].append(framework_flow_s(log))
        print(f"    framework flow {flow_s['framework'][-1]}s", file=sys.stderr, flush=True)

    def spark_pipelines(i: int) -> None:
        log = logs / f"sdp-{i}.log"
        peer.run(target, log)
        flow_s["spark-pipelines"].append(sdp_flow_s(log))

    peer_label = ("create_auto_cdc_flow" if target == "auto_cdc"
                  else "materialized view (same table; OSS create_auto_cdc_flow cannot target Delta)")
    load_before = os.getloadavg()
    cmp_ = alternate(f"cdc peer: framework APPLY CHANGES / spark-pipelines {target}", framework, spark_pipelines,
                     args.runs)
    cmp_.extra["load average before / after"] = f"{load_before} / {os.getloadavg()}"
    cmp_.extra["peer ran"] = peer_label
    cmp_.extra["flow time medians, s (framework, spark-pipelines)"] = (
        median_or_none(flow_s["framework"]), median_or_none(flow_s["spark-pipelines"]))
    if refused is not None:
        cmp_.extra["peer create_auto_cdc_flow on Delta"] = refused
    cmp_.extra.update(check_outputs(fw_storage / "tables" / TABLE, peer.warehouse / TABLE, landing))
    cmp_.extra["compared"] = ("same pipeline file, same data, one fresh process per update from empty storage, "
                              "both writing Delta; framework without its HTML report (--no-report)")
    print(cmp_.report(), flush=True)
    short = "create_auto_cdc_flow" if target == "auto_cdc" else "materialized view"
    print(f"[{cmp_.name}] ratio framework / spark-pipelines (peer: {short}) = {cmp_.ratio:.3f}", flush=True)
    write_json(args.json, cmp_)
    return 0


def check_outputs(fw_path: Path, peer_path: Path, landing: Path) -> dict[str, Any]:
    """Compare the two target tables on the user columns; classify and report any difference.

    Keys that differ are matched against their events: a key kept on one side although its latest event is a
    delete, or dropped on one side by an earlier delete, is a delete/tombstone-handling difference; two versions
    of a key of which one is the latest event is a sequencing difference. Both are reported, not failed; anything
    else (same version with other values, a key missing without any delete, duplicate keys) fails.
    """
    from pyspark.sql import functions as F

    from framework.runner.session import get_or_create_session

    spark = get_or_create_session()
    tables = {"framework": spark.read.format("delta").load(str(fw_path)),
              "spark-pipelines": spark.read.format("delta").load(str(peer_path))}
    result: dict[str, Any] = {}
    unexplained: list[str] = []
    for side, df in tables.items():
        missing = [c for c in USER_COLUMNS if c not in df.columns]
        if missing:
            raise AssertionError(f"{side} target lacks user columns {missing}: {df.columns}")
        extra = [c for c in df.columns if c not in USER_COLUMNS]
        if extra:
            result[f"{side} extra columns (not compared)"] = extra
    fw, pe = (tables[s].select(*USER_COLUMNS) for s in ("framework", "spark-pipelines"))
    counts = (fw.count(), pe.count())
    result["target rows (framework, spark-pipelines)"] = counts
    for side, df, n in (("framework", fw, counts[0]), ("spark-pipelines", pe, counts[1])):
        if df.select("key").distinct().count() != n:
            unexplained.append(f"duplicate keys in the {side} target")
    diff_keys = fw.exceptAll(pe).select("key").union(pe.exceptAll(fw).select("key")).distinct()
    if diff_keys.isEmpty() and not unexplained:
        result["identical target tables"] = "yes (user columns, exceptAll both ways)"
        return result
    events = spark.read.schema("key BIGINT, seq BIGINT, op STRING").parquet(str(landing))
    latest = events.groupBy("key").agg(
        F.max("seq").alias("last_seq"), F.max_by("op", "seq").alias("last_op"),
        F.max(F.when(F.col("op") == "D", F.col("seq"))).alias("last_delete_seq"))
    fw_seq, pe_seq = F.col("fw_seq"), F.col("pe_seq")
    one_side = F.when(fw_seq.isNull(), F.lit("spark-pipelines")).otherwise(F.lit("framework"))
    other_side = F.when(fw_seq.isNull(), F.lit("framework")).otherwise(F.lit("spark-pipelines"))
    kind = (F.when(F.col("last_seq").isNull(), F.lit("UNEXPLAINED: key not in the events"))
            .when(fw_seq.isNotNull() & pe_seq.isNotNull() & (fw_seq == pe_seq),
                  F.lit("UNEXPLAINED: same version of the key, different values"))
            .when(fw_seq.isNotNull() & pe_seq.isNotNull() & (fw_seq == F.col("last_seq")),
                  F.lit("sequencing: spark-pipelines keeps an older version than the latest event"))
            .when(fw_seq.isNotNull() & pe_seq.isNotNull() & (pe_seq == F.col("last_seq")),
                  F.lit("sequencing: framework keeps an older version than the latest event"))
            .when(fw_seq.isNotNull() & pe_seq.isNotNull(),
                  F.lit("UNEXPLAINED: two versions, neither the latest event"))
            .when(F.col("last_op") == "D",
                  F.concat(F.lit("deletes: "), one_side, F.lit(" keeps a key whose latest event is a delete")))
            .when(F.col("last_delete_seq").isNotNull(),
                  F.concat(F.lit("deletes: "), other_side,
                           F.lit(" dropped a key whose later update came after a delete (tombstone handling)")))
            .otherwise(F.concat(F.lit("UNEXPLAINED: key missing in "), other_side)))
    rows = (diff_keys.join(fw.select("key", F.col("seq").alias("fw_seq")), "key", "left")
            .join(pe.select("key", F.col("seq").alias("pe_seq")), "key", "left")
            .join(latest, "key", "left").groupBy(kind.alias("kind")).count().collect())
    by_kind = {r["kind"]: r["count"] for r in rows}
    result["differing keys by kind"] = by_kind
    unexplained += [k for k in by_kind if k.startswith("UNEXPLAINED")]
    print(f"SEMANTIC DIFFERENCE between the two target tables: {result}", file=sys.stderr, flush=True)
    if unexplained:
        raise AssertionError(f"the two target tables differ in a way not explained by delete or sequencing "
                             f"semantics: {unexplained}; {result}")
    return result


if __name__ == "__main__":
    sys.exit(main())
