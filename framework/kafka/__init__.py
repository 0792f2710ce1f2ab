"""Kafka: reads and sinks checked on the driver (:mod:`framework.kafka.check`) and SQL's ``read_kafka``
(:mod:`framework.kafka.sql`). Reading and writing is Spark's own Kafka connector (``spark-sql-kafka-0-10``,
conf/spark.yaml); exactly once into Delta comes from the flow's checkpoint, which holds the offsets of every
micro-batch, as for any streaming source."""

from framework.kafka.check import check_kafka_read, check_kafka_sink, register_kafka_secrets

__all__ = ["check_kafka_read", "check_kafka_sink", "register_kafka_secrets"]
