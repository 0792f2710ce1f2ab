"""Helpers for Auto Loader integration tests: run a cloudFiles stream into Delta the way the runner does."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession

from framework.autoloader import load_cloud_files, translate_stream_error
from framework.errors import PipelineError, UnknownFieldError
from framework.failures import HandlerErrors

pytestmark = pytest.mark.spark


@dataclass
class Flow:
    """One bronze flow: a source folder, options, a checkpoint, a schema location and a Delta table."""

    spark: SparkSession
    root: Path
    options: dict[str, str]
    schema: Any = None
    batches: list[int] = field(default_factory=list)
    collected: dict[int, list[Any]] = field(default_factory=dict)
    columns: list[str] = field(default_factory=list)
    run_no: int = 0

    @property
    def src(self) -> Path:
        return self.root / "landing"

    @property
    def checkpoint(self) -> Path:
        return self.root / "checkpoints" / "bronze"

    @property
    def table(self) -> Path:
        return self.root / "tables" / "bronze"

    @property
    def schema_location(self) -> Path:
        return self.root / "autoloader" / "bronze"

    def write(self, name: str, text: str | bytes, mtime: float | None = None) -> Path:
        path = self.src / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text, encoding="utf-8")
        if mtime is not None:
            os.utime(path, (mtime, mtime))
        return path

    def jsonl(self, name: str, *rows: dict[str, Any], mtime: float | None = None) -> Path:
        return self.write(name, "".join(json.dumps(r) + "\n" for r in rows), mtime)

    def df(self) -> DataFrame:
        return load_cloud_files(self.spark, str(self.src), self.options, self.schema,
                                default_schema_location=str(self.schema_location),
                                checkpoint_location=str(self.checkpoint))

    def run(self, transform: Callable[[DataFrame], DataFrame] | None = None,
            on_batch: Callable[[DataFrame, int], None] | None = None, delta: bool = False) -> list[Any]:
        """One available-now update; raises the framework error the runner would see.

        By default each batch is collected in memory (keyed by batch id, so a replayed batch replaces itself);
        ``delta`` writes a Delta table instead, ``on_batch`` writes Delta idempotently with txnAppId/txnVersion.
        """
        self.src.mkdir(parents=True, exist_ok=True)
        first_batch = len(self.batches)
        df = self.df()
        if transform is not None:
            df = transform(df)
        self.columns = df.columns
        writer = df.writeStream.option("checkpointLocation", str(self.checkpoint)).trigger(availableNow=True)
        errors = HandlerErrors()  # a handler's own exception, which Spark returns to the driver as text only
        if delta:
            query = writer.format("delta").start(str(self.table))
        elif on_batch is None:
            def collect(b: DataFrame, batch_id: int) -> None:
                self.batches.append(batch_id)
                self.collected[batch_id] = b.collect()

            query = writer.foreachBatch(errors.wrap(collect)).start()
        else:
            app_id = "bronze-" + str(self.root)
            table = str(self.table)

            def batch(b: DataFrame, batch_id: int) -> None:
                self.batches.append(batch_id)
                (b.write.format("delta").mode("append").option("txnAppId", app_id)
                 .option("txnVersion", batch_id).save(table))
                on_batch(b, batch_id)

            query = writer.foreachBatch(errors.wrap(batch)).start()
        try:
            query.awaitTermination()
        except Exception as exc:
            translated = translate_stream_error(errors.first or exc)
            if translated is not None:
                raise translated from exc
            raise
        if self.table.exists():
            return self.all_rows()
        new = sorted(set(self.batches[first_batch:]))
        return [r for b in new for r in self.collected[b]]

    def all_rows(self) -> list[Any]:
        if self.table.exists():
            return self.read().collect()
        return [r for b in sorted(self.collected) for r in self.collected[b]]

    def count(self) -> int:
        return len(self.all_rows())

    def run_with_retry(self) -> list[Any]:
        """As the runner: one retry after UNKNOWN_FIELD_EXCEPTION within the same update."""
        try:
            return self.run()
        except UnknownFieldError:
            return self.run()

    def read(self) -> DataFrame:
        if not (self.table / "_delta_log").exists():
            return self.spark.createDataFrame([], "x string")
        return self.spark.read.format("delta").load(str(self.table))

    def rows(self, *cols: str) -> list[tuple[Any, ...]]:
        return sorted((tuple(r.asDict().get(c) for c in cols) for r in self.all_rows()), key=str)

    def where(self, col: str, value: Any) -> list[Any]:
        return [r for r in self.all_rows() if r.asDict().get(col) == value]

    def versions(self) -> int:
        return len(list((self.table / "_delta_log").glob("*.json")))


@pytest.fixture
def flow(spark: SparkSession, storage: Path) -> Callable[..., Flow]:
    def make(options: dict[str, str], schema: Any = None, name: str = "f") -> Flow:
        return Flow(spark, storage / name, dict(options), schema)
    return make


def rescued(value: str | None) -> dict[str, Any] | None:
    return None if value is None else json.loads(value)


def both_parsers(spark: SparkSession, make: Callable[[str], Flow],
                 write: Callable[[Flow], None]) -> tuple[list[Any], list[Any]]:
    """One run on the framework jar's record parsers and one on Spark's built-in expressions
    (``medallion.autoloader.jvmParser=false``), each on its own flow (``make(name)``) with the same files
    (``write``): the rows of each, comparable (sorted; rescued data as a dict with the file's name only)."""
    results = []
    for switch in ("true", "false"):
        spark.conf.set("medallion.autoloader.jvmParser", switch)
        try:
            f = make(f"parser_{switch}")
            write(f)
            rows = f.run()
        finally:
            spark.conf.unset("medallion.autoloader.jvmParser")
        results.append(sorted((tuple((k, _comparable(k, v)) for k, v in r.asDict(recursive=True).items())
                               for r in rows), key=repr))
    return results[0], results[1]


def _comparable(column: str, value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return "NaN"  # NaN != NaN
    if column != "_rescued_data" or value is None:
        return value
    data = rescued(value)
    assert data is not None
    return {**data, "_file_path": data["_file_path"].rsplit("/", 1)[-1]}


__all__ = ["Flow", "PipelineError", "both_parsers", "rescued"]
