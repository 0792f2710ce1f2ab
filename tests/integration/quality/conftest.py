"""Small order/customer data shared by the quality integration tests."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest

RULES_DIR = Path(__file__).parent / "rules"


@pytest.fixture(scope="module", autouse=True)
def test_rule_files() -> Iterator[Path]:
    """Rule files are looked up in tests/integration/quality/rules first (not the sample pipeline's)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MEDALLION_EXPECTATIONS", str(RULES_DIR))
        yield RULES_DIR

ORDERS_DDL = ("order_id BIGINT, customer_id BIGINT, amount DOUBLE, currency STRING, order_ts TIMESTAMP, "
              "status STRING")


def ts(day: int, hour: int = 0) -> datetime:
    return datetime(2024, 1, day, hour)


ORDERS = [
    (1, 10, 25.0, "EUR", ts(1), "NEW"),
    (2, 11, 40.0, "USD", ts(1, 1), "PAID"),
    (3, None, 12.5, "EUR", ts(1, 2), "NEW"),          # no customer -> drop
    (None, 12, 9.0, "EUR", ts(1, 3), "NEW"),          # no order id -> drop
    (5, 13, -3.0, "JPY", ts(1, 4), "PAID"),           # two drop rules fail
    (6, 14, None, "EUR", ts(1, 5), "<script>x</script>"),  # NULL amount fails amount_positive; odd status warns
    (7, 15, 500000.0, "GBP", ts(1, 6), "SHIPPED"),    # only a warn rule fails
    (8, 16, 18.0, "CHF", None, "NEW"),                # no order_ts -> drop
]


@pytest.fixture
def orders_df(spark):  # type: ignore[no-untyped-def]
    return spark.createDataFrame(ORDERS, ORDERS_DDL)
