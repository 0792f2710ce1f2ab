"""cloudFiles JSON: inference, rescued data, corrupt records, bad input, schema evolution modes."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from pyspark.sql import SparkSession

from framework.errors import AutoLoaderError, UnknownFieldError
from tests.integration.autoloader.conftest import Flow, both_parsers, rescued

pytestmark = pytest.mark.spark
JSON = {"cloudFiles.format": "json"}
UNI = "na\u00efve_\u540d\u524d"


def test_inferred_strings_with_bad_input_lose_nothing(flow: Callable[..., Flow]) -> None:
    f = flow(JSON)
    f.jsonl("a.json", {"id": 1, "name": "ann", "tags": [1, 2]}, {"id": 2, "name": "bob", "tags": {"x": 1}})
    # a broken record, blank lines, a case-only variant and no trailing newline; an empty file; not UTF-8; Unicode
    f.write("b.json", '{"id": 3, "name": "cy"}\n{"id": 4, "name": \n\n   \n{"ID": 5, "name": "dee"}')
    f.write("c.json", "")
    f.write("d.json", b'{"id": 6, "name": "\xff\xfeoops"}\n')
    f.write("e.json", '{"id": 7, "' + UNI + '": "\u00fc"}\n')
    rows = f.run()
    assert f.columns == ["id", "name", UNI, "tags", "_rescued_data"] or sorted(f.columns) == sorted(
        ["id", "name", UNI, "tags", "_rescued_data"])
    assert len(rows) == 7  # 2 + 3 records (one broken) + 0 + 1 + 1: nothing dropped
    by_id = {r["id"]: r for r in rows if r["id"] is not None}
    assert by_id["1"]["tags"] == "[1,2]" and by_id["2"]["tags"] == '{"x":1}'
    assert "\ufffd" in by_id["6"]["name"] and by_id["7"][UNI] == "\u00fc"
    broken = [rescued(r["_rescued_data"]) for r in rows if r["id"] is None and r["name"] is None]
    assert len(broken) == 1 and broken[0] is not None
    assert broken[0]["_corrupt_record"] == '{"id": 4, "name": '
    assert broken[0]["_file_path"].startswith("file:") and broken[0]["_file_path"].endswith("/landing/b.json")
    dee = f.where("name", "dee")[0]
    assert dee["id"] is None and rescued(dee["_rescued_data"])["ID"] == "5"  # type: ignore[index]
    assert by_id["1"]["_rescued_data"] is None
    # a rerun finds nothing new: exactly once
    assert f.run() == [] and f.count() == 7


def test_inferred_types_hints_and_type_mismatch(flow: Callable[..., Flow]) -> None:
    f = flow({**JSON, "cloudFiles.inferColumnTypes": "true", "cloudFiles.schemaHints": "ts timestamp"})
    f.jsonl("a.json", {"id": 1, "amount": 1.5, "ts": "2024-01-01 10:00:00", "ok": True})
    f.jsonl("b.json", {"id": "not_a_number", "amount": 2.5, "ts": "yesterday", "ok": False})
    f.run(lambda df: df.select("*", "_metadata.file_name", "_metadata.file_size",
                               "_metadata.file_modification_time"))
    df = f.df()
    assert {fl.name: fl.dataType.simpleString() for fl in df.schema.fields} == {
        "amount": "double", "id": "string", "ok": "boolean", "ts": "timestamp", "_rescued_data": "string"}
    bad = f.where("amount", 2.5)[0]
    assert bad["ts"] is None and bad["ok"] is False and bad["id"] == "not_a_number"
    r = rescued(bad["_rescued_data"])
    assert r is not None and r["ts"] == "yesterday" and r["_file_path"].endswith("b.json")
    assert bad["file_name"] == "b.json" and bad["file_size"] > 0 and bad["file_modification_time"] is not None
    assert (f.schema_location / "_schemas" / "0").exists()


def test_type_mismatch_after_inference(flow: Callable[..., Flow]) -> None:
    f = flow({**JSON, "cloudFiles.inferColumnTypes": "true"})
    f.jsonl("a.json", {"id": 1, "n": {"a": 1}})
    f.run()
    f.jsonl("b.json", {"id": "x", "n": "flat"}, {"id": 1.5, "n": {"a": 2}})
    rows = f.run()
    assert [(r["id"], r["n"]["a"] if r["n"] else None) for r in rows] == [(None, None), (None, 2)]
    assert next(rescued(r["_rescued_data"]) for r in rows)["n"] == "flat"  # type: ignore[index]
    assert [rescued(r["_rescued_data"]) for r in rows][1]["id"] == "1.5"  # type: ignore[index]


def test_multiline_json(flow: Callable[..., Flow]) -> None:
    f = flow({**JSON, "multiLine": "true"})
    f.write("a.json", json.dumps([{"id": 1, "v": "a"}, {"id": 2, "v": "b"}], indent=2))
    f.write("b.json", json.dumps({"id": 3, "v": "c"}, indent=2))
    f.write("c.json", '[{"id": 4,\n "v": ')
    rows = f.run()
    assert len(rows) == 4 and sorted(r["id"] for r in rows if r["id"]) == ["1", "2", "3"]
    corrupt = next(r for r in rows if r["id"] is None)
    assert rescued(corrupt["_rescued_data"])["_corrupt_record"].startswith("[{")  # type: ignore[index]


def test_add_new_columns_stops_then_retry_continues(flow: Callable[..., Flow]) -> None:
    f = flow(JSON)
    f.jsonl("a.json", {"id": 1})
    f.run()
    f.jsonl("b.json", {"id": 2, "Extra": "x"}, {"id": 3})
    with pytest.raises(UnknownFieldError) as err:
        f.run()
    assert err.value.code == "UNKNOWN_FIELD_EXCEPTION"
    assert "Encountered unknown fields during parsing: [Extra]" in str(err.value) and "b.json" in str(err.value)
    assert f.count() == 1  # the batch with the new column was not committed
    f.run()  # the next attempt widens the stored schema and continues with the same batch
    assert f.columns == ["id", "Extra", "_rescued_data"]
    assert f.rows("id", "Extra") == [("1", None), ("2", "x"), ("3", None)]
    assert (f.schema_location / "_schemas" / "1").exists()
    f.jsonl("c.json", {"id": 4, "Extra": "y", "more": 1}, {"id": 5, "extra": "case variant"})
    f.run_with_retry()  # the runner's single retry within one update
    assert f.count() == 5 and f.where("id", "4")[0]["more"] == "1"
    assert rescued(f.where("id", "5")[0]["_rescued_data"])["extra"] == "case variant"  # type: ignore[index]


def test_fail_on_new_columns_stays_stopped(flow: Callable[..., Flow]) -> None:
    f = flow({**JSON, "cloudFiles.schemaEvolutionMode": "failOnNewColumns"})
    f.jsonl("a.json", {"id": 1})
    f.run()
    f.jsonl("b.json", {"id": 2, "extra": "x"})
    for _ in range(2):
        with pytest.raises(UnknownFieldError, match="automatic retry: false"):
            f.run()
    assert f.count() == 1 and not (f.schema_location / "_schemas" / "1").exists()


def test_rescue_mode_never_changes_schema(flow: Callable[..., Flow]) -> None:
    f = flow({**JSON, "cloudFiles.schemaEvolutionMode": "rescue"})
    f.jsonl("a.json", {"id": 1})
    f.run()
    f.jsonl("b.json", {"id": 2, "extra": "x", "n": {"a": 1}})
    f.run()
    assert f.columns == ["id", "_rescued_data"]
    r = rescued(f.where("id", "2")[0]["_rescued_data"])
    assert r is not None and r["extra"] == "x" and r["n"] == '{"a":1}'


def test_user_schema_none_mode_and_missing_columns(flow: Callable[..., Flow]) -> None:
    f = flow(JSON, schema="id BIGINT, name STRING, city STRING")
    f.jsonl("a.json", {"id": 1, "name": "ann", "extra": 1}, {"id": "x", "name": "bob"})
    f.run()
    assert f.columns == ["id", "name", "city"]  # no rescued column unless asked for
    assert f.rows("id", "name", "city") == [(1, "ann", None), (None, "bob", None)]
    g = flow({**JSON, "rescuedDataColumn": "_bad"}, schema="id BIGINT, name STRING", name="g")
    g.jsonl("a.json", {"id": 1, "name": "ann", "extra": 1}, {"id": "x", "name": "bob"})
    rows = g.run()
    assert g.columns == ["id", "name", "_bad"]
    bads = {r["name"]: rescued(r["_bad"]) for r in rows}
    assert bads["ann"] is not None and bads["ann"]["extra"] == "1"
    assert bads["bob"] is not None and bads["bob"]["id"] == "x"


def test_empty_folder_needs_a_schema(flow: Callable[..., Flow]) -> None:
    f = flow(JSON)
    f.src.mkdir(parents=True)
    with pytest.raises(AutoLoaderError, match="CF_EMPTY_DIR_FOR_SCHEMA_INFERENCE"):
        f.df()


EDGE_LINES = [
    '{"id": 1, "amount": 1.50, "ok": true, "ts": "2024-01-01 10:00:00", "name": "ann", "tags": [1, 2], '
    '"obj": {"a": 1, "b": [true, null]}}',
    '{"id": 2, "amount": 1e3, "ok": "yes", "ts": "yesterday", "name": 5, "tags": {"x": 1}, "obj": [1]}',
    '{"id": -0, "amount": -0.0, "name": null, "extra": null, "Name": "case", "nested": {"k": "v\\u00e9\\n"}}',
    '{"id": 12345678901234567890123, "amount": NaN, "ok": false, "name": "big"}',
    '{"id": "7", "amount": "2.5", "name": "strings"}',
    "{'id': 8, 'name': 'single quotes'}",
    '{"id": 9, "name": "trailing"} x',
    '{"id": 10}{"id": 11}',
    "[1, 2]",
    "5",
    '"just a string"',
    '{"id": 12, "name": ',
    "{}",
    '{"id": 13, "name": "tab\there"}',
    '{"": "empty key", "id": 14, "amount": -Infinity, "deep": {"a": {"b": {"c": [1, {"d": 2}]}}}}',
    '{"id": 15, "tags": [1, "x"], "obj": {"a": "not int"}, "amount": 1.0E-7}',
    '{"id": 16, "name": "caf\u00e9 \u540d", "' + UNI + '": 1}',
]
# whitespace-only lines: no records, as in Spark's JSON reader (Jackson finds no token in them)
BLANK_LINES = ["\t", " \t ", "  ", "\t\r"]
EDGE_SCHEMA = ("id BIGINT, amount DOUBLE, ok BOOLEAN, ts TIMESTAMP, name STRING, tags ARRAY<INT>, "
               "obj STRUCT<a: INT>")


def test_jvm_json_parser_matches_spark_expressions(flow: Callable[..., Flow], spark: SparkSession) -> None:
    """The framework jar's JSON parser and the built-in-expression path give the same rows on edge input."""
    def write(f: Flow) -> None:
        f.write("a.json", "\n".join(EDGE_LINES) + "\n" + "\n".join(BLANK_LINES) + "\n")
        f.write("b.json", b'{"id": 17, "name": "\xff\xfebytes"}')

    jvm_rows, expression_rows = both_parsers(
        spark, lambda name: flow({**JSON, "rescuedDataColumn": "_rescued_data"}, schema=EDGE_SCHEMA, name=name),
        write)
    assert len(jvm_rows) == len(EDGE_LINES) + 1
    only_jvm = [dict(r) for r in jvm_rows if r not in expression_rows]
    only_expr = [dict(r) for r in expression_rows if r not in jvm_rows]
    # a struct's key that no field has: the jar rescues it under its path, the built-in path the struct's whole text
    # and a nested value of the wrong kind: the jar rescues it under its path, the built-in path loses it
    assert [r["_rescued_data"] for r in only_jvm] == [{"obj.b": "[true,null]", "_file_path": "a.json"},
                                                      {"tags": '[1,"x"]', "obj.a": "not int", "_file_path": "a.json"}]
    assert [r["_rescued_data"] for r in only_expr] == [{"obj": '{"a":1,"b":[true,null]}', "_file_path": "a.json"},
                                                       {"tags": '[1,"x"]', "_file_path": "a.json"}]
    assert [{**r, "_rescued_data": None} for r in only_jvm] == [{**r, "_rescued_data": None} for r in only_expr]


