# Silver: typed, validated, de-duplicated orders. The rules live in expectations/orders_clean.yml; rows failing
# a drop rule land in orders_clean_quarantine with the names of the rules they failed.
import dlt
from transforms import typed_orders

from framework.quality.decorators import expect_rules
from framework.quality.dedup import dedup_within_watermark


@dlt.table(comment="Valid orders, one row per order_id", table_properties={"quality": "silver"})
@expect_rules("orders_clean", quarantine=True)
def orders_clean():
    return dedup_within_watermark(typed_orders(dlt.read_stream("orders_raw")), "order_id", "order_ts", "7 days")


@dlt.view(comment="Customer changes ready for APPLY CHANGES")
@expect_rules("customers_changes")
@dlt.expect_or_drop("valid_customer_id", "customer_id IS NOT NULL")
def customers_changes():
    return dlt.read_stream("customers_cdc_raw")
