"""Pipeline specs: YAML under conf/, Databricks settings JSON, environments, every problem at once."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from framework.errors import SpecError
from framework.loader import resolve_libraries
from framework.paths import PathMapper
from framework.spec import JobTrigger, Library, load_spec, parse_spec, quartz_cron_problems

FIXTURES = Path(__file__).parent / "fixtures"
SPECS = FIXTURES / "specs"
REPO = Path(__file__).resolve().parents[2]


def problems(exc: SpecError) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for p in exc.problems:
        out.setdefault(p.code, []).append(p.message)
    return out


# ------------------------------------------------------------------------------------------------- JSON settings
def test_databricks_settings_json() -> None:
    spec = load_spec(SPECS / "settings.json")
    assert spec.name == "sales_pipeline" and spec.pipeline_id == "0f1e2d3c-aaaa-bbbb-cccc-123456789abc"
    assert spec.libraries == (Library("file", "pipelines/bronze.py"), Library("notebook", "pipelines/silver_notebook"),
                              Library("glob", "pipelines/gold/**"))
    assert spec.configuration == {"sales.landing": "/Volumes/main/sales/landing", "sales.flag": "true"}
    assert spec.catalog == "main" and spec.schema == "sales"
    assert spec.development is True and spec.continuous is False
    assert spec.channel == "PREVIEW" and spec.edition == "ADVANCED"
    assert spec.extra["photon"] is True and spec.extra["serverless"] is False
    assert spec.extra["clusters"] == [{"label": "default", "num_workers": 2}]
    assert "event_log" in spec.extra
    # not under conf/: the root is the spec's folder; storage defaults to <root>/runs/<name>
    assert spec.root == SPECS.resolve()
    assert spec.storage == SPECS.resolve() / "runs" / "sales_pipeline"
    assert spec.tables_dir == spec.storage / "tables"
    assert spec.checkpoints_dir == spec.storage / "checkpoints"
    assert spec.events_dir == spec.storage / "system" / "events"


def test_legacy_target_and_storage_inside_a_spec_wrapper() -> None:
    spec = load_spec(SPECS / "legacy.json")
    assert spec.name == "legacy_pipeline" and spec.schema == "legacy_db" and spec.catalog is None
    assert spec.storage == Path("/tmp/medallion-legacy-storage")
    assert spec.development is False
    assert spec.libraries == (Library("notebook", "/Repos/me/project/pipelines/legacy"),)


def test_pipeline_id_is_stable_without_an_id(tmp_path) -> None:
    raw = {"name": "p", "libraries": [{"file": "a.py"}]}
    a = parse_spec(raw, source="s", default_root=tmp_path)
    b = parse_spec(raw, source="s", default_root=tmp_path)
    assert a.pipeline_id == b.pipeline_id and len(a.pipeline_id) == 36


def test_library_short_forms(tmp_path) -> None:
    spec = parse_spec({"name": "p", "libraries": [{"file": "a.py"}, {"notebook": "nb"}, {"glob": "d/**"}]},
                      source="s", default_root=tmp_path)
    assert spec.libraries == (Library("file", "a.py"), Library("notebook", "nb"), Library("glob", "d/**"))


# ------------------------------------------------------------------------------------------------ environments
def test_environment_overrides_are_deep_merged() -> None:
    base = load_spec(SPECS / "envs.yaml")
    prod = load_spec(SPECS / "envs.yaml", env="prod")
    dev = load_spec(SPECS / "envs.yaml", env="dev")
    assert base.environment is None and prod.environment == "prod"
    assert prod.development is False and dev.development is True
    assert prod.configuration == {"source.path": "dbfs:/mnt/prod/source", "shared": "base"}
    assert prod.paths == {"dbfs:/mnt/dev": "data/dev", "dbfs:/mnt/prod": "data/prod"}
    assert prod.storage == SPECS.resolve() / "runs" / "prod"
    assert dev.storage == SPECS.resolve() / "runs" / "dev"
    assert base.spark_conf == {"spark.sql.shuffle.partitions": "2"}
    assert base.pipeline_id != prod.pipeline_id  # storage differs


def test_unknown_environment() -> None:
    with pytest.raises(SpecError) as info:
        load_spec(SPECS / "envs.yaml", env="staging")
    assert info.value.codes == ["UNKNOWN_ENVIRONMENT"]
    assert "'staging' is not defined (known: dev, prod)" in str(info.value)


def test_overrides_argument_wins(tmp_path) -> None:
    spec = load_spec(SPECS / "envs.yaml", env="prod", overrides={"development": True,
                                                                   "configuration": {"shared": "cli"}})
    assert spec.development is True
    assert spec.configuration == {"source.path": "dbfs:/mnt/prod/source", "shared": "cli"}


# ------------------------------------------------------------------------------------------------------ problems
def test_every_problem_is_reported_at_once() -> None:
    with pytest.raises(SpecError) as info:
        load_spec(SPECS / "bad.yaml")
    err = info.value
    assert err.code == "INVALID_SPEC"
    found = problems(err)
    assert {"UNKNOWN_SPEC_KEY", "MISSING_NAME", "NO_LIBRARIES", "INVALID_VALUE", "SCHEMA_AND_TARGET"} <= set(found)
    assert "unknown setting 'libaries'; did you mean 'libraries'?" in found["UNKNOWN_SPEC_KEY"]
    assert any("`configuration.nested` must be a string" in m for m in found["INVALID_VALUE"])
    assert any("`development` must be true or false" in m for m in found["INVALID_VALUE"])
    text = str(err)
    assert text.startswith(f"[INVALID_SPEC] invalid pipeline spec {SPECS / 'bad.yaml'}: {len(err.problems)} problem(s)")
    assert "[MISSING_NAME]" in text and "did you mean 'libraries'" in text


def test_bad_library_entries_are_reported_individually() -> None:
    with pytest.raises(SpecError) as info:
        load_spec(SPECS / "bad_libraries.yaml")
    msgs = problems(info.value)["INVALID_LIBRARY"]
    assert [m.split(" = ")[0] for m in msgs] == ["libraries[1]", "libraries[2]", "libraries[3]"]
    assert "{glob: {include: 'dir/**'}}" in msgs[0]


@pytest.mark.parametrize("raw, code", [
    ({"name": "p", "libraries": "a.py"}, "INVALID_LIBRARIES"),
    ({"name": "", "libraries": []}, "MISSING_NAME"),
    ({"name": "p", "libraries": [], "configuration": ["a"]}, "INVALID_VALUE"),
    ({"name": "p", "libraries": [], "catalog": 5}, "INVALID_VALUE"),
    ({"name": "p", "libraries": [], "continuous": "no"}, "INVALID_VALUE"),
    ({"name": "p", "libraries": [], "storage": 5}, "INVALID_VALUE"),
    ({"name": "p", "libraries": [], "paths": {"dbfs:/x": ["a"]}}, "INVALID_VALUE"),
    ({"name": "p", "libraries": [], "colour": "blue"}, "UNKNOWN_SPEC_KEY"),
])
def test_single_problems(tmp_path, raw, code) -> None:
    with pytest.raises(SpecError) as info:
        parse_spec(raw, source="s", default_root=tmp_path)
    assert info.value.codes == [code]


def test_configuration_scalars_become_strings(tmp_path) -> None:
    spec = parse_spec({"name": "p", "libraries": [], "configuration": {"n": 5, "b": True, "f": 1.5, "none": None}},
                      source="s", default_root=tmp_path)
    assert spec.configuration == {"n": "5", "b": "true", "f": "1.5", "none": ""}


@pytest.mark.parametrize("name, code, line", [
    ("unparsable.yaml", "SPEC_PARSE_ERROR", 4),
    ("unparsable.json", "SPEC_PARSE_ERROR", 3),
    ("list.yaml", "SPEC_NOT_A_MAPPING", None),
    ("does_not_exist.yaml", "SPEC_NOT_FOUND", None),
])
def test_unreadable_specs(name, code, line) -> None:
    with pytest.raises(SpecError) as info:
        load_spec(SPECS / name)
    assert info.value.codes == [code]
    if line is not None:
        assert info.value.problems[0].line == line


# ------------------------------------------------------------------------------------------------------- paths
def test_spec_in_conf_resolves_against_the_repo_root() -> None:
    spec = load_spec(FIXTURES / "basic" / "conf" / "basic.yaml")
    root = (FIXTURES / "basic").resolve()
    assert spec.root == root
    assert spec.storage == root / "runs" / "basic_fixture"
    files = resolve_libraries(spec, PathMapper.from_spec(spec.paths, spec.root))
    assert files[0] == root / "pipelines" / "bronze.py"


def test_explicit_root_is_relative_to_the_spec_folder(tmp_path) -> None:
    spec = parse_spec({"name": "p", "libraries": [], "root": "..", "storage": "st"}, source="s",
                      default_root=tmp_path / "a")
    assert spec.root == tmp_path.resolve()
    assert spec.storage == tmp_path.resolve() / "st"


def test_storage_given_as_a_mapped_dbfs_path(tmp_path) -> None:
    spec = parse_spec({"name": "p", "libraries": [], "storage": "dbfs:/pipelines/p",
                       "paths": {"dbfs:/pipelines/p": "local/p"}}, source="s", default_root=tmp_path)
    assert spec.storage == tmp_path / "local" / "p"


def test_unmapped_dbfs_storage_falls_back_to_the_local_default(tmp_path) -> None:
    spec = parse_spec({"name": "p", "libraries": [], "storage": "dbfs:/pipelines/p"}, source="s",
                      default_root=tmp_path)
    assert spec.storage == tmp_path / "runs" / "p"


@pytest.mark.parametrize("storage", ["dbfs:/pipelines/sales", "/dbfs/pipelines/sales"])
def test_storage_uses_prefix_mapping(tmp_path, storage) -> None:
    spec = parse_spec({"name": "p", "libraries": [], "storage": storage,
                       "paths": {"dbfs:/pipelines": "local/pipelines"}}, source="s", default_root=tmp_path)
    assert spec.storage == tmp_path / "local" / "pipelines" / "sales"


def test_asset_bundle_wrapper(tmp_path) -> None:
    path = tmp_path / "bundle.yml"
    path.write_text("resources:\n  pipelines:\n    sales:\n      name: sales\n      libraries:\n"
                    "        - file: {path: a.py}\n")
    assert load_spec(path).name == "sales"


# ------------------------------------------------------------------------------------------------ sample spec
def test_repository_sample_spec_validates_and_its_libraries_resolve() -> None:
    spec = load_spec(REPO / "conf" / "sample.yaml")
    assert spec.root == REPO
    assert spec.name == "sample_medallion" and spec.schema == "sample"
    assert spec.configuration["sample.landing"] == "dbfs:/mnt/landing"
    mapper = PathMapper.from_spec(spec.paths, spec.root)
    files = resolve_libraries(spec, mapper)
    names = {f.name for f in files}
    assert {"bronze.py", "silver.py", "gold.py"} <= names
    assert all(f.is_file() and REPO / "pipelines" / "sample" in f.parents for f in files)
    assert mapper.map("dbfs:/mnt/landing/orders") == str(REPO / "runs" / "sample" / "landing" / "orders")
    prod = load_spec(REPO / "conf" / "sample.yaml", env="prod")
    assert prod.development is False and prod.storage == REPO / "runs" / "sample-prod" / "storage"


# ------------------------------------------------------------------------------------ unreadable and hostile files
def test_a_spec_that_is_not_utf8_names_the_file_and_line(tmp_path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes("name: p\n# café\nlibraries: []\n".encode("latin-1"))
    with pytest.raises(SpecError) as info:
        load_spec(path)
    assert info.value.codes == ["SPEC_NOT_UTF8"]
    assert info.value.problems[0].line == 2 and str(path) in str(info.value)
    assert "byte 0xe9" in str(info.value)


def test_a_utf8_bom_is_accepted(tmp_path) -> None:
    path = tmp_path / "bom.json"
    path.write_bytes(b"\xef\xbb\xbf" + b'{"name": "p", "libraries": []}')
    assert load_spec(path).name == "p"


def test_a_directory_is_not_a_spec(tmp_path) -> None:
    with pytest.raises(SpecError) as info:
        load_spec(tmp_path)
    assert info.value.codes == ["SPEC_IS_A_DIRECTORY"] and str(tmp_path) in str(info.value)


def test_yaml_alias_bomb_is_refused_before_it_expands(tmp_path) -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 10)]  # 10**10 leaves
    path = tmp_path / "bomb.yaml"
    path.write_text("name: p\n" + "\n".join(lines) + "\nlibraries: [*a9]\n")
    started = time.perf_counter()
    with pytest.raises(SpecError) as info:
        load_spec(path)
    assert info.value.codes == ["SPEC_TOO_LARGE"]
    assert time.perf_counter() - started < 2
    assert len(str(info.value)) < 500


def test_recursive_yaml_alias_is_refused(tmp_path) -> None:
    path = tmp_path / "loop.yaml"
    path.write_text("name: p\nlibraries: &l [*l]\n")
    with pytest.raises(SpecError) as info:
        load_spec(path)
    assert info.value.codes == ["SPEC_TOO_LARGE"] and "recursive" in str(info.value)


def test_deeply_nested_spec_is_refused_not_a_recursion_traceback(tmp_path) -> None:
    path = tmp_path / "deep.json"
    path.write_text('{"name": "p", "libraries": [], "tags": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(SpecError) as info:
        load_spec(path)
    assert info.value.codes == ["SPEC_TOO_LARGE"]


def test_messages_quote_big_entries_in_bounded_size(tmp_path) -> None:
    big = {f"k{i}": ["v" * 10_000] * 100 for i in range(100)}
    raw = {"name": "p", "libraries": [big, "x" * 1_000_000], "y" * 100_000: 1}
    with pytest.raises(SpecError) as info:
        parse_spec(raw, source="s", default_root=tmp_path)
    assert sorted(info.value.codes) == ["INVALID_LIBRARY", "INVALID_LIBRARY", "UNKNOWN_SPEC_KEY"]
    assert all(len(p.message) < 400 for p in info.value.problems)


# ------------------------------------------------------------------------------------------------ job triggers
def _trigger_spec(tmp_path: Path, trigger: object, **settings: object):
    raw = {"name": "p", "libraries": [{"file": "a.py"}], "trigger": trigger, **settings}
    return parse_spec(raw, source="spec.yaml", default_root=tmp_path)


def test_file_arrival_and_schedule_triggers(tmp_path: Path) -> None:
    arrival = _trigger_spec(tmp_path, {"file_arrival": "/Volumes/main/raw/landing/orders",
                                       "wait_after_last_change_seconds": 120})
    assert arrival.trigger == JobTrigger(file_arrival="/Volumes/main/raw/landing/orders",
                                         wait_after_last_change_seconds=120)
    assert "trigger" not in arrival.extra  # not Databricks' pipeline `trigger`
    cron = _trigger_spec(tmp_path, {"schedule": "0 30 6 ? * MON-FRI", "timezone": "Europe/Amsterdam"})
    assert cron.trigger == JobTrigger(schedule="0 30 6 ? * MON-FRI", timezone="Europe/Amsterdam")
    assert _trigger_spec(tmp_path, {"schedule": "0 0 * * * ?"}).trigger == JobTrigger(schedule="0 0 * * * ?")
    legacy = _trigger_spec(tmp_path, {"cron": {"quartz_cron_schedule": "0 0 * * * ?", "timezone_id": "UTC"}})
    assert legacy.trigger is None and legacy.extra["trigger"]["cron"]["timezone_id"] == "UTC"  # kept as it is
    assert _trigger_spec(tmp_path, None).trigger is None


def test_trigger_per_environment(tmp_path: Path) -> None:
    raw = {"name": "p", "libraries": [{"file": "a.py"}], "trigger": {"file_arrival": "s3://dev-bucket/landing"},
           "environments": {"prod": {"trigger": {"file_arrival": "s3://prod-bucket/landing"}},
                            "local": {"trigger": None}}}
    prod = parse_spec(raw, source="s", default_root=tmp_path, env="prod")
    assert prod.trigger is not None and prod.trigger.file_arrival == "s3://prod-bucket/landing"
    assert parse_spec(raw, source="s", default_root=tmp_path, env="local").trigger is None


def test_every_trigger_mistake_at_once(tmp_path: Path) -> None:
    with pytest.raises(SpecError) as info:
        _trigger_spec(tmp_path, {"file_arrival": "dbfs:/mnt/landing", "schedul": "0 0 6 * *", "timezone": "UTC",
                                 "wait_after_last_change_seconds": 10}, continuous=True)
    found = problems(info.value)
    assert set(found) == {"INVALID_TRIGGER_URL", "UNKNOWN_TRIGGER_KEY", "INVALID_TRIGGER", "TRIGGER_WITH_CONTINUOUS"}
    assert "did you mean 'schedule'?" in found["UNKNOWN_TRIGGER_KEY"][0]
    assert len(found["INVALID_TRIGGER"]) == 2  # timezone without a schedule; 10 s is under Databricks' minimum
    with pytest.raises(SpecError) as info:
        _trigger_spec(tmp_path, {"schedule": "0 0 6 * *", "timezone": "Mars/Olympus"})
    found = problems(info.value)
    assert set(found) == {"INVALID_SCHEDULE", "UNKNOWN_TIMEZONE"}
    assert "6 or 7 fields, seconds first" in found["INVALID_SCHEDULE"][0]
    with pytest.raises(SpecError) as info:
        _trigger_spec(tmp_path, {"file_arrival": "/Volumes/a/b/c", "schedule": "0 0 25 * * *", "cron": {}})
    found = problems(info.value)
    assert len(found["INVALID_TRIGGER"]) == 2  # cron mixed in; both file_arrival and schedule
    assert found["INVALID_SCHEDULE"] == [
        "trigger.schedule '0 0 25 * * *': hours: 25 is outside 0-23",
        "trigger.schedule '0 0 25 * * *': exactly one of day of month (4th field) and day of week (6th field) "
        "must be '?'"]
    with pytest.raises(SpecError) as info:
        _trigger_spec(tmp_path, "on file arrival")
    assert info.value.codes == ["INVALID_TRIGGER"]


@pytest.mark.parametrize("expression", ["0 0 6 * * ?", "0 */15 * ? * MON-FRI", "0 0 12 L * ?", "0 0 12 ? * 6#3",
                                        "0 15 10 ? * 6L 2030", "0 0/5 14,18 * JAN-MAR,DEC ?"])
def test_quartz_expressions_databricks_accepts(expression: str) -> None:
    assert quartz_cron_problems(expression) == []


@pytest.mark.parametrize(("expression", "problem"), [
    ("0 0 6 * * ? 1960", "year: 1960 is outside 1970-2099"),
    ("0 0 6 * FOO ?", "month: 'FOO' is not a value of this field"),
    ("0 0 6 * * MON", "exactly one of day of month"),
    ("0 0/0 6 * * ?", "minutes: step '/0' must be a positive number"),
    ("? 0 6 * * ?", "seconds: '?' is only for day of month or day of week"),
])
def test_quartz_expression_mistakes(expression: str, problem: str) -> None:
    assert any(problem in p for p in quartz_cron_problems(expression)), quartz_cron_problems(expression)


def test_readme_trigger_example_parses(tmp_path: Path) -> None:
    import re

    import yaml

    readme = (REPO / "README.md").read_text()
    block = next(b for b in re.findall(r"```yaml\n(.*?)```", readme, re.DOTALL) if b.startswith("trigger:"))
    trigger = yaml.safe_load(block)["trigger"]
    assert _trigger_spec(tmp_path, trigger).trigger == JobTrigger(file_arrival="/Volumes/main/raw/files/landing/"
                                                                                "customers")
    commented = yaml.safe_load(re.sub(r"^( *)# (\w+:)", r"\1\2", block, flags=re.MULTILINE))["trigger"]
    del commented["file_arrival"]
    assert _trigger_spec(tmp_path, commented).trigger == JobTrigger(schedule="0 0 6 ? * MON-FRI",
                                                                    timezone="Europe/Amsterdam")
