"""cloudFiles CSV/parquet/text/binaryFile/xml/avro, file selection options, exactly-once, cleanSource."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from framework.autoloader import clean_source
from framework.errors import AutoLoaderError, UnknownFieldError
from tests.integration.autoloader.conftest import Flow, both_parsers, rescued

pytestmark = pytest.mark.spark


def test_csv_header_by_name_with_bad_rows(flow: Callable[..., Flow]) -> None:
    f = flow({"cloudFiles.format": "csv", "header": "true", "cloudFiles.schemaEvolutionMode": "rescue",
              "cloudFiles.schemaHints": "qty int"})
    f.write("a.csv", 'id,name,qty\n1,"Smith, Ann",3\n2,bob,x\n')
    f.df()  # the schema is inferred from a.csv only
    f.write("b.csv", 'qty,id,Name,extra\n5,3,cy,e1\n6,4,dee\n')  # other order, case variant, extra, missing
    f.write("c.csv", 'id,name,qty\n5,"broken,7\n6,eve,1')  # bad quoting, no trailing newline
    f.write("d.csv", "")
    rows = f.run()
    assert f.columns == ["id", "name", "qty", "_rescued_data"]
    assert len(rows) == 6
    by_id = {r["id"]: r for r in rows if r["id"]}
    assert by_id["1"]["name"] == "Smith, Ann" and by_id["1"]["qty"] == 3 and by_id["1"]["_rescued_data"] is None
    assert by_id["2"]["qty"] is None and rescued(by_id["2"]["_rescued_data"])["qty"] == "x"  # type: ignore[index]
    r3 = rescued(by_id["3"]["_rescued_data"])
    assert by_id["3"]["qty"] == 5 and by_id["3"]["name"] is None and r3 is not None
    assert r3["Name"] == "cy" and r3["extra"] == "e1" and r3["_file_path"].endswith("b.csv")
    assert by_id["4"]["name"] is None and rescued(by_id["4"]["_rescued_data"])["Name"] == "dee"  # type: ignore[index]
    assert by_id["6"]["name"] == "eve"
    corrupt = [r for r in rows if r["id"] is None]
    assert len(corrupt) == 1 and rescued(corrupt[0]["_rescued_data"])["_corrupt_record"] == '5,"broken,7'  # type: ignore[index]


def test_csv_new_header_column_stops_add_new_columns(flow: Callable[..., Flow]) -> None:
    f = flow({"cloudFiles.format": "csv", "header": "true", "sep": ";"})
    f.write("a.csv", "id;name\n1;a\n")
    f.run()
    f.write("b.csv", "id;name;city\n2;b;Oslo\n")
    with pytest.raises(UnknownFieldError, match=r"\[city\]"):
        f.run()
    f.run()
    assert f.rows("id", "city") == [("1", None), ("2", "Oslo")]


def test_csv_with_inferred_schema_assumes_a_header_row(flow: Callable[..., Flow]) -> None:
    """Databricks' DMS CDC demo: DMS files written with column names, read without a `header` option, then
    `Op` and `dmsTimestamp` used by name. Auto Loader assumes a header when it infers a CSV schema."""
    f = flow({"cloudFiles.format": "csv", "cloudFiles.inferSchema": "true", "cloudFiles.inferColumnTypes": "true"})
    f.write("LOAD00000001.csv", "Op,dmsTimestamp,id,name\nI,2024-01-01 10:00:00,1,ann\n\t\nU,2024-01-02 10:00:00,1,bo\n")
    rows = f.run()
    assert f.columns == ["Op", "dmsTimestamp", "id", "name", "_rescued_data"]
    assert [(r["Op"], r["id"], r["name"]) for r in rows] == [("I", 1, "ann"), ("U", 1, "bo")]  # the tab line: none
    g = flow({"cloudFiles.format": "csv", "header": "false"}, name="no_header")
    g.write("a.csv", "1,x\n")
    g.run()
    assert g.columns == ["_c0", "_c1", "_rescued_data"]


def test_csv_without_header(flow: Callable[..., Flow]) -> None:
    f = flow({"cloudFiles.format": "csv"}, schema="a INT, b STRING")
    f.write("a.csv", "1,x\n2,y,surplus\n")
    f.options["rescuedDataColumn"] = "_rescued_data"
    rows = f.run()
    assert [(r["a"], r["b"]) for r in rows] == [(1, "x"), (2, "y")]
    assert rescued(rows[1]["_rescued_data"])["_c2"] == "surplus"  # type: ignore[index]


CSV_EDGE = ('id,name,qty,amount,Name,extra,id\n1,"Smith, Ann",3,1.5,,e,9\n2,bob,x,1e3\n'
            '3,"q ""quoted"" name",4,abc,N,,\n4,"open,5\n\t,tab only\n  \n\t \t\n5,  spaces  ,6,-0.0,x,y,z,1,2,3\n'
            '6,caf\u00e9 \u540d,7,NaN\n#7,comment,1\n8,,,\n"9",nine,"10",2.5\n12,back\\slash,1\n'
            + ",".join(str(i) for i in range(13, 29)) + "\n" + ",".join(str(i) for i in range(29, 43)) + ",\n")


@pytest.mark.parametrize("options", [
    {"header": "true"},
    {"header": "true", "readerCaseSensitive": "false", "comment": "#", "nullValue": "N", "skipRows": "1"},
    {"header": "true", "sep": ";", "quote": "'", "ignoreLeadingWhiteSpace": "true"},
    {"header": "false"},
], ids=["header", "options", "sep-quote", "no-header"])
def test_jvm_csv_parser_matches_spark_expressions(flow: Callable[..., Flow], spark: SparkSession,
                                                  options: dict[str, str]) -> None:
    """The framework jar's CSV parsers and the built-in-expression path give the same rows on edge input."""
    text = CSV_EDGE.replace(",", ";") if options.get("sep") == ";" else CSV_EDGE

    def write(f: Flow) -> None:
        f.write("a.csv", ("skipped line\n" if "skipRows" in options else "") + text)
        f.write("b.csv", "id,qty\n10,11\n")
        f.write("c.csv", "")
        f.write("d.csv", b"id,name\n11,\xff\xfebytes\n")

    jvm_rows, expression_rows = both_parsers(spark, lambda name: flow(
        {"cloudFiles.format": "csv", "rescuedDataColumn": "_rescued_data", **options},
        schema="id INT, name STRING, qty INT, amount DOUBLE", name=name), write)
    assert len(jvm_rows) >= 9  # every record of a.csv, b.csv and d.csv
    assert [r for r in jvm_rows if r not in expression_rows] == [r for r in expression_rows if r not in jvm_rows]


