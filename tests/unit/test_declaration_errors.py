"""Every declaration failure has its own stable code and keeps its parameters (framework.errors.DeclarationError).

One case per code, through the public ``dlt`` / ``dp`` spellings, asserting the code and the parameters; the
catalogue ``DECLARATION_MESSAGES`` has no code without a case, and no template names a parameter the error does
not carry. A few rendered messages are pinned at the end. No Spark.
"""

from __future__ import annotations

import ast
import string
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import framework.shim.dlt as dlt
import framework.shim.dp as dp
from framework.errors import DECLARATION_MESSAGES, DeclarationError, PipelineError
from framework.registry import Registry, registration_context

THIS_FILE = __file__
FRAMEWORK = Path(__file__).resolve().parents[2] / "framework"


@pytest.fixture
def reg() -> Iterator[Registry]:
    with registration_context() as registry:
        yield registry


def q():  # a query function that is never called
    return None


def _stacked_on_dataset() -> None:
    @dlt.expect("late", "a > 0")
    @dlt.table
    def t():
        return None


def _expectations_on_sink() -> None:
    @dp.foreach_batch_sink
    @dp.expect("x", "a > 0")
    def h(df, batch_id):
        return None


def _twice(first: Callable[[], Any], second: Callable[[], Any]) -> Callable[[], None]:
    def run() -> None:
        first()
        second()
    return run


CDC = {"target": "dim", "source": "changes", "keys": ["id"], "sequence_by": "ts"}
ANY_LINE = object()  # a line in this file (the first declaration's, inside a lambda of the table)

