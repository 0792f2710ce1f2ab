"""Great Expectations through Spark on a real Delta table, and Data Docs in a local folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from framework.quality.gx import build_data_docs, validate_with_gx, validation_summary
from framework.quality.rules import Rule, RuleSet

pytestmark = pytest.mark.spark


def test_validate_delta_table_and_build_data_docs(spark, orders_df, storage: Path) -> None:  # type: ignore[no-untyped-def]
    table = str(storage / "tables" / "orders_clean")
    orders_df.write.format("delta").save(table)
    rules = RuleSet("orders_clean", (
        Rule("order_id_present", "order_id IS NOT NULL", "drop"),
        Rule("amount_positive", "amount > 0", "drop"),
        Rule("known_currency", "currency IN ('EUR', 'USD', 'GBP', 'CHF')", "drop"),
        Rule("ts_and_status", "order_ts IS NOT NULL AND status <> 'CANCELLED'", "warn"),
    ))
    result = validate_with_gx(spark, table, rules, data_docs_dir=storage / "gx_docs")
    assert result.success is False
    by_rule = {r["rule"]: r for r in validation_summary(result)}
    assert by_rule["order_id_present"]["unexpected_count"] == 1
    assert by_rule["amount_positive"]["unexpected_count"] == 1  # GX skips the NULL amount (documented)
    assert by_rule["known_currency"]["unexpected_count"] == 1
    assert by_rule["ts_and_status"]["mapping"] == "fallback"
    assert by_rule["ts_and_status"]["unexpected_count"] == 1  # same count as the pipeline (NULL fails)

    docs = storage / "gx_docs" / "index.html"
    assert docs.is_file()
    pages = [p.name for p in (storage / "gx_docs").rglob("*.html")]
    assert "orders_clean.html" in pages and len(pages) >= 3  # index, suite, validation result
    assert "orders_clean" in docs.read_text()


def test_build_data_docs_returns_the_index(spark, storage: Path) -> None:  # type: ignore[no-untyped-def]
    df = spark.createDataFrame([(1,), (None,)], "customer_id BIGINT")
    rules = RuleSet("customers", (Rule("customer_id_present", "customer_id IS NOT NULL", "drop"),))
    index = build_data_docs(spark, df, rules, storage / "docs", exact=True)
    assert index == (storage / "docs" / "index.html").resolve() and index.is_file()


def test_report_gx_builds_suites_from_decorator_expectations(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """`report --gx`: every expectation of the pipeline (decorators included), and the rules left out, with why."""
    import json

    from framework.runner.reporting import write_reports
    from tests.integration.runner.pipeline_factory import make_pipeline

    from .eventlog_helpers import FlowRun, write_update

    spec = make_pipeline(tmp_path, {"p.py": """
        import dlt
        from pyspark.sql import functions as F

        @dlt.table
        @dlt.expect_or_fail("id_present", "id IS NOT NULL")
        @dlt.expect("small", "amount < 100")
        @dlt.expect_or_drop("py_positive", F.col("amount") > 0)
        def payments():
            return spark.range(1)
    """})
    spark.createDataFrame([(1, 5.0), (2, 500.0), (None, 1.0)], "id BIGINT, amount DOUBLE") \
        .write.format("delta").save(str(spec.tables_dir / "payments"))
    write_update(spark, spec.storage, "u-1", [FlowRun("payments", 3, [("id_present", 3, 0), ("small", 2, 1),
                                                                      ("py_positive", 3, 0)])])
    written = write_reports(spec, gx=True)
    mapping = json.loads((spec.storage / "reports" / "gx" / "mapping.json").read_text())
    assert mapping["payments"]["mapped"] == [{"rule": "id_present", "mapping": "not_null"},
                                             {"rule": "small", "mapping": "compare"}]
    assert [s["rule"] for s in mapping["payments"]["skipped"]] == ["py_positive"]
    assert (spec.storage / "reports" / "gx" / "payments" / "index.html") in written
    report = json.loads((spec.storage / "reports" / "dq_report.json").read_text())
    actions = {r["name"]: r["action"] for r in report["update"]["datasets"][0]["rules"]}
    assert actions == {"id_present": "fail", "small": "warn", "py_positive": "drop"}
