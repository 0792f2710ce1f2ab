"""Small updates: Spark settings for updates whose inputs are small (``small_updates`` in ``conf/spark.yaml``).

Spark generates and compiles Java code for every query stage, and in every task for the projections of
operators outside whole-stage code generation (Delta's log replay, writes, streaming state). On the sample
pipeline's 1,000 rows that work was about half of the driver's CPU time (Java Flight Recorder, 2 cores), and
adaptive query execution split each query with a shuffle into one Spark job per stage. Interpreted evaluation
gives the same results without that cost, and loses to generated code only when there is enough data to
amortise it. So before its flows start, an update adds up the size of everything it can read — the files under
the pipeline's file sources and the pipeline's own tables — and, below ``max_input_bytes`` and with no more than
``max_input_rows`` rows in the Delta tables among them (their logs' row counts), runs with the
``small_updates`` Spark settings, restoring the session's own afterwards.

An input whose size cannot be told cheaply (a table outside the pipeline, a source without a path such as
Kafka, a SQL query over other tables) makes the update a normal one.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from framework.errors import PathMappingError
from framework.paths import PathMapper
from framework.settings import SmallUpdates
from framework.spec import PipelineSpec
from framework.storage.log import file_records, live_files

_MAX_ENTRIES = 200_000  # directory entries visited before an input counts as large, whatever its bytes


@dataclass
class InputLog:
    """What the pipeline's query functions read, as the update's resolution saw it."""

    paths: list[str] = field(default_factory=list)  # file sources (local paths, globs allowed)
    unsized: list[str] = field(default_factory=list)  # inputs whose size is unknown, described for the log

    def path(self, path: str) -> None:
        """Record a file source's local path (once)."""
        if path not in self.paths:
            self.paths.append(path)

    def unknown(self, what: str) -> None:
        """Record an input whose size cannot be known before it is read (once)."""
        if what not in self.unsized:
            self.unsized.append(what)


def bytes_under(paths: Iterable[str | Path], limit: int) -> int | None:
    """Total size of the files under ``paths`` (files, folders or glob patterns); counting stops once it
    exceeds ``limit``. None when a path is not a local one."""
    total = 0
    entries = 0
    for raw in paths:
        text = str(raw)
        if "://" in text and not text.startswith("file:"):
            return None
        text = text.removeprefix("file:")
        matches = glob.glob(text) if glob.has_magic(text) else [text]
        for match in matches:
            for size in _sizes(Path(match)):
                total += size
                entries += 1
                if total > limit or entries > _MAX_ENTRIES:
                    return max(total, limit + 1)
    return total


def _sizes(path: Path) -> Iterator[int]:
    try:
        if path.is_file():
            yield path.stat().st_size
            return
        stack = [path]
        while stack:
            with os.scandir(stack.pop()) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(Path(entry.path))
                    elif entry.is_file(follow_symlinks=False):
                        yield entry.stat(follow_symlinks=False).st_size
                    else:
                        yield 0
    except OSError:
        return


def small_update_reason(inputs: InputLog, tables: Iterable[str | Path],
                        settings: SmallUpdates) -> str | None:
    """Why this update is a small one (for the progress line), or None when it is a normal one.

    ``tables``: where the pipeline's tables are (the storage's ``tables`` folder, and each declared ``path``)."""
    if settings.max_input_bytes <= 0 or not settings.spark_conf or inputs.unsized:
        return None
    paths = [*inputs.paths, *tables]
    size = bytes_under(paths, settings.max_input_bytes)
    if size is None or size > settings.max_input_bytes or rows_over(paths, settings.max_input_rows):
        return None
    return f"inputs {_human(size)} < {_human(settings.max_input_bytes)}"


def rows_over(paths: Iterable[str | Path], limit: int) -> bool:
    """Whether the Delta tables at or below ``paths`` (two folder levels down at most) hold more than ``limit``
    rows in all, by their logs' ``numRecords`` (a file without it counts as none); False when ``limit`` is 0.

    Columnar files are small for their rows (10,000,000 rows of four columns: 43 MiB of Parquet): under the byte
    limit alone, such an input ran with interpreted evaluation, several times slower on that many rows."""
    if limit <= 0:
        return False
    total = 0
    for table in _delta_tables(paths):
        for add in (live_files(table) or {}).values():
            total += file_records(add)
            if total > limit:
                return True
    return False


def _delta_tables(paths: Iterable[str | Path]) -> Iterator[Path]:
    for raw in paths:
        text = str(raw).removeprefix("file:")
        if "://" in text:
            continue
        for match in glob.glob(text) if glob.has_magic(text) else [text]:
            level = [Path(match)]
            for _ in range(3):
                tables = [p for p in level if (p / "_delta_log").is_dir()]
                yield from tables
                level = [c for p in level if p not in tables and p.is_dir() for c in _folders(p)]


def _folders(path: Path) -> list[Path]:
    try:
        return [Path(e.path) for e in os.scandir(path) if e.is_dir(follow_symlinks=False)
                and not e.name.startswith(("_", "."))]
    except OSError:
        return []


def _human(size: int) -> str:
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"


def expected_small(spec: PipelineSpec, settings: SmallUpdates) -> bool:
    """Before the JVM starts: whether the inputs the spec names add up to less than ``max_input_bytes``.

    What an update reads is only known once its query functions ran (:func:`small_update_reason`); a process
    that starts the JVM for one command (:func:`framework.runner.session.plan_one_command`) chooses the JVM's
    options earlier, from what the spec itself names: the local folders of its ``paths`` mappings, the
    configuration values that are local paths (absolute, or Databricks paths it maps) matching files, the
    external ``tables`` with a path, and the pipeline's own tables. An input it cannot size (a JDBC table) or
    no named input at all is not small: the JVM then gets its usual options.
    """
    if settings.max_input_bytes <= 0 or not settings.java_options:
        return False
    inputs = _named_inputs(spec)
    if not inputs:
        return False
    paths = [*inputs, str(spec.tables_dir)]
    size = bytes_under(paths, settings.max_input_bytes)
    return size is not None and size <= settings.max_input_bytes and not rows_over(paths, settings.max_input_rows)


def _named_inputs(spec: PipelineSpec) -> list[str] | None:
    mapper = PathMapper.from_spec(spec.paths, spec.root)
    named = list(mapper.mappings.values())
    for value in spec.configuration.values():
        if not isinstance(value, str) or "\n" in value:
            continue
        try:
            local = mapper.map(value)  # a Databricks path to its local folder; anything else as it is
        except PathMappingError:
            continue
        if local.startswith("/") and (glob.glob(local) if glob.has_magic(local) else os.path.exists(local)):
            named.append(local)
    for table in spec.tables:
        if table.path is None:
            return None
        named.append(str(table.path))
    return named
