"""Databricks paths → local folders (framework.paths.PathMapper)."""

from __future__ import annotations

from pathlib import Path

import pytest

from framework.errors import PathMappingError, PipelineError
from framework.paths import PathMapper


@pytest.fixture
def mapper(tmp_path: Path) -> PathMapper:
    return PathMapper.from_spec({
        "dbfs:/mnt/landing": "landing",
        "dbfs:/mnt/landing/special": "/abs/special",
        "/dbfs/mnt/raw/": "raw",
        "/Volumes/main/sales/files": "volumes/files",
        "/databricks-datasets": "datasets",
        "/Workspace/Repos/me/project": ".",
    }, tmp_path)


def test_relative_targets_are_resolved_against_the_root(mapper, tmp_path) -> None:
    assert mapper.mappings["dbfs:/mnt/landing"] == str((tmp_path / "landing").resolve())
    assert mapper.mappings["dbfs:/mnt/landing/special"] == "/abs/special"


@pytest.mark.parametrize("path", ["dbfs:/mnt/landing/orders/a.json", "/dbfs/mnt/landing/orders/a.json",
                                  "dbfs:///mnt/landing/orders/a.json"])
def test_dbfs_spellings_are_the_same(mapper, tmp_path, path) -> None:
    assert mapper.map(path) == f"{tmp_path.resolve()}/landing/orders/a.json"


def test_prefix_given_as_slash_dbfs_maps_dbfs_colon(mapper, tmp_path) -> None:
    assert mapper.map("dbfs:/mnt/raw/x") == f"{tmp_path.resolve()}/raw/x"
    assert mapper.map("/dbfs/mnt/raw/x") == f"{tmp_path.resolve()}/raw/x"


def test_longest_prefix_wins(mapper) -> None:
    assert mapper.map("dbfs:/mnt/landing/special/file.csv") == "/abs/special/file.csv"


def test_exact_prefix_maps_to_the_folder(mapper, tmp_path) -> None:
    assert mapper.map("dbfs:/mnt/landing") == str((tmp_path / "landing").resolve())
    assert mapper.map("dbfs:/mnt/landing/") == str((tmp_path / "landing").resolve())


def test_prefix_matches_whole_segments_only(mapper) -> None:
    with pytest.raises(PathMappingError):
        mapper.map("dbfs:/mnt/landing2/file")


def test_volumes_datasets_and_workspace(mapper, tmp_path) -> None:
    root = tmp_path.resolve()
    assert mapper.map("/Volumes/main/sales/files/2024/a.csv") == f"{root}/volumes/files/2024/a.csv"
    assert mapper.map("/databricks-datasets/nyctaxi/x.csv") == f"{root}/datasets/nyctaxi/x.csv"
    assert mapper.map("/Workspace/Repos/me/project/pipelines/a.py") == f"{root}/pipelines/a.py"


def test_unmapped_dbfs_path_shows_how_to_map_it(mapper) -> None:
    with pytest.raises(PathMappingError) as info:
        mapper.map("dbfs:/mnt/other/orders/2024")
    err = info.value
    assert err.code == "UNMAPPED_DATABRICKS_PATH" and isinstance(err, PipelineError)
    assert "'dbfs:/mnt/other/orders/2024' is a DBFS path with no local mapping" in err.message
    assert 'paths:\n    "dbfs:/mnt/other": data/other' in err.message


def test_unmapped_slash_dbfs_path_fails_too() -> None:
    with pytest.raises(PathMappingError) as info:
        PathMapper().map("/dbfs/tmp/x")
    assert "'/dbfs/tmp/x'" in info.value.message


@pytest.mark.parametrize("path", ["/Volumes/main/other/x", "s3://bucket/key",
                                  "abfss://c@a.dfs.core.windows.net/x", "/data/local/file", "relative/path",
                                  "file:/tmp/x"])
def test_other_paths_are_unchanged(mapper, path) -> None:
    assert mapper.map(path) == path


def test_without_mappings_databricks_paths_other_than_dbfs_are_used_as_given() -> None:
    for path in ("/Volumes/main/s/v/x", "/databricks-datasets/nyctaxi", "/Workspace/Users/me/x.py"):
        assert PathMapper().map(path) == path


def test_non_strings_are_returned_as_given(mapper) -> None:
    p = Path("/tmp/x")
    assert mapper.map(p) is p  # type: ignore[arg-type]


@pytest.mark.parametrize("path, expected", [
    ("dbfs:/x", True), ("/dbfs/x", True), ("/Volumes/a", True), ("/databricks-datasets/a", True),
    ("/Workspace/a", True), ("/Repos/a", True), ("/tmp/x", False), ("s3://b/k", False), ("volumes/x", False),
])
def test_is_databricks_path(path, expected) -> None:
    assert PathMapper().is_databricks_path(path) is expected


def test_whole_dbfs_root_can_be_mapped(tmp_path) -> None:
    mapper = PathMapper.from_spec({"dbfs:/": "dbfs"}, tmp_path)
    assert mapper.map("dbfs:/anything/x") == f"{tmp_path.resolve()}/dbfs/anything/x"
