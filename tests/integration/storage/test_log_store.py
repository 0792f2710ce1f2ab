"""The Delta LogStore in effect for ``file:`` paths is the framework's (``medallion.storage.AtomicLocalLogStore``,
conf/spark.yaml), asked of Delta itself in the test session, and it keeps the LogStore contract there."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from py4j.protocol import Py4JJavaError

from framework.runner.session import ATOMIC_LOG_STORE, log_store_fallback
from framework.settings import FRAMEWORK_JAR_PREFIX

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def _store(spark: SparkSession, table: Path) -> tuple[Any, Any]:
    """The LogStore Delta resolves for ``table``'s log (a ``file:`` path), and that log's Hadoop path."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    log = jvm.org.apache.spark.sql.delta.DeltaLog.forTable(spark._jsparkSession, str(table))
    log_path = log.logPath()
    assert log_path.toUri().getScheme() == "file"
    delegate = log.store().getDelegate(log_path)  # DelegatingLogStore: the store for the path's scheme
    return delegate.logStoreImpl(), log_path  # LogStoreAdaptor around the io.delta.storage.LogStore


def _lines(spark: SparkSession, *lines: str | None) -> Any:
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    out = jvm.java.util.ArrayList()
    for line in lines:
        out.add(line)
    return out.iterator()


def _hadoop_conf(spark: SparkSession) -> Any:
    return spark.sparkContext._jsc.hadoopConfiguration()


@pytest.mark.spark
def test_delta_resolves_the_frameworks_log_store_for_file_paths(spark: SparkSession, tmp_path: Path) -> None:
    store, _log = _store(spark, tmp_path / "t")
    name = store.getClass().getName()
    assert name == ATOMIC_LOG_STORE, (
        f"Delta's LogStore for file: paths is {name}, not {ATOMIC_LOG_STORE}: commits of two processes (or of "
        "the driver's writer and Spark) to one table may both win a version; check spark.delta.logStore.file.impl "
        "in conf/spark.yaml and that the framework's jar is on the driver's class path"
    )


@pytest.mark.spark
def test_a_second_write_of_a_log_file_fails_and_leaves_the_first(spark: SparkSession, tmp_path: Path) -> None:
    store, log = _store(spark, tmp_path / "t")
    (tmp_path / "t" / "_delta_log").mkdir(parents=True)
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    commit = jvm.org.apache.hadoop.fs.Path(log, "00000000000000000000.json")
    store.write(commit, _lines(spark, '{"first":1}'), False, _hadoop_conf(spark))
    with pytest.raises(Py4JJavaError) as raised:
        store.write(commit, _lines(spark, '{"second":2}'), False, _hadoop_conf(spark))
    assert raised.value.java_exception.getClass().getName() == "java.nio.file.FileAlreadyExistsException"
    assert (tmp_path / "t" / "_delta_log" / "00000000000000000000.json").read_text() == '{"first":1}\n'
    assert sorted(p.name for p in (tmp_path / "t" / "_delta_log").iterdir()) == ["00000000000000000000.json"]


@pytest.mark.spark
def test_an_overwrite_replaces_a_file_hadoop_wrote_with_its_checksum(
    spark: SparkSession, tmp_path: Path
) -> None:
    """``_last_checkpoint`` written by Hadoop's checksummed file system (LocalLogStore did) has a hidden ``.crc``
    that would not match the file replacing it: a read through Hadoop, which verifies it, must still work."""
    store, log = _store(spark, tmp_path / "t")
    (tmp_path / "t" / "_delta_log").mkdir(parents=True)
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    target = jvm.org.apache.hadoop.fs.Path(log, "_last_checkpoint")
    fs = target.getFileSystem(_hadoop_conf(spark))
    stream = fs.create(target, True)
    stream.write(b'{"version":10,"size":3}\n')
    stream.close()
    assert (tmp_path / "t" / "_delta_log" / "._last_checkpoint.crc").exists()
    store.write(
        target, _lines(spark, '{"version":20,"size":4,"sizeInBytes":1000}'), True, _hadoop_conf(spark)
    )
    read = store.read(
        target, _hadoop_conf(spark)
    )  # through Hadoop's file system, checksum verified when present
    lines = []
    while read.hasNext():
        lines.append(read.next())
    read.close()
    assert lines == ['{"version":20,"size":4,"sizeInBytes":1000}']
    assert sorted(p.name for p in (tmp_path / "t" / "_delta_log").iterdir()) == ["_last_checkpoint"]


@pytest.mark.spark
def test_a_write_that_fails_midway_leaves_nothing(spark: SparkSession, tmp_path: Path) -> None:
    store, log = _store(spark, tmp_path / "t")
    (tmp_path / "t" / "_delta_log").mkdir(parents=True)
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    commit = jvm.org.apache.hadoop.fs.Path(log, "00000000000000000000.json")
    broken = _lines(spark, '{"commitInfo":{}}', None)  # a null line: the write throws
    with pytest.raises(Py4JJavaError):
        store.write(commit, broken, False, _hadoop_conf(spark))
    assert list((tmp_path / "t" / "_delta_log").iterdir()) == []


def test_without_the_frameworks_jar_sessions_fall_back_to_local_log_store(
    capsys: pytest.CaptureFixture[str],
) -> None:
    key = "spark.delta.logStore.file.impl"
    conf = {key: ATOMIC_LOG_STORE}
    log_store_fallback(conf, [Path(f"/c/{FRAMEWORK_JAR_PREFIX}0123abcd.jar")])
    assert conf[key] == ATOMIC_LOG_STORE and capsys.readouterr().err == ""
    log_store_fallback(conf, [Path("/c/delta-storage-4.4.0.jar")])
    assert conf[key] == "io.delta.storage.LocalLogStore"
    assert ATOMIC_LOG_STORE in capsys.readouterr().err
    chosen = {key: "com.example.OwnLogStore"}  # a user's own choice is theirs
    log_store_fallback(chosen, [])
    assert chosen[key] == "com.example.OwnLogStore"
