"""validate checks rule files against the real schema; Databricks paths map for writers too."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from framework.errors import RuleFileError
from framework.runner.update import UpdateOptions, resolve_pipeline, run_update
from tests.integration.runner.pipeline_factory import make_pipeline

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


def test_validate_reports_rule_file_columns_unknown_to_the_dataset(spark, tmp_path: Path, monkeypatch) -> None:
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "people.yml").write_text(
        "rules:\n"
        "  - name: has_name\n    constraint: name IS NOT NULL\n    action: drop\n"
        "  - name: adult\n    constraint: agee >= 18\n    action: warn\n")
    monkeypatch.setenv("MEDALLION_EXPECTATIONS", str(rules))
    spec = make_pipeline(tmp_path, {"p.py": """
        import dlt
        from framework.quality.decorators import expect_rules

        @dlt.table
        @expect_rules("people")
        def people():
            return spark.createDataFrame([("ann", 30)], "name string, age int")
    """})
    with pytest.raises(RuleFileError) as info:
        resolve_pipeline(spec, spark)
    assert "UNKNOWN_COLUMN" in info.value.codes
    assert "agee" in str(info.value) and "people.yml" in str(info.value)


def test_databricks_paths_are_mapped_for_readers_and_writers(spark, tmp_path: Path) -> None:
    local = tmp_path / "volume"
    (local / "in").mkdir(parents=True)
    (local / "in" / "a.json").write_text('{"id": 1}\n{"id": 2}\n')
    spec = make_pipeline(tmp_path, {"p.py": """
        import dlt

        @dlt.table
        def ids():
            df = spark.read.format("json").load("/Volumes/main/raw/landing/in")
            df.write.mode("overwrite").json("dbfs:/mnt/exports/ids")   # a side output, as notebooks do
            return df
    """}, paths={"/Volumes/main/raw/landing": str(local), "dbfs:/mnt/exports": str(tmp_path / "exports")})
    result = run_update(spec, UpdateOptions(), spark=spark)
    assert result.succeeded, [f.error for f in result.flows]
    assert result.flow("ids").num_output_rows == 2
    assert len(list((tmp_path / "exports" / "ids").glob("part-*.json"))) >= 1


UPSERT_HANDLER = """
import dlt
from delta.tables import DeltaTable

@dlt.foreach_batch_sink(name="{sink}")
def upsert(df, batch_id):
    # the usual MERGE upsert handler, on Databricks paths, through the batch's own session
    spark = df.sparkSession
    latest = df.groupBy("k").agg({{"seq": "max"}}).withColumnRenamed("max(seq)", "seq").join(df, ["k", "seq"])
    if DeltaTable.isDeltaTable(spark, "{target}"):
        (DeltaTable.forPath(spark, "{target}").alias("t").merge(latest.alias("s"), "t.k = s.k")
         .whenMatchedUpdateAll("s.seq > t.seq").whenNotMatchedInsertAll().execute())
    else:
        latest.write.format("delta").save("{target}")
    # a read through the batch's session and a Delta table named by its path see the mapped folder too
    seen = spark.read.format("delta").load("{target}").count()
    named = DeltaTable.forName(spark, "delta.`{target}`").toDF().count()
    spark.createDataFrame([(batch_id, seen, named)], "batch long, seen long, named long").write.format(
        "delta").mode("append").option("path", "{audit}").save()

@dlt.append_flow(target="{sink}")
def changes():
    return spark.readStream.format("json").schema("k STRING, seq BIGINT, v STRING").load("{landing}")
"""


@pytest.mark.parametrize("databricks", ["/Volumes/main/gold/files", "dbfs:/mnt/gold"])
def test_a_foreach_batch_upsert_sees_mapped_paths_in_every_spark_and_delta_api(
        spark: SparkSession, tmp_path: Path, databricks: str) -> None:
    """The handler checks ``DeltaTable.isDeltaTable`` on a Databricks path, MERGEs through ``DeltaTable.forPath``
    and reads through ``df.sparkSession``: unmapped, the second batch took the first-write branch again and
    failed with DELTA_PATH_EXISTS."""
    landing, gold = tmp_path / "landing", tmp_path / "gold"
    (landing).mkdir()
    (landing / "1.json").write_text('{"k": "a", "seq": 1, "v": "a1"}\n{"k": "b", "seq": 1, "v": "b1"}\n')
    code = UPSERT_HANDLER.format(sink="latest", target=f"{databricks}/latest", audit=f"{databricks}/audit",
                                 landing=f"{databricks}/landing")
    spec = make_pipeline(tmp_path, {"p.py": code}, paths={databricks: str(gold)})
    (gold).mkdir()
    (gold / "landing").symlink_to(landing)
    for more in ('{"k": "a", "seq": 2, "v": "a2"}\n{"k": "c", "seq": 1, "v": "c1"}\n',
                 '{"k": "b", "seq": 3, "v": "b3"}\n{"k": "a", "seq": 1, "v": "stale"}\n'):
        result = run_update(spec, UpdateOptions(), spark=spark)
        assert result.succeeded, [f.error for f in result.flows]
        (landing / f"{len(list(landing.iterdir())) + 1}.json").write_text(more)
    result = run_update(spec, UpdateOptions(), spark=spark)
    assert result.succeeded, [f.error for f in result.flows]
    rows = spark.read.format("delta").load(str(gold / "latest")).orderBy("k").collect()
    assert [(r.k, r.seq, r.v) for r in rows] == [("a", 2, "a2"), ("b", 3, "b3"), ("c", 1, "c1")]
    audit = spark.read.format("delta").load(str(gold / "audit")).orderBy("batch").collect()
    assert [(r.seen, r.named) for r in audit] == [(2, 2), (3, 3), (3, 3)]  # rows after each batch's MERGE


def test_the_local_file_system_sets_permissions_without_forking(spark: SparkSession, tmp_path: Path) -> None:
    """The session writes local files through the framework's file system (jvm/src), which sets permissions
    in-process; Hadoop's own forks a ``chmod`` per file."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    path = jvm.org.apache.hadoop.fs.Path(f"file://{tmp_path}/f.txt")
    fs = path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
    assert fs.getClass().getName() == "medallion.fs.NoForkLocalFileSystem"
    permission = jvm.org.apache.hadoop.fs.permission.FsPermission(int("640", 8))
    stream = fs.create(path, permission, True, 4096, 1, 1 << 20, None)
    stream.write(b"x")
    stream.close()
    assert (tmp_path / "f.txt").read_bytes() == b"x"
    assert (tmp_path / "f.txt").stat().st_mode & 0o777 == 0o640
    fs.setPermission(path, jvm.org.apache.hadoop.fs.permission.FsPermission(int("604", 8)))
    assert (tmp_path / "f.txt").stat().st_mode & 0o777 == 0o604
