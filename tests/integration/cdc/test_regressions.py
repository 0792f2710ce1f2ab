"""Wrong results found in APPLY CHANGES, each reproduced exactly (issue 39 and the property test,
test_properties.py), through pipelines as a user writes them and through ``ApplyChangesTarget`` on both ways of
writing a batch (a Delta MERGE, and the driver's commit of a small target, framework/cdc/small.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from framework.cdc import ApplyChangesTarget
from framework.declarations import ApplyChanges
from framework.runner.update import UpdateOptions, run_update
from tests.integration.cdc.helpers import USERS, USERS_SCHEMA, ordered, rows, users_spec
from tests.integration.runner.pipeline_factory import make_pipeline, write_json_lines

pytestmark = pytest.mark.spark

# issue 39: after the documented batch, a late event for 125 (sequence 3 < 6) that changes only the untracked city
LATE_UNTRACKED = (125, "Mercedes", "Merida", "UPDATE", 3)
CITY_UNTRACKED = ordered(
    [  # the documented SCD 2 result with TRACK HISTORY ON * EXCEPT (city) (SEMANTICS.md §3)
        (123, "Isabel", "Chihuahua", 1, 6),
        (124, "Raul", "Oaxaca", 1, None),
        (125, "Mercedes", "Guadalajara", 2, None),
        (126, "Lily", "Cancun", 2, None),
    ]
)

FEED = """
import dlt

@dlt.view
def users():
    return spark.readStream.format("json").schema("{schema}").load(spark.conf.get("landing"))
""".replace("{schema}", USERS_SCHEMA)
PYTHON = """
import dlt
from pyspark import pipelines as dp
from pyspark.sql.functions import col, expr

dlt.create_streaming_table("python_dlt")
dlt.apply_changes(target="python_dlt", source="users", keys=["userId"], sequence_by=col("sequenceNum"),
                  apply_as_deletes=expr("operation = 'DELETE'"), except_column_list=["operation", "sequenceNum"],
                  stored_as_scd_type=2, track_history_except_column_list=["city"])

dp.create_streaming_table("python_dp")
dp.create_auto_cdc_flow(target="python_dp", source="users", keys=["userId"], sequence_by=col("sequenceNum"),
                        apply_as_deletes=expr("operation = 'DELETE'"),
                        except_column_list=["operation", "sequenceNum"], stored_as_scd_type="2",
                        track_history_except_column_list=["city"])
"""
SQL = """
CREATE OR REFRESH STREAMING TABLE sql_target;