def test_case_insensitive_and_repeated_keys(flow: Callable[..., Flow]) -> None:
    """readerCaseSensitive=false places case variants in their column; a repeated key keeps its last value (as
    Spark's JSON reader does for a struct). The built-in-expression path fails on such records
    (DUPLICATED_MAP_KEY), so this runs on the framework jar's parser."""
    f = flow({**JSON, "rescuedDataColumn": "_rescued_data", "readerCaseSensitive": "false"},
             schema="id BIGINT, Name STRING")
    f.jsonl("a.json", {"ID": 1, "name": None, "NAME": "last"}, {"id": 2, "name": "x", "Other": "o"})
    f.write("b.json", '{"id": 3, "id": 4, "name": "twice"}\n')
    rows = {r["id"]: r for r in f.run()}
    assert rows[1]["Name"] == "last" and rows[1]["_rescued_data"] is None
    assert rows[2]["Name"] == "x" and rescued(rows[2]["_rescued_data"])["Other"] == "o"  # type: ignore[index]
    assert rows[4]["Name"] == "twice" and 3 not in rows



NESTED_FIRST = {"id": 1, "s": {"x": 1}, "items": [{"a": 1}]}
NESTED_NEW = {"id": 2, "s": {"x": 2, "y": 3, "X": 4}, "items": [{"a": 2}, {"a": 3, "b": [1]}]}


