"""jdbc_incremental options: every mistake at once, typos get the closest name, libpq URIs from JDBC URLs."""

from __future__ import annotations

import pytest

from framework.sources.errors import SourceOptionsError, scrub
from framework.sources.options import libpq_uri, parse_options

BASE = {"url": "jdbc:postgresql://db.example:5432/shop", "dbtable": "public.orders", "watermarkColumn": "updated_at"}


def _codes(exc: SourceOptionsError) -> list[str]:
    return [p.code for p in exc.problems]


def test_minimal_options_parse_with_defaults() -> None:
    opts = parse_options({**BASE, "path": "ignored"})
    assert (opts.relation, opts.watermark_column, opts.num_partitions, opts.max_rows_per_batch) == \
        ("public.orders", "updated_at", 1, None)
    assert opts.lookback is None and not opts.lookback_is_interval


def test_names_are_case_insensitive_as_spark_gives_them() -> None:
    opts = parse_options({"URL": BASE["url"], "DbTable": "t", "watermarkcolumn": "seq", "MAXROWSPERBATCH": "10"})
    assert opts.max_rows_per_batch == 10


def test_every_problem_is_reported_at_once() -> None:
    with pytest.raises(SourceOptionsError) as caught:
        parse_options({"url": "jdbc:mysql://x/db", "watermarkColum": "x", "fetchSize": "-3", "lookback": "soon"})
    assert caught.value.code == "INVALID_SOURCE_OPTIONS"
    assert sorted(_codes(caught.value)) == sorted([
        "UNKNOWN_SOURCE_OPTION", "MISSING_SOURCE_OPTION", "SOURCE_RELATION", "UNSUPPORTED_URL",
        "INVALID_SOURCE_OPTION", "INVALID_LOOKBACK"])
    assert "did you mean 'watermarkColumn'?" in str(caught.value)


def test_dbtable_and_query_are_exclusive() -> None:
    with pytest.raises(SourceOptionsError) as caught:
        parse_options({**BASE, "query": "SELECT 1"})
    assert _codes(caught.value) == ["SOURCE_RELATION"]


def test_query_becomes_a_derived_table() -> None:
    opts = parse_options({**{k: v for k, v in BASE.items() if k != "dbtable"}, "query": "SELECT * FROM t;"})
    assert opts.relation == "(SELECT * FROM t) AS medallion_source"


@pytest.mark.parametrize(("lookback", "interval"), [("2 hours", True), ("1 day 30 minutes", True), ("10", False),
                                                   ("0.5", False)])
def test_lookback_is_a_number_or_an_interval(lookback: str, interval: bool) -> None:
    assert parse_options({**BASE, "lookback": lookback}).lookback_is_interval is interval


def test_negative_lookback_is_refused() -> None:
    with pytest.raises(SourceOptionsError) as caught:
        parse_options({**BASE, "lookback": "-5"})
    assert _codes(caught.value) == ["INVALID_LOOKBACK"]


def test_libpq_uri_carries_credentials_encoded_and_a_utc_session() -> None:
    uri = libpq_uri("jdbc:postgresql://h:5433/shop?sslmode=require&foo=1", "rea der", "p@ss:w/rd")
    assert uri.startswith("postgresql://rea%20der:p%40ss%3Aw%2Frd@h:5433/shop?")
    assert "sslmode=require" in uri and "foo" not in uri and "TimeZone%3DUTC" in uri


def test_libpq_uri_takes_credentials_from_the_jdbc_url() -> None:
    assert libpq_uri("jdbc:postgresql://h/db?user=u&password=pw", None, None).startswith("postgresql://u:pw@h/db?")


def test_secrets_cover_the_password_in_every_form() -> None:
    opts = parse_options({**BASE, "user": "u", "password": "s3cr/et"})
    text = f"failed: {opts.libpq_uri()} password s3cr/et or s3cr%2Fet"
    scrubbed = scrub(text, opts.secrets())
    assert "s3cr" not in scrubbed
