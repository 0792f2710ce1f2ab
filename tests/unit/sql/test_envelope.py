"""The DLT SQL statement envelope: every statement form and clause, parsed without Spark."""

from __future__ import annotations

import pytest

from framework.sql.envelope import (
    ApplyChanges,
    CreateDataset,
    CreateFlow,
    EnvelopeError,
    SetStatement,
    parse_statement,
)


def dataset(text: str) -> CreateDataset:
    parsed = parse_statement(text)
    assert isinstance(parsed, CreateDataset)
    return parsed


@pytest.mark.parametrize(("text", "kind", "private"), [
    ("CREATE OR REFRESH STREAMING TABLE t AS SELECT * FROM STREAM(s)", "streaming_table", False),
    ("CREATE STREAMING TABLE t AS SELECT 1", "streaming_table", False),
    ("CREATE OR REFRESH PRIVATE STREAMING TABLE t AS SELECT 1", "streaming_table", True),
    ("CREATE TEMPORARY STREAMING TABLE t AS SELECT 1", "streaming_table", True),
    ("CREATE OR REFRESH MATERIALIZED VIEW t AS SELECT 1", "materialized_view", False),
    ("CREATE PRIVATE MATERIALIZED VIEW t AS SELECT 1", "materialized_view", True),
    ("CREATE OR REFRESH LIVE TABLE t AS SELECT 1", "materialized_view", False),
    ("CREATE OR REFRESH STREAMING LIVE TABLE t AS SELECT 1", "streaming_table", False),
    ("CREATE TEMPORARY LIVE TABLE t AS SELECT 1", "materialized_view", True),
    ("CREATE TEMPORARY LIVE VIEW t AS SELECT 1", "view", True),
    ("CREATE LIVE VIEW t AS SELECT 1", "view", False),
    ("CREATE VIEW t AS SELECT 1", "view", False),
    ("create or refresh streaming table IF NOT EXISTS t as select 1", "streaming_table", False),
])
def test_dataset_spellings(text: str, kind: str, private: bool) -> None:
    parsed = dataset(text)
    assert (parsed.kind, parsed.name, parsed.private) == (kind, "t", private)


def test_columns_constraints_and_clauses() -> None:
    text = ("CREATE OR REFRESH STREAMING TABLE raw (\n"
            "  id BIGINT NOT NULL COMMENT 'the id, with a comma',\n"
            "  s STRUCT<a: INT, b: INT>,\n"
            "  d DATE GENERATED ALWAYS AS (CAST(ts AS DATE)),\n"
            "  CONSTRAINT valid_id EXPECT (id > 0 AND id < 10) ON VIOLATION DROP ROW,\n"
            "  CONSTRAINT has_s EXPECT (s IS NOT NULL),\n"
            "  CONSTRAINT strict EXPECT (d IS NOT NULL) ON VIOLATION FAIL UPDATE,\n"
            "  CONSTRAINT pk PRIMARY KEY (id),\n"
            "  CONSTRAINT fk FOREIGN KEY (id) REFERENCES other (id)\n"
            ") COMMENT 'raw rows' TBLPROPERTIES ('quality' = 'bronze', delta.enableChangeDataFeed = true)\n"
            "PARTITIONED BY (d) LOCATION '/data/raw' USING DELTA\n"
            "AS SELECT * FROM STREAM(src)")
    parsed = dataset(text)
    assert parsed.columns == ("id BIGINT NOT NULL COMMENT 'the id, with a comma'", "s STRUCT<a: INT, b: INT>",
                              "d DATE GENERATED ALWAYS AS (CAST(ts AS DATE))")
    assert [(c.name, c.expression.text, c.action) for c in parsed.constraints] == [
        ("valid_id", "id > 0 AND id < 10", "drop"), ("has_s", "s IS NOT NULL", "warn"),
        ("strict", "d IS NOT NULL", "fail")]
    first = parsed.constraints[0].expression
    assert text[first.offset:first.offset + len(first.text)] == first.text  # offsets point into the statement
    assert parsed.comment == "raw rows"
    assert parsed.properties == {"quality": "bronze", "delta.enableChangeDataFeed": "true"}
    assert parsed.partition_cols == ("d",) and parsed.location == "/data/raw"
    assert parsed.query is not None and parsed.query.text == "SELECT * FROM STREAM(src)"
    assert text[parsed.query.offset:] == parsed.query.text


