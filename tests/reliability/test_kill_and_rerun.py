"""kill -9 at random points of an update, then rerun: every row exactly once in every table, and an event log that
tells what the killed update did (issue 19, "Durable event log").

One pipeline holds the six flow kinds: Auto Loader (cloudFiles JSON), a streaming table (Delta -> Delta), a
materialized view, APPLY CHANGES SCD 1 and SCD 2, and snapshot CDC. Each round lands new input, starts
``medallion run`` in a fresh process, kills its whole process group (the JVM included) a random delay after the
chosen flow printed "starting" (flows and delays drawn with a fixed seed), then runs the next update in this
process and checks the tables and the event log.
"""

from __future__ import annotations

import io
import json
import os
import random
import re
import signal
import subprocess
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from framework.runner.update import UpdateOptions, run_update
from framework.spec import PipelineSpec, load_spec
from tests.reliability.helpers import Event, final_state, medallion_popen, of_update, read_events, write_spec

pytestmark = [pytest.mark.spark, pytest.mark.slow]

SEED = 3  # kills during silver, users_scd2, customers (with bronze and changes in flight)
KILLS = 3
MAX_DELAY_S = 1.5  # after "starting": flows of this pipeline run for one to several seconds each
KINDS = ("bronze", "silver", "gold", "users_scd1", "users_scd2", "customers")  # the flows a kill aims at

# Events are committed by a background writer after the data (``EventLog.commit_soon``: when the update starts
# running and when each flow ends), so a kill can land between a flow's data commit and its event's commit. What
# the child announced less than a window before the kill may therefore be missing from the log; what it announced
# earlier must be there. The window is measured on a 2-core machine shared with other Spark jobs (load average
# 10-14): the killed child's first commit (create_update, on a cold JVM) came 26-27 s after the event, the next
# one (the flow definitions) 38 s after; the warm in-process updates committed within 1-13 s. Inside the window,
# what remains checked is that the committed events are a prefix of the update's sequence (the writer commits in
# order, everything pending at once): no event exists without the ones emitted before it, so a flow's COMPLETED
# implies its update's create_update and flow definitions.
WINDOW_S = 30.0

PIPELINE = """
import json
from pathlib import Path

import dlt
from pyspark.sql import functions as F

LANDING = Path(spark.conf.get("landing"))

@dlt.table
def bronze():
    return (spark.readStream.format("cloudFiles").option("cloudFiles.format", "json")
            .option("cloudFiles.maxFilesPerTrigger", "1").schema("id BIGINT, v STRING")
            .load(str(LANDING / "orders")).select("id", "v"))

@dlt.table
def silver():
    return dlt.read_stream("bronze").select("id", "v")

@dlt.table
def gold():
    return dlt.read("silver").select("id", "v")

@dlt.table
def changes():
    return (spark.readStream.format("json").schema("id INT, name STRING, op STRING, seq INT")
            .option("maxFilesPerTrigger", 1).load(str(LANDING / "changes")))

dlt.create_streaming_table("users_scd1")
dlt.apply_changes(target="users_scd1", source="changes", keys=["id"], sequence_by="seq",
                  apply_as_deletes=F.expr("op = 'D'"), except_column_list=["op", "seq"])

dlt.create_streaming_table("users_scd2")
dlt.apply_changes(target="users_scd2", source="changes", keys=["id"], sequence_by="seq",
                  apply_as_deletes=F.expr("op = 'D'"), except_column_list=["op", "seq"], stored_as_scd_type=2)

def next_snapshot(latest_version):
    folder = LANDING / "snapshots"
    newer = sorted(v for v in (int(p.stem[2:]) for p in folder.glob("v_*.json"))
                   if latest_version is None or v > latest_version)
    if not newer:
        return None
    rows = json.loads((folder / f"v_{newer[0]}.json").read_text())
    return spark.createDataFrame(rows, "id INT, value STRING"), newer[0]

dlt.create_streaming_table("customers")
dlt.apply_changes_from_snapshot(target="customers", source=next_snapshot, keys=["id"], stored_as_scd_type=2)
"""

FLOWS = ("bronze", "silver", "gold", "changes", "users_scd1", "users_scd2", "customers")
UPDATE_LINE = re.compile(r"\] update ([0-9a-f]{8}): loading")
STARTING_LINE = re.compile(r"^\s+(\S+)\s+starting$")
COMPLETED_LINE = re.compile(r"^\s+\[\d+/\d+\]\s+(\S+)\s+COMPLETED\b")


