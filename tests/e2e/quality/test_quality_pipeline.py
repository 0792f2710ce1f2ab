"""A pipeline that uses a rule file, quarantine and de-duplication, run by the local runner, then reported.

Checks: good + quarantined = input; the quarantine rows carry the failed rule names and the runner's update id;
the report counts dropped, quarantined and warned rows from the real event log.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from framework.quality.report import build_report
from framework.testing import assert_df_equal

pytestmark = [pytest.mark.spark, pytest.mark.slow]

PIPELINE = '''
import dlt
from framework.quality.decorators import expect_rules
from framework.quality.dedup import latest_by_key

LANDING = spark.conf.get("test.landing")


@dlt.table(comment="orders as landed")
def orders_raw():
    return spark.read.format("json").schema(spark.conf.get("test.schema")).load(LANDING)


@dlt.table(comment="valid orders, latest version per order_id")
@expect_rules("orders_clean", quarantine=True)
def orders_clean():
    return latest_by_key(dlt.read("orders_raw"), "order_id", "order_ts")
'''

SCHEMA = ("order_id BIGINT, customer_id BIGINT, amount DOUBLE, currency STRING, order_ts TIMESTAMP, "
          "status STRING")


def order(i: int, **overrides: object) -> dict:
    row = {"order_id": i, "customer_id": 100 + i, "amount": 10.0 + i, "currency": "EUR",
           "order_ts": f"2024-01-01T00:{i:02d}:00", "status": "NEW"}
    return row | overrides


def test_rules_quarantine_and_dedup_through_the_runner(spark, run_pipeline, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "pipeline.py").write_text(PIPELINE)
    spec_path = tmp_path / "spec.yaml"
    spec_path.write_text(textwrap.dedent(f"""
        name: quality_e2e
        libraries:
          - file: {{path: pipeline.py}}
        storage: storage
        configuration:
          test.landing: landing
          test.schema: "{SCHEMA}"
        """))
    first = run_pipeline(spec_path, configuration={"test.landing": "{inputs}"}, inputs={"b1.json": [
        order(1), order(2), order(2, amount=99.0, order_ts="2024-01-01T01:00:00"), order(3, amount=-5.0),
        order(4, currency="JPY", customer_id=None), order(5, status="<b>odd</b>")]})
    spec = first.spec
    assert first.succeeded, first.error
    assert_df_equal(first.table("orders_clean").select("order_id", "amount"), [(1, 11.0), (2, 99.0), (5, 15.0)])
    failed = {r.order_id: (r._failed_rules, r._update_id) for r in first.table("orders_clean_quarantine").collect()}
    update_id = first.result.update_id
    assert failed == {3: (["amount_positive"], update_id),
                      4: (["customer_id_present", "known_currency"], update_id)}

    report = json.loads(build_report(spark, spec.storage, out_dir=tmp_path / "report").json.read_text())
    orders = next(d for d in report["update"]["datasets"] if d["dataset"] == "orders_clean")
    assert orders["quarantined"] == 2 and orders["dropped"] == 2
    assert orders["rows_in"] == orders["rows_out"] + orders["quarantined"] == 5  # 6 landed, 1 older version
    status_rule = next(r for r in orders["rules"] if r["name"] == "known_status")
    assert (status_rule["failed"], status_rule["action"]) == (1, "warn")
    assert report["quarantine_samples"][0]["total"] == 2
