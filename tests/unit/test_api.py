"""The dlt / dp declaration surface (framework.api): argument checks, registration, locations. No Spark."""

from __future__ import annotations

import sys
import warnings
from collections.abc import Iterator

import pytest

import framework.shim.dlt as dlt
import framework.shim.dp as dp
from framework import api
from framework.declarations import DatasetKind, FlowKind
from framework.errors import DeclarationError, PipelineError, RegistrationContextError
from framework.registry import Registry, registration_context

THIS_FILE = __file__


def here() -> int:
    """The line number of the caller."""
    return sys._getframe(1).f_lineno


def declaration_error(code: str) -> pytest.RaisesExc:
    """``pytest.raises`` for a DeclarationError with ``code`` (checked after the block)."""
    return pytest.raises(DeclarationError, check=lambda err: err.code == code)


@pytest.fixture
def reg() -> Iterator[Registry]:
    with registration_context() as registry:
        yield registry


def q():  # a query function that is never called
    return None


# ------------------------------------------------------------------------------------------ dataset decorators
@pytest.mark.parametrize("decorator, kind", [
    (dlt.table, DatasetKind.TABLE),
    (dp.table, DatasetKind.TABLE),
    (dp.materialized_view, DatasetKind.MATERIALIZED_VIEW),
    (dlt.view, DatasetKind.VIEW),
    (dp.temporary_view, DatasetKind.VIEW),
    (dlt.materialized_view, DatasetKind.MATERIALIZED_VIEW),
    (dlt.temporary_view, DatasetKind.VIEW),
])
def test_bare_decorator_registers_dataset_named_after_function(reg: Registry, decorator, kind) -> None:
    @decorator
    def my_dataset():
        return None

    assert callable(my_dataset)  # the function is returned, so it can be stacked / tested
    dataset = reg.dataset("my_dataset")
    assert dataset is not None and dataset.kind is kind and dataset.name == "my_dataset"
    flow = reg.flows["my_dataset"]
    assert flow.kind is FlowKind.QUERY and flow.target == "my_dataset" and flow.query_function is my_dataset


@pytest.mark.parametrize("decorator, kind", [
    (dlt.table, DatasetKind.TABLE),
    (dp.table, DatasetKind.TABLE),
    (dp.materialized_view, DatasetKind.MATERIALIZED_VIEW),
    (dlt.view, DatasetKind.VIEW),
    (dp.temporary_view, DatasetKind.VIEW),
])
def test_called_decorator_with_and_without_name(reg: Registry, decorator, kind) -> None:
    @decorator()
    def first():
        return None

    @decorator(name="renamed", comment="hello")
    def second():
        return None

    assert reg.dataset("first").kind is kind
    assert reg.dataset("second") is None
    renamed = reg.dataset("renamed")
    assert renamed.kind is kind and renamed.comment == "hello"
    assert reg.flows["renamed"].query_function is second


def test_table_options_are_kept(reg: Registry) -> None:
    @dlt.table(name="t", comment="c", spark_conf={"a": 1}, table_properties={"quality": "silver"},
               partition_cols=["d"], path="/tmp/x", schema="id INT", temporary=True, row_filter="f ON (x)")
    def t():
        return None

    d = reg.dataset("t")
    assert d.spark_conf == {"a": "1"}
    assert d.table_properties == {"quality": "silver"}
    assert d.partition_cols == ("d",)
    assert d.path == "/tmp/x" and d.schema == "id INT" and d.private is True and d.row_filter == "f ON (x)"
    assert reg.flows["t"].spark_conf == {"a": "1"}


def test_dp_private_and_cluster_by(reg: Registry) -> None:
    @dp.materialized_view(private=True, cluster_by=["a", "b"], refresh_policy="auto")
    def mv():
        return None

    @dp.table(cluster_by_auto=True, format="delta")
    def t():
        return None

    assert reg.dataset("mv").private is True and reg.dataset("mv").cluster_by == ("a", "b")
    assert reg.dataset("mv").refresh_policy == "auto"
    assert reg.dataset("t").cluster_by_auto is True


