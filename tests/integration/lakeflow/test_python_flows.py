"""Issue 36's newer Python flows and sinks, in one pipeline (two updates): ``@dp.update_flow`` into a sink in
update output mode (a stateful aggregation without a watermark: each micro-batch emits only the changed keys),
and ``dp.foreach_sink`` as a writer object (open / process / close) and as a decorated row function, each row
handed over once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from framework.runner.update import UpdateOptions, run_update
from tests.integration.runner.pipeline_factory import make_pipeline, write_json_lines

pytestmark = pytest.mark.spark

PIPELINE = '''
import json, os, uuid
from pyspark import pipelines as dp

OUT = spark.conf.get("out")

def events():
    return spark.readStream.format("json").schema("k string, v long").load(spark.conf.get("landing"))

class FileWriter:
    """Rows of each (epoch, partition) into one JSON-lines file."""
    def open(self, partition_id, epoch_id):
        self.path = os.path.join(OUT, "counts", f"{epoch_id}-{partition_id}.jsonl")
        self.rows = []
        return True
    def process(self, row):
        self.rows.append(row.asDict())
    def close(self, error):
        if error is None and self.rows:
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            with open(self.path, "w") as f:
                f.write("".join(json.dumps(r) + "\\n" for r in self.rows))

dp.foreach_sink(name="count_files", writer=FileWriter())

@dp.foreach_sink(name="seen")
def seen(row):
    os.makedirs(os.path.join(OUT, "seen"), exist_ok=True)
    with open(os.path.join(OUT, "seen", uuid.uuid4().hex), "w") as f:
        f.write(json.dumps(row.asDict()))

@dp.update_flow(target="count_files", name="counts", comment="counts per key", spark_conf={"x.y": "z"})
def counts():
    return events().groupBy("k").count()

@dp.append_flow(target="seen")
def raw():
    return events().select("k", "v")
'''


def _counts(out: Path) -> dict[str, list[tuple[str, int]]]:
    files = sorted((out / "counts").glob("*.jsonl"))
    by_epoch: dict[str, list[tuple[str, int]]] = {}
    for f in files:
        rows = [json.loads(line) for line in f.read_text().splitlines()]
        by_epoch.setdefault(f.name.split("-")[0], []).extend((r["k"], r["count"]) for r in rows)
    return {epoch: sorted(rows) for epoch, rows in by_epoch.items()}


def test_update_flow_and_foreach_sinks(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    landing, out = tmp_path / "landing", tmp_path / "out"
    write_json_lines(landing, "a.json", ['{"k": "a", "v": 1}', '{"k": "a", "v": 2}', '{"k": "b", "v": 3}'])
    spec = make_pipeline(tmp_path, {"p.py": PIPELINE}, {"landing": str(landing), "out": str(out)})
    first = run_update(spec, UpdateOptions(), spark=spark)
    assert first.succeeded, first.error or [f.error for f in first.flows]
    assert _counts(out) == {"0": [("a", 2), ("b", 1)]}
    write_json_lines(landing, "b.json", ['{"k": "a", "v": 4}'])
    second = run_update(spec, UpdateOptions(), spark=spark)
    assert second.succeeded, second.error or [f.error for f in second.flows]
    assert _counts(out) == {"0": [("a", 2), ("b", 1)], "1": [("a", 3)]}  # update mode: only the changed key
    seen = sorted(json.loads(p.read_text())["v"] for p in (out / "seen").iterdir())
    assert seen == [1, 2, 3, 4]  # every row once
