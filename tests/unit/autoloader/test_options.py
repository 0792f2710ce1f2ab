"""Auto Loader options, durations, schema store, checkpoint log reading and the watcher (no Spark)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from framework.autoloader import checkpoint as ckpt
from framework.autoloader.options import parse_bytes, parse_duration, parse_options
from framework.autoloader.watch import arrivals, snapshot, watch
from framework.errors import AutoLoaderError


def test_defaults() -> None:
    o = parse_options({"cloudFiles.format": "JSON"}, user_schema=False)
    assert o.format == "json" and o.infer_column_types is False and o.include_existing_files is True
    assert o.evolution_mode is None and o.clean_source == "OFF" and o.retention_s == 30 * 86400
    assert o.max_files_per_trigger is None and o.rescued_data_column is None


def test_keys_are_case_insensitive_and_typed() -> None:
    o = parse_options({"cloudfiles.FORMAT": "csv", "CLOUDFILES.inferColumnTypes": "TRUE", "header": "true",
                       "cloudFiles.maxBytesPerTrigger": "10m", "cloudFiles.cleanSource": "move",
                       "cloudFiles.cleanSource.moveDestination": "/tmp/archive",
                       "cloudFiles.cleanSource.retentionDuration": "0 seconds", "sep": ";"}, user_schema=False)
    assert o.format == "csv" and o.infer_column_types and o.max_bytes_per_trigger == 10 * 1024**2
    assert o.clean_source == "MOVE" and o.retention_s == 0 and o.option("SEP") == ";"
    assert o.reader_options == {"header": "true", "sep": ";"}


def test_unknown_option_suggests() -> None:
    with pytest.raises(AutoLoaderError) as err:
        parse_options({"cloudFiles.format": "json", "cloudFiles.inferColumnType": "true"}, user_schema=False)
    assert err.value.code == "CLOUD_FILES_ERROR"
    assert "cloudFiles.inferColumnType'" in str(err.value) and "Did you mean 'cloudFiles.inferColumnTypes'" in str(
        err.value)


def test_option_of_another_format_is_named() -> None:
    with pytest.raises(AutoLoaderError, match="option of the csv format"):
        parse_options({"cloudFiles.format": "json", "header": "true"}, user_schema=False)


def test_cloud_files_infer_schema_from_databricks_demos_is_accepted() -> None:
    """Databricks' DMS CDC demo sets cloudFiles.inferSchema (not in the options reference; Databricks accepts it)."""
    o = parse_options({"cloudFiles.format": "csv", "cloudFiles.inferSchema": "true",
                       "cloudFiles.inferColumnTypes": "true"}, user_schema=False)
    assert o.format == "csv" and o.infer_column_types is True
    assert "cloudFiles.inferSchema" not in o.reader_options and "inferSchema" not in o.reader_options


def test_unknown_cloud_files_option_is_still_an_error_with_a_suggestion() -> None:
    with pytest.raises(AutoLoaderError, match=r"Did you mean 'cloudFiles\.inferSchema'"):
        parse_options({"cloudFiles.format": "csv", "cloudFiles.inferSchemas": "true"}, user_schema=False)
    with pytest.raises(AutoLoaderError, match=r"unknown Auto Loader option 'cloudFiles\.rowTag'"):
        parse_options({"cloudFiles.format": "xml", "cloudFiles.rowTag": "r"}, user_schema=False)


def test_file_name_pattern_is_the_generic_glob_filter() -> None:
    o = parse_options({"cloudFiles.format": "json", "fileNamePattern": "*.json"}, user_schema=False)
    assert o.path_glob_filter == "*.json" and o.reader_options == {}


@pytest.mark.parametrize(("options", "user_schema", "header"), [
    ({}, False, "true"),  # schema inferred, no header option: Auto Loader assumes a header row
    ({"header": "false"}, False, "false"),
    ({"HEADER": "false"}, False, "false"),
    ({}, True, None),  # a user schema: Spark's default (no header)
    ({"header": "true"}, True, "true"),
])
def test_csv_header_defaults_to_true_when_the_schema_is_inferred(options: dict[str, str], user_schema: bool,
                                                                 header: str | None) -> None:
    o = parse_options({"cloudFiles.format": "csv", **options}, user_schema=user_schema)
    assert o.option("header") == header
    assert parse_options({"cloudFiles.format": "json"}, user_schema=False).option("header") is None


def test_validate_options_false_ignores_unknown() -> None:
    o = parse_options({"cloudFiles.format": "json", "whatever": "1", "cloudFiles.validateOptions": "false"},
                      user_schema=False)
    assert o.format == "json"


@pytest.mark.parametrize(("options", "needle"), [
    ({}, "cloudFiles.format' is required"),
    ({"cloudFiles.format": "jsn"}, "Did you mean 'json'"),
    ({"cloudFiles.format": "json", "cloudFiles.schemaEvolutionMode": "grow"}, "addNewColumns, rescue"),
    ({"cloudFiles.format": "json", "cloudFiles.cleanSource": "MOVE"}, "moveDestination is not set"),
    ({"cloudFiles.format": "json", "cloudFiles.maxFilesPerTrigger": "0"}, "maxFilesPerTrigger"),
    ({"cloudFiles.format": "json", "cloudFiles.includeExistingFiles": "yes"}, "'true' or 'false'"),
    ({"cloudFiles.format": "json", "modifiedAfter": "yesterday"}, "YYYY-MM-DDTHH:mm:ss"),
    ({"cloudFiles.format": "json", "cloudFiles.allowOverwrites": "maybe"}, "'true' or 'false'"),
])
def test_bad_values(options: dict[str, str], needle: str) -> None:
    with pytest.raises(AutoLoaderError, match=needle.replace("(", r"\(")):
        parse_options(options, user_schema=False)