@dataclass
class Feed:
    """The input of every round, and what each table must hold after it."""

    landing: Path
    rng: random.Random
    orders: list[int] = field(default_factory=list)
    changes: list[dict[str, Any]] = field(default_factory=list)
    snapshots: list[tuple[int, dict[int, str]]] = field(default_factory=list)

    def land(self, round_no: int) -> None:
        """Two order files, two change files, one snapshot version."""
        for f in range(2):
            ids = list(range(len(self.orders), len(self.orders) + 5))
            self.orders += ids
            self._jsonl(f"orders/r{round_no}_{f}.json", [{"id": i, "v": f"v{i}"} for i in ids])
        for f in range(2):
            self._jsonl(f"changes/r{round_no}_{f}.json", [self._change(k) for k in self.rng.sample(range(8), 4)])
        self._snapshot(round_no + 1)

    def _change(self, key: int) -> dict[str, Any]:
        seq = len(self.changes) + 1
        alive = [e for e in self.changes if e["id"] == key]
        op = "D" if alive and alive[-1]["op"] == "U" and self.rng.random() < 0.25 else "U"
        event = {"id": key, "name": f"n{seq}", "op": op, "seq": seq}
        self.changes.append(event)
        return event

    def _snapshot(self, version: int) -> None:
        rows = dict(self.snapshots[-1][1]) if self.snapshots else {k: f"c0_{k}" for k in range(4)}
        if len(rows) > 2:
            rows.pop(self.rng.choice(sorted(rows)))
        changed = self.rng.choice(sorted(rows))
        rows[changed] = f"c{version}_{changed}"
        rows[100 + version] = f"c{version}_new"
        self.snapshots.append((version, rows))
        path = self.landing / "snapshots" / f"v_{version}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(sorted(rows.items())))

    def _jsonl(self, name: str, rows: list[dict[str, Any]]) -> None:
        path = self.landing / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))

    def scd1(self) -> list[tuple[Any, ...]]:
        latest: dict[int, dict[str, Any]] = {}
        for event in sorted(self.changes, key=lambda e: e["seq"]):
            latest[event["id"]] = event
        return sorted(((k, e["name"]) for k, e in latest.items() if e["op"] == "U"), key=repr)

    def scd2(self) -> list[tuple[Any, ...]]:
        rows = []
        for key in {e["id"] for e in self.changes}:
            events = sorted((e for e in self.changes if e["id"] == key), key=lambda e: e["seq"])
            for i, event in enumerate(events):
                if event["op"] == "U":
                    end = events[i + 1]["seq"] if i + 1 < len(events) else None
                    rows.append((key, event["name"], event["seq"], end))
        return sorted(rows, key=repr)

    def snapshot_history(self) -> list[tuple[Any, ...]]:
        rows, current = [], {}  # current: key -> (value, version it started at)
        for version, snapshot in self.snapshots:
            for key, (value, start) in list(current.items()):
                if snapshot.get(key) != value:
                    rows.append((key, value, start, version))
                    del current[key]
            for key, value in snapshot.items():
                current.setdefault(key, (value, version))
        rows += [(k, v, s, None) for k, (v, s) in current.items()]
        return sorted(rows, key=repr)


@dataclass
class Killed:
    """What the killed child printed (with when) and how it ended."""

    returncode: int
    at: float
    lines: list[tuple[float, str]]

    @property
    def was_killed(self) -> bool:
        return self.returncode == -signal.SIGKILL

    def first(self, pattern: re.Pattern[str]) -> tuple[float, re.Match[str]] | None:
        return next(((t, m) for t, line in self.lines for m in (pattern.search(line),) if m), None)

    def completed(self) -> dict[str, float]:
        """The flows the child printed as COMPLETED, with when."""
        return {m.group(1): t for t, line in self.lines for m in (COMPLETED_LINE.match(line),) if m}

    def output(self) -> str:
        """The child's output, each line with when it was read, in seconds relative to the kill."""
        return "\n".join(f"{t - self.at:+7.2f} {line}" for t, line in self.lines)[-4000:]


def run_and_kill(spec_file: Path, flow: str, delay: float) -> Killed:
    """``medallion run`` in a fresh process, killed (SIGKILL to its process group) ``delay`` seconds after
    ``flow`` printed "starting"; a child that ends first is left to end."""
    proc = medallion_popen("run", str(spec_file), "--no-report", stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, bufsize=1)
    lines: list[tuple[float, str]] = []
    reached = threading.Event()

    def read() -> None:
        assert proc.stderr is not None
        for raw in proc.stderr:
            line = raw.rstrip("\n")
            lines.append((time.monotonic(), line))
            match = STARTING_LINE.match(line)
            if match and match.group(1) == flow:
                reached.set()
        reached.set()  # the child ended

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        assert reached.wait(600), "the child printed nothing for 10 minutes"
        time.sleep(delay)
        at = time.monotonic()
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        returncode = proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    reader.join(timeout=30)
    killed = Killed(returncode, at, lines)
    assert killed.first(re.compile(rf"^\s+{re.escape(flow)}\s+starting$")) is not None, killed.output()
    return killed


