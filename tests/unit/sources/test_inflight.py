"""The in-flight rule's bookkeeping (framework/sources/inflight.py), without a database: which ids an end offset
carries and with which ``after``, which ended, the SQL they become, and offsets written before the field."""

from __future__ import annotations

from pathlib import Path

from framework.sources.inflight import (
    InFlight,
    carried,
    ended,
    ended_condition,
    excluded,
    from_offset,
    in_flight,
)


def test_ids_still_in_flight_keep_their_after_and_new_ones_get_the_start_watermark() -> None:
    start = [InFlight(None, (10, 12)), InFlight("5", (20,))]
    assert carried(start, "7", [12, 20, 30, 31]) == [
        InFlight(None, (12,)),
        InFlight("5", (20,)),
        InFlight("7", (30, 31)),
    ]
    assert carried(start, "5", [20, 30]) == [InFlight("5", (20, 30))]  # same after: one group
    assert carried(start, "7", []) == []
    assert ended(start, [InFlight("5", (20,))]) == [InFlight(None, (10, 12))]


def test_the_snapshot_and_the_ids_found_in_progress_are_one_sorted_set() -> None:
    # PostgreSQL's text: xmin:xmax:xip (top-level ids only); the second list also has subtransactions
    assert in_flight("727:730:727", "727,728") == [727, 728]
    assert in_flight("730:730:", None) == []


def test_rows_are_compared_by_their_32_bit_xmin() -> None:
    wrapped = 2**32 + 5  # an id of the second epoch: its rows' xmin is 5
    assert excluded([InFlight(None, (wrapped, 7))]) == "NOT (xmin = ANY (CAST('{7,5}' AS xid[])))"
    assert excluded([]) is None
    assert ended_condition(
        [InFlight(None, (7,)), InFlight("3", (9,))],
        '"seq"',
        [None, "CAST('3' AS bigint)"],
        "CAST('8' AS bigint)",
    ) == (
        "(\"seq\" <= CAST('8' AS bigint) AND xmin = ANY (CAST('{7}' AS xid[]))) OR "
        "(\"seq\" > CAST('3' AS bigint) AND \"seq\" <= CAST('8' AS bigint) AND xmin = ANY (CAST('{9}' AS xid[])))"
    )


def test_an_offset_written_before_the_field_has_nothing_in_flight() -> None:
    assert from_offset({"watermark": "7", "nullRows": 0}) == []
    assert from_offset({"watermark": "7", "nullRows": 0, "inFlight": [{"after": None, "xids": [3]}]}) == [
        InFlight(None, (3,))
    ]


def test_medallion_state_says_how_many_transactions_are_awaited(tmp_path: Path) -> None:
    from framework.sources.state import describe_offset

    offset = {"watermark": "7", "nullRows": 0, "inFlight": [{"after": None, "xids": [3, 4]}]}
    assert describe_offset(offset, tmp_path, 0) == (
        "jdbc_incremental",
        "watermark '7', 2 transaction(s) in flight at the last read, their rows read when they end",
    )
