"""What one request leaves in the warm SparkSession and the next must not see: SQL settings changed by pipeline
code (``spark.conf.set``, which may hold a secret), temporary views, cached data, and a streaming query still
active (an interrupted update's flow that started its query as the interrupt arrived: the next update's flow of
the same name could not start). A process of its own would start without them; the server puts the session back
to how it was when it started, after every request.

The catalog is kept: the tables an update publishes are references to Delta folders, published again by every
update, as a Databricks workspace's catalog also outlives an update.
"""

from __future__ import annotations

import gc
from contextlib import suppress
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


class SessionBaseline:
    """The session's SQL settings when the server started, and :meth:`restore` to return to them."""

    def __init__(self, spark: SparkSession) -> None:
        self.spark = spark
        self.conf = dict(spark.conf.getAll)
        self.database = spark.catalog.currentDatabase()

    def restore(self) -> None:
        """Stop the streaming queries still active, unset settings added since the start, set changed ones back,
        return to the first database, drop temporary views, uncache all."""
        from framework.runner.streams import stop_active_queries

        spark = self.spark
        stop_active_queries(spark)
        now = dict(spark.conf.getAll)
        for key in now.keys() - self.conf.keys():
            with suppress(Exception):  # a static setting cannot be changed, and was not by the request either
                spark.conf.unset(key)
        for key, value in self.conf.items():
            if now.get(key) != value:
                with suppress(Exception):
                    spark.conf.set(key, value)
        if spark.catalog.currentDatabase() != self.database:
            spark.catalog.setCurrentDatabase(self.database)
        # SHOW VIEWS, not catalog.listTables(): that one loads every table of the database (Delta logs included)
        for row in spark.sql("SHOW VIEWS").where("isTemporary").collect():
            spark.catalog.dropTempView(row["viewName"])
        spark.catalog.clearCache()
        gc.collect()  # DataFrames in Python reference cycles keep their JVM plans alive until a full collection
