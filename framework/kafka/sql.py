"""SQL's ``read_kafka(bootstrapServers => ..., subscribe => ..., ...)``, batch and under ``STREAM``, as Spark's
Kafka source (framework/sql/query.py finds the call in the parsed query and reads it through the pipeline's
``spark``, so that the driver-side check of :mod:`framework.kafka.check` applies as in Python).

Databricks' table-valued function takes Spark's Kafka options by name, except that the brokers are
``bootstrapServers`` (Spark: ``kafka.bootstrap.servers``); ``kafka.*`` options (in backticks) reach the Kafka
client unchanged, SASL/SSL settings included. Its columns are Spark's Kafka source's (``key``, ``value``,
``topic``, ``partition``, ``offset``, ``timestamp``, ``timestampType``, and ``headers`` with
``includeHeaders => true``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from framework.errors import SqlError

_SERVERS = "bootstrapservers"
_TOPIC_OPTIONS = ("subscribe", "subscribepattern", "assign")


def kafka_options(arguments: Sequence[tuple[str, str]]) -> dict[str, str]:
    """Spark's Kafka source options for ``read_kafka``'s named arguments.

    Raises:
        SqlError: no ``bootstrapServers``, or not exactly one of subscribe / subscribePattern / assign.
    """
    options: dict[str, str] = {}
    for key, value in arguments:
        options["kafka.bootstrap.servers" if key.lower() == _SERVERS else key] = value
    if "kafka.bootstrap.servers" not in options:
        raise SqlError("read_kafka needs bootstrapServers => 'host:port[,host:port...]'", code="SQL_PARSE_ERROR")
    chosen = [k for k in options if k.lower() in _TOPIC_OPTIONS]
    if len(chosen) != 1:
        raise SqlError("read_kafka needs exactly one of subscribe => 'topic[,topic]', subscribePattern => "
                       f"'regex' or assign => '{{\"topic\": [0]}}' (got {', '.join(chosen) or 'none'})",
                       code="SQL_PARSE_ERROR")
    return options


def read_kafka(spark: Any, arguments: Sequence[tuple[str, str]], streaming: bool) -> Any:
    """The DataFrame of one ``read_kafka(...)`` call: a streaming read under ``STREAM``, else a batch read."""
    reader = spark.readStream if streaming else spark.read
    return reader.format("kafka").options(**kafka_options(arguments)).load()
