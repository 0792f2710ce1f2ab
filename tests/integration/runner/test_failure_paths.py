"""Failure paths (issue 19): a failed update ends like a finished one (a failed result, the summary, an event log
that says FAILED with the cause), the cause reaches the user, analysis errors stop the update before any flow
runs, and the smaller fidelity defects found by running real examples stay fixed."""

from __future__ import annotations

import io
import json
import os
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from framework.errors import ProblemsError
from framework.runner.update import UpdateOptions, UpdateResult, run_update
from tests.integration.runner.pipeline_factory import make_pipeline, write_json_lines

if TYPE_CHECKING:
    from pyspark.sql import Row, SparkSession

    from framework.spec import PipelineSpec

pytestmark = pytest.mark.spark

SCHEMA = "id bigint, amount double"
LONG_TAIL = "x" * 6000  # longer than any one message the event log keeps of a cause that is not the root


def _run(spec: PipelineSpec, spark: SparkSession, **options: Any) -> tuple[UpdateResult, str]:
    """One update; its result and everything it printed (progress and summary)."""
    out = io.StringIO()
    result = run_update(spec, UpdateOptions(out=out, **options), spark=spark)
    return result, out.getvalue()


def _events(spark: SparkSession, spec: PipelineSpec, update_id: str) -> list[Row]:
    from pyspark.sql import functions as F

    log = spark.read.format("delta").load(str(spec.events_dir))
    return log.where(F.col("origin.update_id") == update_id).orderBy("sequence.control_plane_seq_no").collect()


def _details(event: Row) -> dict[str, Any]:
    return dict(json.loads(event.details)[event.event_type])


def _flow_events(events: list[Row], flow: str, status: str | None = None) -> list[Row]:
    return [e for e in events if e.event_type == "flow_progress" and e.origin.flow_name == flow
            and (status is None or _details(e).get("status") == status)]


def _causes(failed: FailedUpdate, flow: str) -> list[tuple[str, str | None, str]]:
    """A failed flow's cause chain, each message shortened (for assertion messages)."""
    error = failed.result.flow(flow).error
    return [(c.class_name, c.error_class, c.message[:300] + " ... " + c.message[-300:])
            for c in getattr(error, "chain", ())]


def _looks_like_a_table(path: Path) -> bool:
    return (path / "_delta_log").exists()


def _line_of(source: str, marker: str) -> int:
    """The line of ``marker`` in a pipeline file as make_pipeline writes it (dedented)."""
    return next(i for i, line in enumerate(textwrap.dedent(source).splitlines(), 1) if marker in line)


def _console_line(output: str, flow: str) -> str:
    return next(line for line in output.splitlines() if line.startswith("  [") and f" {flow} " in line
                and "FAILED" in line)


def _summary_row(output: str, flow: str) -> list[str]:
    """The lines of ``flow`` in the summary: its own, then the lines under it (expectations, error)."""
    lines = output.split("\nUpdate ", 1)[1].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"{flow} "))
    rows = [lines[start]]
    for line in lines[start + 1:]:
        if not line.startswith("    "):
            break
        rows.append(line)
    return rows


# ------------------------------------------------------------------------ a first update in which flows fail
FIRST_UPDATE_FAILS = f"""
import dlt
from pyspark.sql import functions as F

calls = {{"query": 0}}


@F.udf("bigint")
def explode_on(n):
    raise ValueError("boom 42\\n" + "{LONG_TAIL}" + "\\nend of the udf's message")  # udf raise


@dlt.table(comment="a materialized view whose Python UDF raises while its first write runs")
def udf_mv():
    return spark.range(3).select(explode_on("id").alias("n"))


@dlt.table
def query_mv():
    calls["query"] += 1
    if calls["query"] > 1:  # the first call resolves the query; the second one runs it
        raise ValueError("boom 42\\n" + "{LONG_TAIL}" + "\\nend of the query's message")  # query raise
    return spark.range(3)


@dlt.table
def divided():
    return spark.range(3).select((F.col("id") / F.lit(0)).alias("ratio"))


@dlt.table
@dlt.expect_or_fail("non_null_id", "id IS NOT NULL")
def checked():
    return spark.readStream.format("json").schema("{SCHEMA}").load(spark.conf.get("landing"))


@dlt.table
def after_udf_mv():
    return dlt.read("udf_mv").where("n > 0")


@dlt.table
def fine():
    return spark.range(2).withColumnRenamed("id", "n")
"""

