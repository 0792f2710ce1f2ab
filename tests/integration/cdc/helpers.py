"""Shared helpers for the CDC integration tests (tiny data, one shared SparkSession)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.functions import col, expr

from framework.cdc import ApplyChangesTarget
from framework.declarations import ApplyChanges

USERS_SCHEMA = "userId INT, name STRING, city STRING, operation STRING, sequenceNum INT"

# SEMANTICS.md §3 worked example, in arrival order.
USERS = [
    (124, "Raul", "Oaxaca", "INSERT", 1),
    (123, "Isabel", "Monterrey", "INSERT", 1),
    (125, "Mercedes", "Tijuana", "INSERT", 2),
    (126, "Lily", "Cancun", "INSERT", 2),
    (123, None, None, "DELETE", 6),
    (125, "Mercedes", "Guadalajara", "UPDATE", 6),
    (125, "Mercedes", "Mexicali", "UPDATE", 5),
    (123, "Isabel", "Chihuahua", "UPDATE", 5),
]


def users_spec(**overrides: Any) -> ApplyChanges:
    """The documented example's arguments, with overrides."""
    args: dict[str, Any] = dict(
        source="users", keys=("userId",), sequence_by=col("sequenceNum"),
        apply_as_deletes=expr("operation = 'DELETE'"), except_column_list=("operation", "sequenceNum"),
    )
    args.update(overrides)
    return ApplyChanges(**args)


def new_target(spark: SparkSession, storage: Path, spec: ApplyChanges, name: str = "target",
               schema: Any = None) -> ApplyChangesTarget:
    return ApplyChangesTarget(spark, spec, name, str(storage / "tables" / name), str(storage / "state" / name),
                              target_schema=schema)


def table(spark: SparkSession, target: ApplyChangesTarget) -> DataFrame:
    return spark.read.format("delta").load(target.target_path)


def ordered(data: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """Tuples sorted with None first, so that expected rows can be listed in any order."""
    return sorted(data, key=lambda r: tuple((v is not None, v) for v in r))


def rows(spark: SparkSession, target: ApplyChangesTarget) -> list[tuple[Any, ...]]:
    """The target's rows as sorted tuples (None sorts first)."""
    return ordered([tuple(r) for r in table(spark, target).collect()])
