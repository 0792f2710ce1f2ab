"""``medallion watch`` (file arrival): files landing mid-update, bursts and files renamed into place each lead to
an update, and no arrival is lost."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from framework.autoloader.watch import snapshot, watch
from framework.runner.watch import watch_root, watch_spec
from framework.spec import PipelineSpec
from tests.integration.runner.pipeline_factory import make_pipeline, write_json_lines

PIPELINE = """
import os
import dlt

@dlt.table
def orders():
    return (spark.readStream.format("cloudFiles").option("cloudFiles.format", "json").schema("id bigint")
            .load(spark.conf.get("landing")))

@dlt.foreach_batch_sink(name="lander")
def land_a_file_mid_update(df, batch_id):
    # runs after `orders` committed, inside the same update: a file that arrives while the update runs
    target = spark.conf.get("mid_update_file")
    if target and not os.path.exists(target + ".landed"):
        with open(target, "w") as handle:
            handle.write('{"id": 100}\\n')
        open(target + ".landed", "w").close()

@dlt.append_flow(target="lander")
def to_lander():
    return dlt.read_stream("orders")
"""


def _pipeline(tmp_path: Path, mid_update_file: str = "") -> tuple[PipelineSpec, Path]:
    landing = tmp_path / "landing"
    write_json_lines(landing, "a.json", ['{"id": 1}'])
    spec = make_pipeline(tmp_path, {"orders.py": PIPELINE}, {"landing": str(landing),
                                                             "mid_update_file": mid_update_file})
    return spec, landing


def _start(spec: PipelineSpec, spark, max_updates: int, debounce_s: float) -> tuple[threading.Thread, list[int]]:
    codes: list[int] = []
    thread = threading.Thread(target=lambda: codes.append(watch_spec(
        spec, debounce_s=debounce_s, stop=threading.Event(), max_updates=max_updates, poll_s=0.05, spark=spark)))
    thread.start()
    return thread, codes


def _finish(thread: threading.Thread, codes: list[int], timeout_s: float = 180) -> None:
    thread.join(timeout_s)
    assert not thread.is_alive(), "the watch did not run the expected updates"
    assert codes == [0]


def _ids(spark, spec: PipelineSpec) -> list[int]:
    return sorted(r.id for r in spark.read.format("delta").load(str(spec.tables_dir / "orders")).collect())


def _commits(spark, spec: PipelineSpec) -> int:
    history = spark.sql(f"DESCRIBE HISTORY delta.`{spec.tables_dir / 'orders'}`")
    return history.where("operation = 'STREAMING UPDATE'").count()


def _wait_for_first_commit(spec: PipelineSpec, timeout_s: float = 120) -> None:
    first = spec.tables_dir / "orders" / "_delta_log" / f"{0:020d}.json"
    deadline = time.monotonic() + timeout_s
    while not first.exists():
        assert time.monotonic() < deadline, "the first update did not commit"
        time.sleep(0.05)


@pytest.mark.spark
def test_a_file_landing_mid_update_gets_an_update_after_it(spark, tmp_path: Path) -> None:
    mid = tmp_path / "landing" / "mid.json"
    spec, _landing = _pipeline(tmp_path, str(mid))
    thread, codes = _start(spec, spark, max_updates=2, debounce_s=0.3)
    _finish(thread, codes)
    assert (tmp_path / "landing" / "mid.json.landed").exists()
    assert _ids(spark, spec) == [1, 100]
    assert _commits(spark, spec) == 2  # the first update did not read it; the second one did


@pytest.mark.spark
def test_a_burst_of_files_makes_one_update(spark, tmp_path: Path) -> None:
    spec, landing = _pipeline(tmp_path)
    thread, codes = _start(spec, spark, max_updates=2, debounce_s=1.5)
    _wait_for_first_commit(spec)
    for i in range(2, 7):
        write_json_lines(landing, f"burst-{i}.json", [f'{{"id": {i}}}'])
        time.sleep(0.1)
    _finish(thread, codes)
    assert _ids(spark, spec) == [1, 2, 3, 4, 5, 6]  # the second (last) update read the whole burst
    assert _commits(spark, spec) == 2


@pytest.mark.spark
def test_a_file_renamed_into_place_is_an_arrival(spark, tmp_path: Path) -> None:
    spec, landing = _pipeline(tmp_path)
    thread, codes = _start(spec, spark, max_updates=2, debounce_s=0.3)
    _wait_for_first_commit(spec)
    temp = landing / ".b.json.tmp"  # hidden: neither an arrival nor read by Auto Loader
    temp.write_text('{"id": 2}\n')
    old = time.time() - 3600  # copy tools keep the source's modification time
    os.utime(temp, (old, old))
    os.rename(temp, landing / "b.json")
    _finish(thread, codes)
    assert _ids(spark, spec) == [1, 2]


# ------------------------------------------------------------------------------- the watcher itself (no Spark)
def _run_watch(landing: Path, on_arrival, **kwargs) -> tuple[threading.Thread, threading.Event]:
    stop = threading.Event()
    thread = threading.Thread(target=watch, args=([landing], on_arrival, 0.2, stop),
                              kwargs={"poll_s": 0.02, **kwargs})
    thread.start()
    return thread, stop


def _wait(predicate, timeout_s: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while not predicate() and time.monotonic() < deadline:
        time.sleep(0.02)
    return predicate()


def test_watch_calls_first_and_again_for_a_file_landing_during_the_call(tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    landing.mkdir()
    calls: list[int] = []

    def on_arrival() -> None:
        calls.append(len(calls))
        if len(calls) == 1:
            (landing / "during.json").write_text("{}")  # lands while the first call runs
            time.sleep(0.1)

    thread, stop = _run_watch(landing, on_arrival, call_first=True)
    try:
        assert _wait(lambda: len(calls) == 2)
        time.sleep(0.5)
        assert len(calls) == 2
    finally:
        stop.set()
        thread.join(5)


def test_watch_sees_renames_and_replacements_not_hidden_temp_files(tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    landing.mkdir()
    (landing / "a.json").write_text("{}")
    calls: list[float] = []
    thread, stop = _run_watch(landing, lambda: calls.append(time.monotonic()))
    try:
        temp = landing / "_a.json.tmp"
        temp.write_text("{}")  # same size as a.json
        time.sleep(0.5)
        assert calls == []  # a hidden name is not a file of the source yet
        st = (landing / "a.json").stat()
        os.utime(temp, ns=(st.st_atime_ns, st.st_mtime_ns))  # same size, same modification time
        os.replace(temp, landing / "a.json")  # replaced in place: only the inode differs
        assert _wait(lambda: len(calls) == 1)
        os.rename(landing / "a.json", landing / "b.json")
        assert _wait(lambda: len(calls) == 2)
    finally:
        stop.set()
        thread.join(5)
    assert list(snapshot([landing])) == [landing / "b.json"]


def test_watch_calls_again_when_the_callback_could_not_handle_the_arrivals(tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    landing.mkdir()
    results = [False, True]  # e.g. another update held the storage the first time
    calls: list[bool] = []

    def on_arrival() -> bool:
        calls.append(results[len(calls)])
        return calls[-1]

    thread, stop = _run_watch(landing, on_arrival)
    try:
        time.sleep(0.1)
        (landing / "a.json").write_text("{}")
        assert _wait(lambda: len(calls) == 2)
        time.sleep(0.5)
        assert calls == [False, True]
    finally:
        stop.set()
        thread.join(5)


def test_a_steady_trickle_still_gets_updates(tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    landing.mkdir()
    calls: list[float] = []
    thread, stop = _run_watch(landing, lambda: calls.append(time.monotonic()), max_delay_s=0.5)
    try:
        for i in range(15):  # a file every 0.1 s: never 0.2 s of quiet
            (landing / f"f{i}.json").write_text("{}")
            time.sleep(0.1)
        assert calls, "no update during a steady trickle of files"
    finally:
        stop.set()
        thread.join(5)


def test_watch_root_cuts_glob_components() -> None:
    assert watch_root("/landing/orders") == "/landing/orders"
    assert watch_root("/landing/*/orders") == "/landing"
    assert watch_root("file:/landing/2024-[01]*/x.json") == "file:/landing"
