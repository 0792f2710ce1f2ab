"""Quarantine: good + quarantined = input, failed rule names, update id, time, schema evolution (real Delta)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import functions as F

from framework.quality.quarantine import (
    FAILED_RULES_COLUMN,
    QUARANTINED_AT_COLUMN,
    UPDATE_ID_COLUMN,
    append_quarantine,
    split_quarantine,
)
from framework.quality.rules import Rule, RuleSet, load_rules

from .conftest import ORDERS_DDL

pytestmark = pytest.mark.spark


def test_split_keeps_every_row_once_with_failed_rule_names(spark, orders_df) -> None:  # type: ignore[no-untyped-def]
    rules = load_rules("orders_clean")
    good, bad = split_quarantine(orders_df, rules, update_id="u-1")
    good_ids = sorted(r.order_id for r in good.collect())
    bad_rows = {r.order_id: r for r in bad.collect()}
    assert good_ids == [1, 2, 7]  # order 7 only fails a warn rule: kept
    assert good.count() + len(bad_rows) == orders_df.count()
    assert bad_rows[5][FAILED_RULES_COLUMN] == ["amount_positive", "known_currency"]
    assert bad_rows[3][FAILED_RULES_COLUMN] == ["customer_id_present"]
    assert bad_rows[None][FAILED_RULES_COLUMN] == ["order_id_present"]
    assert bad_rows[6][FAILED_RULES_COLUMN] == ["amount_positive"]  # NULL counts as failing
    assert bad_rows[8][FAILED_RULES_COLUMN] == ["order_ts_present"]
    assert {r[UPDATE_ID_COLUMN] for r in bad_rows.values()} == {"u-1"}
    assert all(r[QUARANTINED_AT_COLUMN] is not None for r in bad_rows.values())
    assert bad.columns[:6] == orders_df.columns  # the original row, unchanged, first


def test_update_id_comes_from_the_runner_conf(spark, orders_df) -> None:  # type: ignore[no-untyped-def]
    rules = RuleSet("r", (Rule("pos", "amount > 0", "drop"),))
    spark.conf.set("pipelines.updateId", "update-42")
    try:
        _, bad = split_quarantine(orders_df, rules)
        assert {r[UPDATE_ID_COLUMN] for r in bad.collect()} == {"update-42"}
    finally:
        spark.conf.unset("pipelines.updateId")
    _, bad = split_quarantine(orders_df, rules)
    assert {r[UPDATE_ID_COLUMN] for r in bad.collect()} == {None}


def test_rule_failing_every_row_and_null_heavy_data(spark) -> None:  # type: ignore[no-untyped-def]
    df = spark.createDataFrame([(None, None, None, None, None, None)] * 5, ORDERS_DDL)
    rules = RuleSet("r", (Rule("never", "1 = 0", "drop"), Rule("pos", "amount > 0", "drop"),
                          Rule("w", "status IS NOT NULL", "warn")))
    good, bad = split_quarantine(df, rules)
    assert good.count() == 0
    assert [r[FAILED_RULES_COLUMN] for r in bad.collect()] == [["never", "pos"]] * 5


def test_no_drop_rules_quarantines_nothing(spark, orders_df) -> None:  # type: ignore[no-untyped-def]
    good, bad = split_quarantine(orders_df, load_rules("orders_clean").with_action("warn"))
    assert (good.count(), bad.count()) == (8, 0)


def test_quarantine_table_schema_evolves(spark, orders_df, storage: Path) -> None:  # type: ignore[no-untyped-def]
    path = str(storage / "tables" / "orders_clean_quarantine")
    rules = load_rules("orders_clean")
    append_quarantine(split_quarantine(orders_df, rules, update_id="u1")[1], path)
    wider = orders_df.withColumn("channel", F.lit("web"))
    append_quarantine(split_quarantine(wider, rules, update_id="u2")[1], path)
    table = spark.read.format("delta").load(path)
    assert "channel" in table.columns
    counts = {r[UPDATE_ID_COLUMN]: (r["n"], r["channels"]) for r in table.groupBy(UPDATE_ID_COLUMN).agg(
        F.count("*").alias("n"), F.count("channel").alias("channels")).collect()}
    assert counts == {"u1": (5, 0), "u2": (5, 5)}


def test_streaming_quarantine_matches_batch(spark, orders_df, storage: Path) -> None:  # type: ignore[no-untyped-def]
    source = str(storage / "tables" / "orders_raw")
    orders_df.write.format("delta").save(source)
    rules = load_rules("orders_clean")
    _, bad = split_quarantine(spark.readStream.format("delta").load(source), rules, update_id="s1")
    target = str(storage / "tables" / "orders_clean_quarantine")
    (bad.writeStream.format("delta").trigger(availableNow=True)
     .option("checkpointLocation", str(storage / "checkpoints" / "quarantine"))
     .start(target).awaitTermination())
    streamed = {r.order_id: r[FAILED_RULES_COLUMN] for r in spark.read.format("delta").load(target).collect()}
    batch = {r.order_id: r[FAILED_RULES_COLUMN] for r in split_quarantine(orders_df, rules)[1].collect()}
    assert streamed == batch and len(streamed) == 5
