"""``validate --static`` reports SQL syntax mistakes and unknown tables, with file and line, without Spark
(issue 39: both were called valid)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from framework.cli import main
from framework.sql.lint import syntax_problems

VALID = [
    "SELECT 1 AS id",
    "SELECT * FROM STREAM(LIVE.a) WHERE x = 1 AND (y > 2)",
    "WITH c AS (SELECT 1) SELECT * FROM c",
    "SELECT a FROM t GROUP BY a ORDER BY a LIMIT 10",
    "SELECT a, b FROM json.`/p/x` WHERE a <> -1",
    "SELECT CASE WHEN a THEN 1 ELSE 2 END AS c FROM t",
    "FROM t SELECT a",
    "SELECT * EXCEPT (a) FROM t",
    "SELECT a FROM t LEFT ANTI JOIN u ON t.k = u.k",
    "SELECT details:flow_progress.metrics FROM t",
    "SELECT * FROM read_files('/x', format => 'json')",
    "SELECT a || b, -a, array(1, 2)[0], map('a', 1)['a'] FROM t",
    "(SELECT 1) UNION (SELECT 2)",
    "SELECT a FROM t QUALIFY row_number() OVER (ORDER BY a) = 1",
    "SELECT `from`, `limit` FROM t -- a comment, FROM WHERE",
    "SELECT * FROM cloud_files('/in', 'json', map('cloudFiles.inferColumnTypes', 'true'))",
]


@pytest.mark.parametrize("query", VALID)
def test_queries_spark_accepts_have_no_syntax_problem(query: str) -> None:
    assert syntax_problems(query) == []


@pytest.mark.parametrize(
    ("query", "at", "near"),
    [
        ("SELECT id, FROM t", 11, "'FROM'"),  # a trailing comma
        ("SELECT id FROM t WHERE", 17, "'WHERE'"),  # the query ends where more must follow
        ("SELECT id FROM WHERE x = 1", 15, "'WHERE'"),
        ("SELEC id FROM t", 0, "'SELEC'"),
        ("SELECT count(id FROM t", 12, "'('"),
        ("SELECT id) FROM t", 9, "')'"),
        ("SELECT 'open FROM t", 7, "string"),
        ("SELECT a FROM t WHERE a =", 24, "'='"),
    ],
)
def test_syntax_mistakes_are_placed(query: str, at: int, near: str) -> None:
    problems = syntax_problems(query)
    assert problems and problems[0][0] == at, problems
    assert near in problems[0][1] or near.strip("'") in problems[0][1]


def write_pipeline(root: Path, sql: str, tables: dict[str, object] | None = None) -> Path:
    (root / "p").mkdir()
    (root / "p" / "q.sql").write_text(textwrap.dedent(sql).lstrip())
    spec = root / "spec.json"
    spec.write_text(
        json.dumps(
            {
                "name": "static",
                "libraries": [{"glob": {"include": "p/**"}}],
                "storage": str(root / "storage"),
                "tables": tables or {},
            }
        )
    )
    return spec


PIPELINE = """
    CREATE OR REFRESH MATERIALIZED VIEW a AS SELECT 1 AS id;

    CREATE OR REFRESH MATERIALIZED VIEW b AS
    SELECT id, FROM LIVE.a;

    CREATE OR REFRESH MATERIALIZED VIEW c AS SELECT id FROM regions;

    CREATE OR REFRESH MATERIALIZED VIEW d AS SELECT * FROM ref.countries JOIN LIVE.a USING (id);
"""


def test_validate_static_reports_a_syntax_error_and_an_unknown_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from pyspark import SparkContext

    monkeypatch.setenv("MEDALLION_NO_SERVER", "1")
    (tmp_path / "countries").mkdir()
    spec = write_pipeline(
        tmp_path, PIPELINE, {"ref.countries": {"format": "parquet", "path": str(tmp_path / "countries")}}
    )
    assert main(["validate", str(spec), "--static"]) == 1
    err = capsys.readouterr().err
    sql = tmp_path / "p" / "q.sql"
    assert f"{sql}:4: [SQL_PARSE_ERROR] dataset 'b', column 12: syntax error at or near 'FROM'" in err, err
    assert f"{sql}:6: [UNRESOLVED_TABLE] flow 'c' reads 'regions'" in err, err
    assert "countries" not in err  # declared in the spec's tables:
    assert err.count("[SQL_PARSE_ERROR]") == 1 and err.count("[UNRESOLVED_TABLE]") == 1
    assert SparkContext._active_spark_context is None  # no Spark was started


def test_validate_static_still_passes_a_valid_pipeline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEDALLION_NO_SERVER", "1")
    spec = write_pipeline(
        tmp_path,
        """
        CREATE OR REFRESH MATERIALIZED VIEW a AS SELECT 1 AS id;
        CREATE OR REFRESH MATERIALIZED VIEW b AS SELECT id FROM LIVE.a WHERE id > 0;
        CREATE OR REFRESH MATERIALIZED VIEW c AS SELECT * FROM json.`/data/in` WHERE id IS NOT NULL;
    """,
    )
    assert main(["validate", str(spec), "--static"]) == 0, capsys.readouterr().err
    assert "pipeline 'static' is valid: 3 datasets" in capsys.readouterr().out
