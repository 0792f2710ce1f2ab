"""The file-arrival example (pipelines/file_arrival, conf/file_arrival.yaml): land -> stage -> MERGE -> archive
across two updates."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from framework.runner.update import UpdateOptions, run_update
from framework.spec import PipelineSpec, load_spec
from tests.conftest import REPO_ROOT

pytestmark = pytest.mark.spark


def _spec(tmp_path: Path) -> PipelineSpec:
    return load_spec(REPO_ROOT / "conf" / "file_arrival.yaml", overrides={
        "storage": str(tmp_path / "storage"), "schema": "it_file_arrival",
        "paths": {"/Volumes/main/raw/files": str(tmp_path / "files")}})


def _land(folder: Path, name: str, *changes: dict[str, object]) -> None:
    (folder / name).parent.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text("".join(json.dumps(c) + "\n" for c in changes))


def _change(customer_id: int, name: str, at: str, op: str = "UPSERT") -> dict[str, object]:
    return {"customer_id": customer_id, "name": name, "email": f"{name.lower()}@example.com", "op": op,
            "changed_at": f"2024-05-01T{at}"}


def _files(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())


def test_files_are_staged_merged_and_archived_across_updates(spark, tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    landing, archive = tmp_path / "files" / "landing" / "customers", tmp_path / "files" / "archive" / "customers"
    _land(landing, "2024/05/01/batch-1.json", _change(1, "Ann", "10:00:00"), _change(2, "Bob", "10:00:00"))
    first = run_update(spec, UpdateOptions(), spark=spark)
    assert first.succeeded, [f.error for f in first.flows]
    target = spec.tables_dir / "customers"
    rows = {r.customer_id: r.name for r in spark.read.format("delta").load(str(target)).collect()}
    assert rows == {1: "Ann", 2: "Bob"}
    assert _files(landing) == [] and _files(archive) == ["2024/05/01/batch-1.json"]  # moved, folders kept

    _land(landing, "2024/05/01/batch-2.json", _change(1, "Anna", "11:00:00"), _change(2, "Bob", "11:00:00", "DELETE"),
          _change(3, "Cy", "11:00:00"))
    _land(landing, "2024/05/01/late.json", _change(1, "Stale", "09:00:00"))  # older than the target's row
    second = run_update(spec, UpdateOptions(), spark=spark)
    assert second.succeeded, [f.error for f in second.flows]
    assert second.flow("customers_staged").num_input_rows == 4  # only the new files were read
    result = spark.read.format("delta").load(str(target))
    assert sorted(result.columns) == ["changed_at", "customer_id", "email", "name"]
    assert {r.customer_id: (r.name, r.email) for r in result.collect()} == {
        1: ("Anna", "anna@example.com"), 3: ("Cy", "cy@example.com")}
    assert _files(landing) == []
    assert _files(archive) == ["2024/05/01/batch-1.json", "2024/05/01/batch-2.json", "2024/05/01/late.json"]
    staged = spark.read.format("delta").load(str(spec.tables_dir / "customers_staged"))
    sources = {Path(r._source_file.removeprefix("file:")).name for r in staged.select("_source_file").collect()}
    assert staged.count() == 6 and sources == {"batch-1.json", "batch-2.json", "late.json"}

    third = run_update(spec, UpdateOptions(), spark=spark)  # nothing landed: nothing staged, nothing moved
    assert third.succeeded and third.flow("customers_staged").num_input_rows == 0
    assert staged.count() == 6 and len(_files(archive)) == 3
