"""GROUP_AGGREGATE's merge on the driver (issue 37, framework/incremental/arrow_merge.py), against the same
aggregate computed over all the rows in Python: NULL keys are groups, sums of NULLs stay NULL, NaN orders above
every number, decimals keep the view's type."""

from __future__ import annotations

import math
import random
from decimal import Decimal

import pyarrow as pa
import pytest

from framework.incremental.analysis import OutputColumn
from framework.incremental.arrow_merge import mergeable_keys, merged_rows

COLUMNS = (OutputColumn("k", "key"), OutputColumn("n", "count"), OutputColumn("s", "sum"),
           OutputColumn("lo", "min"), OutputColumn("hi", "max"))
SCHEMA = pa.schema([("k", pa.string()), ("n", pa.int64()), ("s", pa.int64()), ("lo", pa.float64()),
                    ("hi", pa.float64())])


def _aggregate(rows: list[tuple[str | None, int | None, float | None]]) -> pa.Table:
    """count(*), sum(v), min(w), max(w) per k, with Spark's NULL and NaN rules."""
    groups: dict[str | None, list[tuple[int | None, float | None]]] = {}
    for k, v, w in rows:
        groups.setdefault(k, []).append((v, w))
    out = []
    for k, values in groups.items():
        vs = [v for v, _ in values if v is not None]
        ws = [w for _, w in values if w is not None]
        nan = [w for w in ws if math.isnan(w)]
        numbers = [w for w in ws if not math.isnan(w)]
        lo = min(numbers) if numbers else (nan[0] if nan else None)
        hi = nan[0] if nan else (max(numbers) if numbers else None)
        out.append({"k": k, "n": len(values), "s": sum(vs) if vs else None, "lo": lo, "hi": hi})
    return pa.Table.from_pylist(out, schema=SCHEMA)


def _sorted(table: pa.Table) -> list[tuple[object, ...]]:
    return sorted((tuple("nan" if isinstance(v, float) and math.isnan(v) else v for v in r.values())
                   for r in table.to_pylist()), key=repr)


@pytest.mark.parametrize("seed", range(20))
def test_merge_equals_the_aggregate_of_all_rows(seed: int) -> None:
    rng = random.Random(seed)

    def row() -> tuple[str | None, int | None, float | None]:
        return (rng.choice(["a", "b", "c", None]), rng.choice([None, rng.randint(-5, 5)]),
                rng.choice([None, float("nan"), float(rng.randint(-3, 3))]))

    old = [row() for _ in range(rng.randint(0, 8))]
    new = [row() for _ in range(rng.randint(0, 8))]
    merged = merged_rows(_aggregate(old), _aggregate(new), COLUMNS, SCHEMA)
    assert merged.schema == SCHEMA
    assert _sorted(merged) == _sorted(_aggregate(old + new))


def test_a_global_aggregate_merges_its_one_row_and_decimals_keep_their_type() -> None:
    columns = (OutputColumn("n", "count"), OutputColumn("s", "sum"))
    schema = pa.schema([("n", pa.int64()), ("s", pa.decimal128(20, 2))])
    old = pa.Table.from_pylist([{"n": 2, "s": Decimal("1.25")}], schema=schema)
    new = pa.Table.from_pylist([{"n": 1, "s": None}], schema=schema)
    merged = merged_rows(old, new, columns, schema)
    assert merged.to_pylist() == [{"n": 3, "s": Decimal("1.25")}] and merged.schema == schema


def test_floating_point_keys_are_left_to_spark() -> None:
    from pyspark.sql import types as T

    def schema(**columns: T.DataType) -> T.StructType:
        return T.StructType([T.StructField(name, data_type) for name, data_type in columns.items()])

    assert mergeable_keys(schema(k=T.StringType(), d=T.DateType(), n=T.LongType()), COLUMNS)
    assert not mergeable_keys(schema(k=T.DoubleType(), n=T.LongType()), COLUMNS)
    assert mergeable_keys(schema(x=T.DoubleType(), k=T.IntegerType()), COLUMNS)  # x is no key
