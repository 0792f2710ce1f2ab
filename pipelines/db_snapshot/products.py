# Hash-diff snapshots: each update reads the whole products table over JDBC (Spark's own JDBC reader, the
# PostgreSQL driver comes with the set-up) and APPLY CHANGES FROM SNAPSHOT compares it with the previous one:
# new keys are inserted, changed rows updated, missing keys deleted. The target's change data feed says which
# rows each update inserted, updated and deleted (see docs/database-sources.md).
import dlt


@dlt.view(comment="The products table as it is now")
def products_snapshot():
    return (spark.read.format("jdbc")
            .option("url", spark.conf.get("shop.jdbc_url"))
            .option("dbtable", "public.products")
            .option("user", spark.conf.get("shop.user"))
            .option("password", dbutils.secrets.get("shop", "password"))
            .load())


dlt.create_streaming_table("products", comment="Products, kept equal to the latest snapshot (SCD 1)",
                           table_properties={"delta.enableChangeDataFeed": "true"})

dlt.apply_changes_from_snapshot(target="products", source="products_snapshot", keys=["product_id"],
                                stored_as_scd_type=1)