CREATE FLOW sql_flow AS AUTO CDC INTO sql_target
FROM stream(users)
KEYS (userId)
APPLY AS DELETE WHEN operation = "DELETE"
SEQUENCE BY sequenceNum
COLUMNS * EXCEPT (operation, sequenceNum)
STORED AS SCD TYPE 2
TRACK HISTORY ON * EXCEPT (city);
"""


def _json(rows: list[tuple[Any, ...]]) -> list[str]:
    names = ["userId", "name", "city", "operation", "sequenceNum"]
    return [json.dumps(dict(zip(names, row, strict=True))) for row in rows]


def test_a_late_untracked_change_keeps_the_newest_value_in_sql_and_python(
    spark: SparkSession, tmp_path: Path
) -> None:
    """Issue 39, exactly: batch 1 gives the documented table; the late event of batch 2 leaves it unchanged."""
    landing = tmp_path / "landing"
    write_json_lines(landing, "1.json", _json(USERS))
    spec = make_pipeline(
        tmp_path, {"feed.py": FEED, "cdc.py": PYTHON, "cdc.sql": SQL}, configuration={"landing": str(landing)}
    )
    targets = ("sql_target", "python_dlt", "python_dp")

    def target_rows(name: str) -> list[tuple[Any, ...]]:
        df = spark.read.format("delta").load(str(spec.tables_dir / name))
        return ordered(
            [tuple(r) for r in df.select("userId", "name", "city", "__START_AT", "__END_AT").collect()]
        )

    for batch in (1, 2):
        if batch == 2:
            write_json_lines(landing, "2.json", _json([LATE_UNTRACKED]))
        result = run_update(spec, UpdateOptions(), spark=spark)
        assert result.succeeded, [
            (f.flow, f.error) for f in result.flows if f.error is not None
        ] or result.error
        assert {name: target_rows(name) for name in targets} == dict.fromkeys(targets, CITY_UNTRACKED), batch


@pytest.mark.parametrize("small_bytes", [0, 1 << 20], ids=["merge", "driver-commits"])
@pytest.mark.parametrize(
    "tracking",
    [{"track_history_except_column_list": ("city",)}, {"track_history_column_list": ("name",)}],
    ids=["except", "list"],
)
def test_a_late_untracked_change_in_any_split(
    spark: SparkSession, tmp_path: Path, small_bytes: int, tracking: dict[str, Any]
) -> None:
    """The same late event alone after the documented batch, and with the documented batch split before it."""
    spec = users_spec(stored_as_scd_type=2, **tracking)
    for number, batches in enumerate([[USERS, [LATE_UNTRACKED]], [USERS[:6], [*USERS[6:], LATE_UNTRACKED]]]):
        target = ApplyChangesTarget(
            spark,
            spec,
            "t",
            str(tmp_path / f"{number}/t"),
            str(tmp_path / f"{number}/s"),
            small_bytes=small_bytes,
        )
        for batch_id, batch in enumerate(batches):
            target.apply_batch(spark.createDataFrame(batch, USERS_SCHEMA), batch_id, "app")
        assert rows(spark, target) == CITY_UNTRACKED, batches


SCD2_SCHEMA = "id INT, a STRING, b STRING, seq INT, op STRING"


@pytest.mark.parametrize("small_bytes", [0, 1 << 20], ids=["merge", "driver-commits"])
@pytest.mark.parametrize(
    ("tracking", "batches", "expected"),
    [
        pytest.param(  # all columns tracked: identical upserts 1 and 3 are one version until the late 2 splits it
            {},
            [[(1, "x", "p", 1, "U"), (1, "x", "p", 3, "U")], [(1, "y", "p", 2, "U")]],
            [(1, "x", "p", 1, 2), (1, "y", "p", 2, 3), (1, "x", "p", 3, None)],
            id="identical-upserts-split",
        ),
        pytest.param(  # b untracked: 1 and 3 are one version; the late 2 changes a, so 3 reopens with its own b
            {"track_history_except_column_list": ("b",)},
            [[(1, "x", "p", 1, "U"), (1, "x", "q", 3, "U")], [(1, "y", "p", 2, "U")]],
            [(1, "x", "p", 1, 2), (1, "y", "p", 2, 3), (1, "x", "q", 3, None)],
            id="absorbed-upsert-reopens",
        ),
        pytest.param(  # the late 2 splits the version 1..3: the part before it keeps upsert 1's b
            {"track_history_except_column_list": ("b",)},
            [
                [(1, "x", "p", 1, "U"), (1, "x", "q", 3, "U")],
                [(1, "y", "r", 2, "U")],
                [(1, "y", "s", 4, "U")],
            ],
            [(1, "x", "p", 1, 2), (1, "y", "r", 2, 3), (1, "x", "q", 3, 4), (1, "y", "s", 4, None)],
            id="split-keeps-the-first-values",
        ),
    ],
)
def test_late_events_inside_a_version_that_absorbed_upserts(
    spark: SparkSession,
    tmp_path: Path,
    small_bytes: int,
    tracking: dict[str, Any],
    batches: list[list[tuple[Any, ...]]],
    expected: list[tuple[Any, ...]],
) -> None:
    """A version that absorbed upserts remembers them (the ``upserts`` state, framework/cdc/versions.py): a late
    event inside it gives the rows the events give in one batch (before the fix, the version's latest values
    stood for all of its upserts)."""
    spec = ApplyChanges(
        source="s",
        keys=("id",),
        sequence_by="seq",
        apply_as_deletes="op = 'D'",
        except_column_list=("op", "seq"),
        stored_as_scd_type=2,
        **tracking,
    )
    target = ApplyChangesTarget(
        spark, spec, "t", str(tmp_path / "t"), str(tmp_path / "s"), small_bytes=small_bytes
    )
    for batch_id, batch in enumerate(batches):
        target.apply_batch(spark.createDataFrame(batch, SCD2_SCHEMA), batch_id, "app")
    assert rows(spark, target) == ordered(expected)
    one_batch = ApplyChangesTarget(spark, spec, "t", str(tmp_path / "t1"), str(tmp_path / "s1"))
    one_batch.apply_batch(spark.createDataFrame([e for b in batches for e in b], SCD2_SCHEMA), 0, "app")
    assert rows(spark, one_batch) == ordered(expected)
