"""Which sessions get the Python `jdbc_incremental` source: those without the framework's jar (no Spark)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from framework.sources import framework_jar_loaded


def _session(conf: dict[str, str]) -> Any:
    return SimpleNamespace(sparkContext=SimpleNamespace(getConf=lambda: SimpleNamespace(get=conf.get)))


def test_the_framework_jar_is_found_in_spark_jars_or_the_driver_class_path() -> None:
    assert framework_jar_loaded(_session({"spark.jars": "/c/delta-spark.jar,/c/jars/medallion-jvm-0123abcd.jar"}))
    assert framework_jar_loaded(_session({"spark.driver.extraClassPath": "/c/a.jar:/c/medallion-jvm-0123abcd.jar"}))
    assert not framework_jar_loaded(_session({"spark.jars": "/c/delta-spark.jar", "spark.driver.extraClassPath": ""}))
    assert not framework_jar_loaded(_session({}))
