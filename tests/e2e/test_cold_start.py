"""A cold `medallion run` in its own process: the JVM it starts maps the class-data sharing archive, gets
`one_command_java_options` (the parallel collector), and the C1-only options of `small_updates.driver_java_options`
when the inputs the spec names are small (issue 21)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from framework.cds_training import current_archive
from framework.settings import load_local_settings
from tests.e2e.test_cli import medallion

pytestmark = pytest.mark.spark

PIPELINE = '''
import dlt


@dlt.table
def orders():
    return spark.read.json(spark.conf.get("landing"))


@dlt.table(comment="the options of the JVM this update ran in, and its garbage collectors (gc:<name>)")
def jvm_arguments():
    management = spark.sparkContext._jvm.java.lang.management.ManagementFactory
    collectors = [f"gc:{bean.getName()}" for bean in management.getGarbageCollectorMXBeans()]
    return spark.createDataFrame([(a,) for a in [*management.getRuntimeMXBean().getInputArguments(), *collectors]],
                                 "argument string")
'''


def _spec(tmp_path: Path, landing: Path) -> Path:
    (tmp_path / "pipeline").mkdir()
    (tmp_path / "pipeline" / "jvm.py").write_text(PIPELINE)
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump({
        "name": "cold_start", "root": str(tmp_path), "storage": str(tmp_path / "storage"),
        "libraries": [{"file": {"path": "pipeline/jvm.py"}}], "configuration": {"landing": str(landing)}}))
    return spec


def test_a_cold_run_on_small_inputs_maps_the_archive_and_compiles_with_c1_only(spark: Any, tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    landing.mkdir()
    (landing / "o.json").write_text("\n".join(json.dumps({"id": i, "amount": i * 1.5}) for i in range(20)))
    result = medallion("run", str(_spec(tmp_path, landing)), "--no-report")
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    table = tmp_path / "storage" / "tables" / "jvm_arguments"
    arguments = {row.argument for row in spark.read.format("delta").load(str(table)).collect()}
    assert f"-XX:SharedArchiveFile={current_archive(load_local_settings())}" in arguments
    assert "-XX:TieredStopAtLevel=1" in arguments
    # one_command_java_options: the parallel collector ("PS" beans), not the JVM's default G1
    assert "-XX:+UseParallelGC" in arguments and "gc:PS Scavenge" in arguments
    assert spark.read.format("delta").load(str(tmp_path / "storage" / "tables" / "orders")).count() == 20