def test_partition_cols_and_cluster_by_are_exclusive(reg: Registry) -> None:
    with pytest.raises(DeclarationError) as info:
        dlt.table(partition_cols=["a"], cluster_by=["b"])
    assert info.value.code == "DECLARATION_LAYOUT_CONFLICT"
    assert info.value.params == {"partition_cols": ("a",), "cluster_by": ("b",)}


def test_non_delta_format_rejected(reg: Registry) -> None:
    with pytest.raises(DeclarationError) as info:
        dp.table(format="parquet")
    assert info.value.code == "DECLARATION_FORMAT_UNSUPPORTED" and info.value.params == {"format": "parquet"}


def test_bad_schema_type_rejected(reg: Registry) -> None:
    with pytest.raises(DeclarationError) as info:
        dlt.table(schema=42)
    assert info.value.code == "DECLARATION_SCHEMA_TYPE" and info.value.params == {"schema_type": "int"}


@pytest.mark.parametrize("decorator, spelled", [
    (dlt.table, "dlt.table"), (dlt.view, "dlt.view"), (dp.materialized_view, "dp.materialized_view"),
])
def test_non_callable_first_argument_shows_both_forms(reg: Registry, decorator, spelled) -> None:
    line = here() + 2
    with pytest.raises(DeclarationError) as info:
        decorator("my_table")
    err = info.value
    assert err.code == "DECLARATION_NOT_CALLABLE"
    assert err.params == {"decorator": spelled, "argument": "my_table", "argument_type": "str"}
    assert f"`@{spelled}`" in err.message  # bare form
    assert f"`@{spelled}(name=" in err.message  # called form
    assert "'my_table'" in err.message
    assert err.file == THIS_FILE and err.line == line
    assert reg.datasets == {}


@pytest.mark.parametrize("decorator, spelled", [
    (dp.table, "dp.table"), (dp.temporary_view, "dp.temporary_view"), (dp.materialized_view, "dp.materialized_view"),
    (dlt.materialized_view, "dlt.materialized_view"), (dlt.temporary_view, "dlt.temporary_view"),
])
def test_misuse_names_the_spelling_the_user_wrote(reg: Registry, decorator, spelled) -> None:
    with pytest.raises(DeclarationError) as info:
        decorator("v")
    assert info.value.params["decorator"] == spelled
    assert f"`@{spelled}`" in info.value.message
    assert decorator.__name__ == spelled.split(".")[1]


def test_each_spelling_is_its_own_function() -> None:
    assert dlt.table is not dp.table and dlt.view is not dp.temporary_view
    assert dlt.table.__name__ == dp.table.__name__ == "table"


def test_called_decorator_applied_to_non_callable(reg: Registry) -> None:
    with declaration_error("DECLARATION_NOT_CALLABLE"):
        dlt.table(name="x")(42)


@pytest.mark.parametrize("bad", ["", "   ", 5])
def test_bad_dataset_name(reg: Registry, bad) -> None:
    with pytest.raises(DeclarationError) as info:
        dlt.table(name=bad)
    assert info.value.code == "DECLARATION_NAME_INVALID" and info.value.params == {"kind": "dataset", "name": bad}


def test_duplicate_dataset_name_names_first_location(reg: Registry) -> None:
    first = here() + 1
    @dlt.table(name="orders")
    def a():
        return None

    with pytest.raises(DeclarationError) as info:
        @dlt.table
        def orders():
            return None
    err = info.value
    assert err.code == "DECLARATION_DUPLICATE_DATASET"
    assert err.params == {"name": "orders", "existing": "orders", "first_file": THIS_FILE, "first_line": first}
    assert "dataset 'orders' is defined twice" in err.message and f"{THIS_FILE}:{first}" in err.message
    assert err.file == THIS_FILE


def test_duplicate_dataset_with_other_case(reg: Registry) -> None:
    dlt.table(name="orders")(q)
    with declaration_error("DECLARATION_DUPLICATE_DATASET"):
        dlt.view(name="ORDERS")(q)