# (code, the failing call, the error's params)
CASES: list[tuple[str, Callable[[], Any], dict[str, object]]] = [
    ("DECLARATION_NOT_CALLABLE", lambda: dlt.table("orders"),
     {"decorator": "dlt.table", "argument": "orders", "argument_type": "str"}),
    ("DECLARATION_NOT_A_QUERY_FUNCTION", lambda: dlt.expect_or_drop("x", "a > 0")(7),
     {"decorator": "expect_or_drop", "argument": 7}),
    ("DECLARATION_EXPECTATION_ABOVE_DATASET", _stacked_on_dataset, {"decorator": "expect", "function": "t"}),
    ("DECLARATION_EXPECTATIONS_ON_SINK", _expectations_on_sink, {"sink": "h"}),
    ("DECLARATION_NAME_INVALID", lambda: dp.temporary_view(name=" "), {"kind": "dataset", "name": " "}),
    ("DECLARATION_LIST_EXPECTED", lambda: dlt.apply_changes(**{**CDC, "except_column_list": "op"}),
     {"argument": "except_column_list", "value": "op"}),
    ("DECLARATION_SCHEMA_TYPE", lambda: dp.materialized_view(schema=["id INT"]), {"schema_type": "list"}),
    ("DECLARATION_SCHEMA_COLUMN", lambda: dp.materialized_view(schema="id INT, n STRING MASK f"),
     {"detail": ANY_LINE, "column": "n", "clause": "MASK"}),  # detail: the message of framework.columns
    ("DECLARATION_FORMAT_UNSUPPORTED", lambda: dp.create_streaming_table("st", format="iceberg"),
     {"format": "iceberg"}),
    ("DECLARATION_REFRESH_POLICY", lambda: dp.materialized_view(refresh_policy="sometimes"), {"value": "sometimes"}),
    ("DECLARATION_LAYOUT_CONFLICT", lambda: dp.table(partition_cols="d", cluster_by=["c"]),
     {"partition_cols": ("d",), "cluster_by": ("c",)}),
    ("DECLARATION_EXPECTATIONS_NOT_A_DICT", lambda: dp.expect_all_or_fail([("a", "a > 0")]),
     {"decorator": "expect_all_or_fail", "argument_type": "list"}),
    ("DECLARATION_CONSTRAINT_TYPE", lambda: dlt.expect_or_fail("positive", 1.5),
     {"expectation": "positive", "constraint_type": "float"}),
    ("DECLARATION_CONSTRAINT_EMPTY", lambda: dlt.expect_all({"present": ""}), {"expectation": "present"}),
    ("DECLARATION_REPLACE_WHERE_TYPE", lambda: dp.table(replace_where=" "), {"predicate": " "}),
    ("DECLARATION_TARGET_REQUIRED", lambda: dp.append_flow(name="backfill"), {"decorator": "append_flow"}),
    ("DECLARATION_SEQUENCE_BY_REQUIRED", lambda: dp.create_auto_cdc_flow(**{**CDC, "sequence_by": None}),
     {"function": "apply_changes"}),
    ("DECLARATION_KEYS_REQUIRED", lambda: dlt.apply_changes(**{**CDC, "keys": ()}), {"function": "apply_changes"}),
    ("DECLARATION_SCD_TYPE_INVALID", lambda: dlt.apply_changes(**CDC, stored_as_scd_type=0), {"value": 0}),
    ("DECLARATION_ARGUMENTS_EXCLUSIVE",
     lambda: dlt.apply_changes(**CDC, column_list=["a"], except_column_list=["b"]),
     {"first": "column_list", "second": "except_column_list"}),
    ("DECLARATION_UNSUPPORTED_ARGUMENT", lambda: dp.create_auto_cdc_flow(**CDC, system_sequence_by="sys_ts"),
     {"function": "create_auto_cdc_flow", "argument": "system_sequence_by", "why": ANY_LINE}),
    ("DECLARATION_TRUNCATES_NEED_SCD1",
     lambda: dp.create_auto_cdc_flow(**CDC, stored_as_scd_type="2", apply_as_truncates="op = 'T'"),
     {"scd_type": 2}),
    ("DECLARATION_TRACK_HISTORY_NEEDS_SCD2",
     lambda: dp.create_auto_cdc_from_snapshot_flow("dim", source="snap", keys=["id"],
                                                   track_history_except_column_list=["x"]),
     {"argument": "track_history_except_column_list", "scd_type": 1}),
    ("DECLARATION_SOURCE_REQUIRED", lambda: dp.create_auto_cdc_from_snapshot_flow("dim", keys=["id"]),
     {"function": "apply_changes_from_snapshot"}),
    ("DECLARATION_SOURCE_TYPE", lambda: dlt.apply_changes_from_snapshot("dim", source=3, keys=["id"]),
     {"source_type": "int"}),
    ("DECLARATION_SINK_FORMAT", lambda: dp.create_sink("out", "parquet", {"path": "/p"}),
     {"sink": "out", "format": "parquet", "supported": "delta, kafka"}),
    ("DECLARATION_SINK_OPTIONS_REQUIRED", lambda: dp.create_sink("out", "delta", {"mergeSchema": "true"}),
     {"sink": "out"}),
    ("DECLARATION_DUPLICATE_DATASET", _twice(lambda: dlt.table(name="t")(q), lambda: dlt.view(name="T")(q)),
     {"name": "T", "existing": "t", "first_file": THIS_FILE, "first_line": q.__code__.co_firstlineno}),
    ("DECLARATION_DUPLICATE_SINK",
     _twice(lambda: dp.create_streaming_table("out"), lambda: dp.create_sink("out", "kafka")),
     {"name": "out", "existing": "out", "first_file": THIS_FILE, "first_line": ANY_LINE}),
    ("DECLARATION_DUPLICATE_FLOW",
     _twice(lambda: dlt.apply_changes(**CDC), lambda: dp.create_auto_cdc_flow(**{**CDC, "source": "other"})),
     {"name": "dim", "existing": "dim", "first_file": THIS_FILE, "first_line": ANY_LINE}),
    ("DECLARATION_DUPLICATE_EXPECTATION",
     lambda: dlt.create_streaming_table("st", expect_all={"a": "x > 0"}, expect_all_or_fail={"a": "y > 0"}),
     {"name": "a", "dataset": "st", "first_file": THIS_FILE, "first_line": ANY_LINE}),
]


