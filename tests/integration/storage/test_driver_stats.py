"""Column statistics of the driver's Delta writer (framework/storage/stats.py): Delta's data skipping uses them
(a file outside a filter's range is not read), and they never make it skip a file that holds a wanted row (every
filter counts the same rows through Delta as over the Parquet files without statistics)."""

from __future__ import annotations

import datetime
import json
import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    ByteType,
    DateType,
    DoubleType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from framework.storage.driver import append_arrow
from framework.storage.log import live_files

pytestmark = pytest.mark.spark

SCHEMA = StructType([
    StructField("b", ByteType()), StructField("i", IntegerType()), StructField("l", LongType()),
    StructField("s", StringType()), StructField("d", DateType()), StructField("ts", TimestampType()),
    StructField("x", DoubleType()), StructField("flag", BooleanType()), StructField("arr", ArrayType(IntegerType())),
    StructField("st", StructType([StructField("a", IntegerType())]))])
WORDS = ["", "a", "ab", "zz", "é", "日本", "x" * 32, "x" * 33, "x" * 32 + "a", "y" * 40, "Z", "~"]


def _batch(rng: random.Random, rows: int, base: int) -> pa.Table:
    def maybe(value: Any) -> Any:
        return None if rng.random() < 0.1 else value

    data = [(maybe(rng.randint(-128, 127)), maybe(base + rng.randint(0, 99)),
             maybe(base * 1_000_000_007 + rng.randint(-5, 5)), maybe(rng.choice(WORDS) + str(base % 3)),
             maybe(datetime.date(2024, 1, 1) + datetime.timedelta(days=base // 100 + rng.randint(0, 3))),
             maybe(datetime.datetime(2024, 1, 1, 0, 0, rng.randint(0, 59), rng.randint(0, 999_999))),
             maybe(rng.choice([float("nan"), -0.0, 1.5, base + 0.25])), maybe(rng.random() < 0.5),
             maybe([base, None]), maybe({"a": base})) for _ in range(rows)]
    names = [f.name for f in SCHEMA.fields]
    return pa.table({n: [r[k] for r in data] for k, n in enumerate(names)}, schema=to_arrow_schema(SCHEMA, timezone="UTC"))


def _predicates(files: list[pa.Table]) -> list[str]:
    """Equality at every file's bounds of every column with them (a bound that is not exact skips a file that
    holds the value), a few ranges, and NULLs."""
    found = {"i IS NULL", "s IS NULL", "d IS NOT NULL", "flag", "x > 1", "ts > TIMESTAMP'2024-01-01 00:00:30'",
             "i < 1000", "l > 2000000002014", "s > 'x'", "s < 'a'"}
    for table in files:
        for name in ("b", "i", "l", "d"):
            values = [v for v in table.column(name).to_pylist() if v is not None]
            found |= {f"{name} = {v!s}" if name != "d" else f"d = DATE'{v}'" for v in (min(values), max(values))}
    for word in {w + str(k) for w in WORDS for k in range(3)}:
        found.add(f"s = '{word}'")
    return sorted(found)


def test_delta_skips_by_the_driver_statistics_and_never_loses_a_row(spark: SparkSession, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    rng = random.Random(35)
    files = [_batch(rng, 200, base) for base in (0, 1000, 2000, 3000)]
    for table in files:
        append_arrow(path, SCHEMA, table)
    delta = spark.read.format("delta").load(path)
    parquet = spark.read.schema(SCHEMA).parquet(str(Path(path) / "*.parquet"))  # every row, no statistics
    conditions = _predicates(files)
    expected = parquet.selectExpr(*(f"sum(CASE WHEN {c} THEN 1 ELSE 0 END)" for c in conditions)).first()
    assert expected is not None
    for condition, rows in zip(conditions, expected, strict=True):
        assert delta.where(condition).count() == rows, condition


def test_statistics_are_exact_bounds_where_written(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    table = _batch(random.Random(7), 300, 5000)
    append_arrow(path, SCHEMA, table)
    (stats,) = (json.loads(f["stats"]) for f in (live_files(path) or {}).values())
    assert stats["numRecords"] == 300
    for name in ("b", "i", "l"):
        values = [v for v in table.column(name).to_pylist() if v is not None]
        assert (stats["minValues"][name], stats["maxValues"][name]) == (min(values), max(values))
    strings = [v for v in table.column("s").to_pylist() if v is not None]
    assert stats["minValues"]["s"] == min(strings)[:32]
    assert "s" not in stats["maxValues"] or stats["maxValues"]["s"] == max(strings)
    assert stats["minValues"]["d"] == min(v for v in table.column("d").to_pylist() if v is not None).isoformat()
    for name in ("ts", "x", "flag", "arr", "st"):  # no exact bound kept for these
        assert name not in stats["minValues"] and name not in stats["maxValues"]
    assert stats["nullCount"]["i"] == table.column("i").null_count and "st" not in stats["nullCount"]


def test_a_file_outside_the_filter_is_not_read(spark: SparkSession, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    low, high = (pa.table({"i": list(range(start, start + 100))}, schema=pa.schema([("i", pa.int32())]))
                 for start in (0, 1000))
    schema = StructType([StructField("i", IntegerType())])
    append_arrow(path, schema, low)
    append_arrow(path, schema, high)
    (high_file,) = (name for name, f in (live_files(path) or {}).items()
                    if json.loads(f["stats"])["minValues"]["i"] == 1000)
    (Path(path) / high_file).unlink()  # read, it would fail the query
    assert spark.read.format("delta").load(path).where("i < 100").count() == 100