def test_decorated_dataset_remembers_file_and_line(reg: Registry) -> None:
    line = here() + 1
    @dlt.table(comment="x")
    def located():
        return None

    loc = reg.dataset("located").location
    assert loc.file == THIS_FILE
    # The decorated function's first line (the first decorator line, as Python's co_firstlineno reports it).
    assert loc.line == line
    assert reg.flows["located"].location == loc


# ---------------------------------------------------------------------------------------------- expectations
def test_expectations_below_dataset_decorator_in_source_order(reg: Registry) -> None:
    @dlt.table
    @dlt.expect("a_warn", "a > 0")
    @dlt.expect_or_drop("b_drop", "b IS NOT NULL")
    @dlt.expect_or_fail("c_fail", "c < 10")
    def checked():
        return None

    exps = reg.dataset("checked").expectations
    assert [(e.name, e.constraint, e.action) for e in exps] == [
        ("a_warn", "a > 0", "warn"), ("b_drop", "b IS NOT NULL", "drop"), ("c_fail", "c < 10", "fail")]
    assert all(e.location.file == THIS_FILE for e in exps)


@pytest.mark.parametrize("decorator, action", [
    (dlt.expect_all, "warn"), (dlt.expect_all_or_drop, "drop"), (dlt.expect_all_or_fail, "fail"),
    (dp.expect_all, "warn"), (dp.expect_all_or_drop, "drop"), (dp.expect_all_or_fail, "fail"),
])
def test_expect_all_entries_are_individual_expectations(reg: Registry, decorator, action) -> None:
    @dlt.table
    @decorator({"valid_id": "id IS NOT NULL", "positive": "amount > 0"})
    def t():
        return None

    exps = reg.dataset("t").expectations
    assert [(e.name, e.constraint_sql, e.action) for e in exps] == [
        ("valid_id", "id IS NOT NULL", action), ("positive", "amount > 0", action)]


def test_duplicate_expectation_name(reg: Registry) -> None:
    with pytest.raises(DeclarationError) as info:
        @dlt.table
        @dlt.expect("same", "a > 0")
        @dlt.expect_or_drop("same", "b > 0")
        def t():
            return None
    assert info.value.code == "DECLARATION_DUPLICATE_EXPECTATION"
    assert info.value.params["name"] == "same" and info.value.params["dataset"] == "t"


def test_expectation_above_dataset_decorator_is_a_clear_error(reg: Registry) -> None:
    with pytest.raises(DeclarationError) as info:
        @dlt.expect("late", "a > 0")
        @dlt.table
        def t():
            return None
    assert info.value.code == "DECLARATION_EXPECTATION_ABOVE_DATASET"
    assert info.value.params == {"decorator": "expect", "function": "t"}


@pytest.mark.parametrize("constraint, code", [
    (5, "DECLARATION_CONSTRAINT_TYPE"), ("  ", "DECLARATION_CONSTRAINT_EMPTY")])
def test_bad_constraint(reg: Registry, constraint, code) -> None:
    with declaration_error(code):
        dlt.expect("x", constraint)


def test_expect_all_needs_a_dict(reg: Registry) -> None:
    with declaration_error("DECLARATION_EXPECTATIONS_NOT_A_DICT"):
        dlt.expect_all(["a > 0"])


def test_expectation_decorator_on_non_callable(reg: Registry) -> None:
    with declaration_error("DECLARATION_NOT_A_QUERY_FUNCTION"):
        dlt.expect("x", "a > 0")("not a function")


# ------------------------------------------------------------------------------------------ streaming tables
def test_create_streaming_table_with_expectations(reg: Registry) -> None:
    line = here() + 1
    dlt.create_streaming_table("st", comment="c", expect_all={"a": "a > 0"}, expect_all_or_drop={"b": "b > 0"},
                               expect_all_or_fail={"c": "c > 0"}, table_properties={"quality": "gold"})
    d = reg.dataset("st")
    assert d.kind is DatasetKind.STREAMING_TABLE and d.declared_without_query is True
    assert [(e.name, e.action) for e in d.expectations] == [("a", "warn"), ("b", "drop"), ("c", "fail")]
    assert d.location.file == THIS_FILE and d.location.line == line
    assert reg.flows == {}  # flows are declared separately


