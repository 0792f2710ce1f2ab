"""Column planning, spec metadata and snapshot versions: pure Python, no Spark session."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from framework.cdc.columns import plan_columns, simple_name
from framework.cdc.snapshot import decode_version, encode_version
from framework.cdc.storage import write_metadata
from framework.cdc.target import check_metadata, describe_spec
from framework.declarations import ApplyChanges
from framework.errors import CdcError, SchemaChangeError

SOURCE = ["id", "name", "city", "op", "seq"]


def test_except_column_list_and_inline_sequence() -> None:
    plan = plan_columns(ApplyChanges("s", ("ID",), "seq", except_column_list=("op",)), SOURCE, "t")
    assert plan.keys == ("id",) and plan.values == ("name", "city", "seq")
    assert plan.inline_sequence == "seq" and plan.tracked == plan.values and plan.ignore_nulls == ()


def test_column_list_keeps_keys_and_drops_hidden_sequence() -> None:
    plan = plan_columns(ApplyChanges("s", ("id",), "seq", column_list=("name",)), SOURCE, "t")
    assert plan.output == ("id", "name") and plan.inline_sequence is None


def test_track_history_and_ignore_null_lists() -> None:
    spec = ApplyChanges("s", ("id",), "seq", except_column_list=("op", "seq"), stored_as_scd_type=2,
                        track_history_except_column_list=("city",), ignore_null_updates_column_list=("city",))
    plan = plan_columns(spec, SOURCE, "t")
    assert plan.tracked == ("name",) and plan.ignore_nulls == ("city",)
    every = plan_columns(ApplyChanges("s", ("id",), "seq", ignore_null_updates=True, column_list=("id", "name")),
                         SOURCE, "t")
    assert every.ignore_nulls == ("name",)


# Both of a list and its except list are refused once, at declaration (tests/unit/test_declaration_errors.py).
@pytest.mark.parametrize("spec", [
    ApplyChanges("s", ("nope",), "seq"),
    ApplyChanges("s", ("id",), "seq", except_column_list=("missing",)),
])
def test_invalid_column_arguments(spec: ApplyChanges) -> None:
    with pytest.raises(CdcError) as error:
        plan_columns(spec, SOURCE, "target")
    assert error.value.code == "APPLY_CHANGES_INVALID_INPUT" and "'target'" in str(error.value)


def test_simple_name() -> None:
    assert simple_name("seq") == "seq" and simple_name("`seq`") == "seq" and simple_name("a + b") is None


def test_metadata_change_detection(tmp_path: Path) -> None:
    write_metadata(str(tmp_path), describe_spec(("id",), "seq", 1))
    check_metadata("t", str(tmp_path), describe_spec(("ID",), "seq", 1))
    with pytest.raises(SchemaChangeError, match="stored_as_scd_type changed from 1 to 2"):
        check_metadata("t", str(tmp_path), describe_spec(("id",), "seq", 2))
    with pytest.raises(SchemaChangeError, match="keys changed"):
        check_metadata("t", str(tmp_path), describe_spec(("id", "name"), "seq", 1))
    check_metadata("t", str(tmp_path / "new"), describe_spec(("x",), "y", 2))


@pytest.mark.parametrize("version", [3, 2.5, "v1", dt.date(2024, 1, 2), dt.datetime(2024, 1, 2, 3, 4, 5)])
def test_version_round_trip(version: object) -> None:
    assert decode_version(encode_version(version)) == version
