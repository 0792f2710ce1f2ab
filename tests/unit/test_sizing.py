"""framework.runner.sizing: when an update counts as small (no Spark)."""

from __future__ import annotations

from pathlib import Path

from framework.runner.sizing import InputLog, SmallUpdates, bytes_under, expected_small, small_update_reason
from framework.settings import load_local_settings
from framework.spec import PipelineSpec, parse_spec

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


def _spec(tmp_path: Path, **raw: object) -> PipelineSpec:
    base = {"name": "p", "root": str(tmp_path), "storage": str(tmp_path / "storage"),
            "libraries": [{"file": {"path": "p.py"}}]}
    return parse_spec({**base, **raw}, source="test", default_root=tmp_path)


JVM_SMALL = SmallUpdates(1000, {"spark.sql.codegen.wholeStage": "false"}, ("-XX:TieredStopAtLevel=1",))


def test_expected_small_counts_what_the_spec_names_before_the_jvm_starts(tmp_path: Path) -> None:
    _files(tmp_path / "landing", [100, 200])
    mapped = _spec(tmp_path, paths={"dbfs:/mnt/landing": "landing"})
    assert expected_small(mapped, JVM_SMALL)
    configured = _spec(tmp_path, configuration={"src": f"{tmp_path}/landing/*", "flag": "true", "n": "5"})
    assert expected_small(configured, JVM_SMALL)
    _files(tmp_path / "storage" / "tables" / "t", [900])  # the pipeline's own tables count too
    assert not expected_small(mapped, JVM_SMALL)


def test_expected_small_is_false_when_nothing_or_something_unsized_is_named(tmp_path: Path) -> None:
    _files(tmp_path / "landing", [10])
    assert not expected_small(_spec(tmp_path), JVM_SMALL)  # no input named: the JVM keeps its usual options
    assert not expected_small(_spec(tmp_path, configuration={"src": str(tmp_path / "missing")}), JVM_SMALL)
    jdbc = _spec(tmp_path, paths={"dbfs:/mnt/landing": "landing"},
                 tables={"shop.orders": {"format": "jdbc", "url": "jdbc:postgresql://h/db", "dbtable": "orders"}})
    assert not expected_small(jdbc, JVM_SMALL)
    without_options = SmallUpdates(1000, JVM_SMALL.spark_conf)
    assert not expected_small(_spec(tmp_path, paths={"dbfs:/mnt/landing": "landing"}), without_options)
    _files(tmp_path / "big", [2000])
    assert not expected_small(_spec(tmp_path, paths={"dbfs:/mnt/big": "big"}), JVM_SMALL)


def test_the_sample_spec_is_expected_small_and_conf_gives_c1_to_such_jvms() -> None:
    small = load_local_settings().small_updates
    assert small.java_options == ("-XX:TieredStopAtLevel=1",)
    from framework.spec import load_spec

    spec = load_spec(Path(__file__).resolve().parents[2] / "conf" / "sample.yaml")
    data = spec.root / "runs" / "sample" / "landing"
    size = bytes_under([data, spec.tables_dir], small.max_input_bytes)  # 0 before the demo's data exists
    assert size is not None and expected_small(spec, small) == (size <= small.max_input_bytes)


def test_delta_tables_count_by_their_rows_not_only_their_bytes(tmp_path: Path) -> None:
    from pyspark.sql.types import LongType, StructField, StructType

    from framework.runner.sizing import rows_over
    from framework.storage.driver import append_rows

    schema = StructType([StructField("id", LongType())])
    tables = tmp_path / "tables"
    for name, rows in (("a", 30), ("b", 50)):
        for start in (0, rows):  # two commits each: every live file counts
            append_rows(tables / "schema" / name, schema, [{"id": i} for i in range(start, start + rows)])
    _files(tables / "schema" / "_not_a_table", [10])
    assert not rows_over([tables], 160) and rows_over([tables], 159)  # found two folder levels down
    assert rows_over([tables / "schema" / "b"], 99) and not rows_over([tables / "schema" / "a"], 99)
    assert not rows_over([tables], 0)  # 0: rows are not counted
    few = SmallUpdates(10_000_000, SETTINGS.spark_conf, max_input_rows=200)
    assert small_update_reason(InputLog(), [tables], few) is not None
    many = SmallUpdates(10_000_000, SETTINGS.spark_conf, max_input_rows=100)
    assert small_update_reason(InputLog(), [tables], many) is None  # few bytes, but 160 rows: a normal update