def test_create_streaming_table_bad_name(reg: Registry) -> None:
    with pytest.raises(DeclarationError) as info:
        dlt.create_streaming_table("")
    assert info.value.code == "DECLARATION_NAME_INVALID" and info.value.params["kind"] == "streaming table"


def test_create_streaming_table_duplicate_expectation_names_the_table(reg: Registry) -> None:
    with pytest.raises(DeclarationError) as info:
        dlt.create_streaming_table("st", expect_all={"a": "x > 0"}, expect_all_or_drop={"a": "y > 0"})
    assert info.value.code == "DECLARATION_DUPLICATE_EXPECTATION" and info.value.params["dataset"] == "st"


@pytest.mark.parametrize("kwargs, code", [
    ({"expect_all": {"a": 5}}, "DECLARATION_CONSTRAINT_TYPE"),
    ({"expect_all_or_drop": ["a > 0"]}, "DECLARATION_EXPECTATIONS_NOT_A_DICT"),
    ({"expect_all_or_fail": {"a": "  "}}, "DECLARATION_CONSTRAINT_EMPTY")])
def test_create_streaming_table_validates_expectations(reg: Registry, kwargs, code) -> None:
    with declaration_error(code):
        dlt.create_streaming_table("st", **kwargs)
    assert reg.datasets == {}


# ------------------------------------------------------------------------------------------------ append flow
def test_append_flow_needs_target(reg: Registry) -> None:
    with pytest.raises(DeclarationError) as bare:
        @dlt.append_flow
        def f():
            return None
    with pytest.raises(DeclarationError) as called:
        dlt.append_flow(name="x")
    for info in (bare, called):
        assert info.value.code == "DECLARATION_TARGET_REQUIRED"
        assert info.value.params == {"decorator": "append_flow"}
    assert '@append_flow(target="my_table")' in bare.value.message  # the corrected call


def test_append_flow_name_defaults_to_function_name(reg: Registry) -> None:
    dlt.create_streaming_table("events")
    line = here() + 1
    @dlt.append_flow(target="events")
    def from_kafka():
        return None

    @dp.append_flow(target="events", name="backfill", once=True, comment="one-off", spark_conf={"k": "v"})
    def other():
        return None

    a = reg.flows["from_kafka"]
    assert a.kind is FlowKind.APPEND and a.target == "events" and a.once is False and a.query_function is not None
    assert a.location.file == THIS_FILE and a.location.line == line
    b = reg.flows["backfill"]
    assert b.once is True and b.comment == "one-off" and b.spark_conf == {"k": "v"}
    assert [f.name for f in reg.flows_into("events")] == ["from_kafka", "backfill"]


def test_append_flow_keeps_expectations(reg: Registry) -> None:
    @dlt.append_flow(target="t")
    @dlt.expect_or_drop("ok", "a > 0")
    def f():
        return None

    assert [e.name for e in reg.flows["f"].expectations] == ["ok"]


def test_duplicate_flow_names(reg: Registry) -> None:
    dlt.append_flow(target="t", name="f")(q)
    with pytest.raises(DeclarationError) as info:
        dlt.append_flow(target="t", name="F")(q)
    assert info.value.code == "DECLARATION_DUPLICATE_FLOW"
    assert info.value.params["name"] == "F" and info.value.params["existing"] == "f"


# ------------------------------------------------------------------------------------------------ apply_changes
def _cdc(**kwargs):
    args = dict(target="dim", source="changes", keys=["id"], sequence_by="ts")
    args.update(kwargs)
    return args


def test_apply_changes_registers_cdc_flow(reg: Registry) -> None:
    line = here() + 1
    dlt.apply_changes(**_cdc(stored_as_scd_type=2, except_column_list=["op"], apply_as_deletes="op = 'D'",
                             track_history_except_column_list=["updated"]))
    flow = reg.flows["dim"]  # flow name defaults to the target
    assert flow.kind is FlowKind.AUTO_CDC and flow.target == "dim"
    assert flow.location.file == THIS_FILE and flow.location.line == line
    cdc = flow.cdc
    assert cdc.source == "changes" and cdc.keys == ("id",) and cdc.sequence_by == "ts"
    assert cdc.stored_as_scd_type == 2 and cdc.except_column_list == ("op",)
    assert cdc.track_history_except_column_list == ("updated",) and cdc.apply_as_deletes == "op = 'D'"


