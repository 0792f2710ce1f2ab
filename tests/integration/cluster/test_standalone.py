"""Runs on a Spark standalone cluster (issue 21): a master and two workers started from PySpark's own scripts on
this machine; the sample pipeline, a CDC pipeline (a Python UDF calling a helper module of its folder) and an Auto
Loader pipeline (a pandas UDF of a helper module) run on it through ``medallion run --master`` in a subprocess,
and every table holds the same rows as after a local run of the same input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from framework.runner.update import UpdateOptions, run_update
from framework.sample_data import write_customer_changes, write_orders
from framework.spec import load_spec
from tests.conftest import REPO_ROOT
from tests.integration.cluster.standalone import StandaloneCluster

pytestmark = pytest.mark.spark

PIPELINES = Path(__file__).resolve().parent / "pipelines"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneCluster]:
    started = StandaloneCluster(tmp_path_factory.mktemp("standalone"))
    try:
        started.start(workers=2, cores=1, memory="1g")
        yield started
    finally:
        started.stop()
    assert started.leftovers() == [], "cluster processes left running"


def _spec(folder: Path, name: str, libraries: str, root: Path, configuration: dict[str, str],
          paths: dict[str, str] | None = None) -> Path:
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump({
        "name": name, "libraries": [{"glob": {"include": libraries}}], "root": str(root),
        "schema": f"cluster_{name}", "storage": str(folder / "storage"), "configuration": configuration,
        "paths": paths or {}}))
    return path


def _run_both(cluster: StandaloneCluster, spark: Any, spec: Path, folder: Path) -> str:
    """``medallion run SPEC --master URL`` in a fresh process (this test process's session is local) into
    ``folder/cluster``, and meanwhile a local run of the same spec in this process into ``folder/local``.

    Returns:
        The cluster run's standard output.
    """
    env = {**os.environ, "MEDALLION_NO_SERVER": "1"}
    with subprocess.Popen([sys.executable, "-m", "framework.cli", "run", str(spec), "--master", cluster.url,
                           "--storage", str(folder / "cluster"), "--no-report"],
                          cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as run:
        try:
            local = run_update(load_spec(spec, overrides={"storage": str(folder / "local")}), UpdateOptions(),
                               spark=spark)
            out, err = run.communicate(timeout=600)
        finally:
            run.kill()
    assert local.succeeded, [(f.name, f.error) for f in local.flows]
    assert run.returncode == 0, out[-3000:] + err[-3000:]
    return out


def _rows(spark: Any, table: Path, volatile: frozenset[str], arbitrary: str | None) -> tuple[Any, ...]:
    frame = spark.read.format("delta").load(str(table))
    columns = [f"{c.name}:{c.dataType.simpleString()}" for c in frame.schema if c.name not in volatile]
    kept = frame.select(*[c for c in frame.columns if c not in volatile])
    picked = kept.where(f"NOT ({arbitrary})").collect() if arbitrary else kept.collect()
    return columns, sorted((tuple(r) for r in picked), key=repr), kept.where(arbitrary).count() if arbitrary else 0


def _same_tables(spark: Any, cluster_storage: Path, local_storage: Path, tables: list[str],
                 volatile: frozenset[str] = frozenset(), arbitrary: dict[str, str] | None = None) -> dict[str, int]:
    """Assert each table has the same schema and rows after both runs; return the row counts. Rows matching
    ``arbitrary[table]`` are only counted: which of several duplicates a de-duplication keeps depends on the
    order tasks deliver them, on a cluster as on Databricks."""
    counts = {}
    for name in tables:
        condition = (arbitrary or {}).get(name)
        on_cluster = _rows(spark, cluster_storage / "tables" / name, volatile, condition)
        local = _rows(spark, local_storage / "tables" / name, volatile, condition)
        assert on_cluster == local, name
        counts[name] = len(local[1]) + local[2]
    return counts


def _apps_finished(cluster: StandaloneCluster, count: int) -> list[dict[str, Any]]:
    state = cluster.wait(lambda s: len(s.get("completedapps", [])) >= count and not s.get("activeapps"), 60,
                         f"{count} applications completed")
    apps = state["completedapps"]
    assert len(apps) == count and {a["state"] for a in apps} == {"FINISHED"}, apps
    assert all(a["name"] == "medallion" for a in apps)
    return list(apps)


def test_the_sample_pipeline_on_a_cluster_matches_a_local_run(cluster: StandaloneCluster, spark: Any,
                                                              tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    write_orders(landing / "orders", 1, files=2, rows_per_file=150)
    write_customer_changes(landing / "customers", 1)
    spec = _spec(tmp_path, "sample", "pipelines/sample/**", REPO_ROOT, {"sample.landing": "dbfs:/mnt/landing"},
                 {"dbfs:/mnt/landing": str(landing)})
    before = len(cluster.state().get("completedapps", []))
    out = _run_both(cluster, spark, spec, tmp_path)
    assert "COMPLETED" in out
    counts = _same_tables(spark, tmp_path / "cluster", tmp_path / "local",
                          ["orders_raw", "customers_cdc_raw", "orders_clean", "orders_clean_quarantine",
                           "dim_customers", "daily_revenue_by_country"], volatile=frozenset({"_ingested_at", "_update_id", "_quarantined_at"}),
                          # rows without an order_id are duplicates of one (NULL) key to dedup_within_watermark
                          arbitrary={"orders_clean_quarantine": "order_id IS NULL"})
    assert counts["orders_raw"] == 301 and counts["dim_customers"] > 0 and counts["orders_clean_quarantine"] > 0
    _apps_finished(cluster, before + 1)


def _change(id_: int, name: str, email: str, seq: int, op: str = "UPSERT") -> str:
    return json.dumps({"id": id_, "name": name, "email": email, "op": op, "seq": seq}) + "\n"


def test_a_cdc_pipeline_with_a_udf_of_its_folder_on_a_cluster(cluster: StandaloneCluster, spark: Any,
                                                             tmp_path: Path) -> None:
    changes = tmp_path / "changes"
    changes.mkdir()
    (changes / "1.json").write_text(_change(1, "Ann", " Ann+news@Example.com ", 1) + _change(2, "Bob", "bob@x.io", 1)
                                    + _change(3, "Cy", "CY@x.io", 1))
    (changes / "2.json").write_text(_change(1, "Anna", "anna@example.com", 3) + _change(1, "Stale", "s@x.io", 2)
                                    + _change(2, "Bob", "bob@x.io", 2, "DELETE") + _change(4, "Di", "Di+a@X.io", 1))
    spec = _spec(tmp_path, "cdc", str(PIPELINES / "cdc" / "*.py"), tmp_path, {"cluster.changes": str(changes)})
    before = len(cluster.state().get("completedapps", []))
    _run_both(cluster, spark, spec, tmp_path)
    counts = _same_tables(spark, tmp_path / "cluster", tmp_path / "local", ["customers", "customers_history"])
    current = spark.read.format("delta").load(str(tmp_path / "cluster" / "tables" / "customers"))
    assert {r.id: (r.name, r.email) for r in current.collect()} == {
        1: ("Anna", "anna@example.com"), 3: ("Cy", "cy@x.io"), 4: ("Di", "di@x.io")}  # the UDF ran
    assert counts["customers_history"] == 6  # Ann, Stale, Anna; Bob (closed by the delete); Cy; Di
    _apps_finished(cluster, before + 1)


def test_an_auto_loader_pipeline_with_a_pandas_udf_on_a_cluster(cluster: StandaloneCluster, spark: Any,
                                                               tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    (landing / "sales").mkdir(parents=True)
    (landing / "stores").mkdir(parents=True)
    (landing / "sales" / "a.csv").write_text("sale_id,store_id,amount,currency\n1,10,100.0,EUR\n2,10,10.0,usd\n"
                                             "3,20,5.5,GBP\n")
    (landing / "sales" / "b.csv").write_text("sale_id,store_id,amount,currency\n4,30,8.0,EUR\n5,20,oops,EUR\n")
    (landing / "stores" / "s.json").write_text('{"store_id": 10, "region": "north"}\n'
                                               '{"store_id": 20, "region": "south", "extra": 1}\n')
    spec = _spec(tmp_path, "autoloader", str(PIPELINES / "autoloader" / "sales.py"), tmp_path,
                 {"cluster.landing": str(landing)})
    before = len(cluster.state().get("completedapps", []))
    _run_both(cluster, spark, spec, tmp_path)
    counts = _same_tables(spark, tmp_path / "cluster", tmp_path / "local",
                          ["sales_raw", "stores_raw", "sales_by_region"])
    assert counts == {"sales_raw": 5, "stores_raw": 2, "sales_by_region": 3}
    regions = spark.read.format("delta").load(str(tmp_path / "cluster" / "tables" / "sales_by_region"))
    assert {r.region: (r.sales, r.amount_eur) for r in regions.collect()} == {
        "north": (2, 105.0), "south": (2, 11.0), "unknown": (1, 8.0)}
    _apps_finished(cluster, before + 1)
