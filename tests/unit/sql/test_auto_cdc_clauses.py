"""The newer AUTO CDC clauses of pipeline SQL (issue 36), parsed without Spark: IGNORE NULL UPDATES ON (...) and
ON * EXCEPT (...), COLUMNS TO UPDATE, AUTO CDC ONCE, FROM SNAPSHOT; SYSTEM SEQUENCE BY and STORED AS BITEMPORAL
refused naming the clause."""

from __future__ import annotations

import pytest

from framework.sql.envelope import ApplyChanges, ChangesClause, CreateFlow, EnvelopeError, parse_statement


def changes(text: str) -> ChangesClause:
    parsed = parse_statement(text)
    if isinstance(parsed, CreateFlow):
        assert parsed.changes is not None
        return parsed.changes
    assert isinstance(parsed, ApplyChanges)
    return parsed.changes


def test_ignore_null_updates_on_columns_or_all_but_some() -> None:
    listed = changes("AUTO CDC INTO t FROM STREAM(s) KEYS (id) IGNORE NULL UPDATES ON (name, city) "
                     "SEQUENCE BY ts STORED AS SCD TYPE 2")
    assert listed.ignore_null_updates_column_list == ("name", "city") and not listed.ignore_null_updates
    assert listed.sequence_by is not None and listed.sequence_by.text == "ts" and listed.scd_type == 2
    excepted = changes("AUTO CDC INTO t FROM s KEYS (id) IGNORE NULL UPDATES ON * EXCEPT (city) SEQUENCE BY ts")
    assert excepted.ignore_null_updates_except_column_list == ("city",)
    assert changes("AUTO CDC INTO t FROM s KEYS (id) IGNORE NULL UPDATES SEQUENCE BY ts").ignore_null_updates


def test_columns_to_update_once_and_the_flow_name() -> None:
    flow = parse_statement("CREATE FLOW backfill AS AUTO CDC ONCE INTO t FROM s KEYS (id) SEQUENCE BY ts "
                           "COLUMNS * EXCEPT (op) COLUMNS TO UPDATE changed_cols")
    assert isinstance(flow, CreateFlow) and flow.name == "backfill" and flow.changes is not None
    assert flow.changes.once and flow.changes.columns_to_update == "changed_cols"
    assert flow.changes.except_column_list == ("op",)
    assert not changes("AUTO CDC INTO t FROM s KEYS (id) SEQUENCE BY ts").once


@pytest.mark.parametrize("text", [
    "AUTO CDC INTO t FROM SNAPSHOT src KEYS (id) STORED AS SCD TYPE 2 TRACK HISTORY ON * EXCEPT (city)",
    "CREATE FLOW f AS AUTO CDC INTO t FROM SNAPSHOT(src) KEYS (id) STORED AS SCD TYPE 2 "
    "TRACK HISTORY ON * EXCEPT (city)",
])
def test_from_snapshot(text: str) -> None:
    found = changes(text)
    assert found.snapshot and found.source == "src" and found.keys == ("id",) and found.sequence_by is None
    assert found.scd_type == 2 and found.track_history_except == ("city",)


def test_a_source_named_snapshot_is_a_source() -> None:
    found = changes("AUTO CDC INTO t FROM snapshot KEYS (id) SEQUENCE BY ts")
    assert not found.snapshot and found.source == "snapshot"


@pytest.mark.parametrize(("text", "named"), [
    ("AUTO CDC INTO t FROM s KEYS (id) SEQUENCE BY ts SYSTEM SEQUENCE BY commit_ts", "SYSTEM SEQUENCE BY"),
    ("AUTO CDC INTO t FROM s KEYS (id) SEQUENCE BY ts STORED AS BITEMPORAL", "STORED AS BITEMPORAL"),
    ("AUTO CDC INTO t FROM SNAPSHOT s KEYS (id) SEQUENCE BY ts", "sequence_by"),
    ("AUTO CDC INTO t FROM SNAPSHOT s KEYS (id) APPLY AS DELETE WHEN op = 'D'", "delete_when"),
])
def test_unsupported_clauses_are_named(text: str, named: str) -> None:
    with pytest.raises(EnvelopeError) as info:
        parse_statement(text)
    assert info.value.code == "SQL_UNSUPPORTED_CLAUSE" and named in str(info.value)