@pytest.mark.parametrize("value, expected", [("1", 1), (1, 1), ("2", 2), (2, 2), (" 2 ", 2)])
def test_scd_type_normalized(reg: Registry, value, expected) -> None:
    dlt.apply_changes(**_cdc(stored_as_scd_type=value))
    assert reg.flows["dim"].cdc.stored_as_scd_type == expected


@pytest.mark.parametrize("kwargs, code, params", [
    ({"stored_as_scd_type": "3"}, "DECLARATION_SCD_TYPE_INVALID", {"value": "3"}),
    ({"stored_as_scd_type": "scd2"}, "DECLARATION_SCD_TYPE_INVALID", {"value": "scd2"}),
    ({"column_list": ["a"], "except_column_list": ["b"]}, "DECLARATION_ARGUMENTS_EXCLUSIVE",
     {"first": "column_list", "second": "except_column_list"}),
    ({"stored_as_scd_type": 2, "track_history_column_list": ["a"], "track_history_except_column_list": ["b"]},
     "DECLARATION_ARGUMENTS_EXCLUSIVE",
     {"first": "track_history_column_list", "second": "track_history_except_column_list"}),
    ({"ignore_null_updates_column_list": ["a"], "ignore_null_updates_except_column_list": ["b"]},
     "DECLARATION_ARGUMENTS_EXCLUSIVE",
     {"first": "ignore_null_updates_column_list", "second": "ignore_null_updates_except_column_list"}),
    ({"stored_as_scd_type": 2, "apply_as_truncates": "op = 'T'"}, "DECLARATION_TRUNCATES_NEED_SCD1",
     {"scd_type": 2}),
    ({"track_history_column_list": ["a"]}, "DECLARATION_TRACK_HISTORY_NEEDS_SCD2",
     {"argument": "track_history_column_list", "scd_type": 1}),
    ({"track_history_except_column_list": ["a"]}, "DECLARATION_TRACK_HISTORY_NEEDS_SCD2",
     {"argument": "track_history_except_column_list", "scd_type": 1}),
    ({"keys": "id"}, "DECLARATION_LIST_EXPECTED", {"argument": "keys", "value": "id"}),
    ({"keys": []}, "DECLARATION_KEYS_REQUIRED", {"function": "apply_changes"}),
    ({"column_list": "a"}, "DECLARATION_LIST_EXPECTED", {"argument": "column_list", "value": "a"}),
    ({"sequence_by": None}, "DECLARATION_SEQUENCE_BY_REQUIRED", {"function": "apply_changes"}),
    ({"source": ""}, "DECLARATION_NAME_INVALID", {"kind": "apply_changes source", "name": ""}),
    ({"target": None}, "DECLARATION_NAME_INVALID", {"kind": "apply_changes target", "name": None}),
])
def test_apply_changes_argument_errors(reg: Registry, kwargs, code, params) -> None:
    line = here() + 2
    with pytest.raises(DeclarationError) as info:
        dlt.apply_changes(**_cdc(**kwargs))
    assert info.value.code == code and info.value.params == params
    assert info.value.file == THIS_FILE and info.value.line == line
    assert reg.flows == {}


@pytest.mark.parametrize("kwargs, code", [
    ({"stored_as_scd_type": 2, "apply_as_truncates": "op = 'T'"}, "DECLARATION_TRUNCATES_NEED_SCD1"),
    ({"track_history_column_list": ["a"]}, "DECLARATION_TRACK_HISTORY_NEEDS_SCD2"),
    ({"column_list": ["a"], "except_column_list": ["b"]}, "DECLARATION_ARGUMENTS_EXCLUSIVE"),
])
def test_create_auto_cdc_flow_checks_the_same_rules_at_its_callers_line(reg: Registry, kwargs, code) -> None:
    line = here() + 2
    with pytest.raises(DeclarationError) as info:
        dp.create_auto_cdc_flow(**_cdc(**kwargs))
    assert info.value.code == code and info.value.line == line and info.value.file == THIS_FILE
    assert reg.flows == {}


