"""Checksums of driver commits (framework/storage/checksum.py) are the ones Delta computes: Delta validates each
against the state it reconstructs, through driver commits, Spark commits on top of them and back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from framework.storage.checksum import checksum_path
from framework.storage.driver import append_arrow, append_rows, overwrite_arrow, set_properties

pytestmark = pytest.mark.spark


def _validated(spark: SparkSession, path: str) -> int:
    """Delta's own check of the newest version's checksum (raises on a mismatch); the version."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    jvm.org.apache.spark.sql.delta.DeltaLog.clearCache()
    log = jvm.org.apache.spark.sql.delta.DeltaLog.forTable(spark._jsparkSession, path)
    snapshot = log.update(False, jvm.scala.Option.empty(), jvm.scala.Option.empty())
    assert snapshot.validateChecksum(jvm.PythonUtils.toScalaMap({}))
    return int(snapshot.version())


def test_driver_checksums_match_the_state_delta_reconstructs(spark: SparkSession, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    df = spark.createDataFrame([(1, "a"), (2, "b")], "id long, s string")
    steps = [
        lambda: append_arrow(path, df.schema, df.toArrow(), txn=("q", 0), description="d", configuration={"k": "v"}),
        lambda: append_arrow(path, df.schema, df.toArrow(), txn=("q", 1)),
        lambda: df.write.format("delta").mode("append").save(path),  # Delta's checksum on top of the driver's
        lambda: append_rows(path, df.schema, [{"id": 3, "s": "c"}]),
        lambda: overwrite_arrow(path, df.schema, df.toArrow(), txn=("q", 2)),
        lambda: spark.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('x' = 'y')"),
        lambda: append_arrow(path, df.schema, df.toArrow(), txn=("r", 0)),
        lambda: set_properties(path, {"owner": "me"}, "described"),  # what ALTER TABLE SET TBLPROPERTIES does
    ]
    for version, step in enumerate(steps):
        step()
        assert _validated(spark, path) == version and checksum_path(Path(path), version).is_file()
    newest = json.loads(checksum_path(Path(path), 7).read_text())
    assert {t["appId"]: t["version"] for t in newest["setTransactions"]} == {"q": 2, "r": 0}
    assert newest["metadata"]["configuration"] == {"k": "v", "x": "y", "owner": "me"}
    assert spark.read.format("delta").load(path).count() == 4
    detail = spark.sql(f"DESCRIBE DETAIL delta.`{path}`").first()
    assert detail.description == "described" and detail.properties == {"k": "v", "x": "y", "owner": "me"}


def test_a_version_without_a_checksum_before_it_gets_none(spark: SparkSession, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    df = spark.createDataFrame([(1, "a")], "id long, s string")
    append_arrow(path, df.schema, df.toArrow())
    checksum_path(Path(path), 0).unlink()
    append_arrow(path, df.schema, df.toArrow())
    assert not checksum_path(Path(path), 1).exists()
    assert _validated(spark, path) == 1 and spark.read.format("delta").load(path).count() == 2