def test_new_nested_fields_stop_then_widen_the_struct(flow: Callable[..., Flow]) -> None:
    """A key inside a struct column that no field has is a new column too: addNewColumns stops the flow naming
    its path, and the retry continues with the struct widened; a case variant of a nested field is rescued."""
    f = flow({**JSON, "cloudFiles.inferColumnTypes": "true"})
    f.jsonl("a.json", NESTED_FIRST)
    f.run()
    f.jsonl("b.json", NESTED_NEW)
    with pytest.raises(UnknownFieldError, match=r"parsing: \[s\.y, s\.X, items\[1\]\.b\], which can be fixed by an "
                                                r"automatic retry: true"):
        f.run()
    f.run()
    row = f.where("id", 2)[0]
    assert row["s"].asDict() == {"x": 2, "y": 3}
    assert [i.asDict() for i in row["items"]] == [{"a": 2, "b": None}, {"a": 3, "b": [1]}]
    assert rescued(row["_rescued_data"])["s.X"] == "4"  # type: ignore[index]


@pytest.mark.parametrize("jvm_parser", ["true", "false"])
def test_new_nested_fields_are_rescued_not_dropped(flow: Callable[..., Flow], spark: SparkSession,
                                                   jvm_parser: str) -> None:
    """rescue mode: nested keys no field has go to the rescued data (the jar's parser: each under its path; Spark's
    built-in path: the whole value of the struct column), and the stored schema does not change."""
    spark.conf.set("medallion.autoloader.jvmParser", jvm_parser)
    try:
        f = flow({**JSON, "cloudFiles.inferColumnTypes": "true", "cloudFiles.schemaEvolutionMode": "rescue"})
        f.jsonl("a.json", NESTED_FIRST)
        f.run()
        f.jsonl("b.json", NESTED_NEW)
        f.run()
    finally:
        spark.conf.unset("medallion.autoloader.jvmParser")
    row = f.where("id", 2)[0]
    assert row["s"].asDict() == {"x": 2}
    data = rescued(row["_rescued_data"])
    assert data is not None
    if jvm_parser == "true":
        assert {k: v for k, v in data.items() if k != "_file_path"} == {"s.y": "3", "s.X": "4", "items[1].b": "[1]"}
    else:  # one level deep: the struct's whole text
        assert json.loads(data["s"]) == {"x": 2, "y": 3, "X": 4}
    assert not (f.schema_location / "_schemas" / "1").exists()


