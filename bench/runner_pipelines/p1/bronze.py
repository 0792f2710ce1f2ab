# ruff: noqa: F821  (`spark` is provided by the pipeline loader, as on Databricks)
# P1 bronze: JSON files landed in `landing` -> a streaming table (fixed schema, plain file stream source).
import dlt
from logic import ORDER_SCHEMA


@dlt.table(comment="Orders as landed (JSON)")
def orders_bronze():
    return spark.readStream.format("json").schema(ORDER_SCHEMA).load(spark.conf.get("landing"))
