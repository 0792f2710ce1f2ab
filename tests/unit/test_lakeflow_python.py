"""Issue 36's newer Python names without Spark: ``dp.update_flow`` and ``dp.foreach_sink`` declarations and
their bad input (an update flow into a table; a writer without ``process``; ``func`` with ``writer``)."""

from __future__ import annotations

import pytest

import framework.shim.dp as dp
from framework.errors import DeclarationError, GraphError
from framework.graph import build_graph
from framework.registry import registration_context


def q():  # type: ignore[no-untyped-def]
    return None


class Writer:
    def process(self, row):  # type: ignore[no-untyped-def]
        return row


def test_declarations() -> None:
    with registration_context() as reg:
        dp.foreach_sink(name="rows", writer=Writer())
        dp.foreach_sink(writer=Writer())  # named after the class, lower-case
        dp.foreach_sink(name="by_func", func=print)

        @dp.foreach_sink
        def bare(row):  # type: ignore[no-untyped-def]
            return row

        dp.update_flow(target="rows", name="counts", spark_conf={"a": "b"}, comment="c")(q)
    assert set(reg.sinks) == {"rows", "writer", "by_func", "bare"}
    assert {s.format for s in reg.sinks.values()} == {"foreach"}
    flow = reg.flows["counts"]
    assert (flow.output_mode, flow.target, dict(flow.spark_conf), flow.comment) == ("update", "rows", {"a": "b"}, "c")
    build_graph(reg, {}, {"counts": True})  # a sink target: valid


def test_update_flow_into_a_table_is_refused() -> None:
    with registration_context() as reg:
        dp.create_streaming_table("t")
        dp.update_flow(target="t")(q)
    with pytest.raises(GraphError) as info:
        build_graph(reg, {}, {"q": True})
    [problem] = [p for p in info.value.problems if p.code == "UPDATE_FLOW_TARGET_NOT_SINK"]
    assert "update flow 'q' targets 't'" in problem.message and problem.file == __file__ and problem.line


@pytest.mark.parametrize("call", [
    lambda: dp.foreach_sink(name="x", writer=object()),
    lambda: dp.foreach_sink(name="x", func=print, writer=Writer()),
    lambda: dp.update_flow(name="x"),
])
def test_bad_foreach_sink_and_update_flow_arguments(call) -> None:  # type: ignore[no-untyped-def]
    with registration_context(), pytest.raises(DeclarationError) as info:
        call()
    assert info.value.file == __file__


def test_replace_using_declarations() -> None:
    with registration_context() as reg:
        dp.create_streaming_table("events")
        dp.replace_flow(target="events", replace_using=["region_id"], sequence_by="seq")(q)
        dp.table(name="by_key", replace_using=["k"], sequence_by="s")(q)
    assert (reg.flows["q"].replace_using, reg.flows["q"].sequence_by) == (("region_id",), "seq")
    assert reg.flows["by_key"].replace_using == ("k",)


@pytest.mark.parametrize(("call", "code"), [
    (lambda: dp.replace_flow(target="t", replace_using=[], sequence_by="s"), "DECLARATION_KEYS_REQUIRED"),
    (lambda: dp.replace_flow(target="t", replace_using=["a", "a"], sequence_by="s"), "DECLARATION_KEYS_REQUIRED"),
    (lambda: dp.table(replace_using=["a"]), "DECLARATION_SEQUENCE_BY_REQUIRED"),
    (lambda: dp.replace_flow(replace_using=["a"], sequence_by="s"), "DECLARATION_TARGET_REQUIRED"),
])
def test_bad_replace_using_arguments(call, code: str) -> None:  # type: ignore[no-untyped-def]
    with registration_context(), pytest.raises(DeclarationError) as info:
        call()
    assert info.value.code == code and info.value.file == __file__


def test_depends_on_orders_the_graph_and_names_known_flows() -> None:
    with registration_context() as reg:
        dp.create_streaming_table("events")
        dp.append_flow(target="events", name="live", depends_on="backfill")(q)
        dp.append_flow(target="events", name="backfill", once=True)(q)
        dp.append_flow(target="events", name="last", depends_on=["live", "backfill"], once=True)(q)
    assert reg.flows["live"].depends_on == ("backfill",) and reg.flows["last"].depends_on == ("live", "backfill")
    graph = build_graph(reg, {}, {"live": True, "backfill": False, "last": False})
    assert graph.order.index("backfill") < graph.order.index("live") < graph.order.index("last")

    with registration_context() as reg:
        dp.create_streaming_table("events")
        dp.append_flow(target="events", name="live", depends_on="backfil")(q)
        dp.append_flow(target="events", name="backfill", once=True)(q)
    with pytest.raises(GraphError) as info:
        build_graph(reg, {}, {"live": True, "backfill": False})
    assert "FLOW_DEPENDS_ON_UNKNOWN" in str(info.value) and "Did you mean 'backfill'" in str(info.value)
