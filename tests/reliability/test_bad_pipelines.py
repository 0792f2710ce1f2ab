"""A corpus of bad specs and bad pipeline code. Every one ends in a message with a stable code, the right exit
code and no Python traceback (issue 19, "A failed update always ends like a finished one").

Bad specs go through ``medallion run`` in a fresh process: they must be refused before Spark starts. Bad
pipeline code needs Spark (the update has started when the libraries load), so it goes through the same command
line in this process (``framework.cli.main``, on the shared session); ``capfd`` holds everything written to the
process's stdout and stderr, the JVM's included.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from framework.cli import main
from framework.spec import load_spec
from tests.reliability.helpers import (
    JAVA_TRACE,
    TRACEBACK,
    final_state,
    medallion,
    of_update,
    read_events,
    write_spec,
)

pytestmark = pytest.mark.spark

GOOD = "import dlt\n\n@dlt.table\ndef ok():\n    return spark.range(3)\n"

BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{n}: &{n} [{', '.join([f'*{p}'] * 9)}]\n" for p, n in zip("abcdefgh", "bcdefghi", strict=True)) + \
    "name: bomb\nlibraries: *i\n"


def _not_utf8(tmp_path: Path) -> Path:
    spec = tmp_path / "latin1.yaml"
    spec.write_bytes("name: caf\xe9\nlibraries: [{glob: {include: p/**}}]\n".encode("latin-1"))
    return spec


def _directory(tmp_path: Path) -> Path:
    (tmp_path / "conf").mkdir()
    return tmp_path / "conf"


def _alias_bomb(tmp_path: Path) -> Path:
    spec = tmp_path / "bomb.yaml"
    spec.write_text(BOMB)
    return spec


def _missing_library(tmp_path: Path) -> Path:
    spec = tmp_path / "missing.yaml"
    spec.write_text("name: missing\nlibraries: [{file: {path: gone/orders.py}}]\n")
    return spec


@pytest.mark.parametrize(("make", "code", "named"), [
    (_not_utf8, "SPEC_NOT_UTF8", "latin1.yaml"),
    (_directory, "SPEC_IS_A_DIRECTORY", "conf"),
    (_alias_bomb, "SPEC_TOO_LARGE", "bomb.yaml"),
    (_missing_library, "LIBRARY_NOT_FOUND", "gone/orders.py"),
], ids=["not-utf8", "directory", "alias-bomb", "missing-library"])
def test_bad_specs_are_refused_before_spark_starts(tmp_path: Path, make, code: str, named: str) -> None:
    spec = make(tmp_path)
    started = time.monotonic()
    result = medallion("run", str(spec), timeout=120)
    elapsed = time.monotonic() - started
    assert result.returncode == 2, result.stderr
    assert code in result.stderr and named in result.stderr, result.stderr
    assert TRACEBACK not in result.stderr + result.stdout
    assert len(result.stderr) < 2000, "a message printed an entry of unbounded size"
    assert elapsed < 15, f"{elapsed:.1f}s: no JVM starts for a bad spec (a JVM start alone takes 10-20 s)"
    assert not (tmp_path / "runs").exists() and not (tmp_path / "storage").exists()


@dataclass(frozen=True)
class Case:
    """A pipeline file, the code its update fails with, and what the message must name."""

    source: str
    code: str
    named: tuple[str, ...]
    line: int | tuple[int, ...]  # the line of p.py the message names (any of several)
    flows_run: bool = False  # whether the failure lets flows run (False: the update fails before any flow)


CASES = {
    "syntax-error": Case(GOOD + "\n@dlt.table\ndef broken(:\n    return spark.range(1)\n",
                         "LIBRARY_LOAD_FAILED", ("syntax",), 8),
    "import-error": Case("import dlt\nimport no_such_module_for_medallion\n" + GOOD[len("import dlt\n"):],
                         "LIBRARY_LOAD_FAILED", ("ModuleNotFoundError", "no_such_module_for_medallion"), 2),
    "query-raises": Case(GOOD + "\n@dlt.table\ndef exploding():\n    raise ValueError('the source system is down')\n",
                         "", ("ValueError", "the source system is down"), (7, 8, 9)),
    "non-dataframe": Case(GOOD + "\n@dlt.table\ndef listed():\n    return [1, 2, 3]\n",
                          "QUERY_FUNCTION_RETURNED_NON_DATAFRAME", ("listed", "list"), (7, 8, 9)),
    "unknown-dataset": Case(GOOD + "\n@dlt.table\ndef report():\n    return dlt.read('okk')\n",
                            "UNRESOLVED_DATASET", ("report", "okk", "Did you mean 'ok'"), (7, 8, 9)),
    "bad-expectation": Case(GOOD + "\n@dlt.table\n@dlt.expect('positive', 'id > > 0')\n"
                            "@dlt.expect('known', 'no_such_column > 0')\ndef checked():\n    return spark.range(2)\n",
                            "INVALID_EXPECTATION", ("'positive'", "'known'", "'checked'"), (7, 8, 9, 10, 11)),
    "cycle": Case(GOOD + "\n@dlt.table\ndef a():\n    return dlt.read('b')\n\n"
                  "@dlt.table\ndef b():\n    return dlt.read('a')\n", "CYCLE", ("a", "b"), (7, 8, 9, 11, 12, 13)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_bad_pipeline_code_fails_the_update_with_its_cause(spark: SparkSession, tmp_path: Path,
                                                           capfd: pytest.CaptureFixture[str], name: str) -> None:
    case = CASES[name]
    spec_file = write_spec(tmp_path, {"p.py": case.source}, name=f"bad_{name.replace('-', '_')}")
    pipeline_file = str((tmp_path / "pipeline" / "p.py").resolve())
    exit_code = main(["run", str(spec_file), "--no-report"])
    out, err = capfd.readouterr()
    printed = out + err
    assert exit_code == 1, printed[-3000:]
    assert TRACEBACK not in printed, printed[-3000:]
    assert not JAVA_TRACE.search(printed), printed[:3000]
    assert "FAILED in" in out, "no summary"
    assert case.code in printed and all(text in printed for text in case.named), printed[-3000:]
    lines = case.line if isinstance(case.line, tuple) else (case.line,)
    assert any(f"{pipeline_file}:{line}" in printed for line in lines), printed[-3000:]

    spec = load_spec(spec_file)
    events = read_events(spark, spec.events_dir)
    (update_id,) = {e.update_id for e in events}
    assert final_state(events, update_id) == "FAILED"
    failed = [e for e in of_update(events, update_id) if e.error]
    assert failed, "no event holds the error"
    text = "\n".join(f"{x['class_name']} {x['error_class']} {x['message']}" for e in failed for x in e.error or [])
    assert case.code in text and all(t in text for t in case.named), text[-3000:]
    assert any(f"{pipeline_file}:{line}" in text for line in lines), text[-3000:]
    if not case.flows_run:  # analysis errors fail the whole update before any flow runs, as on Databricks
        assert not [e for e in events if e.event_type == "flow_progress"]
        assert not (spec.tables_dir / "ok").exists()
