# A CDC table with I/U/D operations and a sequence (what a database's change capture writes) → APPLY CHANGES
# with deletes into an SCD type 2 history. Rows are read by `seq`, so every change is read exactly once.
import dlt
from pyspark.sql.functions import col, expr


@dlt.view(comment="Changes to users, as captured by the database")
def users_changes():
    return (spark.readStream.format("jdbc_incremental")
            .option("url", spark.conf.get("shop.jdbc_url"))
            .option("dbtable", "public.users_cdc")
            .option("user", spark.conf.get("shop.user"))
            .option("password", dbutils.secrets.get("shop", "password"))
            .option("watermarkColumn", "seq")
            .load())


dlt.create_streaming_table("users_history", comment="Users with full history (SCD type 2)")

dlt.apply_changes(target="users_history", source="users_changes", keys=["user_id"], sequence_by=col("seq"),
                  apply_as_deletes=expr("op = 'D'"), except_column_list=["op", "seq"], stored_as_scd_type=2)
