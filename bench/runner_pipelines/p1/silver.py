# P1 silver: streaming, two drop rules and one warn rule (evaluated in one pass by the framework).
import dlt
from logic import DROP_RULES, WARN_RULES, to_silver


@dlt.table(comment="Valid orders")
@dlt.expect_all_or_drop(DROP_RULES)
@dlt.expect_all(WARN_RULES)
def orders_silver():
    return to_silver(dlt.read_stream("orders_bronze"))
