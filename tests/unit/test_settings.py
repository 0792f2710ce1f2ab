"""framework.settings: conf/spark.yaml as the session builder reads it (no Spark)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from framework.errors import EnvironmentSetupError
from framework.settings import KNOWN_KEYS, load_local_settings, project_root, unknown_keys


def test_the_project_settings_pass_jvm_options_to_the_driver() -> None:
    options = load_local_settings().driver_java_options
    assert "-XX:MaxInlineLevel=3" in options
    assert all(o.startswith("-") for o in options)


def test_the_project_settings_give_one_command_jvms_the_throughput_collector() -> None:
    assert load_local_settings().one_command_java_options == ("-XX:+UseParallelGC",)


def test_driver_java_options_are_optional(tmp_path: Path) -> None:
    path = tmp_path / "spark.yaml"
    path.write_text("spark_conf:\n  spark.master: local[1]\n")
    assert load_local_settings(path).driver_java_options == ()
    assert load_local_settings(path).one_command_java_options == ()


def test_malformed_one_command_java_options_name_the_file(tmp_path: Path) -> None:
    path = tmp_path / "spark.yaml"
    path.write_text("one_command_java_options: {gc: parallel}\n")
    with pytest.raises(EnvironmentSetupError, match=r"spark\.yaml: one_command_java_options must be a list"):
        load_local_settings(path)


def test_malformed_driver_java_options_name_the_file(tmp_path: Path) -> None:
    path = tmp_path / "spark.yaml"
    path.write_text("driver_java_options: -XX:MaxInlineLevel=3\n")
    with pytest.raises(EnvironmentSetupError, match=r"spark\.yaml: driver_java_options must be a list"):
        load_local_settings(path)


def test_every_unknown_key_is_reported_at_once_with_the_file(tmp_path: Path) -> None:
    path = tmp_path / "spark.yaml"
    path.write_text("spark_conf:\n  spark.master: local[1]\njar:\n  maven: []\njars:\n  cachedir: x\n"
                    "small_updates:\n  max_input_byte: 10\n  spark_conf: {}\ndriver_java_option: []\n"
                    "zzz_unrelated: 1\n")
    with pytest.raises(EnvironmentSetupError) as info:
        load_local_settings(path)
    err = info.value
    assert err.code == "INVALID_SPARK_SETTINGS" and err.file == str(path)
    problems = unknown_keys(yaml.safe_load(path.read_text()), str(path))
    assert [p.code for p in problems] == ["UNKNOWN_SETTINGS_KEY"] * 5
    assert all(p.file == str(path) for p in problems)
    lines = str(err).splitlines()
    assert lines[0] == f"[INVALID_SPARK_SETTINGS] {path}: 5 problem(s) in the local Spark settings"
    assert lines[1:] == [
        f"  - {path}: [UNKNOWN_SETTINGS_KEY] unknown key 'jar'; did you mean 'jars'?",
        f"  - {path}: [UNKNOWN_SETTINGS_KEY] unknown key 'driver_java_option'; did you mean 'driver_java_options'?",
        f"  - {path}: [UNKNOWN_SETTINGS_KEY] unknown key 'zzz_unrelated' (known: driver_java_options, jars, "
        "one_command_java_options, small_updates, spark_conf)",
        f"  - {path}: [UNKNOWN_SETTINGS_KEY] unknown key 'jars.cachedir'; did you mean 'jars.cache_dir'?",
        f"  - {path}: [UNKNOWN_SETTINGS_KEY] unknown key 'small_updates.max_input_byte'; did you mean "
        "'small_updates.max_input_bytes'?",
    ]


def test_spark_settings_and_small_update_settings_take_any_spark_key(tmp_path: Path) -> None:
    path = tmp_path / "spark.yaml"
    path.write_text("spark_conf:\n  spark.anything.at.all: '1'\nsmall_updates:\n  spark_conf:\n"
                    "    spark.other.setting: '2'\n")
    settings = load_local_settings(path)
    assert settings.spark_conf == {"spark.anything.at.all": "1"}
    assert settings.small_updates.spark_conf == {"spark.other.setting": "2"}
    assert KNOWN_KEYS["spark_conf"] is None


def test_a_settings_file_that_is_not_a_mapping(tmp_path: Path) -> None:
    path = tmp_path / "spark.yaml"
    path.write_text("- spark.master\n")
    with pytest.raises(EnvironmentSetupError) as info:
        load_local_settings(path)
    assert info.value.code == "INVALID_SPARK_SETTINGS"
    assert [p.code for p in unknown_keys(["spark.master"], str(path))] == ["INVALID_SETTINGS"]


def test_the_project_settings_have_no_unknown_keys() -> None:
    path = project_root() / "conf" / "spark.yaml"
    assert unknown_keys(yaml.safe_load(path.read_text()), str(path)) == []
