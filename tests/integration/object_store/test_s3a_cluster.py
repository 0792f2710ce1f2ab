"""A Spark standalone cluster (a master and two workers on this machine) whose only shared storage is the S3
server: the file-arrival pipeline's landing files, tables, checkpoints and event log on s3a://, two updates
through ``medallion run --master``; the target holds the rows the same updates give in local mode
(``test_s3a_pipelines`` compares the two runs), every change staged once, and no secret in the output."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import yaml

from framework.runner.object_store import hadoop_runtime_conf
from framework.session_settings import session_conf
from tests.conftest import REPO_ROOT
from tests.integration.cluster.standalone import StandaloneCluster
from tests.integration.object_store.test_s3a_pipelines import BATCHES, FILES, _rows

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from framework.testing.s3 import S3Server

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneCluster]:
    started = StandaloneCluster(tmp_path_factory.mktemp("standalone"))
    try:
        started.start(workers=2, cores=1, memory="1g")
        yield started
    finally:
        started.stop()
    assert started.leftovers() == [], "cluster processes left running"


def test_file_arrival_on_a_cluster_sharing_only_s3(spark: SparkSession, s3_server: S3Server, s3_prefix: str,
                                                   cluster: StandaloneCluster, tmp_path: Path) -> None:
    conf = s3_server.spark_conf()
    spec = yaml.safe_load((REPO_ROOT / "conf" / "file_arrival.yaml").read_text())
    spec.update({"root": str(REPO_ROOT), "schema": "it_s3a_cluster", "spark_conf": conf,
                 "paths": {FILES: f"{s3_prefix}/files"}, "environments": {}})
    spec["configuration"].update({"file_arrival.landing": f"{FILES}/source/customers",
                                  "file_arrival.archive": f"{FILES}/archive/customers"})
    spec_file = tmp_path / "file_arrival_s3.yaml"
    spec_file.write_text(yaml.safe_dump(spec))
    storage = f"{s3_prefix}/storage"
    for batch in BATCHES:
        for name, text in batch.items():
            s3_server.put_object(f"{s3_prefix}/files/source/customers/{name}", text)
        run = subprocess.run([sys.executable, "-m", "framework.cli", "run", str(spec_file), "--master", cluster.url,
                              "--storage", storage, "--no-report"], capture_output=True, text=True, timeout=900,
                             env={**os.environ, "MEDALLION_NO_SERVER": "1"}, check=False)
        assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
        assert s3_server.secret_key not in run.stdout + run.stderr
        assert s3_server.files(f"{s3_prefix}/files/source/customers") == []
    cluster.wait(lambda s: len(s.get("completedapps", [])) >= len(BATCHES) and not s.get("activeapps"), 60,
                 "both updates finished on the cluster")
    with session_conf(spark, hadoop_runtime_conf(conf)):
        assert _rows(spark, f"{storage}/tables/customers", "customer_id", "name", "email") == [
            (1, "Anna", "anna@example.com"), (3, "Cy", "cy@example.com")]
        assert len(_rows(spark, f"{storage}/tables/customers_staged", "customer_id", "changed_at")) == 6


def _land_sample(s3_server: S3Server, remote: str, local: Path, batch: int, scratch: Path) -> None:
    """Batch ``batch`` of the sample's input files, on the object store under ``remote`` and in ``local``."""
    from framework.sample_data import write_customer_changes, write_orders

    folder = scratch / f"batch-{batch}"
    write_orders(folder / "orders", batch)
    write_customer_changes(folder / "customers", batch)
    for file in sorted(p for p in folder.rglob("*") if p.is_file()):
        name = file.relative_to(folder).as_posix()
        s3_server.put_object(f"{remote}/{name}", file.read_bytes())
        (local / name).parent.mkdir(parents=True, exist_ok=True)
        (local / name).write_bytes(file.read_bytes())


SAMPLE_TABLES = ("orders_raw", "orders_clean", "customers_cdc_raw", "dim_customers", "daily_revenue_by_country")
WHERE_OR_WHEN = {"_ingested_at", "_source_file", "_rescued_data"}  # columns that name the file or the time of a run


def test_the_sample_pipeline_on_a_cluster_sharing_only_s3_matches_local(
        spark: SparkSession, s3_server: S3Server, s3_prefix: str, cluster: StandaloneCluster, tmp_path: Path) -> None:
    from framework.runner.update import UpdateOptions, run_update
    from framework.spec import load_spec

    conf = s3_server.spark_conf()
    spec = yaml.safe_load((REPO_ROOT / "conf" / "sample.yaml").read_text())
    spec.update({"root": str(REPO_ROOT), "schema": "it_s3a_cluster_sample", "spark_conf": conf,
                 "paths": {"dbfs:/mnt/landing": f"{s3_prefix}/landing"}, "environments": {}})
    spec_file = tmp_path / "sample_s3.yaml"
    spec_file.write_text(yaml.safe_dump(spec))
    local = load_spec(REPO_ROOT / "conf" / "sample.yaml", overrides={
        "storage": str(tmp_path / "local" / "storage"), "schema": "it_local_sample",
        "paths": {"dbfs:/mnt/landing": str(tmp_path / "local" / "landing")}, "environments": {}})
    storage = f"{s3_prefix}/storage"
    apps = len(cluster.state().get("completedapps", []))
    for batch in (1, 2):
        _land_sample(s3_server, f"{s3_prefix}/landing", tmp_path / "local" / "landing", batch, tmp_path)
        run = subprocess.run([sys.executable, "-m", "framework.cli", "run", str(spec_file), "--master", cluster.url,
                              "--storage", storage, "--no-report"], capture_output=True, text=True, timeout=900,
                             env={**os.environ, "MEDALLION_NO_SERVER": "1"}, check=False)
        assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
        assert run_update(local, UpdateOptions(write_report=False), spark=spark).succeeded
    cluster.wait(lambda s: len(s.get("completedapps", [])) >= apps + 2 and not s.get("activeapps"), 60,
                 "both sample updates finished on the cluster")
    with session_conf(spark, hadoop_runtime_conf(conf)):
        for table in SAMPLE_TABLES:
            found = spark.read.format("delta").load(str(local.tables_dir / table)).columns
            columns = [c for c in found if c not in WHERE_OR_WHEN]
            remote_rows = _all_rows(spark, f"{storage}/tables/{table}", columns)
            assert remote_rows and remote_rows == _all_rows(spark, str(local.tables_dir / table), columns), table


def _all_rows(spark: SparkSession, path: str, columns: list[str]) -> list[tuple[object, ...]]:
    """The rows, sorted whatever their NULLs (a plain tuple sort fails on None against a value)."""
    rows = [tuple(r) for r in spark.read.format("delta").load(path).select(*columns).collect()]
    return sorted(rows, key=lambda r: tuple((v is None, str(v)) for v in r))
