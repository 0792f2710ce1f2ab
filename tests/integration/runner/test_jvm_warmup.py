"""framework/runner/jvm_warmup.py: the classes a fresh session initialises in the background exist in the jars the
framework runs with (the warm-up ignores a missing one, so a Delta upgrade that renames it would go unnoticed)."""

from __future__ import annotations

import json
import threading

import pytest
from pyspark.sql import SparkSession

from framework.runner import jvm_warmup

pytestmark = [pytest.mark.spark]


def test_every_warmed_class_is_on_the_class_path(spark: SparkSession) -> None:
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
    for name in (*jvm_warmup.EARLY_CLASSES, *jvm_warmup.CLASSES):
        assert jvm.java.lang.Class.forName(name, False, loader).getName() == name


def _ends_on_a_daemon_thread(thread: threading.Thread, name: str) -> None:
    assert thread.daemon and thread.name == name
    thread.join(timeout=60)
    assert not thread.is_alive()


def test_the_warmup_runs_on_a_daemon_thread_and_ends(spark: SparkSession) -> None:
    _ends_on_a_daemon_thread(jvm_warmup.start_warmup(spark), "medallion-jvm-warmup")


def test_every_warmed_action_reads_and_writes_back_with_deltas_json_code(spark: SparkSession) -> None:
    jvm = spark.sparkContext._jvm
    for action in jvm_warmup.ACTIONS:
        (kind, fields), = json.loads(action).items()
        (kind_back, fields_back), = json.loads(jvm_warmup.round_trip(jvm, action)).items()
        assert kind_back == kind
        assert {k: v for k, v in fields_back.items() if k in fields} == fields


def test_the_early_warmup_builds_what_it_names_and_ends(spark: SparkSession) -> None:
    # the functions the early warm-up calls exist in this Spark (a missing one would be skipped silently)
    jvm = spark.sparkContext._jvm
    assert jvm.scala.reflect.runtime.package.universe() is not None
    assert jvm_warmup.parse_schema(jvm, jvm_warmup.SCHEMA) == (
        "id BIGINT,name STRING,amount DECIMAL(10,2),at TIMESTAMP")
    _ends_on_a_daemon_thread(jvm_warmup.start_early_warmup(jvm), "medallion-jvm-early-warmup")


def test_the_warmup_compiles_a_projection_and_derives_deltas_action_encoder(spark: SparkSession) -> None:
    jvm = spark.sparkContext._jvm
    assert "SpecificUnsafeProjection" in jvm_warmup.compile_projection(jvm, jvm_warmup.SCHEMA)
    for owner, accessor in jvm_warmup.ENCODERS:
        ddl = jvm_warmup.encoder(jvm, owner, accessor)
        assert "add STRUCT<path: STRING" in ddl and "commitInfo" in ddl


def test_a_local_session_leaves_the_jars_to_the_drivers_class_path(spark: SparkSession) -> None:
    # local mode's executors run in the driver's JVM: the framework's jar, Delta and the JDBC driver are on its
    # class path, and nothing copies them to the executors' folder (spark.jars is for a cluster's executors)
    conf = spark.sparkContext.getConf()
    assert conf.get("spark.master", "").startswith("local")
    assert conf.get("spark.jars") is None
    class_path = conf.get("spark.driver.extraClassPath") or ""
    assert "delta-spark" in class_path and "medallion-jvm-" in class_path
    assert spark.sparkContext._jsc.sc().listJars().isEmpty()
