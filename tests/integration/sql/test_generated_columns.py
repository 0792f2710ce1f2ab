"""Declared columns with ``GENERATED ALWAYS AS (expr)`` and ``GENERATED ... AS IDENTITY``, in SQL column lists and
Python ``schema=`` strings, for streaming tables and materialized views.

Databricks' pipeline SQL reference (CREATE STREAMING TABLE / CREATE MATERIALIZED VIEW, ``ldp/developer/``,
newest pages) lists the column properties ``NOT NULL | GENERATED ALWAYS AS ( expr ) | GENERATED { ALWAYS | BY
DEFAULT } AS IDENTITY [ ( [ START WITH start | INCREMENT BY step ] ) ] | DEFAULT default_expression | COMMENT
column_comment | column_constraint | MASK clause``. They are Delta's generated and identity columns: the table's
schema carries ``delta.generationExpression`` / ``delta.identity.*`` as column metadata, and Delta computes the
value on every write that leaves the column out (and refuses a supplied value that differs). ``MASK`` is
refused here with an error naming the clause (see ``framework/columns.py``); ``DEFAULT``: tests/integration/lakeflow.
"""

from __future__ import annotations

import io
import json
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from framework.errors import FlowError, SqlError
from framework.runner.update import UpdateOptions, resolve_pipeline, run_update
from framework.storage.log import latest_metadata
from tests.integration.runner.pipeline_factory import make_pipeline, write_json_lines

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

SQL = """
CREATE OR REFRESH STREAMING TABLE events (
  id INT NOT NULL COMMENT 'the event id',
  ts TIMESTAMP,
  d DATE GENERATED ALWAYS AS (CAST(ts AS DATE)) COMMENT 'day of ts',
  CONSTRAINT positive EXPECT (id > 0) ON VIOLATION DROP ROW
) COMMENT 'events by day'
AS SELECT CAST(id AS INT) AS id, CAST(ts AS TIMESTAMP) AS ts FROM STREAM read_files('${landing}', format => 'json');

CREATE OR REFRESH MATERIALIZED VIEW per_day (
  d DATE NOT NULL,
  n BIGINT,
  label STRING GENERATED ALWAYS AS (concat('day ', CAST(d AS STRING)))
) AS SELECT d, count(*) AS n FROM events GROUP BY d;
"""

PYTHON = """
import dlt
from pyspark.sql import functions as F

@dlt.table(schema="id INT NOT NULL, ts TIMESTAMP, d DATE GENERATED ALWAYS AS (CAST(ts AS DATE)), "
                  "k BIGINT GENERATED ALWAYS AS IDENTITY (START WITH 100 INCREMENT BY 10)")
def py_events():
    return dlt.read_stream("events").select("id", "ts")

@dlt.table
def py_days():  # a downstream dataset reads the generated column
    return dlt.read("py_events").select("id", "d", "k")
"""


def _columns(path: Path) -> dict[str, tuple[bool, dict[str, Any]]]:
    """Each column of the Delta table's stored schema (its log's newest metaData): nullable and metadata."""
    metadata = latest_metadata(path)
    assert metadata is not None
    fields = json.loads(metadata["schemaString"])["fields"]
    return {f["name"]: (f["nullable"], f["metadata"]) for f in fields}


def _update(spark: SparkSession, spec: Any) -> None:
    result = run_update(spec, UpdateOptions(out=io.StringIO()), spark=spark)
    assert result.succeeded, result.error or [f.error for f in result.flows if f.error]


