"""A pipeline with one streaming input (JSON files landed between updates, or rows changed in place with
Delta's DELETE/UPDATE) and materialized views over it, and the views' full recompute to compare with."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from framework.runner.update import UpdateOptions, run_update
from framework.spec import PipelineSpec
from tests.integration.runner.pipeline_factory import make_pipeline, write_json_lines

SOURCE = """
import dlt

@dlt.table
def src():
    return spark.readStream.format("json").schema("id bigint, k string, v bigint").load(spark.conf.get("landing"))
"""


class Kit:
    """One pipeline under test: land rows, change them, run updates, compare views with their queries."""

    def __init__(self, root: Path, views: str, files: dict[str, str] | None = None) -> None:
        self.landing = root / "landing"
        self.landing.mkdir(parents=True, exist_ok=True)
        self.batches = 0
        self.spec: PipelineSpec = make_pipeline(root, {"src.py": SOURCE, **(files or {"views.py": views})},
                                                {"landing": str(self.landing)})

    def land(self, rows: list[dict[str, Any]]) -> None:
        """New input rows, read by the next update."""
        self.batches += 1
        write_json_lines(self.landing, f"b{self.batches:04d}.json", [json.dumps(r) for r in rows] or ["{}"]) \
            if rows else None

    def run(self, **options: Any) -> Any:
        """One update; fails the test when it fails."""
        result = run_update(self.spec, UpdateOptions(**options))
        return result

    def table(self, name: str) -> str:
        """A dataset's path."""
        return str(self.spec.tables_dir / name)

    def planning(self, spark: Any, view: str) -> list[dict[str, Any]]:
        """The view's planning_information events, oldest first."""
        rows = spark.read.format("delta").load(str(self.spec.events_dir)) \
            .where(f"event_type = 'planning_information' AND origin.dataset_name = '{view}'") \
            .orderBy("timestamp", "sequence.control_plane_seq_no").select("details").collect()
        return [json.loads(r.details)["planning_information"] for r in rows]


def chosen(planning: dict[str, Any]) -> str:
    """The technique a planning_information event chose."""
    return next(t["maintenance_type"] for t in planning["technique_information"] if t["is_chosen"]) \
        .removeprefix("MAINTENANCE_TYPE_")


def rows(spark: Any, df_or_path: Any) -> list[tuple[Any, ...]]:
    """Rows as sorted tuples (a path: the Delta table's)."""
    df = spark.read.format("delta").load(df_or_path) if isinstance(df_or_path, str) else df_or_path
    return sorted((tuple(r) for r in df.collect()), key=repr)