def test_csv_header_of_a_file_split_into_blocks(flow: Callable[..., Flow], spark: SparkSession) -> None:
    """A file larger than spark.sql.files.maxPartitionBytes is read in blocks by separate tasks: the blocks after
    the first read the header from the file's start; every record is read once, by name."""
    body = "".join(f"{i},n{i},{i % 7}\n" for i in range(2000))
    spark.conf.set("spark.sql.files.maxPartitionBytes", "4096")
    try:
        jvm_rows, expression_rows = both_parsers(spark, lambda name: flow(
            {"cloudFiles.format": "csv", "header": "true", "skipRows": "1", "rescuedDataColumn": "_rescued_data"},
            schema="id INT, name STRING, qty INT", name=name),
            lambda f: f.write("a.csv", "# produced by a test\nqty,name,id\n" + body))
    finally:
        spark.conf.unset("spark.sql.files.maxPartitionBytes")
    assert len(jvm_rows) == 2000 and jvm_rows == expression_rows
    by_name = {dict(r)["name"]: dict(r) for r in jvm_rows}
    assert by_name["n10"] == {"id": 3, "name": "n10", "qty": 10, "_rescued_data": None}  # columns by the header


def test_parquet_partitions_and_new_columns(flow: Callable[..., Flow], spark: object, tmp_path: Path) -> None:
    f = flow({"cloudFiles.format": "parquet"})
    sp = f.spark
    sp.createDataFrame([(1, "a")], "id BIGINT, v STRING").write.parquet(str(f.src / "day=2024-01-01"))
    rows = f.run()
    assert f.columns == ["id", "v", "day", "_rescued_data"] and [(r["id"], r["day"]) for r in rows] == [
        (1, "2024-01-01")]
    sp.createDataFrame([(2, "b", 9.5)], "id BIGINT, v STRING, w DOUBLE").write.parquet(str(f.src / "day=2024-01-02"))
    with pytest.raises(UnknownFieldError, match=r"\[w\]"):
        f.run()
    rows = f.run()
    assert [(r["id"], r["w"], r["day"]) for r in rows] == [(2, 9.5, "2024-01-02")]
    g = flow({"cloudFiles.format": "parquet"}, name="nested")
    sp.createDataFrame([(1, (1,))], "id BIGINT, s STRUCT<x: BIGINT>").write.parquet(str(g.src / "a"))
    g.run()
    sp.createDataFrame([(2, (2, "new"))], "id BIGINT, s STRUCT<x: BIGINT, y: STRING>").write.parquet(str(g.src / "b"))
    with pytest.raises(UnknownFieldError, match=r"\[s\.y\]"):  # Spark's parquet reader would drop s.y silently
        g.run()
    assert [r["s"].asDict() for r in g.run()] == [{"x": 2, "y": "new"}]


