# P1 gold: a materialized aggregate, recomputed on every update.
import dlt
from logic import to_gold


@dlt.table(comment="Revenue per day and country")
def revenue_by_day_country():
    return to_gold(dlt.read("orders_silver"))
