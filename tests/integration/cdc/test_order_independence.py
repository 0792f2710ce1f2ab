"""Property: the same events give the same target whatever the batching, order and number of updates.

Each example builds random inserts, updates, deletes, exact duplicates and out-of-order events over a few keys from
a seed (printed on failure), splits them into shuffled batches applied across several updates, and compares the
target with a plain-Python model of the documented semantics.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession

from framework.cdc import ApplyChangesTarget
from framework.declarations import ApplyChanges
from tests.integration.cdc.helpers import ordered

pytestmark = [pytest.mark.spark, pytest.mark.slow]

SCHEMA = "id INT, v STRING, seq INT, op STRING"
Event = tuple[int, str | None, int, str]


def scenario(seed: int) -> tuple[list[Event], list[list[Event]]]:
    """Random events (unique per key and sequence, plus exact duplicates) and a shuffled split into batches."""
    rng = random.Random(seed)
    events: list[Event] = []
    for key in range(rng.randint(1, 5)):
        for seq in rng.sample(range(1, 30), rng.randint(1, 6)):
            op = "D" if rng.random() < 0.25 else "U"
            events.append((key, None if op == "D" else f"k{key}s{seq}", seq, op))
    events += [rng.choice(events) for _ in range(rng.randint(0, 3))]
    rng.shuffle(events)
    cuts = sorted(rng.sample(range(1, len(events)), min(rng.randint(0, 3), len(events) - 1)))
    batches = [events[a:b] for a, b in zip([0, *cuts], [*cuts, len(events)], strict=True)]
    return events, batches


def timeline(events: list[Event]) -> dict[int, list[Event]]:
    by_key: dict[int, dict[int, Event]] = {}
    for event in events:
        by_key.setdefault(event[0], {})[event[2]] = event
    return {k: [v[s] for s in sorted(v)] for k, v in by_key.items()}


def model_scd1(events: list[Event], keep_sequence: bool) -> list[tuple[Any, ...]]:
    result = []
    for key, history in timeline(events).items():
        _, value, seq, op = history[-1]
        if op == "U":
            result.append((key, value, seq) if keep_sequence else (key, value))
    return ordered(result)


def model_scd2(events: list[Event]) -> list[tuple[Any, ...]]:
    result = []
    for key, history in timeline(events).items():
        for i, (_, value, seq, op) in enumerate(history):
            if op == "U":
                result.append((key, value, seq, history[i + 1][2] if i + 1 < len(history) else None))
    return ordered(result)


def run_batches(spark: SparkSession, root: Path, spec: ApplyChanges, batches: list[list[Event]],
                seed: int, small_bytes: int = 0) -> list[tuple[Any, ...]]:
    target = None
    rng = random.Random(seed)
    update, batch_id = 0, 0
    for batch in batches:
        if target is None or rng.random() < 0.5:  # a new update: new target object, new app id
            update, batch_id = update + 1, 0
            target = ApplyChangesTarget(spark, spec, "prop", str(root / "t"), str(root / "s"),
                                        small_bytes=small_bytes)
        target.apply_batch(spark.createDataFrame(batch, SCHEMA), batch_id, f"update-{update}")
        batch_id += 1
    assert target is not None
    return ordered([tuple(r) for r in spark.read.format("delta").load(target.target_path).collect()])


@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 2**31 - 1))
def test_scd1_order_independent(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory, seed: int) -> None:
    events, batches = scenario(seed)
    keep_sequence = seed % 2 == 0
    spec = ApplyChanges(source="s", keys=("id",), sequence_by="seq", apply_as_deletes="op = 'D'",
                        except_column_list=("op",) if keep_sequence else ("op", "seq"))
    got = run_batches(spark, tmp_path_factory.mktemp("scd1"), spec, batches, seed)
    assert got == model_scd1(events, keep_sequence), f"seed={seed} batches={batches}"


@pytest.mark.parametrize("small_bytes", [0, 1 << 20], ids=["merge", "driver-commits"])
@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 2**31 - 1))
def test_scd2_order_independent(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory, seed: int,
                                small_bytes: int) -> None:
    """Both ways of writing a batch: a Delta MERGE, and the driver's commit of a small target (cdc/small.py)."""
    events, batches = scenario(seed)
    spec = ApplyChanges(source="s", keys=("id",), sequence_by="seq", apply_as_deletes="op = 'D'",
                        except_column_list=("op", "seq"), stored_as_scd_type=2)
    got = run_batches(spark, tmp_path_factory.mktemp("scd2"), spec, batches, seed, small_bytes)
    assert got == model_scd2(events), f"seed={seed} batches={batches}"
