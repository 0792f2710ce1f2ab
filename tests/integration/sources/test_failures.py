"""jdbc_incremental when things go wrong: bad options, an unreachable database (clear error, nothing
committed, the next update catches up), a type change in the source table, kill -9 during a batch."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from framework.sources import (
    PYTHON_SOURCE_NAME,
    SOURCE_NAME,
    SourceConnectionError,
    SourceOptionsError,
    SourceQueryError,
    UnsupportedColumnTypeError,
    check_read,
    register_python_source,
)
from framework.sources.state import pipeline_state
from framework.testing.postgres import PASSWORD, PostgresServer, create_database, start_server
from tests.integration.runner.pipeline_factory import make_pipeline
from tests.integration.sources.conftest import REPO, rows, update

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from framework.runner.results import UpdateResult
    from framework.spec import PipelineSpec
    from framework.testing.postgres import PostgresDatabase

pytestmark = pytest.mark.spark

BRONZE = """
    import dlt

    @dlt.table
    def bronze():
        return (spark.readStream.format("{source}")
                .options(**{{k: spark.conf.get("src." + k) for k in ("url", "user", "password")}})
                .option("dbtable", "{table}").option("watermarkColumn", "{column}"){extra}
                .load())
"""


def _spec(root: Path, db: PostgresDatabase, table: str = "public.items", column: str = "seq",
          extra: str = "", source: str = SOURCE_NAME) -> PipelineSpec:
    conf = {f"src.{k}": v for k, v in db.options.items()}
    code = BRONZE.format(table=table, column=column, extra=extra, source=source)
    return make_pipeline(root, {"bronze.py": code}, conf)


def _error_text(result: UpdateResult) -> str:
    errors = [result.error, *(f.error for f in result.flows)]
    return "\n".join(str(e) for e in errors if e is not None)


def test_bad_options_fail_the_update_before_any_flow(spark: SparkSession, postgres_db: PostgresDatabase,
                                                     tmp_path: Path) -> None:
    postgres_db.execute("CREATE TABLE items (seq bigint, name text)")
    spec = _spec(tmp_path, postgres_db, extra='.option("lookbak", "2")')
    result = update(spec, spark)
    # checked on the driver when the flow is defined: the typed error, before any flow runs
    assert not result.succeeded and result.error is not None and result.error.code == "INVALID_SOURCE_OPTIONS"
    assert "did you mean 'lookback'" in str(result.error)
    assert PASSWORD not in _error_text(result)
    assert not (spec.tables_dir / "bronze").exists()


def test_check_read_gives_typed_errors_on_the_driver(postgres_db: PostgresDatabase) -> None:
    """What the reader proxy raises when it checks a read before Spark plans it (framework.sources.check_read)."""
    postgres_db.execute("CREATE TABLE items (seq bigint, tags text[], ts timestamptz)")
    base = {**postgres_db.options, "dbtable": "public.items"}
    with pytest.raises(SourceOptionsError) as options:
        check_read("jdbc_incremental", {**base, "watermarkColumn": "seq", "lookbak": "2"})
    assert [p.code for p in options.value.problems] == ["UNKNOWN_SOURCE_OPTION"]
    assert "did you mean 'lookback'?" in str(options.value)
    with pytest.raises(UnsupportedColumnTypeError) as unsupported:
        check_read("jdbc_incremental", {**base, "watermarkColumn": "seq"})
    assert "'tags'" in str(unsupported.value)
    postgres_db.execute("ALTER TABLE items DROP COLUMN tags")
    with pytest.raises(SourceOptionsError) as lookback:
        check_read("JDBC_INCREMENTAL", {**base, "watermarkColumn": "ts", "lookback": "5"})
    assert [p.code for p in lookback.value.problems] == ["INVALID_LOOKBACK"]
    with pytest.raises(SourceOptionsError) as start:
        check_read("jdbc_incremental", {**base, "watermarkColumn": "ts", "startingWatermark": "yesterday-ish"})
    assert [p.code for p in start.value.problems] == ["INVALID_STARTING_WATERMARK"]
    with pytest.raises(SourceQueryError) as missing:
        check_read("jdbc_incremental", {**base, "dbtable": "public.nope", "watermarkColumn": "ts"})
    assert PASSWORD not in str(missing.value)
    wrong_password = {**base, "password": "not-the-password", "watermarkColumn": "ts"}
    with pytest.raises(SourceConnectionError) as refused:
        check_read("jdbc_incremental", wrong_password)
    assert "not-the-password" not in str(refused.value)
    check_read("json", {"anything": "goes"})  # other formats are not the framework's to check


@pytest.fixture
def own_server() -> Iterator[PostgresServer]:
    """A server of this test's own, to stop and start without disturbing the others."""
    server = start_server()
    try:
        yield server
    finally:
        server.stop()


