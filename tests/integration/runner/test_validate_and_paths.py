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
