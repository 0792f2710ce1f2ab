"""Pipelines whose storage (tables, checkpoints, event log, Auto Loader schemas) and landing files live on a real
S3-compatible server (SeaweedFS, framework/testing/s3.py) through s3a:// paths: two updates each, the second
incremental, the results equal to the same updates on local storage; every commit on s3a written by Spark's
Delta (its S3 log store), never by the framework's driver-side writer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from framework.runner.object_store import hadoop_runtime_conf
from framework.runner.update import UpdateOptions, run_update
from framework.session_settings import session_conf
from framework.spec import PipelineSpec, load_spec
from framework.storage.driver import ENGINE_INFO
from framework.storage.url import ObjectStoreUrl
from tests.conftest import REPO_ROOT

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from framework.testing.s3 import S3Server

pytestmark = pytest.mark.spark

FILES = "/Volumes/main/raw/files"


def _change(customer_id: int, name: str, at: str, op: str = "UPSERT") -> dict[str, object]:
    return {"customer_id": customer_id, "name": name, "email": f"{name.lower()}@example.com", "op": op,
            "changed_at": f"2024-05-01T{at}"}


def _lines(*rows: dict[str, object]) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


BATCHES = [
    {"2024/05/01/batch-1.json": _lines(_change(1, "Ann", "10:00:00"), _change(2, "Bob", "10:00:00"))},
    {"2024/05/01/batch-2.json": _lines(_change(1, "Anna", "11:00:00"), _change(2, "Bob", "11:00:00", "DELETE"),
                                       _change(3, "Cy", "11:00:00")),
     "2024/05/01/late.json": _lines(_change(1, "Stale", "09:00:00"))},
]


def _file_arrival(storage: str, files: str, spark_conf: dict[str, str], schema: str) -> PipelineSpec:
    """The file-arrival example (land under source/, stage, MERGE, archive under archive/) on ``storage``."""
    return load_spec(REPO_ROOT / "conf" / "file_arrival.yaml", overrides={
        "storage": storage, "schema": schema, "paths": {FILES: files}, "spark_conf": spark_conf,
        "configuration": {"file_arrival.landing": f"{FILES}/source/customers",
                          "file_arrival.archive": f"{FILES}/archive/customers"}})


def _rows(spark: SparkSession, path: str, *columns: str) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in spark.read.format("delta").load(path).select(*columns).collect())


def _engines(spark: SparkSession, path: str) -> set[str]:
    return {r.engineInfo for r in spark.sql(f"DESCRIBE HISTORY delta.`{path}`").select("engineInfo").collect()}


def _no_stray_local_folders() -> None:
    """An s3a URL taken for a local path would have left a folder named 's3a:' where the tests run."""
    assert not (Path.cwd() / "s3a:").exists()


def test_file_arrival_on_s3a_matches_local(spark: SparkSession, s3_server: S3Server, s3_prefix: str,
                                           tmp_path: Path) -> None:
    conf = s3_server.spark_conf()
    remote = _file_arrival(f"{s3_prefix}/storage", f"{s3_prefix}/files", conf, "it_s3a_arrival")
    local = _file_arrival(str(tmp_path / "storage"), str(tmp_path / "files"), {}, "it_local_arrival")
    assert isinstance(remote.storage, ObjectStoreUrl)
    source, archive = f"{s3_prefix}/files/source/customers", f"{s3_prefix}/files/archive/customers"
    for n, batch in enumerate(BATCHES):
        for name, text in batch.items():
            s3_server.put_object(f"{source}/{name}", text)
            (tmp_path / "files" / "source" / "customers" / name).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / "files" / "source" / "customers" / name).write_text(text)
        results = [run_update(spec, UpdateOptions(write_report=False), spark=spark) for spec in (remote, local)]
        assert all(r.succeeded for r in results), [(f.name, f.error) for r in results for f in r.flows]
        # the second update reads only the files that landed since the first
        assert results[0].flow("customers_staged").num_input_rows == sum(t.count("\n") for t in batch.values())
        assert s3_server.files(source) == []  # moved once staged (cleanSource MOVE) ...
        assert s3_server.files(archive) == sorted(k for b in BATCHES[:n + 1] for k in b)  # ... to archive/
    with session_conf(spark, hadoop_runtime_conf(conf)):
        customers = str(remote.tables_dir / "customers")
        assert _rows(spark, customers, "customer_id", "name", "email") == _rows(
            spark, str(local.tables_dir / "customers"), "customer_id", "name", "email") == [
            (1, "Anna", "anna@example.com"), (3, "Cy", "cy@example.com")]
        staged = _rows(spark, str(remote.tables_dir / "customers_staged"), "customer_id", "changed_at")
        assert len(staged) == len(set(staged)) == 6  # every change staged exactly once
        for table in (customers, str(remote.tables_dir / "customers_staged"), str(remote.events_dir)):
            engines = _engines(spark, table)
            assert engines and ENGINE_INFO not in engines and all("Delta-Lake" in e for e in engines), engines
    assert s3_server.keys(f"{s3_prefix}/storage/checkpoints")  # the checkpoints are on the object store too
    assert (tmp_path / "storage" / "tables").is_dir() and not any(
        k.startswith("tables/") for k in s3_server.keys(f"{s3_prefix}/files"))
    _no_stray_local_folders()


PIPELINE = '''
import dlt
from pyspark.sql import functions as F

@dlt.table
def orders_raw():
    return spark.readStream.format("cloudFiles").option("cloudFiles.format", "json").load(
        spark.conf.get("orders.landing"))

@dlt.table
def orders():
    return dlt.read_stream("orders_raw").select("order_id", "country", F.col("amount").cast("double"))

@dlt.table
def revenue_by_country():
    return dlt.read("orders").groupBy("country").agg(F.sum("amount").alias("revenue"), F.count("*").alias("n"))
'''


def _orders_spec(folder: Path, storage: str, landing: str, spark_conf: dict[str, str], schema: str
                 ) -> PipelineSpec:
    (folder / "orders.py").write_text(PIPELINE)
    (folder / "spec.yaml").write_text(json.dumps({
        "name": "orders_on_s3", "libraries": [{"glob": {"include": "orders.py"}}], "schema": schema,
        "storage": storage, "configuration": {"orders.landing": landing}, "spark_conf": spark_conf}))
    return load_spec(folder / "spec.yaml")


def test_autoloader_streaming_table_and_view_on_s3a_match_local(spark: SparkSession, s3_server: S3Server,
                                                                 s3_prefix: str, tmp_path: Path) -> None:
    conf = s3_server.spark_conf()
    remote = _orders_spec(tmp_path, f"{s3_prefix}/storage", f"{s3_prefix}/landing", conf, "it_s3a_orders")
    local_landing = tmp_path / "landing"
    local = load_spec(tmp_path / "spec.yaml", overrides={
        "storage": str(tmp_path / "storage"), "schema": "it_local_orders", "spark_conf": {},
        "configuration": {"orders.landing": str(local_landing)}})
    batches = [[("o1", "DE", 10), ("o2", "FR", 5)], [("o3", "DE", 2.5), ("o4", "IT", 1)]]
    for n, batch in enumerate(batches):
        text = _lines(*({"order_id": o, "country": c, "amount": a} for o, c, a in batch))
        s3_server.put_object(f"{s3_prefix}/landing/part-{n}.json", text)
        local_landing.mkdir(exist_ok=True)
        (local_landing / f"part-{n}.json").write_text(text)
        results = [run_update(spec, UpdateOptions(write_report=False), spark=spark) for spec in (remote, local)]
        assert all(r.succeeded for r in results), [(f.name, f.error) for r in results for f in r.flows]
        assert results[0].flow("orders_raw").num_input_rows == len(batch)  # incremental: the new file only
    with session_conf(spark, hadoop_runtime_conf(conf)):
        for name, columns in (("orders", ("order_id", "country", "amount")),
                              ("revenue_by_country", ("country", "revenue", "n"))):
            assert _rows(spark, str(remote.tables_dir / name), *columns) == _rows(
                spark, str(local.tables_dir / name), *columns)
            assert ENGINE_INFO not in _engines(spark, str(remote.tables_dir / name))
        assert _rows(spark, str(remote.tables_dir / "revenue_by_country"), "country", "revenue") == [
            ("DE", 12.5), ("FR", 5.0), ("IT", 1.0)]
        # published in the catalog at their s3a location, as local tables are
        assert spark.table("it_s3a_orders.orders").count() == 4
    schemas = s3_server.keys(f"{s3_prefix}/storage/autoloader")
    assert schemas, "Auto Loader's inferred schema is kept on the object store"
    _no_stray_local_folders()


CDC_PIPELINE = '''
import dlt
from pyspark.sql import functions as F

@dlt.table
def changes_raw():
    return (spark.readStream.format("cloudFiles").option("cloudFiles.format", "json")
            .option("cloudFiles.schemaHints", "customer_id BIGINT, changed_at TIMESTAMP")
            .load(spark.conf.get("changes.landing")))

dlt.create_streaming_table("customers")
dlt.apply_changes(target="customers", source="changes_raw", keys=["customer_id"], sequence_by="changed_at",
                  apply_as_deletes=F.expr("op = 'DELETE'"), except_column_list=["op", "_rescued_data"],
                  stored_as_scd_type=2)

@dlt.table
def current_names():
    return dlt.read("customers").where("__END_AT IS NULL").select("customer_id", "name")
'''


def _cdc_spec(folder: Path, storage: str, landing: str, spark_conf: dict[str, str], schema: str) -> PipelineSpec:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "cdc.py").write_text(CDC_PIPELINE)
    (folder / "spec.yaml").write_text(json.dumps({
        "name": "cdc_on_s3", "libraries": [{"glob": {"include": "cdc.py"}}], "schema": schema,
        "storage": storage, "configuration": {"changes.landing": landing}, "spark_conf": spark_conf}))
    return load_spec(folder / "spec.yaml")


def test_full_refresh_and_the_report_on_s3a_match_local(spark: SparkSession, s3_server: S3Server, s3_prefix: str,
                                                         tmp_path: Path) -> None:
    """A full refresh clears checkpoints, Auto Loader schemas and APPLY CHANGES state on the object store as it
    does locally (the SCD 2 target is rebuilt from every file once, not on top of stale state), and the
    data-quality report is written beside the tables on the object store."""
    conf = s3_server.spark_conf()
    remote = _cdc_spec(tmp_path / "remote", f"{s3_prefix}/storage", f"{s3_prefix}/changes", conf, "it_s3a_cdc")
    local = _cdc_spec(tmp_path / "local", str(tmp_path / "storage"), str(tmp_path / "changes"), {}, "it_local_cdc")
    for batch in BATCHES:
        for name, text in batch.items():
            s3_server.put_object(f"{s3_prefix}/changes/{name}", text)
            (tmp_path / "changes" / name).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / "changes" / name).write_text(text)
        results = [run_update(spec, UpdateOptions(write_report=False), spark=spark) for spec in (remote, local)]
        assert all(r.succeeded for r in results), [(f.name, f.error) for r in results for f in r.flows]
    assert s3_server.keys(f"{s3_prefix}/storage/system/apply_changes/customers")  # the CDC state is remote too
    columns = ("customer_id", "name", "__START_AT", "__END_AT")
    with session_conf(spark, hadoop_runtime_conf(conf)):
        before = _rows(spark, str(remote.tables_dir / "customers"), *columns)
    refreshed = [run_update(spec, UpdateOptions(full_refresh=True, write_report=spec is remote), spark=spark)
                 for spec in (remote, local)]
    assert all(r.succeeded for r in refreshed), [(f.name, f.error) for r in refreshed for f in r.flows]
    assert refreshed[0].flow("changes_raw").num_input_rows == 6  # every file read again, once
    with session_conf(spark, hadoop_runtime_conf(conf)):
        after = _rows(spark, str(remote.tables_dir / "customers"), *columns)
        assert after == before == _rows(spark, str(local.tables_dir / "customers"), *columns)
        assert len(after) == 5 and _rows(spark, str(remote.tables_dir / "current_names"), "customer_id", "name") \
            == [(1, "Anna"), (3, "Cy")]
    assert str(refreshed[0].report).startswith("s3a://")
    reports = s3_server.keys(f"{s3_prefix}/storage/reports")
    assert {"dq_report.html", "dq_report.json"} <= {k.rsplit("/", 1)[-1] for k in reports}, reports
    report = json.loads(s3_server.get_object(f"{s3_prefix}/storage/reports/dq_report.json"))
    assert report["update"]["update_id"] == refreshed[0].update_id
    _no_stray_local_folders()
