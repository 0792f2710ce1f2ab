"""The ContextVar-scoped registry (framework.registry) and the error hierarchy it uses."""

from __future__ import annotations

import contextvars
import threading

import pytest

from framework.declarations import Dataset, DatasetKind, Expectation, Flow, FlowKind, Sink, SourceLocation
from framework.errors import (
    DeclarationError,
    GraphError,
    PipelineError,
    Problem,
    RegistrationContextError,
    SpecError,
)
from framework.registry import (
    Registry,
    active_registry,
    has_active_registry,
    merge_expectations,
    normalize_name,
    registration_context,
)

LOC = SourceLocation("/p/file.py", 7)


def test_no_registry_outside_a_context() -> None:
    assert not has_active_registry()
    with pytest.raises(RegistrationContextError) as info:
        active_registry()
    assert info.value.code == "NO_ACTIVE_PIPELINE"
    assert "medallion run SPEC" in info.value.message


def test_context_gives_a_fresh_or_the_given_registry() -> None:
    mine = Registry()
    with registration_context(mine) as active:
        assert active is mine and active_registry() is mine and has_active_registry()
        with registration_context() as inner:
            assert inner is not mine and active_registry() is inner
        assert active_registry() is mine
    assert not has_active_registry()


def test_context_is_reset_after_an_exception() -> None:
    with pytest.raises(ValueError), registration_context():
        raise ValueError("x")
    assert not has_active_registry()


def test_context_is_not_shared_with_other_threads() -> None:
    seen: list[bool] = []
    with registration_context():
        thread = threading.Thread(target=lambda: seen.append(has_active_registry()))
        thread.start()
        thread.join()
        assert seen == [False]
        # but an explicitly copied context sees it
        assert contextvars.copy_context().run(has_active_registry)


def test_names_are_case_insensitive() -> None:
    assert normalize_name(" Orders ") == "orders"
    reg = Registry()
    reg.add_dataset(Dataset("Orders", DatasetKind.TABLE, LOC))
    assert reg.dataset("ORDERS").name == "Orders"
    with pytest.raises(DeclarationError) as info:
        reg.add_dataset(Dataset("orders", DatasetKind.VIEW, SourceLocation("/p/other.py", 3)))
    err = info.value
    assert err.code == "DECLARATION_DUPLICATE_DATASET"
    assert err.params == {"name": "orders", "existing": "Orders", "first_file": "/p/file.py", "first_line": 7}
    assert err.file == "/p/other.py" and err.line == 3
    assert str(err) == ("[DECLARATION_DUPLICATE_DATASET] /p/other.py:3: dataset 'orders' is defined twice "
                        "(first at /p/file.py:7). Give each table, view and sink a unique name.")


def test_sinks_and_datasets_share_a_namespace() -> None:
    reg = Registry()
    reg.add_sink(Sink("out", "delta", {"path": "/x"}, LOC))
    with pytest.raises(DeclarationError) as dataset:
        reg.add_dataset(Dataset("OUT", DatasetKind.TABLE, LOC))
    assert dataset.value.code == "DECLARATION_DUPLICATE_DATASET" and dataset.value.params["existing"] == "out"
    reg.add_dataset(Dataset("t", DatasetKind.TABLE, LOC))
    with pytest.raises(DeclarationError) as sink:
        reg.add_sink(Sink("T", "kafka", location=SourceLocation("/p/sinks.py", 9)))
    assert sink.value.code == "DECLARATION_DUPLICATE_SINK"
    assert sink.value.params == {"name": "T", "existing": "t", "first_file": "/p/file.py", "first_line": 7}
    assert sink.value.message.startswith("sink 'T' clashes with 't' defined at /p/file.py:7.")
    assert set(reg.sinks) == {"out"}


def test_flows_and_flows_into() -> None:
    reg = Registry()
    reg.add_flow(Flow("a", "Target", FlowKind.APPEND, LOC))
    reg.add_flow(Flow("b", "target", FlowKind.APPEND, LOC))
    reg.add_flow(Flow("c", "other", FlowKind.APPEND, LOC))
    assert [f.name for f in reg.flows_into("TARGET")] == ["a", "b"]
    with pytest.raises(DeclarationError) as info:
        reg.add_flow(Flow("A", "x", FlowKind.APPEND, SourceLocation("/p/flows.py", 2)))
    assert info.value.code == "DECLARATION_DUPLICATE_FLOW" and (info.value.file, info.value.line) == ("/p/flows.py", 2)
    assert info.value.params == {"name": "A", "existing": "a", "first_file": "/p/file.py", "first_line": 7}
    assert reg.flows["a"].target == "Target"


def test_add_expectations_merges_and_rejects_duplicates() -> None:
    reg = Registry()
    reg.add_dataset(Dataset("st", DatasetKind.STREAMING_TABLE, LOC, expectations=(Expectation("a", "x > 0"),)))
    reg.add_expectations("ST", (Expectation("b", "y > 0", "drop"),))
    assert [(e.name, e.action) for e in reg.dataset("st").expectations] == [("a", "warn"), ("b", "drop")]
    with pytest.raises(DeclarationError) as info:
        reg.add_expectations("st", (Expectation("a", "z > 0", location=LOC),))
    assert info.value.code == "DECLARATION_DUPLICATE_EXPECTATION"
    assert info.value.params == {"name": "a", "dataset": "st", "first_file": "<unknown>", "first_line": 0}
    assert [e.name for e in reg.dataset("st").expectations] == ["a", "b"]


def test_merge_expectations_keeps_order() -> None:
    first = (Expectation("a", "1"), Expectation("b", "2"))
    assert [e.name for e in merge_expectations("d", first, (Expectation("c", "3"),))] == ["a", "b", "c"]


def test_did_you_mean() -> None:
    reg = Registry()
    reg.add_dataset(Dataset("orders_clean", DatasetKind.TABLE, LOC))
    reg.add_sink(Sink("kafka_out", "kafka", location=LOC))
    assert reg.did_you_mean("orders_clen") == " Did you mean 'orders_clean'?"
    assert reg.did_you_mean("kafka_ot") == " Did you mean 'kafka_out'?"
    assert reg.did_you_mean("zzz") == ""


def test_declarations_are_frozen() -> None:
    d = Dataset("t", DatasetKind.TABLE, LOC)
    with pytest.raises(AttributeError):
        d.name = "x"  # type: ignore[misc]
    assert str(LOC) == "/p/file.py:7"
    assert Expectation("e", "a > 0").constraint_sql == "a > 0"
    assert Dataset("v", DatasetKind.VIEW).is_view


# ----------------------------------------------------------------------------------------------------- errors
def test_error_hierarchy_and_rendering() -> None:
    problems = [Problem("A", "first", "/f.py", 3), Problem("B", "second", "/f.py"), Problem("C", "third")]
    err = SpecError("conf/x.yaml", problems)
    assert isinstance(err, PipelineError) and err.code == "INVALID_SPEC" and err.codes == ["A", "B", "C"]
    assert str(err).splitlines() == ["[INVALID_SPEC] invalid pipeline spec conf/x.yaml: 3 problem(s)",
                                     "  - /f.py:3: [A] first", "  - /f.py: [B] second", "  - [C] third"]
    graph = GraphError(problems[:1])
    assert graph.code == "INVALID_GRAPH" and "1 problem(s)" in str(graph)
    custom = PipelineError("msg", code="MY_CODE", file="/x.py", line=2)
    assert str(custom) == "[MY_CODE] /x.py:2: msg" and custom.code == "MY_CODE"
    assert PipelineError("m").code == "PIPELINE_ERROR"
