# ruff: noqa: F821
# CDC over a plain file stream: a Python UDF calling a helper module of this folder, then APPLY CHANGES into
# SCD 1 and SCD 2 targets (deletes, out-of-order changes).
import dlt
from cdc_helpers import normalize_email
from pyspark.sql import functions as F
from pyspark.sql.types import StringType

CHANGES = spark.conf.get("cluster.changes")
normalize = F.udf(normalize_email, StringType())


@dlt.view
def changes():
    return (
        spark.readStream.schema("id bigint, name string, email string, op string, seq bigint")
        .json(CHANGES)
        .withColumn("email", normalize(F.col("email")))
    )


dlt.create_streaming_table("customers")
dlt.apply_changes(target="customers", source="changes", keys=["id"], sequence_by=F.col("seq"),
                  apply_as_deletes=F.expr("op = 'DELETE'"), except_column_list=["op"], stored_as_scd_type=1)

dlt.create_streaming_table("customers_history")
dlt.apply_changes(target="customers_history", source="changes", keys=["id"], sequence_by=F.col("seq"),
                  apply_as_deletes=F.expr("op = 'DELETE'"), except_column_list=["op"], stored_as_scd_type=2)
