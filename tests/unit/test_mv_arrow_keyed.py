"""The rows a keyed recompute on the driver keeps (``arrow_keyed._unselected``): exactly those whose key
``keyed.predicate`` does not select, NULL included when NULL was touched."""

from __future__ import annotations

import datetime
from decimal import Decimal

import pyarrow as pa

from framework.incremental.arrow_keyed import _unselected


def _kept(values: list, touched: set, kind: pa.DataType | None = None) -> list:
    column = pa.chunked_array([pa.array(values, type=kind)])
    return [v for v, keep in zip(values, _unselected(column, frozenset(touched)).to_pylist(), strict=True) if keep]


def test_strings_and_null() -> None:
    rows = ["a", "b", None, "it's", "a"]
    assert _kept(rows, {("a",)}) == ["b", None, "it's"]
    assert _kept(rows, {("b",), (None,)}) == ["a", "it's", "a"]
    assert _kept(rows, {(None,)}) == ["a", "b", "it's", "a"]
    assert _kept(rows, set()) == rows


def test_other_key_types() -> None:
    assert _kept([1, 2, None, 3], {(2,), (3,)}, pa.int64()) == [1, None]
    day = datetime.date(2024, 1, 2)
    assert _kept([day, None], {(day,)}, pa.date32()) == [None]
    assert _kept([Decimal("1.50"), Decimal("2.00")], {(Decimal("1.5"),)}, pa.decimal128(10, 2)) == [Decimal("2.00")]
    assert _kept([True, False, None], {(False,), (None,)}) == [True]