def test_flow_name_vs_name(reg: Registry) -> None:
    dlt.apply_changes(**_cdc(flow_name="cdc_a"))
    dp.create_auto_cdc_flow(**_cdc(name="cdc_b", stored_as_scd_type=None, once=True))
    dlt.create_auto_cdc_flow(**_cdc(name="cdc_c"))
    assert set(reg.flows) == {"cdc_a", "cdc_b", "cdc_c"}
    assert reg.flows["cdc_b"].cdc.stored_as_scd_type == 1 and reg.flows["cdc_b"].once is True
    with pytest.raises(TypeError):
        dp.create_auto_cdc_flow(**_cdc(flow_name="x"))  # dp spells it `name`


def test_create_auto_cdc_flow_location_is_the_callers_line(reg: Registry) -> None:
    line = here() + 1
    dp.create_auto_cdc_flow(**_cdc())
    assert reg.flows["dim"].location.line == line and reg.flows["dim"].location.file == THIS_FILE


def test_two_cdc_flows_into_one_target_need_names(reg: Registry) -> None:
    dlt.apply_changes(**_cdc())
    with pytest.raises(DeclarationError) as info:
        dlt.apply_changes(**_cdc(source="other"))
    assert info.value.code == "DECLARATION_DUPLICATE_FLOW" and info.value.params["name"] == "dim"


# ------------------------------------------------------------------------------------------------ snapshot CDC
def test_apply_changes_from_snapshot_with_table_source(reg: Registry) -> None:
    dlt.apply_changes_from_snapshot(target="dim", source="snap", keys=["id"], stored_as_scd_type=2,
                                    track_history_column_list=["x"])
    flow = reg.flows["dim"]
    assert flow.kind is FlowKind.AUTO_CDC_SNAPSHOT
    assert flow.snapshot_cdc.source == "snap" and flow.snapshot_cdc.keys == ("id",)
    assert flow.snapshot_cdc.stored_as_scd_type == 2 and flow.snapshot_cdc.track_history_column_list == ("x",)


def test_apply_changes_from_snapshot_with_function(reg: Registry) -> None:
    def next_snapshot(latest_version):
        return None

    dlt.apply_changes_from_snapshot(target="a", snapshot_and_version=next_snapshot, keys=["id"])
    dp.create_auto_cdc_from_snapshot_flow(target="b", source=next_snapshot, keys=["id"], name="b_flow")
    assert reg.flows["a"].snapshot_cdc.source is next_snapshot
    assert reg.flows["a"].snapshot_cdc.stored_as_scd_type == 1
    assert reg.flows["b_flow"].target == "b" and reg.flows["b_flow"].snapshot_cdc.source is next_snapshot


@pytest.mark.parametrize("kwargs, code", [
    ({"source": "s", "snapshot_and_version": lambda v: None}, "DECLARATION_ARGUMENTS_EXCLUSIVE"),
    ({}, "DECLARATION_SOURCE_REQUIRED"),
    ({"source": 42}, "DECLARATION_SOURCE_TYPE"),
    ({"source": "s", "keys": None}, "DECLARATION_KEYS_REQUIRED"),
    ({"source": "s", "keys": "id"}, "DECLARATION_LIST_EXPECTED"),
    ({"source": "s", "stored_as_scd_type": 3}, "DECLARATION_SCD_TYPE_INVALID"),
    ({"source": "s", "track_history_column_list": ["a"]}, "DECLARATION_TRACK_HISTORY_NEEDS_SCD2"),
    ({"source": "s", "stored_as_scd_type": 2, "track_history_column_list": ["a"],
      "track_history_except_column_list": ["b"]}, "DECLARATION_ARGUMENTS_EXCLUSIVE"),
])
def test_apply_changes_from_snapshot_errors(reg: Registry, kwargs, code) -> None:
    args = {"keys": ["id"], **kwargs}
    line = here() + 2
    with declaration_error(code) as info:
        dlt.apply_changes_from_snapshot("dim", **args)
    assert info.value.line == line and reg.flows == {}