def test_killed_updates_lose_and_duplicate_nothing(spark: SparkSession, tmp_path: Path) -> None:
    rng = random.Random(SEED)
    feed = Feed(tmp_path / "landing", rng)
    spec_file = write_spec(tmp_path, {"p.py": PIPELINE}, name="kill9", configuration={"landing": str(feed.landing)})
    spec = load_spec(spec_file)
    kills = []
    for round_no, target in enumerate(rng.sample(KINDS, KILLS)):
        feed.land(round_no)
        killed = run_and_kill(spec_file, target, rng.uniform(0, MAX_DELAY_S))
        kills.append(killed)
        check_killed_update(read_events(spark, spec.events_dir), killed)

        rerun = run_update(spec, UpdateOptions(out=io.StringIO()), spark=spark)
        assert rerun.succeeded, [(f.flow, f.error) for f in rerun.flows if f.error] or rerun.error
        check_tables(spark, spec, feed)
        check_log(read_events(spark, spec.events_dir), rerun.update_id)
    # the kill points must land inside updates (else this test checks nothing): a child that had ended before
    # its kill is allowed once
    assert sum(k.was_killed for k in kills) >= KILLS - 1, [k.returncode for k in kills]


def check_killed_update(events: list[Event], killed: Killed) -> None:
    """The killed update left a prefix of its events: its create_update and the COMPLETED progress of every flow
    that finished (its data committed) more than WINDOW_S before the kill, with the flow definitions before them."""
    loading = killed.first(UPDATE_LINE)
    assert loading is not None, killed.output()
    started_at, match = loading
    ids = {e.update_id for e in events if e.update_id.startswith(match.group(1))}
    assert len(ids) <= 1
    mine = of_update(events, ids.pop()) if ids else []
    assert [e.seq for e in mine] == list(range(1, len(mine) + 1)), "committed out of order: a gap in seq_no"
    types = [e.event_type for e in mine]
    if killed.at - started_at > WINDOW_S or mine:
        assert types[:1] == ["create_update"], (types, killed.output())
    logged = {e.flow_name for e in mine if e.event_type == "flow_progress" and e.status == "COMPLETED"}
    due = {flow for flow, t in killed.completed().items() if killed.at - t > WINDOW_S}
    assert due <= logged, (due - logged, killed.output())
    if logged:
        assert {e.flow_name for e in mine if e.event_type == "flow_definition"} == set(FLOWS)
    assert logged <= set(killed.completed()), "an event for a flow that never completed"
    if killed.was_killed:
        assert final_state(events, mine[0].update_id if mine else "") not in ("COMPLETED", "FAILED")


def check_log(events: list[Event], rerun_id: str) -> None:
    """No event twice; the rerun has one create_update, one COMPLETED progress per flow, and ends COMPLETED."""
    assert len({e.id for e in events}) == len(events), "an event id twice"
    assert len({(e.update_id, e.seq) for e in events}) == len(events), "a sequence number twice"
    per_update = Counter(e.update_id for e in events if e.event_type == "create_update")
    assert max(per_update.values()) == 1, per_update
    completed = Counter((e.update_id, e.flow_name) for e in events
                        if e.event_type == "flow_progress" and e.status == "COMPLETED")
    assert max(completed.values()) == 1, [k for k, n in completed.items() if n > 1]
    assert per_update[rerun_id] == 1
    assert {flow for (update, flow) in completed if update == rerun_id} == set(FLOWS)
    assert final_state(events, rerun_id) == "COMPLETED"


def check_tables(spark: SparkSession, spec: PipelineSpec, feed: Feed) -> None:
    """Every row exactly once in every table."""
    def rows(name: str, *columns: str) -> list[tuple[Any, ...]]:
        df = spark.read.format("delta").load(str(spec.tables_dir / name)).select(*columns)
        return sorted((tuple(r) for r in df.collect()), key=repr)

    for table in ("bronze", "silver", "gold"):
        assert rows(table, "id", "v") == sorted(((i, f"v{i}") for i in feed.orders), key=repr), table
    assert rows("changes", "seq") == sorted(((e["seq"],) for e in feed.changes), key=repr)
    assert rows("users_scd1", "id", "name") == feed.scd1()
    assert rows("users_scd2", "id", "name", "__START_AT", "__END_AT") == feed.scd2()
    assert rows("customers", "id", "value", "__START_AT", "__END_AT") == feed.snapshot_history()
