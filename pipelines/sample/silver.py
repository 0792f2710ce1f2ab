# Silver: typed, validated, de-duplicated orders.
import dlt
from transforms import typed_orders


@dlt.table(comment="Valid orders, one row per order_id", table_properties={"quality": "silver"})
@dlt.expect("known_currency", "currency IN ('EUR', 'USD', 'GBP')")
@dlt.expect_all_or_drop({
    "valid_order_id": "order_id IS NOT NULL",
    "positive_amount": "amount > 0",
    "valid_status": "status IN ('completed', 'cancelled', 'pending')",
})
def orders_clean():
    return typed_orders(dlt.read_stream("orders_raw")).dropDuplicates(["order_id"])


@dlt.view(comment="Customer changes ready for APPLY CHANGES")
@dlt.expect_or_drop("valid_customer_id", "customer_id IS NOT NULL")
def customers_changes():
    return dlt.read_stream("customers_cdc_raw")
