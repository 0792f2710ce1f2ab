"""Object-store storage roots without Spark: the spec keeps an s3a:// storage as a URL (never a local path), the
layout joins like a path, paths mappings keep URL targets, the lock of an s3a root is a local file, the
driver-side Delta writer refuses non-local tables, and unsafe log stores are named."""

from __future__ import annotations

from pathlib import Path

import pytest

from framework.paths import PathMapper
from framework.runner.lock import lock_file
from framework.runner.object_store import hadoop_runtime_conf, object_store_locations
from framework.spec import parse_spec
from framework.storage.driver import NeedsSpark, append_rows
from framework.storage.url import ObjectStoreUrl, is_local, log_store, storage_path, unsafe_object_store_use


def _spec(tmp_path: Path, **data: object):  # type: ignore[no-untyped-def]
    return parse_spec({"name": "p", "libraries": [], **data}, source="t.yaml", default_root=tmp_path)


def test_s3a_storage_stays_a_url(tmp_path: Path) -> None:
    spec = _spec(tmp_path, storage="s3a://lake/pipelines/sales/")
    assert spec.storage == ObjectStoreUrl("s3a://lake/pipelines/sales")
    assert str(spec.tables_dir / "orders") == "s3a://lake/pipelines/sales/tables/orders"
    assert str(spec.events_dir) == "s3a://lake/pipelines/sales/system/events"
    assert str(spec.checkpoints_dir) == "s3a://lake/pipelines/sales/checkpoints"
    assert not is_local(spec.storage) and spec.storage.bucket == "lake" and spec.storage.scheme == "s3a"


def test_databricks_storage_mapped_to_s3a(tmp_path: Path) -> None:
    spec = _spec(tmp_path, storage="dbfs:/pipelines/sales", paths={"dbfs:/pipelines": "s3a://lake/p"})
    assert spec.storage == ObjectStoreUrl("s3a://lake/p/sales")
    assert PathMapper.from_spec({"/Volumes/x": "s3a://lake/landing/"}, tmp_path).map("/Volumes/x/a.json") == \
        "s3a://lake/landing/a.json"


def test_local_storage_is_unchanged(tmp_path: Path) -> None:
    spec = _spec(tmp_path, storage="runs/x")
    assert spec.storage == (tmp_path / "runs" / "x").resolve() and is_local(spec.storage)
    assert storage_path("file:/tmp/a") == Path("/tmp/a") and storage_path("s3a://b/k") == ObjectStoreUrl("s3a://b/k")


def test_lock_of_an_object_store_root_is_local_and_per_url(tmp_path: Path) -> None:
    a, b = lock_file(ObjectStoreUrl("s3a://lake/a")), lock_file(ObjectStoreUrl("s3a://lake/b"))
    assert a != b and a == lock_file(ObjectStoreUrl("s3a://lake/a/")) and "s3a" not in str(a)
    assert lock_file(tmp_path) == tmp_path / "system" / "update.lock"


def test_driver_writer_refuses_object_store_tables() -> None:
    from pyspark.sql.types import LongType, StructField, StructType

    with pytest.raises(NeedsSpark):
        append_rows("s3a://lake/tables/t", StructType([StructField("x", LongType())]), [{"x": 1}])
    assert not Path("s3a:").exists()  # refused before anything was written anywhere


def test_log_stores_and_unsafe_ones() -> None:
    assert log_store("s3a://lake/t") == "io.delta.storage.S3SingleDriverLogStore"
    assert log_store("/tmp/t") == "medallion.storage.AtomicLocalLogStore"
    assert unsafe_object_store_use("s3a://lake/t", {}) is None
    assert unsafe_object_store_use("s3a://lake/t", {
        "spark.delta.logStore.s3a.impl": "io.delta.storage.S3DynamoDBLogStore"}) is None
    reason = unsafe_object_store_use("s3a://lake/t", {"spark.delta.logStore.s3a.impl": "io.delta.storage.LocalLogStore"})
    assert reason is not None and "LocalLogStore" in reason
    assert unsafe_object_store_use("/tmp/t", {"spark.delta.logStore.class": "x"}) is None


def test_runtime_conf_and_locations(tmp_path: Path) -> None:
    from framework.redaction import redact

    conf = {"spark.hadoop.fs.s3a.endpoint": "http://127.0.0.1:1", "spark.hadoop.fs.s3a.secret.key": "s3cr3t-value"}
    assert hadoop_runtime_conf(conf) == {"fs.s3a.endpoint": "http://127.0.0.1:1", "fs.s3a.secret.key": "s3cr3t-value"}
    assert "s3cr3t-value" not in redact("key s3cr3t-value")
    spec = _spec(tmp_path, storage="s3a://lake/p", paths={"/Volumes/a": "s3a://other/landing"},
                 configuration={"x": "s3a://lake/p", "y": "plain"})
    assert object_store_locations(spec) == ["s3a://lake/p", "s3a://other/landing"]
