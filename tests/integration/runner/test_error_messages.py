"""Error messages a new user meets (issue 39), on real updates: they name the user's own line and names, never the
framework's internal ones, say the fix in the pipeline's own language, and are printed once."""

from __future__ import annotations

import io
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from framework.errors import CdcError, GraphError
from framework.runner.update import UpdateOptions, run_update
from tests.integration.runner.pipeline_factory import make_pipeline, write_json_lines

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

PYTHON = """
import dlt


@dlt.table(
    comment="the decorator spans lines",
)
def broken():
    rows = {"a": 1}
    value = rows["missing"]  # raises
    return spark.range(value)


@dlt.table
def unresolved():
    df = spark.range(3)
    return df.select("nope")  # unresolved column


@dlt.table
def jvm_call():
    from pyspark import SparkContext

    SparkContext._active_spark_context._jvm.java.lang.Integer.parseInt("not a number")  # the JVM raises
    return spark.range(1)
"""


def line_of(source: str, marker: str) -> int:
    return next(i for i, line in enumerate(textwrap.dedent(source).splitlines(), 1) if marker in line)


def test_an_analysis_error_names_the_line_that_raised_and_is_printed_once(
    spark: SparkSession, tmp_path: Path
) -> None:
    spec = make_pipeline(tmp_path, {"p.py": PYTHON})
    out = io.StringIO()
    result = run_update(spec, UpdateOptions(out=out), spark=spark)
    assert isinstance(result.error, GraphError)
    where = {p.message.split("'")[1]: (p.file, p.line) for p in result.error.problems}
    path = str(tmp_path / "pipeline" / "p.py")
    assert where["broken"] == (path, line_of(PYTHON, "# raises"))  # not the decorator's line
    assert where["unresolved"] == (path, line_of(PYTHON, "# unresolved column"))
    assert where["jvm_call"] == (path, line_of(PYTHON, "# the JVM raises"))
    (jvm,) = [p.message for p in result.error.problems if "'jvm_call'" in p.message]
    assert "NumberFormatException" in jvm and "An error occurred while calling" not in jvm, jvm  # py4j's cause
    assert out.getvalue().count("[INVALID_GRAPH]") == 1, out.getvalue()  # in the summary, not also before it


SQL = """
CREATE OR REFRESH MATERIALIZED VIEW a AS SELECT 1 AS id;

CREATE OR REFRESH MATERIALIZED VIEW a2 AS SELECT 1 AS id, 'x' AS v;

CREATE OR REFRESH MATERIALIZED VIEW qualified AS
SELECT a.id, a2.v, z.id AS z_id FROM LIVE.a JOIN LIVE.a2 ON a.id = a2.id JOIN LIVE.a z ON z.id = a.id;
"""


def test_sql_tables_keep_their_names_for_columns_and_messages(spark: SparkSession, tmp_path: Path) -> None:
    spec = make_pipeline(tmp_path, {"q.sql": SQL})
    result = run_update(spec, UpdateOptions(out=io.StringIO()), spark=spark)
    assert result.succeeded, result.error
    rows = spark.read.format("delta").load(str(spec.tables_dir / "qualified")).collect()
    assert [tuple(r) for r in rows] == [(1, "x", 1)]  # `a.id`: a table is qualified by its own name

    broken = make_pipeline(
        tmp_path / "broken",
        {
            "q.sql": SQL
            + """
CREATE OR REFRESH MATERIALIZED VIEW wrong AS SELECT nope FROM LIVE.a JOIN LIVE.a2 USING (id);
"""
        },
    )
    failed = run_update(broken, UpdateOptions(out=io.StringIO()), spark=spark)
    assert isinstance(failed.error, GraphError)
    (problem,) = failed.error.problems
    assert "__live_sql" not in problem.message, problem.message
    assert "`a2`.`v`" in problem.message  # Spark's suggestion, in the query's own names


CDC_SOURCE = """
import dlt


@dlt.view
def changes():
    return spark.readStream.format("json").schema("id BIGINT, seq BIGINT, v STRING").load(spark.conf.get("landing"))
"""

CDC_SQL = """
CREATE OR REFRESH STREAMING TABLE target;

APPLY CHANGES INTO target FROM STREAM(changes) KEYS (id) SEQUENCE BY seq STORED AS SCD TYPE 1;
"""


def test_a_cdc_input_error_shows_the_users_columns_and_a_fix_for_sql(
    spark: SparkSession, tmp_path: Path
) -> None:
    landing = tmp_path / "landing"
    write_json_lines(landing, "a.json", ['{"id": 1, "seq": 1, "v": "x"}', '{"id": null, "seq": 2, "v": "y"}'])
    spec = make_pipeline(tmp_path, {"source.py": CDC_SOURCE, "cdc.sql": CDC_SQL}, {"landing": str(landing)})
    result = run_update(spec, UpdateOptions(out=io.StringIO()), spark=spark)
    error = result.flow("target").error
    assert isinstance(error, CdcError) and error.code == "APPLY_CHANGES_INVALID_INPUT", error
    message = str(error)
    assert "'v': 'y'" in message  # the event, as the user's columns
    assert "__seq" not in message and "__op" not in message  # not the framework's own
    assert "WHERE clause" in message  # a fix a SQL pipeline can use, not only Python's `where=`
