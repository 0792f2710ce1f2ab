"""``validate --static`` on SQL datasets: their query functions carry their reads, which are not read as Python."""

from __future__ import annotations

import textwrap
from pathlib import Path

import framework.shim.dlt as dlt
from framework.declarations import DatasetKind
from framework.graph import Read, build_graph
from framework.loader import load_pipeline
from framework.registry import registration_context
from framework.spec import parse_spec
from framework.static_reads import static_reads


def sql_query(reads: list[tuple[str, bool]], name: str, streaming: bool | None = None):
    """A query function shaped like framework.sql's: its source (this function) reads a decoy dataset."""

    def run():
        return dlt.read("decoy_that_must_not_be_found")

    run.__name__ = name
    run.__medallion_sql_reads__ = reads  # type: ignore[attr-defined]
    if streaming is not None:
        run.__medallion_sql_streaming__ = streaming  # type: ignore[attr-defined]
    return run


def test_sql_query_functions_give_their_reads_and_streaming() -> None:
    with registration_context() as registry:
        dlt.table(name="stream_of_files")(sql_query([], "stream_of_files", streaming=True))
        dlt.table(name="mixed")(sql_query([("stream_of_files", True), ("LIVE.lookup", False),
                                           ("samples.tpch.nation", False)], "mixed"))
        dlt.table(name="batch_only")(sql_query([("mixed", False)], "batch_only"))
        dlt.table(name="reads_nothing")(sql_query([], "reads_nothing"))
    reads, streaming = static_reads(registry)
    assert reads["stream_of_files"] == [] and streaming["stream_of_files"] is True
    assert reads["mixed"] == [Read("stream_of_files", True, False), Read("LIVE.lookup", False, True),
                              Read("samples.tpch.nation", False, False)]
    assert streaming["mixed"] is True
    assert reads["batch_only"] == [Read("mixed", False, False)] and streaming["batch_only"] is False
    assert reads["reads_nothing"] == [] and streaming["reads_nothing"] is False


def test_static_graph_of_a_mixed_python_and_sql_pipeline(tmp_path: Path) -> None:
    files = {
        "bronze.py": """
            import dlt

            @dlt.table
            def bronze():
                return spark.readStream.format("rate").load()
        """,
        "silver.sql": """
            CREATE OR REFRESH STREAMING TABLE silver AS SELECT * FROM STREAM(LIVE.bronze);
            CREATE OR REFRESH MATERIALIZED VIEW gold AS SELECT count(*) AS n FROM silver;
        """,
        "report.py": """
            import dlt

            @dlt.table
            def report():
                return dlt.read("gold")
        """,
    }
    for name, text in files.items():
        (tmp_path / name).write_text(textwrap.dedent(text))
    spec = parse_spec({"name": "mixed", "libraries": [{"file": {"path": name}} for name in files]},
                      source=str(tmp_path / "spec.yaml"), default_root=tmp_path)
    registry = load_pipeline(spec).registry
    reads, streaming = static_reads(registry)
    assert [r.streaming for r in reads["silver"]] == [True] and streaming["silver"] is True
    assert [r.streaming for r in reads["gold"]] == [False] and streaming["gold"] is False
    graph = build_graph(registry, reads, streaming)
    assert graph.inputs["silver"] == ["bronze"] and graph.inputs["gold"] == ["silver"]
    assert graph.order == ["bronze", "silver", "gold", "report"]
    assert graph.kinds["silver"] is DatasetKind.STREAMING_TABLE
    assert graph.kinds["gold"] is DatasetKind.MATERIALIZED_VIEW