def test_cluster_by_and_a_streaming_table_without_query() -> None:
    assert dataset("CREATE STREAMING TABLE t CLUSTER BY (a, `b c`) AS SELECT 1").cluster_by == ("a", "b c")
    assert dataset("CREATE MATERIALIZED VIEW t CLUSTER BY AUTO AS SELECT 1").cluster_by_auto
    target = dataset("CREATE OR REFRESH STREAMING TABLE target COMMENT 'flows write here'")
    assert target.query is None and target.kind == "streaming_table"


def test_flows_insert_once_and_auto_cdc() -> None:
    flow = parse_statement("CREATE FLOW backfill COMMENT 'old rows' AS INSERT INTO ONCE LIVE.t BY NAME SELECT * FROM old")
    assert isinstance(flow, CreateFlow)
    assert (flow.name, flow.target, flow.once, flow.comment) == ("backfill", "LIVE.t", True, "old rows")
    assert flow.query is not None and flow.query.text == "SELECT * FROM old"
    cdc = parse_statement("CREATE FLOW f AS AUTO CDC INTO t FROM STREAM src KEYS (id) SEQUENCE BY ts")
    assert isinstance(cdc, CreateFlow) and cdc.changes is not None and cdc.changes.source == "src"
    inline = dataset("CREATE STREAMING TABLE t FLOW INSERT ONCE BY NAME SELECT 1")
    assert inline.flow_once and inline.query is not None


def test_apply_changes_every_clause() -> None:
    parsed = parse_statement(
        "APPLY CHANGES INTO LIVE.target FROM STREAM(LIVE.cdc) KEYS (userId, `region id`) IGNORE NULL UPDATES "
        "APPLY AS DELETE WHEN operation = 'DELETE' APPLY AS TRUNCATE WHEN operation = 'TRUNCATE' "
        "SEQUENCE BY struct(ts, seq) COLUMNS * EXCEPT (operation, seq) STORED AS SCD TYPE 2 "
        "TRACK HISTORY ON * EXCEPT (city)")
    assert isinstance(parsed, ApplyChanges)
    c = parsed.changes
    assert (c.target, c.source, c.keys) == ("LIVE.target", "LIVE.cdc", ("userId", "region id"))
    assert c.ignore_null_updates and c.scd_type == 2
    assert c.delete_when is not None and c.delete_when.text == "operation = 'DELETE'"
    assert c.truncate_when is not None and c.truncate_when.text == "operation = 'TRUNCATE'"
    assert c.sequence_by.text == "struct(ts, seq)"
    assert c.except_column_list == ("operation", "seq") and c.track_history_except == ("city",)
    listed = parse_statement("AUTO CDC INTO t FROM s KEYS (id) SEQUENCE BY ts COLUMNS (id, name) "
                             "TRACK HISTORY ON (name)")
    assert isinstance(listed, ApplyChanges)
    assert listed.changes.column_list == ("id", "name") and listed.changes.track_history == ("name",)


def test_set() -> None:
    assert parse_statement("SET pipelines.trigger.interval = 10 seconds") == SetStatement(
        "pipelines.trigger.interval", "10 seconds", 0)
    assert parse_statement("SET my.key") == SetStatement("my.key", None, 0)


@pytest.mark.parametrize(("text", "code", "where"), [
    ("SELECT 1", "SQL_UNSUPPORTED_STATEMENT", 0),
    ("DROP TABLE t", "SQL_UNSUPPORTED_STATEMENT", 0),
    ("CREATE STREAMING TABLE t SCHEDULE EVERY 1 HOUR AS SELECT 1", "SQL_UNSUPPORTED_CLAUSE", 25),
    ("CREATE STREAMING TABLE t (id INT, CONSTRAINT c EXPECT (id > 0) ON VIOLATION SKIP) AS SELECT 1",
     "SQL_PARSE_ERROR", 76),
    ("APPLY CHANGES INTO t FROM s KEYS (id)", "SQL_PARSE_ERROR", 0),
    ("APPLY CHANGES INTO t FROM s KEYS (id) SEQUENCE BY ts STORED AS SCD TYPE 3", "SQL_PARSE_ERROR", 72),
    ("APPLY CHANGES INTO t FROM s KEYS (id) PARTITION BY x SEQUENCE BY ts", "SQL_UNSUPPORTED_CLAUSE", 38),
    ("CREATE MATERIALIZED VIEW t", "SQL_PARSE_ERROR", 0),
])
def test_errors_name_their_place(text: str, code: str, where: int) -> None:
    with pytest.raises(EnvelopeError) as info:
        parse_statement(text)
    assert info.value.code == code
    assert info.value.offset == where