def test_parquet_rescue_mode_keeps_new_columns_in_the_rescued_data(flow: Callable[..., Flow]) -> None:
    """rescue mode (and a user schema with rescuedDataColumn): columns a parquet file has and the schema lacks are
    rescued with the file's path, not dropped; the schema does not change."""
    f = flow({"cloudFiles.format": "parquet", "cloudFiles.schemaEvolutionMode": "rescue"})
    sp = f.spark
    sp.createDataFrame([(1, "a")], "id BIGINT, v STRING").write.parquet(str(f.src / "a"))
    f.run()
    sp.createDataFrame([(2, "b", 9.5, (1, "x")), (3, "c", None, None)],
                       "id BIGINT, v STRING, w DOUBLE, s STRUCT<k: INT, t: STRING>").write.parquet(str(f.src / "b"))
    rows = {r["id"]: r for r in f.run()}
    assert f.columns == ["id", "v", "_rescued_data"]
    data = rescued(rows[2]["_rescued_data"])
    assert data is not None and data["w"] == "9.5" and json.loads(data["s"]) == {"k": 1, "t": "x"}
    assert "/b/" in data["_file_path"] and rows[3]["_rescued_data"] is None  # nothing to rescue: NULL
    g = flow({"cloudFiles.format": "parquet", "rescuedDataColumn": "_rescued"}, schema="id BIGINT", name="g")
    sp.createDataFrame([(4, "d")], "id BIGINT, v STRING").write.parquet(str(g.src / "a"))
    assert [(r["id"], rescued(r["_rescued"])["v"]) for r in g.run()] == [(4, "d")]  # type: ignore[index]


def test_text_binary_xml_and_avro(flow: Callable[..., Flow]) -> None:
    t = flow({"cloudFiles.format": "text"}, name="t")
    t.write("a.txt", "line 1\nline 2")
    assert [r["value"] for r in t.run()] == ["line 1", "line 2"] and t.columns == ["value"]
    b = flow({"cloudFiles.format": "binaryFile", "pathGlobFilter": "*.bin"}, name="b")
    b.write("a.bin", b"\x00\x01")
    b.write("skip.txt", "no")
    rows = b.run()
    assert b.columns == ["path", "modificationTime", "length", "content"] and [bytes(r["content"]) for r in rows] == [
        b"\x00\x01"]
    x = flow({"cloudFiles.format": "xml", "rowTag": "row"}, name="x")
    x.write("a.xml", "<rows><row><id>1</id><n>a</n></row><row><id>2</id><n>b</n></row></rows>")
    assert sorted((r["id"], r["n"]) for r in x.run()) == [("1", "a"), ("2", "b")]
    a = flow({"cloudFiles.format": "avro"}, name="a")
    with pytest.raises(AutoLoaderError, match="not supported locally"):
        a.df()


