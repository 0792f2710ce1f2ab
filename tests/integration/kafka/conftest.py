"""Kafka tests: the session's broker (framework.testing.kafka), the example pipelines' specs pointed at it."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from framework.runner.update import UpdateOptions, UpdateResult, run_update
from framework.spec import PipelineSpec, load_spec

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from framework.testing.kafka import KafkaBroker

REPO = Path(__file__).resolve().parents[3]


def orders_spec(spec_file: str, broker: KafkaBroker, topic: str, storage: Path, **configuration: str) -> PipelineSpec:
    """conf/<spec_file> pointed at ``broker`` and ``topic`` (``<topic>_out`` for the sink), storage under the test's."""
    conf = {"orders.kafka_servers": broker.bootstrap_servers, "orders.topic": topic,
            "orders.out_topic": broker.create_topic(f"{topic}_out"), **configuration}
    return load_spec(REPO / "conf" / spec_file, overrides={"storage": str(storage), "configuration": conf})


def update(spec: PipelineSpec, spark: SparkSession, **options: Any) -> UpdateResult:
    """One update, its output kept out of the test log."""
    return run_update(spec, UpdateOptions(out=io.StringIO(), **options), spark=spark)


def rows(spark: SparkSession, spec: PipelineSpec, table: str, columns: str, order: str) -> list[tuple[Any, ...]]:
    """Some columns of one of the pipeline's tables, as tuples, ordered."""
    df = spark.read.format("delta").load(str(spec.tables_dir / table))
    return [tuple(r) for r in df.selectExpr(*columns.split(",")).orderBy(*order.split(",")).collect()]


def event(order_id: int, status: str, amount: float, minute: int) -> str:
    """One order event's JSON value."""
    return json.dumps({"order_id": order_id, "status": status, "amount": amount,
                       "updated_at": f"2026-01-01T10:{minute:02d}:00Z"})
