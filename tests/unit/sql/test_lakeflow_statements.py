"""Issue 36's newer SQL statement forms, parsed and registered without Spark: USE CATALOG / USE SCHEMA,
REPLACE WHERE flows (inline and CREATE FLOW), CREATE TABLE ... FLOW INSERT [ONCE] BY NAME."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from framework.declarations import DatasetKind, FlowKind
from framework.errors import SqlError
from framework.loader import load_pipeline
from framework.spec import parse_spec
from framework.sql.envelope import CreateDataset, CreateFlow, UseStatement, parse_statement

SQL = """
USE CATALOG main;
USE SCHEMA sales;

CREATE OR REFRESH STREAMING TABLE recent
FLOW REPLACE WHERE day >= date_add(current_date(), -7) BY NAME
SELECT * FROM orders;

CREATE OR REFRESH STREAMING TABLE big;
CREATE FLOW big_flow AS INSERT INTO big BY NAME REPLACE WHERE amount >= 10 AND region IN ('eu', 'us')
WITH o AS (SELECT * FROM orders) SELECT * FROM o;

CREATE TABLE appended FLOW INSERT BY NAME SELECT * FROM STREAM(orders);
CREATE FLOW snapshots AS INSERT INTO big BY NAME REPLACE USING (region, `day`) SEQUENCE BY seq
SELECT * FROM STREAM(orders);
CREATE TABLE seeded FLOW INSERT ONCE BY NAME SELECT 1 AS id;
CREATE TABLE legacy AS SELECT 1 AS id;
"""


def _load(tmp_path: Path, text: str):  # type: ignore[no-untyped-def]
    (tmp_path / "p.sql").write_text(textwrap.dedent(text))
    spec = parse_spec({"name": "p", "libraries": [{"file": {"path": "p.sql"}}], "catalog": "main", "schema": "sales"},
                      source=str(tmp_path / "spec.yaml"), default_root=tmp_path)
    return load_pipeline(spec).registry


def test_statements_register(tmp_path: Path) -> None:
    """``USE CATALOG main; USE SCHEMA sales`` in a pipeline publishing to ``main.sales``: names stay bare."""
    registry = _load(tmp_path, SQL)
    kinds = {key: d.kind for key, d in registry.datasets.items()}
    assert kinds == {"recent": DatasetKind.STREAMING_TABLE, "big": DatasetKind.STREAMING_TABLE,
                     "appended": DatasetKind.STREAMING_TABLE, "seeded": DatasetKind.STREAMING_TABLE,
                     "legacy": DatasetKind.MATERIALIZED_VIEW}
    flows = registry.flows
    assert flows["recent"].replace_where == "day >= date_add(current_date(), -7)"
    assert flows["big_flow"].replace_where == "amount >= 10 AND region IN ('eu', 'us')"
    assert flows["big_flow"].kind is FlowKind.APPEND and flows["big_flow"].location.line == 10
    assert flows["appended"].replace_where is None and not flows["appended"].once
    assert flows["seeded"].once
    assert (flows["snapshots"].replace_using, flows["snapshots"].sequence_by) == (("region", "day"), "seq")


def test_parsed_forms() -> None:
    assert parse_statement("USE CATALOG main") == UseStatement("catalog", "main", 0)
    assert parse_statement("USE DATABASE x") == UseStatement("schema", "x", 0)
    inline = parse_statement("CREATE STREAMING TABLE t FLOW REPLACE WHERE d > 1 BY NAME SELECT 1 AS d")
    assert isinstance(inline, CreateDataset) and inline.replace_where is not None
    assert (inline.replace_where.text, inline.query.text if inline.query else None) == ("d > 1", "SELECT 1 AS d")
    flow = parse_statement("CREATE FLOW f AS INSERT INTO t BY NAME REPLACE WHERE (a, b) > (1, 2) FROM s SELECT *")
    assert isinstance(flow, CreateFlow) and flow.replace_where is not None
    assert flow.replace_where.text == "(a, b) > (1, 2)" and flow.query is not None
    assert flow.query.text == "FROM s SELECT *"


@pytest.mark.parametrize("text", ["USE SCHEMA a b", "CREATE STREAMING TABLE t FLOW REPLACE WHERE d > 1 SELECT 1"])
def test_malformed_forms_are_sql_errors(tmp_path: Path, text: str) -> None:
    with pytest.raises(SqlError) as info:
        _load(tmp_path, text + ";")
    assert info.value.code == "SQL_PARSE_ERROR" and info.value.line == 1


def test_pipeline_parameters_bind_markers() -> None:
    from framework.sql.parameters import bind_parameters

    params = {"label": "it's", "m": "10"}
    assert bind_parameters("SELECT :label AS l FROM t WHERE a >= CAST(:m AS BIGINT)", params) == \
        "SELECT 'it\\'s' AS l FROM t WHERE a >= CAST('10' AS BIGINT)"
    kept = "SELECT raw:label, x::int, ':label', :unknown FROM t -- :m"
    assert bind_parameters(kept, params) == kept  # JSON paths, casts, strings, comments, unknown names


def test_spec_parameters(tmp_path: Path) -> None:
    from framework.errors import SpecError

    base = {"name": "p", "libraries": [{"file": {"path": "p.sql"}}]}
    as_map = parse_spec({**base, "parameters": {"min": 10, "src.path": "/a"}}, source="s.yaml", default_root=tmp_path)
    assert as_map.parameters == {"min": "10", "src.path": "/a"}
    as_list = parse_spec({**base, "parameters": [{"name": "a", "default": "1"}]}, source="s.yaml",
                         default_root=tmp_path)
    assert as_list.parameters == {"a": "1"}
    with pytest.raises(SpecError) as info:
        parse_spec({**base, "parameters": {"a b": "1"}}, source="s.yaml", default_root=tmp_path)
    assert info.value.codes == ["INVALID_VALUE"]


def test_use_scopes_the_names_of_the_statements_after_it(tmp_path: Path) -> None:
    """Names after ``USE`` are in its catalog and schema, written relative to the pipeline's ``main.sales``."""
    registry = _load(tmp_path, """
        CREATE MATERIALIZED VIEW a AS SELECT 1 AS x;
        USE SCHEMA reporting;
        CREATE MATERIALIZED VIEW b AS SELECT * FROM a;
        CREATE TEMPORARY VIEW v AS SELECT 1 AS x;
        USE CATALOG dev;
        CREATE MATERIALIZED VIEW c AS SELECT 1 AS x;
        USE SCHEMA main.sales;
        CREATE MATERIALIZED VIEW d AS SELECT 1 AS x;
        USE main.other;
        CREATE STREAMING TABLE e;
        CREATE FLOW f AS AUTO CDC INTO e FROM STREAM(a) KEYS (x) SEQUENCE BY x;
    """)
    assert list(registry.datasets) == ["a", "reporting.b", "v", "dev.default.c", "d", "other.e"]
    assert registry.flows["f"].target == "other.e"