def test_unreachable_database_commits_nothing(spark: SparkSession, own_server: PostgresServer,
                                              tmp_path: Path) -> None:
    db = create_database(own_server)
    db.execute("CREATE TABLE items (seq bigint, name text)", "INSERT INTO items VALUES (1, 'a'), (2, 'b')")
    spec = _spec(tmp_path, db)
    assert update(spec, spark).succeeded
    db.execute("INSERT INTO items VALUES (3, 'c')")
    own_server.stop()
    failed = update(spec, spark)
    assert not failed.succeeded
    assert failed.error is not None and failed.error.code == "SOURCE_CONNECTION_FAILED"  # at the catalog lookup
    assert PASSWORD not in _error_text(failed)
    state = pipeline_state(spec.checkpoints_dir)[0]
    assert (state.committed_batch, state.pending_batch, state.sources[0].offset["watermark"]) == (0, None, "2")
    own_server.start()
    result = update(spec, spark)
    assert result.succeeded, result.error
    assert [r[0] for r in rows(spark, spec, "bronze", "seq")] == [1, 2, 3]


def test_type_change_in_the_source_table(spark: SparkSession, postgres_db: PostgresDatabase, tmp_path: Path) -> None:
    db = postgres_db
    db.execute("CREATE TABLE items (seq bigint, amount numeric(6,2))", "INSERT INTO items VALUES (1, 1.25)")
    spec = _spec(tmp_path, db)
    assert update(spec, spark).succeeded
    db.execute("ALTER TABLE items ALTER COLUMN amount TYPE numeric(12,4)", "INSERT INTO items VALUES (2, 123456.7891)")
    changed = update(spec, spark)
    # the new values do not fit the table's decimal(6,2): the batch fails and nothing is committed ...
    assert not changed.succeeded
    assert [r[0] for r in rows(spark, spec, "bronze", "seq")] == [1]
    assert pipeline_state(spec.checkpoints_dir)[0].committed_batch == 0
    # ... and a full refresh of the table reloads it with the new type
    changed = update(spec, spark, full_refresh_selection=("bronze",))
    assert changed.succeeded, changed.error
    got = rows(spark, spec, "bronze", "seq")
    assert [r[0] for r in got] == [1, 2] and float(got[1][1]) == pytest.approx(123456.7891)


KILLED_RUN = """
    import sys
    from framework.spec import load_spec
    from framework.runner.session import get_or_create_session
    from framework.runner.update import UpdateOptions, run_update
    from framework.sources import register_sources

    spark = get_or_create_session()
    register_sources(spark)
    spec = load_spec(sys.argv[1], overrides={{"storage": sys.argv[2], "configuration": {conf!r}}})
    run_update(spec, UpdateOptions(), spark=spark)
"""


def test_kill_minus_9_during_a_batch_loads_each_row_once(spark: SparkSession, postgres_db: PostgresDatabase,
                                                         tmp_path: Path) -> None:
    db = postgres_db
    db.execute("CREATE TABLE items (seq bigint, name text)",
               "INSERT INTO items SELECT g, 'n' || g FROM generate_series(1, 400) g",
               # each row costs 50 ms to read: a batch of 100 rows runs for about 5 s
               "CREATE VIEW slow_items AS SELECT i.seq, i.name FROM items i CROSS JOIN LATERAL pg_sleep(0.05) s")
    spec = _spec(tmp_path, db, table="public.slow_items", extra='.option("maxRowsPerBatch", "100")')
    spec_file = tmp_path / "spec.yaml"
    spec_file.write_text(f"name: {spec.name}\nschema: {spec.schema}\nlibraries: [{{glob: {{include: pipeline/**}}}}]\n")
    script = tmp_path / "run.py"
    script.write_text(textwrap.dedent(KILLED_RUN.format(conf=dict(spec.configuration))))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, str(script), str(spec_file), str(spec.storage)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        _wait_for_batch_in_flight(spec, proc, batch=1)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    state = pipeline_state(spec.checkpoints_dir)[0]
    assert state.pending_batch is not None  # killed inside a batch whose offsets were logged
    result = update(spec, spark)
    assert result.succeeded, result.error
    got = [r[0] for r in rows(spark, spec, "bronze", "seq")]
    assert got == list(range(1, 401))