def test_file_selection_options(flow: Callable[..., Flow]) -> None:
    old, new = time.time() - 86400 * 3, time.time() - 3600
    f = flow({"cloudFiles.format": "json", "pathGlobFilter": "*.json", "modifiedAfter": time.strftime(
        "%Y-%m-%dT%H:%M:%S", time.gmtime(time.time() - 86400 * 2)), "recursiveFileLookup": "true"})
    f.jsonl("old.json", {"id": "old"}, mtime=old)
    f.jsonl("sub/k=1/new.json", {"id": "new"}, mtime=new)
    f.jsonl("new.txt", {"id": "txt"}, mtime=new)
    f.jsonl("_hidden.json", {"id": "hidden"}, mtime=new)
    assert [r["id"] for r in f.run()] == ["new"] and "k" not in f.columns  # recursive: no partition columns


def test_include_existing_files_false_and_max_files(flow: Callable[..., Flow]) -> None:
    f = flow({"cloudFiles.format": "json", "cloudFiles.includeExistingFiles": "false",
              "cloudFiles.maxFilesPerTrigger": "1", "cloudFiles.schemaHints": "id string"})
    f.jsonl("existing.json", {"id": "e"}, mtime=time.time() - 60)
    assert f.run() == []
    for i in range(3):
        f.jsonl(f"n{i}.json", {"id": f"n{i}"}, mtime=time.time() + i)
    rows = f.run()
    assert sorted(r["id"] for r in rows) == ["n0", "n1", "n2"] and len(set(f.batches)) >= 3


def test_exactly_once_after_crash_and_rerun(flow: Callable[..., Flow]) -> None:
    f = flow({"cloudFiles.format": "json", "cloudFiles.maxFilesPerTrigger": "1"})
    for i in range(3):
        f.jsonl(f"f{i}.json", {"id": i}, mtime=time.time() - 10 + i)
    crashed: list[int] = []

    def crash_once(_: DataFrame, batch_id: int) -> None:
        if batch_id == 1 and not crashed:
            crashed.append(batch_id)
            raise RuntimeError("simulated crash after the Delta write, before the checkpoint commit")

    with pytest.raises(Exception, match="simulated crash"):
        f.run(on_batch=crash_once)
    f.run(on_batch=crash_once)  # batch 1 is replayed; its Delta write is skipped (txnVersion)
    assert sorted(r["id"] for r in f.read().collect()) == ["0", "1", "2"]
    f.jsonl("f0.json", {"id": "rewritten"})  # rewritten in place: not ingested again (allowOverwrites false)
    f.run(on_batch=crash_once)
    assert f.read().count() == 3


