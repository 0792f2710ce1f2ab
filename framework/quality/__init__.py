"""Data quality: the expectations engine, rule files, quarantine, de-duplication, reports, Great Expectations.

Pipeline code uses ``expect_rules`` / ``quarantine_table`` (they declare with the ``dlt`` module of wherever the
pipeline runs, so they work on Databricks too) and the de-duplication helpers.
"""

from framework.quality.decorators import expect_rules, expectation_kwargs
from framework.quality.dedup import dedup_within_watermark, drop_exact_duplicates, latest_by_key
from framework.quality.quarantine import quarantine_table, split_quarantine
from framework.quality.rules import (
    Rule,
    RuleSet,
    check_against_schema,
    load_rules,
    parse_rules,
    validate_rules,
)

__all__ = [
    "Rule", "RuleSet", "check_against_schema", "dedup_within_watermark", "drop_exact_duplicates",
    "expect_rules", "expectation_kwargs", "latest_by_key", "load_rules", "parse_rules", "quarantine_table",
    "split_quarantine", "validate_rules",
]