def _wait_for_batch_in_flight(spec: PipelineSpec, proc: subprocess.Popen[bytes], batch: int) -> None:
    checkpoint = spec.checkpoints_dir / "bronze" / "bronze"
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"the update ended (exit {proc.returncode}) before it was killed")
        if (checkpoint / "offsets" / str(batch)).exists() and not (checkpoint / "commits" / str(batch)).exists():
            time.sleep(0.5)
            return
        time.sleep(0.2)
    pytest.fail("no batch started in time")


@pytest.mark.parametrize("source", [SOURCE_NAME, PYTHON_SOURCE_NAME])
def test_a_connection_cut_during_a_batch_commits_nothing(spark: SparkSession, postgres_db: PostgresDatabase,
                                                         tmp_path: Path, source: str) -> None:
    register_python_source(spark)  # the Python source (what Databricks runs) as well as the local JVM twin
    db = postgres_db
    db.execute("CREATE TABLE items (seq bigint, name text)", "INSERT INTO items VALUES (1, 'a'), (2, 'b')",
               # each row costs 50 ms to read (the sleep depends on the row, so it runs per row): the batch's COPY
               # runs long enough to be cut
               "CREATE VIEW slow_items AS SELECT i.seq, i.name FROM items i "
               "CROSS JOIN LATERAL pg_sleep(0.05 + i.seq * 0) s")
    spec = _spec(tmp_path, db, table="public.slow_items", source=source)
    assert update(spec, spark).succeeded
    db.execute("INSERT INTO items SELECT g, 'n' || g FROM generate_series(3, 80) g")
    outcome: list[UpdateResult] = []
    running = threading.Thread(target=lambda: outcome.append(update(spec, spark)))
    running.start()
    cut = _cut_the_batch_read(db, running)
    running.join(600)
    (failed,) = outcome
    assert cut, "the batch's read was not seen running"
    assert not failed.succeeded
    text = _error_text(failed)
    assert "bronze" in text and "terminat" in text.lower(), text  # PostgreSQL's own reason reaches the summary
    assert PASSWORD not in text and db.password not in text
    assert [r[0] for r in rows(spark, spec, "bronze", "seq")] == [1, 2]  # nothing of the cut batch committed
    assert pipeline_state(spec.checkpoints_dir)[0].pending_batch is not None  # its offsets logged, not committed
    result = update(spec, spark)
    assert result.succeeded, result.error
    assert [r[0] for r in rows(spark, spec, "bronze", "seq")] == list(range(1, 81))  # each row once


def _cut_the_batch_read(db: PostgresDatabase, running: threading.Thread) -> bool:
    """Terminate the server process of the batch's read (the JVM twin's ``SELECT ... FROM slow_items``, the Python
    source's ``COPY (SELECT ...)``), not the offset, estimate, split or catalog queries around it (a catalog query
    cut while the flow is defined fails in the driver, and the runner retries that flow: the update then
    succeeds)."""
    deadline = time.monotonic() + 300
    while running.is_alive() and time.monotonic() < deadline:
        cut = db.query("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                       "WHERE state = 'active' AND query LIKE '%slow_items%' AND query NOT LIKE '%max(%' "
                       "AND query NOT LIKE 'EXPLAIN%' AND query NOT LIKE '%pg_stats%' "
                       "AND query NOT LIKE '%count(%' AND query NOT LIKE '%regclass%' AND pid <> pg_backend_pid()")
        if cut and cut[0][0]:
            return True
        time.sleep(0.1)
    return False