def test_allow_overwrites_ingests_a_changed_file_again(flow: Callable[..., Flow]) -> None:
    """cloudFiles.allowOverwrites=true: a file rewritten (or appended to) after its batch committed is ingested
    again, whole; unchanged files are not; a crash while the changed file's batch runs still ingests it once."""
    f = flow({"cloudFiles.format": "json", "cloudFiles.allowOverwrites": "true",
              "cloudFiles.schemaHints": "id string"})
    now = time.time()
    f.jsonl("a.json", {"id": "a1"}, mtime=now - 30)
    f.jsonl("b.json", {"id": "b1"}, mtime=now - 30)
    assert sorted(r["id"] for r in f.run()) == ["a1", "b1"]
    assert f.run() == []  # nothing changed: nothing ingested
    f.jsonl("a.json", {"id": "a1"}, {"id": "a2"}, mtime=now - 20)  # appended to: the whole file again
    assert sorted(r["id"] for r in f.run()) == ["a1", "a2"]
    assert f.run() == []
    # a crash in the batch of a changed file: the replay ingests its newest version exactly once
    g = flow({"cloudFiles.format": "json", "cloudFiles.allowOverwrites": "true",
              "cloudFiles.schemaHints": "id string"}, name="g")
    g.jsonl("a.json", {"id": "v1"}, mtime=now - 30)
    crashed: list[int] = []

    def crash_once(_: DataFrame, batch_id: int) -> None:
        if batch_id == 1 and not crashed:
            crashed.append(batch_id)
            raise RuntimeError("simulated crash after the Delta write, before the checkpoint commit")

    g.run(on_batch=crash_once)
    g.jsonl("a.json", {"id": "v2"}, mtime=now - 20)
    with pytest.raises(Exception, match="simulated crash"):
        g.run(on_batch=crash_once)
    g.run(on_batch=crash_once)
    g.run(on_batch=crash_once)
    assert sorted(r["id"] for r in g.read().collect()) == ["v1", "v2"]
    # without the option (the default) a rewritten file is not read again: see test_exactly_once_after_crash


def test_allow_overwrites_across_a_compacted_source_log(flow: Callable[..., Flow], spark: SparkSession) -> None:
    """Spark compacts the file-source log (every 2 batches here): a changed file logged in a compact file is
    found there too."""
    spark.conf.set("spark.sql.streaming.fileSource.log.compactInterval", "2")
    try:
        f = flow({"cloudFiles.format": "json", "cloudFiles.allowOverwrites": "true",
                  "cloudFiles.maxFilesPerTrigger": "1", "cloudFiles.schemaHints": "id string"})
        now = time.time()
        for i in range(4):
            f.jsonl(f"f{i}.json", {"id": f"f{i}"}, mtime=now - 60 + i)
        assert len(f.run()) == 4
        assert list((f.checkpoint / "sources" / "0").glob("*.compact"))
        f.jsonl("f0.json", {"id": "f0-new"}, mtime=now - 10)
        assert [r["id"] for r in f.run()] == ["f0-new"]
        assert f.run() == []
    finally:
        spark.conf.unset("spark.sql.streaming.fileSource.log.compactInterval")


def test_a_file_that_disappears_after_listing_stops_the_flow(flow: Callable[..., Flow], spark: SparkSession,
                                                             tmp_path: Path) -> None:
    """A file logged for a batch and deleted before the batch read it (here: the batch failed, and its replay
    finds the file gone): the flow stops naming the file and commits nothing; once the file is back, the rerun
    ingests the whole batch (Spark's file source alone would skip the file and mark it ingested)."""
    f = flow({"cloudFiles.format": "json"})
    f.jsonl("a.json", {"id": 1})
    second = f.jsonl("b.json", {"id": 2})
    with pytest.raises(Exception, match="simulated crash"):  # batch 0 is planned (both files logged), not committed
        f.run(lambda df: df.where(F.raise_error(F.lit("simulated crash")).isNull()), delta=True)
    kept = second.rename(tmp_path / "b.json.saved")
    with pytest.raises(AutoLoaderError, match=r"b\.json was listed for this batch but disappeared"):
        f.run(delta=True)
    assert f.count() == 0
    kept.rename(second)
    f.run(delta=True)
    assert f.rows("id") == [("1",), ("2",)]
    # spark.sql.files.ignoreMissingFiles=true: Spark's behaviour, the vanished file is skipped
    g = flow({"cloudFiles.format": "json"}, name="g")
    g.jsonl("a.json", {"id": 1})
    g.jsonl("b.json", {"id": 2})
    with pytest.raises(Exception, match="simulated crash"):
        g.run(lambda df: df.where(F.raise_error(F.lit("simulated crash")).isNull()), delta=True)
    (g.src / "b.json").unlink()
    spark.conf.set("spark.sql.files.ignoreMissingFiles", "true")
    try:
        g.run(delta=True)
    finally:
        spark.conf.unset("spark.sql.files.ignoreMissingFiles")
    assert g.rows("id") == [("1",)]


