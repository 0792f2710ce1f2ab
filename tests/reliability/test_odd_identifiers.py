"""Dataset names with spaces, dots, backticks and quotes, in a storage path with a space, a quote and a dot: the
update completes, the tables are published to the catalog (readable with proper quoting), and the next update
is incremental (issue 19, "Identifiers and paths")."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from pyspark.sql import DataFrame, SparkSession

from framework.runner.update import UpdateOptions, run_update
from framework.spec import load_spec
from tests.reliability.helpers import write_spec

pytestmark = pytest.mark.spark

PIPELINE = """
import dlt
from pyspark.sql import functions as F

@dlt.table(name="my table")
def raw():
    return spark.readStream.format("json").schema("id BIGINT, v STRING").load(spark.conf.get("landing"))

@dlt.table(name="a`b")
def copied():
    return dlt.read_stream("my table")

@dlt.table(name="it's")
def totals():
    return dlt.read("a`b").groupBy().agg(F.count("*").alias("n"), F.sum("id").alias("ids"))

@dlt.table(name="v1.2 \\"final\\"")
def final():
    return dlt.read("it's").select("n")
"""

QUALIFIED = """
import dlt

@dlt.table(name="my table")
def raw():
    return spark.range(3)

@dlt.table(name="a`b")
def copied():
    return dlt.read("LIVE.`my table`")

@dlt.table(name="it's")
def again():
    return spark.read.table("LIVE.`a``b`").union(dlt.read("`my table`"))
"""


NAMES = ["my table", "a`b", "it's", 'v1.2 "final"']


def table(spark: SparkSession, storage: Path, name: str) -> DataFrame:
    return spark.read.format("delta").load(str(storage / "tables" / name))


def quoted(*parts: str) -> str:
    """A SQL name: each part in backticks, backticks inside doubled."""
    return ".".join("`" + p.replace("`", "``") + "`" for p in parts)


def lines(folder: Path, name: str, ids: range) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text("".join(f'{{"id": {i}, "v": "it\'s `{i}`"}}\n' for i in ids))


def test_odd_names_in_an_odd_storage_path(spark: SparkSession, tmp_path: Path) -> None:
    landing = tmp_path / "land ing's"
    lines(landing, "a.json", range(3))
    storage = tmp_path / "st'or age.d"
    spec = load_spec(write_spec(tmp_path, {"p.py": PIPELINE}, name="odd", storage=storage,
                                configuration={"landing": str(landing)}))
    first = run_update(spec, UpdateOptions(out=io.StringIO()), spark=spark)
    assert [(f.flow, f.status) for f in first.flows] == [(n, "COMPLETED") for n in NAMES], first.flows
    assert [table(spark, storage, n).count() for n in NAMES[:2]] == [3, 3]
    assert table(spark, storage, "it's").first() == (3, 3)
    assert table(spark, storage, 'v1.2 "final"').first() == (3,)
    lines(landing, "b.json", range(3, 5))
    second = run_update(spec, UpdateOptions(out=io.StringIO()), spark=spark)
    assert [(f.flow, f.status) for f in second.flows] == [(n, "COMPLETED") for n in NAMES], second.flows
    assert second.flow("my table").num_output_rows == 2  # only the new file: incremental
    assert second.flow("a`b").num_output_rows == 2
    assert table(spark, storage, "it's").first() == (5, 10)
    values = sorted(r.v for r in table(spark, storage, "my table").collect())
    assert values[:2] == ["it's `0`", "it's `1`"]

    # Catalog publishing comes after the flows and never fails the update. Spark's local session catalog only
    # takes table names of letters, digits and `_` (Unity Catalog takes more): such tables are left out of the
    # local catalog with a note naming them and their path (read them by path), the others are published.
    assert first.succeeded and second.succeeded, first.error or second.error
    for name in NAMES:
        assert not spark.catalog.tableExists(quoted(spec.schema, name))


def test_odd_names_read_with_sql_quoting(spark: SparkSession, tmp_path: Path) -> None:
    """``LIVE.`a``b``` is how Spark SQL writes the dataset a`b: the backticks quote, a doubled one escapes."""
    spec = load_spec(write_spec(tmp_path, {"p.py": QUALIFIED}, name="odd_quoted"))
    result = run_update(spec, UpdateOptions(out=io.StringIO()), spark=spark)
    assert result.succeeded, [(f.flow, f.error) for f in result.flows if f.error] or result.error
    assert result.kinds == {"my table": "materialized_view", "a`b": "materialized_view",
                            "it's": "materialized_view"}
    assert table(spark, spec.storage, "it's").count() == 6  # read by path: not a local catalog name
