"""framework.settings: conf/spark.yaml as the session builder reads it (no Spark)."""

from __future__ import annotations

from pathlib import Path

import pytest

from framework.errors import EnvironmentSetupError
from framework.settings import load_local_settings


def test_the_project_settings_pass_jvm_options_to_the_driver() -> None:
    options = load_local_settings().driver_java_options
    assert "-XX:MaxInlineLevel=3" in options
    assert all(o.startswith("-") for o in options)


def test_driver_java_options_are_optional(tmp_path: Path) -> None:
    path = tmp_path / "spark.yaml"
    path.write_text("spark_conf:\n  spark.master: local[1]\n")
    assert load_local_settings(path).driver_java_options == ()


def test_malformed_driver_java_options_name_the_file(tmp_path: Path) -> None:
    path = tmp_path / "spark.yaml"
    path.write_text("driver_java_options: -XX:MaxInlineLevel=3\n")
    with pytest.raises(EnvironmentSetupError, match=r"spark\.yaml: driver_java_options must be a list"):
        load_local_settings(path)
