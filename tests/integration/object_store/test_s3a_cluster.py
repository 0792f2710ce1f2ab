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
