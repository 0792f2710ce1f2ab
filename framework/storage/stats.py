"""Per-file column statistics for the driver's Delta writer (``driver.py``): the ``stats`` of an ``add`` action, as
Delta's data skipping reads them (``numRecords``, ``minValues``, ``maxValues``, ``nullCount``).

A reader skips a file when the statistics say it holds no row a filter wants, so a statistic that is not a true
bound would lose rows silently. Only bounds that are exact by construction are written:

* ``nullCount`` of every top-level column of a flat type (not a struct, array or map);
* ``minValues`` / ``maxValues`` of top-level integer (``byte`` to ``long``), ``date`` and ``string`` columns, the
  first :data:`INDEXED_COLUMNS` as Delta's ``dataSkippingNumIndexedCols`` default. A string minimum is cut to
  :data:`STRING_PREFIX` characters (a prefix is never greater than the string); a longer string maximum is left out
  (Delta would cut it and mark it, which an exact writer cannot do more safely than by leaving it out).
  Timestamps (Delta keeps milliseconds), floating point (NaN), decimals, booleans and binary get no bounds: a column
  without them is read, never skipped.

Computed from the Arrow data before it is written (pyarrow's ``min_max``, no second pass over the file).
"""

from __future__ import annotations

import datetime
import json
from typing import Any

INDEXED_COLUMNS = 32  # Delta's default dataSkippingNumIndexedCols
STRING_PREFIX = 32  # Delta's default string prefix length for statistics


def file_stats(data: Any) -> str:
    """The ``stats`` JSON of a file holding the pyarrow Table ``data``."""
    stats: dict[str, Any] = {"numRecords": data.num_rows}
    if data.num_rows == 0:
        return json.dumps(stats)
    lows: dict[str, Any] = {}
    highs: dict[str, Any] = {}
    nulls: dict[str, int] = {}
    for position, field in enumerate(data.schema):
        if _nested(field.type):
            continue
        column = data.column(position)
        nulls[field.name] = int(column.null_count)
        if position < INDEXED_COLUMNS:
            low, high = _bounds(field.type, column)
            if low is not None:
                lows[field.name] = low
            if high is not None:
                highs[field.name] = high
    stats.update({"minValues": lows, "maxValues": highs, "nullCount": nulls})
    return json.dumps(stats)


def _nested(kind: Any) -> bool:
    import pyarrow.types as pt

    return bool(pt.is_struct(kind) or pt.is_list(kind) or pt.is_large_list(kind) or pt.is_map(kind)
                or pt.is_fixed_size_list(kind))


def _bounds(kind: Any, column: Any) -> tuple[Any, Any]:
    """The JSON values of the column's minimum and maximum (None: not written)."""
    import pyarrow.compute as pc
    import pyarrow.types as pt

    exact = pt.is_integer(kind) or pt.is_date32(kind) or pt.is_string(kind) or pt.is_large_string(kind)
    if not exact or column.null_count == len(column):
        return None, None
    found = pc.min_max(column)
    low, high = found["min"].as_py(), found["max"].as_py()
    if isinstance(low, datetime.date):
        return low.isoformat(), high.isoformat()
    if isinstance(low, str):
        return low[:STRING_PREFIX], high if len(high) <= STRING_PREFIX else None
    return low, high