@pytest.mark.parametrize("code, call, params", CASES, ids=[case[0] for case in CASES])
def test_each_failure_has_its_code_and_params(reg: Registry, code: str, call: Callable[[], Any],
                                              params: dict[str, object]) -> None:
    with pytest.raises(DeclarationError) as info:
        call()
    err = info.value
    assert err.code == code
    expected = {k: (err.params.get(k) if v is ANY_LINE else v) for k, v in params.items()}
    assert err.params == expected
    assert isinstance(err.params.get("first_line", 0), int)
    assert err.file == THIS_FILE and isinstance(err.line, int) and err.line > 0
    assert isinstance(err, PipelineError) and str(err).startswith(f"[{code}] {THIS_FILE}:{err.line}: ")


def test_every_code_in_the_catalogue_has_a_case() -> None:
    assert sorted({case[0] for case in CASES}) == sorted(DECLARATION_MESSAGES)


@pytest.mark.parametrize("code", sorted(DECLARATION_MESSAGES))
def test_each_template_names_only_the_params_of_its_case(code: str) -> None:
    fields = {name for _text, name, _spec, _conv in string.Formatter().parse(DECLARATION_MESSAGES[code]) if name}
    params = next(case[2] for case in CASES if case[0] == code)
    assert fields <= set(params), f"{code} renders {fields - set(params)} that its error does not carry"
    assert code.startswith("DECLARATION_") and code.upper() == code


def test_the_error_keeps_the_params_it_was_built_with() -> None:
    err = DeclarationError.of("DECLARATION_SCD_TYPE_INVALID", file="/p.py", line=4, value="3")
    assert (err.code, err.params, err.file, err.line) == ("DECLARATION_SCD_TYPE_INVALID", {"value": "3"}, "/p.py", 4)
    assert str(err) == "[DECLARATION_SCD_TYPE_INVALID] /p.py:4: stored_as_scd_type must be 1 or 2 (int or " \
                       "string), got '3'"
    assert DeclarationError("legacy").code == "INVALID_DECLARATION" and DeclarationError("legacy").params == {}
    with pytest.raises(KeyError):
        DeclarationError.of("DECLARATION_NO_SUCH_CODE")


def test_the_framework_builds_declaration_errors_from_the_catalogue_only() -> None:
    """No ``DeclarationError("...")`` with free text: every raise goes through ``DeclarationError.of(code)``."""
    direct = []
    for path in sorted(FRAMEWORK.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "DeclarationError"
                    and path.name != "errors.py"):
                direct.append(f"{path.relative_to(FRAMEWORK.parent)}:{node.lineno}")
    assert direct == []


# ------------------------------------------------------------------------------------------- rendered messages
def test_rendered_messages_name_the_fix(reg: Registry) -> None:
    line = sys._getframe().f_lineno + 2
    with pytest.raises(DeclarationError) as info:
        dp.create_sink("out", "delta", {})
    assert str(info.value) == (f"[DECLARATION_SINK_OPTIONS_REQUIRED] {THIS_FILE}:{line}: delta sink 'out' needs "
                               'options={"path": ...} or {"tableName": ...}')
    with pytest.raises(DeclarationError) as info:
        dlt.apply_changes(**CDC, stored_as_scd_type=1, track_history_column_list=["name"])
    assert info.value.message == ("track_history_column_list needs stored_as_scd_type=2 (it picks the columns "
                                  "whose changes start a new version), got stored_as_scd_type=1")
    with pytest.raises(DeclarationError) as info:
        dlt.apply_changes(**{**CDC, "keys": "id"})
    assert info.value.message == "keys must be a list, got the string 'id'; write ['id']"