def test_generated_columns_in_sql_and_python_are_computed_on_write_and_read_downstream(
        spark: SparkSession, tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    write_json_lines(landing, "a.json", ['{"id": 1, "ts": "2026-01-02T03:04:05"}',
                                         '{"id": 2, "ts": "2026-01-02T23:00:00"}',
                                         '{"id": -1, "ts": "2026-01-03T00:00:00"}'])
    spec = make_pipeline(tmp_path, {"p.sql": SQL, "p.py": PYTHON}, {"landing": str(landing)})
    _update(spark, spec)
    write_json_lines(landing, "b.json", ['{"id": 3, "ts": "2026-01-03T10:00:00"}'])
    _update(spark, spec)  # a second update: appends to the existing tables, recomputes the view

    events = _columns(spec.tables_dir / "events")
    assert events["id"] == (False, {"comment": "the event id"})  # NOT NULL and COMMENT alongside
    assert events["d"][1] == {"delta.generationExpression": "CAST(ts AS DATE)", "comment": "day of ts"}
    rows = spark.read.format("delta").load(str(spec.tables_dir / "events")).orderBy("id").collect()
    assert [(r.id, str(r.d)) for r in rows] == [(1, "2026-01-02"), (2, "2026-01-02"), (3, "2026-01-03")]

    per_day = _columns(spec.tables_dir / "per_day")  # kept through the view's recompute (an overwrite)
    assert per_day["d"][0] is False
    assert per_day["label"][1] == {"delta.generationExpression": "concat('day ', CAST(d AS STRING))"}
    days = spark.read.format("delta").load(str(spec.tables_dir / "per_day")).orderBy("d").collect()
    assert [(str(r.d), r.n, r.label) for r in days] == [("2026-01-02", 2, "day 2026-01-02"),
                                                        ("2026-01-03", 1, "day 2026-01-03")]

    py = _columns(spec.tables_dir / "py_events")
    assert py["d"][1] == {"delta.generationExpression": "CAST(ts AS DATE)"}
    assert py["k"][1]["delta.identity.start"] == 100 and py["k"][1]["delta.identity.step"] == 10
    downstream = spark.read.format("delta").load(str(spec.tables_dir / "py_days")).orderBy("id").collect()
    assert [(r.id, str(r.d)) for r in downstream] == [(1, "2026-01-02"), (2, "2026-01-02"), (3, "2026-01-03")]
    keys = [r.k for r in downstream]
    assert len(set(keys)) == 3 and all(k >= 100 and (k - 100) % 10 == 0 for k in keys)


def test_delta_enforces_the_generation_expression(spark: SparkSession, tmp_path: Path) -> None:
    """A query that returns the generated column must return the expression's value (Delta checks it)."""
    spec = make_pipeline(tmp_path, {"p.py": """
        import dlt

        @dlt.table(schema="a INT, b INT GENERATED ALWAYS AS (a * 2)")
        def doubled():
            return spark.createDataFrame([(1, 2), (2, 5)], "a int, b int")
    """})
    result = run_update(spec, UpdateOptions(out=io.StringIO()), spark=spark)
    assert not result.succeeded
    error = result.flow("doubled").error
    assert isinstance(error, FlowError)
    assert "DELTA_VIOLATE_CONSTRAINT_WITH_VALUES" in {c.error_class for c in error.chain}


@pytest.mark.parametrize("column", ["n STRING MASK mask_fn"])
def test_mask_is_refused_naming_the_clause(tmp_path: Path, column: str) -> None:
    spec = make_pipeline(tmp_path, {"p.sql": f"""
        CREATE OR REFRESH MATERIALIZED VIEW m (id INT, {column}) AS SELECT 1 AS id, 0 AS n;
    """})
    with pytest.raises(SqlError) as info:
        resolve_pipeline(spec)
    clause = column.split()[2]
    assert info.value.code == "SQL_UNSUPPORTED_CLAUSE" and f"the {clause} clause" in str(info.value)
    assert info.value.line == 2


def test_a_changed_declaration_replaces_the_view_columns_keeping_history(spark: SparkSession, tmp_path: Path) -> None:
    """A materialized view's recompute keeps its declared columns (no overwriteSchema); when the declaration
    changes, the table's columns are replaced first (REPLACE TABLE) and the history goes on."""
    view = """
        import dlt

        @dlt.table(schema="{columns}")
        def v():
            return spark.createDataFrame([(1, "a"), (2, "b")], "id int, name string")
    """
    spec = make_pipeline(tmp_path, {"p.py": view.format(columns="id INT NOT NULL, name STRING")})
    _update(spark, spec)
    _update(spark, spec)  # the same declaration: overwrites keep NOT NULL
    assert _columns(spec.tables_dir / "v")["id"][0] is False
    (tmp_path / "pipeline" / "p.py").write_text(textwrap.dedent(view.format(
        columns="id INT NOT NULL, name STRING, up STRING GENERATED ALWAYS AS (upper(name))")))
    _update(spark, spec)
    columns = _columns(spec.tables_dir / "v")
    assert columns["up"][1] == {"delta.generationExpression": "upper(name)"} and columns["id"][0] is False
    rows = spark.read.format("delta").load(str(spec.tables_dir / "v")).orderBy("id").collect()
    assert [(r.id, r.up) for r in rows] == [(1, "A"), (2, "B")]
    operations = [r.operation for r in spark.sql(
        f"DESCRIBE HISTORY delta.`{spec.tables_dir / 'v'}`").orderBy("version").collect()]
    assert operations[-2:] == ["REPLACE TABLE", "WRITE"] and len(operations) == 5
