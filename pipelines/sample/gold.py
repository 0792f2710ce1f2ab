# Gold: the customer dimension with history (SCD type 2) and a revenue aggregate.
import dlt
from pyspark.sql.functions import col, expr
from transforms import daily_revenue

dlt.create_streaming_table("dim_customers", comment="Customers with full history (SCD type 2)",
                           table_properties={"quality": "gold"})

dlt.apply_changes(
    target="dim_customers",
    source="customers_changes",
    keys=["customer_id"],
    sequence_by=col("updated_at"),
    apply_as_deletes=expr("operation = 'DELETE'"),
    except_column_list=["operation", "_rescued_data"],
    stored_as_scd_type=2,
)


@dlt.table(comment="Completed revenue per day and country", table_properties={"quality": "gold"})
def daily_revenue_by_country():
    return daily_revenue(dlt.read("orders_clean"), dlt.read("dim_customers"))
