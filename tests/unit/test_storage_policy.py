"""framework.storage.policy: the one rule that decides which engine commits a write, and why (no Spark session:
the tables are written with the driver's own writer)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql.types import LongType, StringType, StructField, StructType, TimestampNTZType

from framework.storage import policy
from framework.storage.driver import append_arrow, append_rows
from framework.storage.policy import DRIVER, SPARK, choose, spark_reason

SCHEMA = StructType([StructField("id", LongType()), StructField("name", StringType())])
LIMIT = 1 << 20


def _table(path: Path, configuration: dict[str, str] | None = None) -> Path:
    data = pa.table({"id": pa.array([1, 2], pa.int64()), "name": pa.array(["a", "b"])})
    append_arrow(path, SCHEMA, data, configuration=configuration)
    return path


def _set_metadata(table: Path, **changes: object) -> None:
    """Rewrite the first commit's metaData (a layout only Delta writes, as another writer would leave it)."""
    first = table / "_delta_log" / f"{0:020d}.json"
    actions = [json.loads(line) for line in first.read_text().splitlines()]
    for action in actions:
        if "metaData" in action:
            action["metaData"].update(changes)
    first.write_text("\n".join(json.dumps(a) for a in actions) + "\n")
    for crc in (table / "_delta_log").glob("*.crc"):
        crc.unlink()


def test_a_new_table_and_a_small_append_of_its_columns_go_to_the_driver(tmp_path: Path) -> None:
    new = choose(str(tmp_path / "t"), SCHEMA, kind="append", data_bytes=100, max_bytes=LIMIT)
    assert (new.engine, new.version) == (DRIVER, -1)
    table = _table(tmp_path / "t")
    again = choose(str(table), SCHEMA, kind="append", data_bytes=100, max_bytes=LIMIT)
    assert (again.engine, again.reason, again.version) == (DRIVER, "", 0)


@pytest.mark.parametrize(("kwargs", "reason"), [
    ({"max_bytes": 0}, "small writes are off"),
    ({"data_bytes": 2 * LIMIT}, "over small_updates.max_input_bytes"),
    ({"schema": StructType([StructField("at", TimestampNTZType())])}, "column type"),
    ({"schema": StructType([*SCHEMA.fields, StructField("extra", LongType())])}, "schema evolution"),
])
def test_spark_commits_when_a_rule_fails_and_the_reason_says_which(tmp_path: Path, kwargs: dict, reason: str) -> None:
    table = _table(tmp_path / "t")
    args = {"schema": SCHEMA, "data_bytes": 100, "max_bytes": LIMIT, **kwargs}
    choice = choose(str(table), args.pop("schema"), kind="append", **args)
    assert choice.engine == SPARK and reason in choice.reason
    assert spark_reason(str(table)) == choice.reason
    assert spark_reason(str(table)) is None  # reported once


def test_an_object_store_table_is_always_committed_by_spark() -> None:
    for kind in ("append", "overwrite", "rewrite", "log"):
        choice = choose("s3a://bucket/tables/t", SCHEMA, kind=kind, data_bytes=1, max_bytes=LIMIT)  # type: ignore[arg-type]
        assert choice.engine == SPARK and "object store" in choice.reason


def test_a_layout_only_delta_writes_goes_to_spark_for_every_kind_of_write(tmp_path: Path) -> None:
    table = _table(tmp_path / "t")
    _set_metadata(table, partitionColumns=["name"])
    for kind in ("append", "overwrite", "rewrite"):
        choice = choose(str(table), SCHEMA, kind=kind, data_bytes=1, max_bytes=LIMIT)  # type: ignore[arg-type]
        assert choice.engine == SPARK, kind


def test_the_table_size_counts_for_appends_and_rewrites_not_for_overwrites(tmp_path: Path) -> None:
    table = _table(tmp_path / "t")
    size = sum(f.stat().st_size for f in table.glob("*.parquet"))
    assert choose(str(table), SCHEMA, kind="append", data_bytes=1, max_bytes=size).engine == SPARK
    assert choose(str(table), None, kind="rewrite", data_bytes=0, max_bytes=size - 1).engine == SPARK
    assert choose(str(table), SCHEMA, kind="overwrite", data_bytes=1, max_bytes=size).engine == DRIVER


def test_a_rewrite_needs_an_existing_table_without_a_change_data_feed(tmp_path: Path) -> None:
    assert choose(str(tmp_path / "none"), None, kind="rewrite", data_bytes=0, max_bytes=LIMIT).engine == SPARK
    plain = _table(tmp_path / "plain")
    assert choose(str(plain), None, kind="rewrite", data_bytes=0, max_bytes=LIMIT).version == 0
    feed = _table(tmp_path / "feed")
    _set_metadata(feed, configuration={"delta.enableChangeDataFeed": "true"})
    choice = choose(str(feed), None, kind="rewrite", data_bytes=0, max_bytes=LIMIT)
    assert choice.engine == SPARK and "change data feed" in choice.reason


def test_the_event_log_is_appended_by_the_driver_whatever_its_size(tmp_path: Path) -> None:
    table = tmp_path / "events"
    append_rows(table, SCHEMA, [{"id": i, "name": "x" * 100} for i in range(100)])
    assert choose(str(table), SCHEMA, kind="log", data_bytes=0, max_bytes=0).driver


def test_every_driver_write_of_the_framework_asks_the_policy() -> None:
    """The modules that commit with the driver's writer decide through ``choose`` (one rule, one report)."""
    root = Path(policy.__file__).resolve().parents[1]
    writers = {p.relative_to(root).as_posix() for p in root.rglob("*.py")
               if any(name in p.read_text() for name in ("append_arrow(", "overwrite_arrow(", "append_rows("))}
    deciders = {p for p in writers if "choose(" in (root / p).read_text()}
    assert not writers - {"storage/driver.py"} - deciders, writers - deciders


@pytest.mark.parametrize(("path", "kwargs", "reason"), [
    ("s3a://bucket/t", {}, "object store"),
    (None, {"max_bytes": 0}, "small writes are off"),
    (None, {"output_mode": "complete"}, "complete output mode"),
    (None, {"plain_layout": False}, "layout only Delta writes"),
])
def test_a_stream_goes_to_deltas_sink_when_its_batches_could_never_be_the_drivers(
        tmp_path: Path, path: str | None, kwargs: dict, reason: str) -> None:
    from framework.storage.policy import for_stream

    table = path or str(tmp_path / "t")
    args = {"plain_layout": True, "output_mode": "append", "max_bytes": LIMIT, **kwargs}
    choice = for_stream(table, **args)
    assert choice.engine == SPARK and reason in choice.reason and spark_reason(table) == choice.reason
    assert for_stream(str(tmp_path / "u"), plain_layout=True, output_mode="append", max_bytes=LIMIT).driver