# ---------------------------------------------------------------------------------------------------- sinks
def test_create_sink_delta_and_kafka(reg: Registry) -> None:
    line = here() + 1
    dp.create_sink("out", "Delta", {"path": "/tmp/out"})
    dlt.create_sink("topic", "kafka", {"kafka.bootstrap.servers": "h:9092", "topic": "t"})
    dp.create_sink("by_name", "delta", {"tableName": "cat.sch.t"})
    assert reg.sinks["out"].format == "delta" and reg.sinks["out"].options == {"path": "/tmp/out"}
    assert reg.sinks["out"].location.file == THIS_FILE and reg.sinks["out"].location.line == line
    assert reg.sinks["topic"].format == "kafka"
    assert set(reg.sinks) == {"out", "topic", "by_name"}


@pytest.mark.parametrize("fmt, options, code", [
    ("parquet", {"path": "/x"}, "DECLARATION_SINK_FORMAT"),
    (None, {"path": "/x"}, "DECLARATION_SINK_FORMAT"),
    ("delta", {}, "DECLARATION_SINK_OPTIONS_REQUIRED"),
    ("delta", None, "DECLARATION_SINK_OPTIONS_REQUIRED"),
])
def test_create_sink_errors(reg: Registry, fmt, options, code) -> None:
    with declaration_error(code) as info:
        dp.create_sink("s", fmt, options)
    assert info.value.params["sink"] == "s" and reg.sinks == {}


def test_sink_and_dataset_share_a_namespace(reg: Registry) -> None:
    dlt.table(name="x")(q)
    with pytest.raises(DeclarationError) as info:
        dp.create_sink("X", "delta", {"path": "/p"})
    assert info.value.code == "DECLARATION_DUPLICATE_SINK" and info.value.params["existing"] == "x"
    dp.create_sink("s", "delta", {"path": "/p"})
    with declaration_error("DECLARATION_DUPLICATE_DATASET"):
        dlt.table(name="s")(q)


def test_foreach_batch_sink_bare_and_called(reg: Registry) -> None:
    @dp.foreach_batch_sink
    def to_api(df, batch_id):
        return None

    @dp.foreach_batch_sink(name="named_sink")
    def handler(df, batch_id):
        return None

    assert reg.sinks["to_api"].format == "foreach_batch" and reg.sinks["to_api"].handler is to_api
    assert reg.sinks["named_sink"].handler is handler
    assert reg.sinks["to_api"].location.file == THIS_FILE


def test_expectations_on_foreach_batch_sink_rejected(reg: Registry) -> None:
    with declaration_error("DECLARATION_EXPECTATIONS_ON_SINK") as info:
        @dp.foreach_batch_sink
        @dp.expect("x", "a > 0")
        def h(df, batch_id):
            return None
    assert info.value.params == {"sink": "h"}
    assert reg.sinks == {}


def test_expectation_above_foreach_batch_sink_rejected(reg: Registry) -> None:
    with declaration_error("DECLARATION_EXPECTATIONS_ON_SINK") as info:
        @dp.expect("x", "a > 0")
        @dp.foreach_batch_sink(name="s")
        def h(df, batch_id):
            return None
    assert info.value.params == {"sink": "s"}


# ----------------------------------------------------------------------------------------------- event hooks
def test_on_event_hook_bare_and_called(reg: Registry) -> None:
    @dlt.on_event_hook
    def hook_a(event):
        return None

    @dp.on_event_hook(max_allowable_consecutive_failures=3)
    def hook_b(event):
        return None

    assert [(h.name, h.max_allowable_consecutive_failures) for h in reg.event_hooks] == [
        ("hook_a", None), ("hook_b", 3)]
    assert reg.event_hooks[0].function is hook_a and reg.event_hooks[0].location.file == THIS_FILE


