"""An Auto Loader source built while resolving is reused by the same flow's execution, except after a full refresh
(which clears its schema location and checkpoint, so the source must be built again). Which sources may be reused
at all is ``reusable_source`` (tests/unit/autoloader/test_options.py)."""

from __future__ import annotations

import io
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession
from pyspark.sql.types import ArrayType, LongType, StringType, StructField, StructType

import framework.autoloader as autoloader
from framework.runner.update import UpdateOptions, run_update
from framework.stand_ins import empty_frame
from tests.integration.runner.pipeline_factory import make_pipeline, write_json_lines

pytestmark = pytest.mark.spark

PIPELINE = """
import dlt

@dlt.table
def raw_orders():
    return (spark.readStream.format("cloudFiles").option("cloudFiles.format", "json")
            .load(spark.conf.get("landing")))

@dlt.table
def big_orders():
    return dlt.read_stream("raw_orders").where("CAST(amount AS INT) > 10")
"""


def test_auto_loader_source_is_built_once_per_update_and_again_after_full_refresh(
        spark, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    landing = tmp_path / "landing"
    write_json_lines(landing, "1.json", ['{"id":1,"amount":5}', '{"id":2,"amount":50}'])
    spec = make_pipeline(tmp_path, {"p.py": PIPELINE}, {"landing": str(landing)})
    built: Counter[str] = Counter()
    real = autoloader.load_cloud_files

    def counting(spark: Any, path: str, *args: Any, **kwargs: Any) -> Any:
        built[path] += 1
        return real(spark, path, *args, **kwargs)

    monkeypatch.setattr(autoloader, "load_cloud_files", counting)

    first = run_update(spec, UpdateOptions(out=io.StringIO()), spark=spark)
    assert first.succeeded, [(f.flow, f.error) for f in first.flows]
    assert built == {str(landing): 1}  # resolution built it, the flow took that DataFrame
    assert sorted(int(r.id) for r in spark.read.table(f"{spec.schema}.raw_orders").collect()) == [1, 2]

    # The next update builds it once again (a new update, a new resolution) and reads only the new file.
    write_json_lines(landing, "2.json", ['{"id":3,"amount":70}'])
    second = run_update(spec, UpdateOptions(out=io.StringIO()), spark=spark)
    assert second.succeeded
    assert built == {str(landing): 2}
    assert {f.flow: f.num_output_rows for f in second.flows} == {"raw_orders": 1, "big_orders": 1}

    # Full refresh: the schema location and checkpoint are cleared after resolution, so execution builds the
    # source again (inferring the schema anew) and reprocesses every file exactly once.
    refreshed = run_update(spec, UpdateOptions(out=io.StringIO(), full_refresh=True), spark=spark)
    assert refreshed.succeeded, [(f.flow, f.error) for f in refreshed.flows]
    assert built == {str(landing): 4}
    assert sorted(int(r.id) for r in spark.read.table(f"{spec.schema}.raw_orders").collect()) == [1, 2, 3]
    assert sorted(int(r.id) for r in spark.read.table(f"{spec.schema}.big_orders").collect()) == [2, 3]


@pytest.mark.parametrize("schema", [
    "id BIGINT, name STRING", "id: bigint, name: string", "int",
    StructType([StructField("id", LongType(), False), StructField("tags", ArrayType(StringType()))]),
])
def test_a_stand_in_has_the_schema_createdataframe_gives_and_no_rows(spark: SparkSession, schema: Any) -> None:
    frame = empty_frame(spark, schema)
    assert frame.schema == spark.createDataFrame([], schema).schema
    assert not frame.isStreaming and frame.count() == 0


def test_a_stand_in_of_a_declared_varchar_schema_reads_as_strings(spark: SparkSession) -> None:
    # spark.createDataFrame([], schema) fails on these (CHAR/VARCHAR in a plan's output); a table declared with
    # them reads as STRING
    frame = empty_frame(spark, "id BIGINT, name VARCHAR(10), tags ARRAY<CHAR(2)>, m MAP<STRING, VARCHAR(3)>")
    assert frame.schema.simpleString() == "struct<id:bigint,name:string,tags:array<string>,m:map<string,string>>"
