"""A corpus of bad files through Auto Loader (JSON and CSV, inferred schemas, as most pipelines read them): each
file's rows are asserted, what cannot be parsed lands in ``_rescued_data``, nothing is dropped silently, and
the update completes. A second update finds nothing new."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from framework.runner.update import UpdateOptions, UpdateResult, run_update
from framework.spec import load_spec
from tests.reliability.helpers import write_spec

pytestmark = pytest.mark.spark

BIG = 5 * 1024 * 1024  # an oversized line: one 5 MB value

PIPELINE = """
import dlt

FORMAT = spark.conf.get("format")

@dlt.table
def raw():
    reader = spark.readStream.format("cloudFiles").option("cloudFiles.format", FORMAT)
    if FORMAT == "csv":
        reader = reader.option("header", "true")
    return reader.load(spark.conf.get("landing")).select("*", "_metadata.file_name")
"""

JSON_FILES: dict[str, bytes] = {
    "a_good.json": b'{"id": "1", "name": "a"}\n{"id": "2", "name": "b"}\n',
    "b_empty.json": b"",
    "c_whitespace.json": b"  \n\t\n \r\n",
    "d_truncated.json": b'{"id": "3", "name": "c"}\n{"id": "4", "na',
    "e_latin1.json": '{"id": "5", "name": "caf\u00e9"}\n'.encode("latin-1"),
    "f_bom.json": b'\xef\xbb\xbf{"id": "6", "name": "f"}\n',
    "g_oversized.json": b'{"id": "7", "name": "' + b"x" * BIG + b'"}\n{"id": "8", "name": "h"}\n',
}

CSV_FILES: dict[str, bytes] = {
    "a_good.csv": b"id,name\n1,a\n2,b\n",
    "b_empty.csv": b"",
    "c_whitespace.csv": b"  \n\t\n",
    "d_truncated.csv": b'id,name\n3,c\n4,"d',
    "e_latin1.csv": "id,name\n5,caf\u00e9\n".encode("latin-1"),
    "f_bom.csv": b"\xef\xbb\xbfid,name\n6,f\n",
    "g_oversized.csv": b"id,name\n7," + b"x" * BIG + b"\n8,h\n",
    "h_columns.csv": b"id,name\n9\n10,j,surplus\n",
}


def rescued(row: dict[str, Any]) -> dict[str, Any]:
    return json.loads(row["_rescued_data"]) if row["_rescued_data"] is not None else {}


def by_file(spark: SparkSession, path: Path) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for row in spark.read.format("delta").load(str(path)).collect():
        out.setdefault(row["file_name"], []).append(row.asDict())
    return {name: sorted(rows, key=lambda r: str(r["id"])) for name, rows in out.items()}


Landed = tuple[UpdateResult, dict[str, list[dict[str, Any]]]]


def land_and_run(spark: SparkSession, root: Path, fmt: str, files: dict[str, bytes]) -> Landed:
    """One update over a corpus (its result, and the table's rows by file); a second update must find nothing
    new."""
    for name, data in files.items():
        (root / "landing" / name).parent.mkdir(parents=True, exist_ok=True)
        (root / "landing" / name).write_bytes(data)
    spec = load_spec(write_spec(root, {"p.py": PIPELINE}, name=f"bad_{fmt}_files",
                                configuration={"format": fmt, "landing": str(root / "landing")}))
    result = run_update(spec, UpdateOptions(out=io.StringIO()), spark=spark)
    assert result.flow("raw").status == "COMPLETED", result.flow("raw").error
    again = run_update(spec, UpdateOptions(out=io.StringIO()), spark=spark)
    assert again.flow("raw").num_output_rows == 0  # exactly once
    return result, by_file(spark, spec.tables_dir / "raw")


@pytest.fixture(scope="module")
def json_landed(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Landed:
    return land_and_run(spark, tmp_path_factory.mktemp("bad_json"), "json", JSON_FILES)


@pytest.fixture(scope="module")
def csv_landed(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Landed:
    return land_and_run(spark, tmp_path_factory.mktemp("bad_csv"), "csv", CSV_FILES)


def test_bad_json_files(json_landed: Landed) -> None:
    result, files = json_landed
    assert set(files) == {"a_good.json", "d_truncated.json", "e_latin1.json", "f_bom.json", "g_oversized.json"}
    assert result.flow("raw").num_output_rows == 2 + 2 + 1 + 1 + 2  # empty and whitespace files: no records
    rows = [r for name in files for r in files[name]]
    assert set(rows[0]) == {"id", "name", "_rescued_data", "file_name"}  # no column from the BOM or the broken line
    assert [(r["id"], r["name"]) for r in files["a_good.json"]] == [("1", "a"), ("2", "b")]
    good, broken = files["d_truncated.json"]
    assert (good["id"], good["name"], good["_rescued_data"]) == ("3", "c", None)
    assert (broken["id"], broken["name"]) == (None, None)  # the truncated record is kept whole in _rescued_data
    assert rescued(broken)["_corrupt_record"] == '{"id": "4", "na'
    assert rescued(broken)["_file_path"].endswith("/landing/d_truncated.json")
    (latin1,) = files["e_latin1.json"]
    assert (latin1["id"], latin1["name"]) == ("5", "caf\ufffd")  # a byte that is not UTF-8 is replaced, as in Spark
    (bom,) = files["f_bom.json"]
    assert (bom["id"], bom["name"], bom["_rescued_data"]) == ("6", "f", None)
    big, after = files["g_oversized.json"]
    assert (big["id"], len(big["name"]), big["_rescued_data"]) == ("7", BIG, None)
    assert (after["id"], after["name"]) == ("8", "h")
    assert result.succeeded


def test_bad_csv_files(csv_landed: Landed) -> None:
    result, files = csv_landed
    assert set(files) == {"a_good.csv", "d_truncated.csv", "e_latin1.csv", "f_bom.csv", "g_oversized.csv",
                          "h_columns.csv"}
    assert result.flow("raw").num_output_rows == 2 + 2 + 1 + 1 + 2 + 2
    rows = [r for name in files for r in files[name]]
    assert set(rows[0]) == {"id", "name", "_rescued_data", "file_name"}  # the BOM is not part of a column name
    assert [(r["id"], r["name"], r["_rescued_data"]) for r in files["a_good.csv"]] == [("1", "a", None),
                                                                                     ("2", "b", None)]
    good, cut = files["d_truncated.csv"]
    assert (good["id"], good["name"], good["_rescued_data"]) == ("3", "c", None)
    # an unterminated quote at the end of the file: the line is kept, as a corrupt record or as its value
    assert (cut["id"], cut["name"]) == ("4", "d") or rescued(cut).get("_corrupt_record") == '4,"d', cut
    (latin1,) = files["e_latin1.csv"]
    assert (latin1["id"], latin1["name"]) == ("5", "caf\ufffd")
    (bom,) = files["f_bom.csv"]
    assert (bom["id"], bom["name"], bom["_rescued_data"]) == ("6", "f", None)
    big, after = files["g_oversized.csv"]
    assert (big["id"], len(big["name"]), big["_rescued_data"]) == ("7", BIG, None)
    assert (after["id"], after["name"]) == ("8", "h")
    short, long = sorted(files["h_columns.csv"], key=lambda r: int(r["id"]))
    assert (short["id"], short["name"], short["_rescued_data"]) == ("9", None, None)  # a missing column is NULL
    assert (long["id"], long["name"]) == ("10", "j")
    surplus = rescued(long)  # a value beyond the header is rescued, not dropped
    assert "surplus" in [v for k, v in surplus.items() if k != "_file_path"], surplus
    assert result.succeeded