def test_on_event_hook_non_callable(reg: Registry) -> None:
    with pytest.raises(DeclarationError) as info:
        dlt.on_event_hook("nope")
    assert info.value.code == "DECLARATION_NOT_CALLABLE" and info.value.params["decorator"] == "on_event_hook"


# ---------------------------------------------------------------------------------------------- deprecations
def test_deprecated_aliases_warn_and_register(reg: Registry) -> None:
    with pytest.warns(DeprecationWarning, match="create_table is deprecated"):
        @dlt.create_table(name="old_table")
        def a():
            return None
    with pytest.warns(DeprecationWarning, match="create_view is deprecated"):
        @dlt.create_view
        def old_view():
            return None
    with pytest.warns(DeprecationWarning, match="create_streaming_live_table is deprecated"):
        dlt.create_streaming_live_table("st1")
    with pytest.warns(DeprecationWarning, match="create_target_table is deprecated"):
        dlt.create_target_table(name="st2", comment="x")
    assert reg.dataset("old_table").kind is DatasetKind.TABLE
    assert reg.dataset("old_view").kind is DatasetKind.VIEW
    assert reg.dataset("st1").kind is DatasetKind.STREAMING_TABLE
    assert reg.dataset("st2").comment == "x"


def test_deprecation_warning_points_at_the_caller(reg: Registry) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        line = here() + 1
        dlt.create_streaming_live_table("st")
    assert caught[0].filename == THIS_FILE and caught[0].lineno == line


# ------------------------------------------------------------------------------------------- outside context
@pytest.mark.parametrize("declare", [
    lambda: dlt.table(q),
    lambda: dlt.table(name="x")(q),
    lambda: dlt.view(q),
    lambda: dp.materialized_view(q),
    lambda: dlt.create_streaming_table("st"),
    lambda: dlt.append_flow(target="t")(q),
    lambda: dlt.apply_changes("t", "s", ["id"], "ts"),
    lambda: dlt.apply_changes_from_snapshot("t", source="s", keys=["id"]),
    lambda: dp.create_sink("s", "delta", {"path": "/p"}),
    lambda: dp.foreach_batch_sink(lambda df, i: None),
    lambda: dlt.on_event_hook(lambda e: None),
])
def test_declarations_outside_a_registration_context(declare) -> None:
    with pytest.raises(RegistrationContextError) as info:
        declare()
    assert info.value.code == "NO_ACTIVE_PIPELINE"
    assert isinstance(info.value, PipelineError)
    assert "only work inside a pipeline file run by the framework" in str(info.value)


@pytest.mark.parametrize("reader", [dlt.read, dlt.read_stream, dlt.readStream])
def test_read_outside_a_query_function(reader) -> None:
    with registration_context(), pytest.raises(RegistrationContextError) as info:
        reader("orders")
    assert info.value.code == "NO_ACTIVE_PIPELINE"
    assert "inside a query function" in info.value.message


def test_read_delegates_to_the_active_reader() -> None:
    from framework.context import reader_context

    class Reader:
        def read(self, name):
            return ("batch", name)

        def read_stream(self, name):
            return ("stream", name)

    with reader_context(Reader()):
        assert dlt.read("a") == ("batch", "a")
        assert dlt.readStream("b") == ("stream", "b")
        assert dlt.read_stream("c") == ("stream", "c")


def test_registration_contexts_nest_and_restore() -> None:
    with registration_context() as outer:
        with registration_context() as inner:
            dlt.table(name="inner")(q)
        dlt.table(name="outer")(q)
    assert set(inner.datasets) == {"inner"} and set(outer.datasets) == {"outer"}


def test_enable_local_execution_is_a_noop() -> None:
    assert dlt.enable_local_execution() is None


def test_caller_location_with_framework_like_prefix(reg: Registry) -> None:
    fake_file = api._FRAMEWORK_DIR + "_user_pipelines/pipeline.py"
    namespace: dict = {"dlt": dlt}
    exec(compile("\n\ndlt.create_streaming_table('st')\n", fake_file, "exec"), namespace)
    assert reg.dataset("st").location.file == fake_file and reg.dataset("st").location.line == 3