FAILED_FLOWS = ("udf_mv", "query_mv", "divided", "checked")


@dataclass(frozen=True)
class FailedUpdate:
    spec: PipelineSpec
    result: UpdateResult
    output: str
    events: list[Row]


@pytest.fixture(scope="module")
def failed_update(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Iterator[FailedUpdate]:
    """The first update of a pipeline in which four flows fail in four ways (ANSI on, as on serverless)."""
    root = tmp_path_factory.mktemp("first_update_fails")
    landing = root / "landing"
    write_json_lines(landing, "a.json", ['{"id":1,"amount":1}', '{"id":null,"amount":2}'])
    spec = make_pipeline(root, {"p.py": FIRST_UPDATE_FAILS}, {"landing": str(landing)},
                         spark_conf={"spark.sql.ansi.enabled": "true"})
    ansi_before = spark.conf.get("spark.sql.ansi.enabled")
    result, output = _run(spec, spark, write_report=True)
    assert spark.conf.get("spark.sql.ansi.enabled") == ansi_before  # the spec's settings end with the update
    yield FailedUpdate(spec, result, output, _events(spark, spec, result.update_id))


def test_a_failed_first_update_returns_a_failed_result_and_leaves_no_table(failed_update: FailedUpdate,
                                                                           spark: SparkSession) -> None:
    result, spec = failed_update.result, failed_update.spec
    assert not result.succeeded
    assert result.error is None, result.error  # catalog publishing skipped what has no commit, and did not fail
    assert {f.flow: f.status for f in result.flows} == {
        "udf_mv": "FAILED", "query_mv": "FAILED", "divided": "FAILED", "checked": "FAILED",
        "after_udf_mv": "SKIPPED", "fine": "COMPLETED"}
    assert result.flow("checked").error.code == "EXPECTATION_VIOLATION"
    for flow in FAILED_FLOWS:
        assert result.flow(flow).error.code in ("FLOW_FAILED", "EXPECTATION_VIOLATION")
        assert not _looks_like_a_table(spec.tables_dir / flow), flow
        assert not spark.catalog.tableExists(f"{spec.schema}.{flow}"), flow
    assert spark.read.table(f"{spec.schema}.fine").count() == 2  # what did complete was published


def test_a_failed_update_ends_in_its_summary_report_and_a_failed_event_log(failed_update: FailedUpdate) -> None:
    output, events = failed_update.output, failed_update.events
    update_id = failed_update.result.update_id
    assert f"Update {update_id[:8]} of 'test_pipeline': FAILED in" in output
    assert "report:" in output and failed_update.result.report is not None and failed_update.result.report.exists()
    assert [e.event_type for e in events][:2] == ["create_update", "update_progress"]
    last_progress = [e for e in events if e.event_type == "update_progress"][-1]
    assert _details(last_progress)["state"] == "FAILED" and last_progress.level == "ERROR"
    for flow in FAILED_FLOWS:
        (failed,) = _flow_events(events, flow, "FAILED")
        assert failed.level == "ERROR" and failed.error.fatal
    assert _flow_events(events, "after_udf_mv", "SKIPPED")


def test_a_query_function_error_shows_its_class_message_file_and_line(failed_update: FailedUpdate) -> None:
    pipeline_file = failed_update.spec.root / "pipeline" / "p.py"
    where = f"{pipeline_file}:{_line_of(FIRST_UPDATE_FAILS, '# query raise')}"
    console = _console_line(failed_update.output, "query_mv")
    assert "ValueError: boom 42" in console and where in console, console
    summary = "\n".join(_summary_row(failed_update.output, "query_mv"))
    assert "error: ValueError: boom 42" in summary and where in summary, summary
    assert "An error occurred while calling" not in failed_update.output


def test_a_python_udf_error_shows_its_class_message_file_and_line(failed_update: FailedUpdate) -> None:
    pipeline_file = failed_update.spec.root / "pipeline" / "p.py"
    where = f"{pipeline_file}:{_line_of(FIRST_UPDATE_FAILS, '# udf raise')}"
    console = _console_line(failed_update.output, "udf_mv")
    assert "ValueError: boom 42" in console and where in console, (console, _causes(failed_update, "udf_mv"))
    summary = "\n".join(_summary_row(failed_update.output, "udf_mv"))
    assert "error: ValueError: boom 42" in summary and where in summary, summary
    assert "Traceback" not in failed_update.output


@pytest.mark.parametrize("flow", ["query_mv", "udf_mv"])
def test_the_event_log_keeps_the_whole_cause_chain(failed_update: FailedUpdate, flow: str) -> None:
    (failed,) = _flow_events(failed_update.events, flow, "FAILED")
    exceptions = failed.error.exceptions
    assert exceptions[0].class_name == "FlowError" and exceptions[0].error_class == "FLOW_FAILED"
    root = exceptions[-1]
    assert root.class_name == "ValueError"
    assert root.message.startswith("boom 42\n" + LONG_TAIL)  # the user's own words, not cut
    assert root.message.rstrip().endswith("message")
    if flow == "udf_mv":  # Spark's layers in between, with their error classes
        assert any(e.class_name.endswith("PythonException") for e in exceptions), [e.class_name for e in exceptions]
        assert any(e.error_class for e in exceptions[1:-1]), [e.error_class for e in exceptions]
    assert "ValueError: boom 42" in failed.message


def test_a_spark_failure_shows_spark_s_error_class(failed_update: FailedUpdate) -> None:
    error = failed_update.result.flow("divided").error
    assert error.root.error_class == "DIVIDE_BY_ZERO", error.chain
    assert "DIVIDE_BY_ZERO" in _console_line(failed_update.output, "divided")
    (failed,) = _flow_events(failed_update.events, "divided", "FAILED")
    assert "DIVIDE_BY_ZERO" in [e.error_class for e in failed.error.exceptions]


def test_the_event_log_is_written_while_the_update_runs(failed_update: FailedUpdate, spark: SparkSession) -> None:
    events = failed_update.events
    seqs = [e.sequence.control_plane_seq_no for e in events]
    assert seqs == sorted(set(seqs))
    stamps = [e.timestamp for e in events]
    assert stamps == sorted(stamps)
    for flow in [*FAILED_FLOWS, "fine"]:
        (definition,) = [e for e in events if e.event_type == "flow_definition" and e.origin.flow_name == flow]
        ends = [e for e in _flow_events(events, flow) if _details(e)["status"] in ("COMPLETED", "FAILED")]
        assert len(ends) == 1 and definition.sequence.control_plane_seq_no < ends[0].sequence.control_plane_seq_no
    # the first commit of the event log holds the update's start, not its end: events were appended as it ran
    first = spark.read.format("delta").option("versionAsOf", 0).load(str(failed_update.spec.events_dir)).collect()
    assert "create_update" in {e.event_type for e in first}
    assert not any(e.event_type == "update_progress" and '"FAILED"' in e.details for e in first)


# ------------------------------------------------------------------------------ counted once across updates
COUNTED = f"""
import dlt

@dlt.table
@dlt.expect_or_drop("positive", "amount > 0")
@dlt.expect_or_fail("known_id", "id IS NOT NULL")
def orders():
    return (spark.readStream.format("json").schema("{SCHEMA}").option("maxFilesPerTrigger", 1)
            .load(spark.conf.get("landing")))
"""


def test_the_quality_report_counts_each_committed_batch_once(spark: SparkSession, tmp_path: Path) -> None:
    """A flow commits one micro-batch and fails on the next; the rerun commits that one. The event log and the
    report count each committed batch exactly once."""
    from framework.quality.report import collect_report

    landing = tmp_path / "landing"
    a = write_json_lines(landing, "a.json", ['{"id":1,"amount":1}', '{"id":2,"amount":-2}', '{"id":3,"amount":3}'])
    b = write_json_lines(landing, "b.json", ['{"id":4,"amount":4}', '{"id":null,"amount":5}'])
    os.utime(b, (a.stat().st_mtime + 10, a.stat().st_mtime + 10))  # one file per micro-batch, a.json first
    spec = make_pipeline(tmp_path, {"p.py": COUNTED}, {"landing": str(landing)})
    first, _ = _run(spec, spark)
    assert first.flow("orders").status == "FAILED"
    assert spark.read.format("delta").load(str(spec.tables_dir / "orders")).count() == 2  # batch 0 committed
    write_json_lines(landing, "b.json", ['{"id":4,"amount":4}', '{"id":5,"amount":-5}'])  # the data fixed
    second, _ = _run(spec, spark)
    assert second.succeeded, second.flows
    assert spark.read.format("delta").load(str(spec.tables_dir / "orders")).count() == 3

    report = collect_report(spark, spec.storage, with_rule_files=False)
    per_update = {u.update_id: next(d for d in u.datasets if d.dataset == "orders") for u in report.history}
    assert set(per_update) == {first.update_id, second.update_id}
    assert sum(d.rows_out for d in per_update.values()) == 3
    assert sum(d.dropped for d in per_update.values()) == 2
    positive = [r for d in per_update.values() for r in d.rules if r.name == "positive"]
    assert (sum(r.passed for r in positive), sum(r.failed for r in positive)) == (3, 2)
    assert per_update[first.update_id].rows_out == 2 and per_update[first.update_id].status == "FAILED"


# --------------------------------------------------------------------- analysis errors stop the whole update
UNKNOWN_READ = """
import dlt

@dlt.table
def orders():
    return spark.range(3)

@dlt.table(comment="the report")
def report():
    return dlt.read("orderz")
"""

BAD_EXPECTATIONS = """
import dlt

@dlt.table
def orders():
    return spark.range(3).withColumnRenamed("id", "amount")

@dlt.table
@dlt.expect("valid_amount", "amount >")
@dlt.expect_or_drop("has_region", "region IS NOT NULL")
def checked():
    return dlt.read("orders")
"""


@pytest.mark.parametrize(("source", "codes", "named", "lines"), [
    (UNKNOWN_READ, {"UNRESOLVED_DATASET"}, ["'orderz'", "Did you mean 'orders'?"], ["the report"]),
    (BAD_EXPECTATIONS, {"INVALID_EXPECTATION"}, ["'valid_amount'", "'has_region'", "dataset 'checked'"],
     ['"valid_amount"', '"has_region"']),
], ids=["unknown_dataset", "bad_expectations"])
def test_analysis_errors_fail_the_update_before_any_flow_runs(spark: SparkSession, tmp_path: Path, source: str,
                                                              codes: set[str], named: list[str],
                                                              lines: list[str]) -> None:
    spec = make_pipeline(tmp_path, {"p.py": source})
    result, output = _run(spec, spark)
    assert not result.succeeded
    assert isinstance(result.error, ProblemsError) and result.error.code == "INVALID_GRAPH"
    assert set(result.error.codes) == codes
    message = str(result.error)
    assert all(text in message for text in named), message
    assert {(p.file, p.line) for p in result.error.problems} == {
        (str(spec.root / "pipeline" / "p.py"), _line_of(source, marker)) for marker in lines}, message
    assert not any(_looks_like_a_table(spec.tables_dir / name) for name in ("orders", "report", "checked"))
    events = _events(spark, spec, result.update_id)
    assert not [e for e in events if e.event_type == "flow_progress"]
    assert _details([e for e in events if e.event_type == "update_progress"][-1])["state"] == "FAILED"
    assert "FAILED in" in output and "Traceback" not in output


# ------------------------------------------------------------------------------------------- view expectations
VIEW_AND_SINK = f"""
import dlt

dlt.create_sink("copies", "delta", {{"path": spark.conf.get("sink_path")}})

@dlt.view
@dlt.expect_or_drop("positive", "amount > 0")
def clean_orders():
    return spark.read.format("json").schema("{SCHEMA}").load(spark.conf.get("landing"))

@dlt.table
def total():
    return dlt.read("clean_orders").selectExpr("sum(amount) AS total")

@dlt.append_flow(name="to_copies", target="copies")
def to_copies():
    return spark.readStream.format("json").schema("{SCHEMA}").load(spark.conf.get("landing"))
"""


def test_view_expectations_reach_the_event_log_and_the_summary(spark: SparkSession, tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    write_json_lines(landing, "a.json", ['{"id":1,"amount":1}', '{"id":2,"amount":-2}', '{"id":3,"amount":3}'])
    spec = make_pipeline(tmp_path, {"p.py": VIEW_AND_SINK},
                         {"landing": str(landing), "sink_path": str(tmp_path / "copies")})
    result, output = _run(spec, spark)
    assert result.succeeded, [(f.flow, f.error) for f in result.flows]
    assert spark.read.table(f"{spec.schema}.total").first()[0] == 4.0

    events = _events(spark, spec, result.update_id)
    quality = [_details(e)["data_quality"] for e in _flow_events(events, "clean_orders", "COMPLETED")
               if "data_quality" in _details(e)]
    assert len(quality) == 1, quality
    (positive,) = quality[0]["expectations"]
    assert (positive["name"], positive["dataset"], positive["passed_records"], positive["failed_records"]) == \
        ("positive", "clean_orders", 2, 1)
    assert quality[0]["dropped_records"] == 1

    view_rows = _summary_row(output, "clean_orders")
    assert "expect positive [drop]: 2 passed, 1 failed" in "\n".join(view_rows), view_rows
    (sink_line,) = _summary_row(output, "to_copies")
    assert sink_line.split()[1:4] == ["copies", "sink", "COMPLETED"], sink_line


# ------------------------------------------------ a source whose connector is not on the class path (Kinesis)
KAFKA = """
import dlt

@dlt.table
def events_raw():
    return spark.readStream.format("kinesis").option("streamName", "events").load()

@dlt.table
def other():
    return spark.range(2)
"""


def test_a_stream_without_its_connector_says_how_to_add_it(spark: SparkSession, tmp_path: Path) -> None:
    spec = make_pipeline(tmp_path, {"p.py": KAFKA})
    result, output = _run(spec, spark)
    assert not result.succeeded
    message = str(result.error)
    assert "kinesis" in message and "p.py:6" in message, message  # the source and the line
    assert result.error is not None and result.error.code == "DATA_SOURCE_NOT_FOUND", message
    assert "spark.jars.packages" in message, message  # how to add it
    assert "batch DataFrame" not in output
    assert not _looks_like_a_table(spec.tables_dir / "other")


# -------------------------------------------------------------- Auto Loader schema change: one line, then retry
AUTO_LOADER = """
import dlt

@dlt.table
def orders_raw():
    return (spark.readStream.format("cloudFiles").option("cloudFiles.format", "json")
            .option("cloudFiles.inferColumnTypes", "true").load(spark.conf.get("landing")))
"""


def test_a_schema_widening_retry_is_one_line(spark: SparkSession, tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    write_json_lines(landing, "a.json", ['{"id":1,"amount":1.5}'])
    spec = make_pipeline(tmp_path, {"p.py": AUTO_LOADER}, {"landing": str(landing)})
    first, _ = _run(spec, spark)
    assert first.succeeded, first.flows
    write_json_lines(landing, "b.json", ['{"id":2,"amount":2.5,"coupon":"SAVE2"}'])
    second, output = _run(spec, spark)
    assert second.succeeded, second.flows
    assert second.flow("orders_raw").attempts == 2
    reason = "schema widened: new column(s) `coupon`"
    retry_lines = [line for line in output.splitlines() if "retrying" in line]
    assert len(retry_lines) == 1 and retry_lines[0].split(None, 1)[1] == f"{reason}; retrying", retry_lines
    assert "STREAM_FAILED" not in output and "UNKNOWN_FIELD" not in output
    (retrying,) = _flow_events(_events(spark, spec, second.update_id), "orders_raw", "RETRYING")
    assert retrying.message == f"Flow 'orders_raw' is RETRYING: {reason}."
    assert retrying.level == "WARN" and retrying.error is None
    rows = spark.read.format("delta").load(str(spec.tables_dir / "orders_raw")).orderBy("id").collect()
    assert [(r.id, r.coupon) for r in rows] == [(1, None), (2, "SAVE2")]


# ----------------------------------------------------------------------------------- streaming aggregations
AGGREGATIONS = """
import dlt
from pyspark.sql import functions as F

def events():
    return spark.readStream.format("json").schema("country string, ts timestamp").load(spark.conf.get("landing"))

@dlt.table
def per_country():
    return events().groupBy("country").count()

@dlt.table
def per_minute():
    return events().withWatermark("ts", "1 minute").groupBy(F.window("ts", "1 minute"), "country").count()
"""


def test_streaming_aggregations_with_and_without_a_watermark(spark: SparkSession, tmp_path: Path) -> None:
    """Without a watermark the aggregation is rewritten whole (complete mode); with one, each window is
    appended once the watermark has passed it."""
    landing = tmp_path / "landing"
    write_json_lines(landing, "a.json", ['{"country":"NL","ts":"2024-01-01T00:00:10"}',
                                         '{"country":"NL","ts":"2024-01-01T00:00:20"}',
                                         '{"country":"BE","ts":"2024-01-01T00:00:30"}'])
    spec = make_pipeline(tmp_path, {"p.py": AGGREGATIONS}, {"landing": str(landing)})
    first, _ = _run(spec, spark)
    assert first.succeeded, [(f.flow, f.error) for f in first.flows]
    write_json_lines(landing, "b.json", ['{"country":"NL","ts":"2024-01-01T00:05:00"}'])
    second, _ = _run(spec, spark)
    assert second.succeeded, [(f.flow, f.error) for f in second.flows]

    def table(name: str) -> list[tuple[Any, ...]]:
        df = spark.read.format("delta").load(str(spec.tables_dir / name))
        if "window" in df.columns:
            df = df.selectExpr("date_format(window.start, 'HH:mm') AS start", "country", "count")
        return sorted(tuple(r) for r in df.collect())

    assert table("per_country") == [("BE", 1), ("NL", 3)]  # complete: the whole result, no stale rows
    assert table("per_minute") == [("00:00", "BE", 1), ("00:00", "NL", 2)]  # append: the closed window only


# ------------------------------------------------------------------------------------------ odd identifiers
ODD_NAMES = """
import dlt

@dlt.table(name="my table")
def spaced():
    return spark.range(3)

@dlt.table(name="`odd.name`")
def dotted():
    return dlt.read("my table").where("id > 0")

@dlt.table(name="`plain`")
def plain():
    return dlt.read("my table").where("id < 2")
"""


def test_tables_with_spaces_and_dots_in_their_names(spark: SparkSession, tmp_path: Path) -> None:
    """Their flows run and publishing does not fail: Spark's local catalog refuses such names (Unity Catalog
    takes them), so they are not registered, and the console says so and how to read them."""
    spec = make_pipeline(tmp_path, {"p.py": ODD_NAMES})
    result, output = _run(spec, spark)
    assert result.succeeded, (result.error, [(f.flow, f.error) for f in result.flows])
    assert spark.read.format("delta").load(str(spec.tables_dir / "my table")).count() == 3
    assert spark.read.format("delta").load(str(spec.tables_dir / "`odd.name`")).count() == 2
    assert spark.read.table(f"{spec.schema}.plain").count() == 2  # one identifier in backticks: its name
    (note,) = [line for line in output.splitlines() if "not registered in the local catalog" in line]
    assert "'my table'" in note and "'`odd.name`'" in note and "'`plain`'" not in note
    again, _ = _run(spec, spark)  # publishing the same tables again (a warm session) is a no-op, not an error
    assert again.succeeded, again.error