def test_whitespace_only_lines_are_no_records(flow: Callable[..., Flow]) -> None:
    """Spark's JSON reader skips a line of spaces and tabs; it was an all-NULL corrupt record here."""
    f = flow(JSON)
    f.write("a.json", '{"id": 1}\n\t\n \t \n{"id": 2}\r\n\t\r\n')
    f.write("b.json", "\t\n")  # a file of whitespace only
    rows = f.run()
    assert sorted(r["id"] for r in rows) == ["1", "2"]
    assert all(r["_rescued_data"] is None for r in rows)
    g = flow({**JSON, "multiLine": "true"}, name="multi")
    g.write("a.json", '{"id": 3}')
    g.write("b.json", " \t\n\t\n")
    assert [r["id"] for r in g.run()] == ["3"]


def test_a_second_source_of_the_same_plan_reuses_its_projection(flow: Callable[..., Flow]) -> None:
    f = flow({**JSON, "cloudFiles.schemaEvolutionMode": "rescue"})
    f.jsonl("a.json", {"id": 1, "name": "ann"})
    first = f.run()
    cache = f.spark.sparkContext.__dict__.get("_medallion_parsed_projections")
    assert cache  # the framework jar's parser path keeps the projection per plan
    kept = dict(cache)
    f.jsonl("b.json", {"id": 2, "name": "cy", "extra": 2})
    second = f.run()  # a new source of the same plan: the same columns, rescued data included
    assert all(cache.get(plan) is stages for plan, stages in kept.items())
    assert [(r["id"], r["name"]) for r in first] == [("1", "ann")] and [r["name"] for r in second] == ["cy"]
    assert first[0]["_rescued_data"] is None and rescued(second[0]["_rescued_data"])["extra"] == "2"  # type: ignore[index]


def test_a_source_of_the_same_plan_elsewhere_reuses_its_projection(flow: Callable[..., Flow]) -> None:
    """The projection depends on the columns and options only: another landing folder and schema location
    (every test of the test kit, every pipeline of a warm engine) takes the one built before."""
    options = {**JSON, "cloudFiles.schemaEvolutionMode": "rescue"}
    first = flow(options, name="first")
    first.jsonl("a.json", {"id": 1, "name": "ann"})
    first.run()
    cache = first.spark.sparkContext.__dict__["_medallion_parsed_projections"]
    kept = dict(cache)
    other = flow(options, name="other")
    other.jsonl("a.json", {"id": 2, "name": "bo"})
    rows = other.run()
    assert dict(cache) == kept and all(cache[plan] is stages for plan, stages in kept.items())
    assert [(r["id"], r["name"]) for r in rows] == [("2", "bo")]