def test_clean_source_move_and_delete(flow: Callable[..., Flow], tmp_path: Path) -> None:
    archive = tmp_path / "archive"
    opts = {"cloudFiles.format": "json", "cloudFiles.cleanSource": "MOVE",
            "cloudFiles.cleanSource.moveDestination": str(archive),
            "cloudFiles.cleanSource.retentionDuration": "0 seconds", "cloudFiles.maxFilesPerTrigger": "1"}
    f = flow(opts)
    f.jsonl("d/a.json", {"id": 1}, mtime=time.time() - 10)
    f.run()  # a.json committed (retention 0: cleaned at the next call)
    f.jsonl("b.json", {"id": 2, "new": 1}, mtime=time.time() - 5)
    f.options["cloudFiles.cleanSource"] = "OFF"
    with pytest.raises(UnknownFieldError):
        f.run()  # the batch of b.json failed
    f.options["cloudFiles.cleanSource"] = "MOVE"
    moved = clean_source(str(f.src), opts, checkpoint_location=str(f.checkpoint))
    assert moved == [f.src / "d" / "a.json"] and (archive / "d" / "a.json").exists()
    assert (f.src / "b.json").exists()  # never the files of a failed batch
    f.run()
    assert clean_source(str(f.src), opts, checkpoint_location=str(f.checkpoint)) == [f.src / "b.json"]
    assert f.count() == 2 and f.run() == []
    g = flow(opts, name="g")
    g.options["cloudFiles.cleanSource.moveDestination"] = str(g.src / "archive")
    with pytest.raises(AutoLoaderError, match="inside the source folder"):
        g.df()
    d_opts = {"cloudFiles.format": "json", "cloudFiles.cleanSource": "DELETE",
              "cloudFiles.cleanSource.retentionDuration": "1 hour"}
    d = flow(d_opts, name="d")
    d.jsonl("x.json", {"id": 1})
    d.run()
    assert clean_source(str(d.src), d_opts, checkpoint_location=str(d.checkpoint)) == []  # retention not over
    later = __import__("datetime").datetime.fromtimestamp(time.time() + 7200)
    assert clean_source(str(d.src), d_opts, checkpoint_location=str(d.checkpoint), now=later) == [d.src / "x.json"]
    assert not (d.src / "x.json").exists()


def test_delta_sink_end_to_end(flow: Callable[..., Flow]) -> None:
    f = flow({"cloudFiles.format": "json"})
    f.jsonl("a.json", {"id": 1, "v": "a"}, {"id": 2, "v": "b"})
    f.run(delta=True)
    f.jsonl("b.json", {"id": 3, "v": "c"})
    f.run(delta=True)
    assert f.read().count() == 3 and f.read().columns == ["id", "v", "_rescued_data"]


@pytest.mark.parametrize(("option", "value"), [("quote", "ab"), ("maxCharsPerColumn", "many")])
def test_bad_csv_reader_options_fail_when_the_flow_is_defined(flow: Callable[..., Flow], option: str,
                                                              value: str) -> None:
    """On the driver, naming the source folder or the files, not later inside a Spark task."""
    f = flow({"cloudFiles.format": "csv", "header": "true", option: value})
    f.write("a.csv", "id,name\n1,a\n")
    with pytest.raises(AutoLoaderError, match=r"schema inference for cloudFiles.format 'csv' failed on 1 file\(s\) "
                                              rf"\(first: .*a\.csv\): .*{option}.*\. Fix"):
        f.df()
    g = flow({"cloudFiles.format": "csv", "header": "true", option: value}, schema="id INT, name STRING", name="g")
    g.write("a.csv", "id,name\n1,a\n")
    with pytest.raises(AutoLoaderError, match=rf"cloudFiles source '.*landing': invalid CSV reader options: .*"
                                              rf"{option}.*\. Fix"):
        g.df()
