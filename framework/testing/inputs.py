"""A test's input files and external tables, written under the test's own folder.

Input files are a mapping of relative path → content: text (or bytes) written as it is, or rows (dicts) written
as JSON lines (``.json``, ``.jsonl``) or CSV with a header (``.csv``). External tables are a mapping of
``schema.table`` → a DataFrame or ``(rows, schema)``; each is written as a Delta table and handed to the run as
an entry of the spec's ``tables`` (so the runner registers it, as it does the spec's own).
Every mistake in either mapping is reported at once, as a :class:`~framework.errors.SpecError`.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Mapping, Sequence
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from framework.errors import Problem, SpecError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

InputFiles = Mapping[str, "str | bytes | Sequence[Mapping[str, Any]]"]
ExternalTables = Mapping[str, "DataFrame | tuple[Sequence[Any], Any]"]
SOURCE = "run_pipeline"
ROW_SUFFIXES = (".json", ".jsonl", ".csv")


def write_inputs(folder: Path, inputs: InputFiles | None) -> list[Path]:
    """Write every input file under ``folder`` (created); return the paths written.

    Raises:
        SpecError: ``INVALID_TEST_INPUT`` for each path that is absolute or leaves ``folder``, and each content
            that is neither text, bytes nor rows a file of that suffix can hold.
    """
    problems: list[Problem] = []
    planned: list[tuple[Path, bytes]] = []
    for name, content in (inputs or {}).items():
        relative = PurePosixPath(str(name))
        if relative.is_absolute() or ".." in relative.parts or not relative.parts:
            problems.append(Problem("INVALID_TEST_INPUT", f"inputs[{name!r}]: give a path relative to the "
                                    "test's input folder, without '..'", SOURCE))
            continue
        data = _file_bytes(str(name), relative.suffix.lower(), content, problems)
        if data is not None:
            planned.append((folder.joinpath(*relative.parts), data))
    if problems:
        raise SpecError(SOURCE, problems)
    folder.mkdir(parents=True, exist_ok=True)
    for path, data in planned:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return [path for path, _ in planned]


def _file_bytes(name: str, suffix: str, content: Any, problems: list[Problem]) -> bytes | None:
    if isinstance(content, str):
        return content.encode()
    if isinstance(content, bytes):
        return content
    if isinstance(content, Sequence) and all(isinstance(row, Mapping) for row in content):
        if suffix in (".json", ".jsonl"):
            return "".join(json.dumps(dict(row), default=_json_value) + "\n" for row in content).encode()
        if suffix == ".csv":
            return _csv_text(content).encode()
        problems.append(Problem("INVALID_TEST_INPUT", f"inputs[{name!r}]: rows are written as JSON lines or CSV; "
                                f"name the file *.json, *.jsonl or *.csv, or give its text", SOURCE))
        return None
    problems.append(Problem("INVALID_TEST_INPUT", f"inputs[{name!r}]: expected text, bytes or a list of dicts, "
                            f"got {type(content).__name__}", SOURCE))
    return None


def _json_value(value: Any) -> Any:
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def _csv_text(rows: Sequence[Mapping[str, Any]]) -> str:
    columns: list[str] = []
    for row in rows:
        columns += [str(k) for k in row if str(k) not in columns]
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({str(k): "" if v is None else (v.isoformat() if isinstance(v, datetime | date) else v)
                         for k, v in row.items()})
    return out.getvalue()


_TABLE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*){1,2}$")


def write_external_tables(spark: SparkSession, folder: Path, tables: ExternalTables | None
                          ) -> dict[str, dict[str, str]]:
    """Write each external table as a Delta table under ``folder``; return the spec ``tables`` entries for them.

    Raises:
        SpecError: ``INVALID_TEST_TABLE`` for each name that is not ``schema.table`` (or
            ``catalog.schema.table``) and each value that is neither a DataFrame nor ``(rows, schema)``.
    """
    problems: list[Problem] = []
    frames: dict[str, DataFrame] = {}
    for name, value in (tables or {}).items():
        if not _TABLE_NAME.match(str(name)):
            problems.append(Problem("INVALID_TEST_TABLE", f"tables[{name!r}]: name the table as pipeline code reads "
                                    "it, schema.table (letters, digits and _)", SOURCE))
            continue
        frame = _frame(spark, str(name), value, problems)
        if frame is not None:
            frames[str(name)] = frame
    if problems:
        raise SpecError(SOURCE, problems)
    entries = {}
    for name, frame in frames.items():
        path = folder / name.lower()
        frame.write.format("delta").mode("overwrite").option("overwriteSchema", "true").save(str(path))
        entries[name] = {"format": "delta", "path": str(path)}
    return entries


def _frame(spark: SparkSession, name: str, value: Any, problems: list[Problem]) -> DataFrame | None:
    from pyspark.sql import DataFrame

    if isinstance(value, DataFrame):
        return value
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], Sequence):
        rows, schema = value
        return spark.createDataFrame(list(rows), schema)
    problems.append(Problem("INVALID_TEST_TABLE", f"tables[{name!r}]: expected a DataFrame or (rows, schema), "
                            f"got {type(value).__name__}", SOURCE))
    return None
