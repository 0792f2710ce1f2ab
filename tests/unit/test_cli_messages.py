"""Messages that tell a user what to type (issue 39): the command a message suggests is one the CLI accepts."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from framework.cdc.storage import write_metadata
from framework.cdc.target import check_metadata, describe_spec
from framework.cli import build_parser
from framework.errors import SchemaChangeError


def suggested_commands(message: str) -> list[list[str]]:
    """The ``medallion ...`` commands quoted in backticks in ``message``, as argument lists."""
    return [shlex.split(c)[1:] for c in re.findall(r"`(medallion [^`]+)`", message)]


def test_an_incompatible_cdc_change_suggests_a_full_refresh_command_the_cli_accepts(tmp_path: Path) -> None:
    write_metadata(str(tmp_path), describe_spec(("id",), "seq", 1))
    with pytest.raises(SchemaChangeError) as caught:
        check_metadata("dim_customers", str(tmp_path), describe_spec(("id",), "seq", 2))
    error = caught.value
    assert error.code == "INCOMPATIBLE_CHANGE_REQUIRES_FULL_REFRESH" and error.dataset == "dim_customers"
    (command,) = suggested_commands(str(error))
    args = build_parser().parse_args([part.replace("<spec>", "conf/sample.yaml") for part in command])
    assert (args.command, args.full_refresh_select, args.full_refresh) == ("run", "dim_customers", False)
    assert args.spec == Path("conf/sample.yaml")
    # what the message suggested before: `--full-refresh` takes no dataset, so argparse refuses the name
    with pytest.raises(SystemExit):
        build_parser().parse_args(["run", "conf/sample.yaml", "--full-refresh", "dim_customers"])


SQL_GRAPH = """
CREATE OR REFRESH MATERIALIZED VIEW m AS SELECT 1 AS id;

CREATE OR REFRESH STREAMING TABLE s AS SELECT * FROM STREAM(LIVE.m);

CREATE FLOW f AS INSERT INTO nowhere_target BY NAME SELECT * FROM STREAM(LIVE.s);

CREATE OR REFRESH STREAMING TABLE lonely;
"""


def test_a_sql_pipelines_graph_errors_say_the_fix_in_sql(tmp_path: Path) -> None:
    from framework.errors import GraphError
    from framework.graph import build_graph
    from framework.loader import load_pipeline
    from framework.spec import parse_spec
    from framework.static_reads import static_reads

    (tmp_path / "g.sql").write_text(SQL_GRAPH)
    spec = parse_spec(
        {"name": "g", "libraries": [{"file": {"path": "g.sql"}}]},
        source=str(tmp_path / "s.yaml"),
        default_root=tmp_path,
    )
    registry = load_pipeline(spec).registry
    with pytest.raises(GraphError) as caught:
        build_graph(registry, *static_reads(registry))
    by_code = {p.code: p.message for p in caught.value.problems}
    assert "Read it without STREAM (FROM m)" in by_code["STREAMING_READ_OF_MATERIALIZED_VIEW"]
    assert "CREATE OR REFRESH STREAMING TABLE nowhere_target;" in by_code["UNKNOWN_FLOW_TARGET"]
    assert "CREATE FLOW ... AS INSERT INTO lonely BY NAME" in by_code["NO_FLOWS"]
    assert not any("dlt." in m or "@append_flow" in m for m in by_code.values()), by_code  # no Python advice


def test_a_second_continuous_run_fails_before_its_jvm_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A continuous run starts its session before the update (so that its Ctrl-C handler is the last one
    installed), yet a run refused by the storage's update lock still starts no JVM."""
    import json

    from pyspark import SparkContext

    from framework.cli import main
    from framework.runner.lock import update_lock

    monkeypatch.setenv("MEDALLION_NO_SERVER", "1")
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "p.py").write_text("import dlt\n\n@dlt.table\ndef t():\n    return spark.range(1)\n")
    spec = tmp_path / "spec.json"
    spec.write_text(
        json.dumps(
            {"name": "c", "libraries": [{"glob": {"include": "p/**"}}], "storage": str(tmp_path / "storage")}
        )
    )
    with update_lock(tmp_path / "storage", "held-by-the-test"):
        assert main(["run", str(spec), "--continuous"]) == 1
    assert "[UPDATE_ALREADY_RUNNING]" in capsys.readouterr().err
    assert SparkContext._active_spark_context is None
