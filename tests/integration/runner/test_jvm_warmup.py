"""framework/runner/jvm_warmup.py: the classes a fresh session initialises in the background exist in the jars the
framework runs with (the warm-up ignores a missing one, so a Delta upgrade that renames it would go unnoticed)."""

from __future__ import annotations

import json

import pytest
from pyspark.sql import SparkSession

from framework.runner import jvm_warmup

pytestmark = [pytest.mark.spark]


def test_every_warmed_class_is_on_the_class_path(spark: SparkSession) -> None:
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
    for name in jvm_warmup.CLASSES:
        assert jvm.java.lang.Class.forName(name, False, loader).getName() == name


def test_the_warmup_runs_on_a_daemon_thread_and_ends(spark: SparkSession) -> None:
    thread = jvm_warmup.start_warmup(spark)
    assert thread.daemon and thread.name == "medallion-jvm-warmup"
    thread.join(timeout=60)
    assert not thread.is_alive()


def test_every_warmed_action_reads_and_writes_back_with_deltas_json_code(spark: SparkSession) -> None:
    jvm = spark.sparkContext._jvm
    for action in jvm_warmup.ACTIONS:
        (kind, fields), = json.loads(action).items()
        (kind_back, fields_back), = json.loads(jvm_warmup.round_trip(jvm, action)).items()
        assert kind_back == kind
        assert {k: v for k, v in fields_back.items() if k in fields} == fields
