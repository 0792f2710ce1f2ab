"""framework.runner.sizing: when an update counts as small (no Spark)."""

from __future__ import annotations

from pathlib import Path

from framework.runner.sizing import InputLog, SmallUpdates, bytes_under, small_update_reason
from framework.settings import load_local_settings

SETTINGS = SmallUpdates(1000, {"spark.sql.codegen.wholeStage": "false"})


def _files(folder: Path, sizes: list[int]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for i, size in enumerate(sizes):
        (folder / f"f{i}.json").write_bytes(b"x" * size)
    return folder


def test_bytes_under_files_folders_and_globs(tmp_path: Path) -> None:
    landing = _files(tmp_path / "landing" / "a", [10, 20])
    _files(tmp_path / "landing" / "b" / "deep", [30])
    assert bytes_under([tmp_path / "landing"], limit=10_000) == 60
    assert bytes_under([str(landing / "f0.json")], limit=10_000) == 10
    assert bytes_under([f"{tmp_path}/landing/*"], limit=10_000) == 60
    assert bytes_under([f"file:{tmp_path}/landing"], limit=10_000) == 60
    assert bytes_under([tmp_path / "nothing-here"], limit=10_000) == 0
    assert bytes_under(["s3://bucket/landing"], limit=10_000) is None


def test_counting_stops_above_the_limit(tmp_path: Path) -> None:
    _files(tmp_path / "big", [600, 600, 600])
    size = bytes_under([tmp_path / "big"], limit=1000)
    assert size is not None and 1000 < size <= 1200


def test_small_update_reason(tmp_path: Path) -> None:
    inputs = InputLog()
    inputs.path(str(_files(tmp_path / "landing", [100])))
    tables = _files(tmp_path / "tables", [200])
    reason = small_update_reason(inputs, [tables], SETTINGS)
    assert reason is not None and "300 B" in reason
    _files(tmp_path / "tables" / "more", [800])
    assert small_update_reason(inputs, [tables], SETTINGS) is None  # 1,100 bytes: a normal update
    assert small_update_reason(InputLog(), [tmp_path / "none"], SmallUpdates(0, SETTINGS.spark_conf)) is None
    unknown = InputLog()
    unknown.unknown("table sales.orders")
    assert small_update_reason(unknown, [tmp_path / "none"], SETTINGS) is None


def test_the_project_settings_define_small_updates() -> None:
    small = load_local_settings().small_updates
    assert small.max_input_bytes > 0
    assert small.spark_conf["spark.sql.codegen.factoryMode"] == "NO_CODEGEN"