def test_add_new_columns_with_user_schema_is_rejected() -> None:
    with pytest.raises(AutoLoaderError, match="not supported when a schema is given"):
        parse_options({"cloudFiles.format": "json", "cloudFiles.schemaEvolutionMode": "addNewColumns"},
                      user_schema=True)


@pytest.mark.parametrize(("text", "seconds"), [("30 days", 30 * 86400), ("0", 0), ("0 seconds", 0),
                                                ("1 hour 30 minutes", 5400), ("10s", 10), ("2 weeks", 14 * 86400),
                                                ("interval 1 day", 86400), ("500 ms", 0.5)])
def test_parse_duration(text: str, seconds: float) -> None:
    assert parse_duration(text, "x") == seconds


def test_parse_duration_and_bytes_errors() -> None:
    with pytest.raises(AutoLoaderError, match="not an interval"):
        parse_duration("soon", "cloudFiles.cleanSource.retentionDuration")
    with pytest.raises(AutoLoaderError, match="unknown time unit"):
        parse_duration("3 fortnights", "x")
    assert parse_bytes("1g", "x") == 1024**3
    with pytest.raises(AutoLoaderError):
        parse_bytes("lots", "x")


def _log(folder: Path, name: str, entries: list[dict[str, object]]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text("v1\n" + "\n".join(json.dumps(e) for e in entries) + "\n")


def test_checkpoint_log_committed_and_pending(tmp_path: Path) -> None:
    src = tmp_path / "src"
    cp = tmp_path / "cp"
    for b in (0, 1):
        (cp / "offsets").mkdir(parents=True, exist_ok=True)
        (cp / "offsets" / str(b)).write_text("v1\n{}\n")
    (cp / "commits").mkdir()
    (cp / "commits" / "0").write_text("v1\n{}\n")
    _log(cp / "sources" / "0", "0", [{"path": f"file://{src}/a.json", "timestamp": 1, "batchId": 0}])
    _log(cp / "sources" / "0", "1", [{"path": f"file:{src}/b%20c.json", "timestamp": 2, "batchId": 1},
                                     {"path": f"file://{tmp_path}/other/x.json", "timestamp": 2, "batchId": 1}])
    assert [f.path.name for f in ckpt.committed_files(cp, src)] == ["a.json"]
    assert [f.path.name for f in ckpt.uncommitted_files(cp, src)] == ["b c.json"]
    assert ckpt.has_started(cp) and not ckpt.has_started(tmp_path / "none")


def test_checkpoint_log_reads_compact_files(tmp_path: Path) -> None:
    src, cp = tmp_path / "src", tmp_path / "cp"
    _log(cp / "sources" / "0", "9.compact", [{"path": f"file:{src}/f{i}", "timestamp": i, "batchId": i}
                                             for i in range(10)])
    _log(cp / "sources" / "0", "10", [{"path": f"file:{src}/f10", "timestamp": 10, "batchId": 10}])
    assert len(ckpt.logged_files(cp, src)) == 11


def test_watch_calls_once_per_burst(tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    landing.mkdir()
    (landing / "old.json").write_text("{}")
    stop = threading.Event()
    calls: list[float] = []
    running = threading.Lock()

    def on_arrival() -> None:
        assert running.acquire(blocking=False), "on_arrival ran concurrently"
        calls.append(time.monotonic())
        time.sleep(0.2)
        running.release()

    thread = threading.Thread(target=watch, args=([landing], on_arrival, 0.3, stop), kwargs={"poll_s": 0.05})
    thread.start()
    try:
        time.sleep(0.3)
        assert calls == []  # files present at start do not trigger
        for i in range(3):  # one burst
            (landing / f"f{i}.json").write_text("{}")
            time.sleep(0.05)
        deadline = time.monotonic() + 5
        while not calls and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.6)
        assert len(calls) == 1
        (landing / "sub").mkdir()
        (landing / "sub" / "g.json").write_text("{}")
        deadline = time.monotonic() + 5
        while len(calls) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(calls) == 2
        (landing / "f0.json").unlink()  # archiving is not an arrival
        time.sleep(0.6)
        assert len(calls) == 2
    finally:
        stop.set()
        thread.join(5)
    assert not thread.is_alive()


def test_snapshot_skips_hidden_and_reports_changes(tmp_path: Path) -> None:
    (tmp_path / "_tmp").write_text("x")
    (tmp_path / ".part").write_text("x")
    (tmp_path / "a").write_text("x")
    before = snapshot([tmp_path])
    assert list(before) == [tmp_path / "a"]
    (tmp_path / "a").write_text("xy")
    assert arrivals(before, snapshot([tmp_path])) == [tmp_path / "a"]


@pytest.mark.parametrize(("options", "user_schema", "reusable"), [
    ({"cloudFiles.format": "json"}, False, True),
    ({"cloudFiles.format": "csv", "header": "true"}, True, True),
    ({"cloudFiles.format": "text"}, False, True),
    # new columns of schema-bearing files are found when the source is built, from its file listing
    ({"cloudFiles.format": "parquet"}, False, False),
    ({"cloudFiles.format": "xml", "rowTag": "r"}, False, False),
    # rewritten files and the cutoff of existing files are decided when the source is built, too
    ({"cloudFiles.format": "json", "cloudFiles.allowOverwrites": "true"}, False, False),
    ({"cloudFiles.format": "json", "cloudFiles.includeExistingFiles": "false"}, False, False),
])
def test_which_sources_may_start_a_while_after_they_were_built(options: dict[str, str], user_schema: bool,
                                                              reusable: bool) -> None:
    from framework.autoloader import reusable_source

    assert reusable_source(options, user_schema=user_schema) is reusable
