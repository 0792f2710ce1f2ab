"""The keyed recomputes, ``WINDOW_FUNCTION``, ``PARTITION_OVERWRITE`` and ``GROUP_AGGREGATE`` by changed groups: which key values the input's commits
since the last refresh touched, what recomputing them costs, and the predicate that selects them.

A view's key columns (``key_trace.py``) are input columns its rows keep as they are; a view row depends only on
the input rows with its key values. So the refresh needs only the key values of every row a commit added or
removed: read from the ``add`` and ``remove`` actions of the input's log (``partitionValues``) for a partition
column, else from those files' key columns (pyarrow, on the driver: a removed file stays until VACUUM; a file
with a deletion vector is read whole, which only adds values). Appends, updates, deletes and overwrites all
qualify; more values than needed only cost time. The refresh then recomputes the query for those values
(Catalyst pushes the filter on key columns through windows and aggregates to the input's scan: partition pruning
or Delta's data skipping) and replaces the view's rows of those values in one Delta ``replaceWhere`` commit.

``PARTITION_OVERWRITE`` is the case where the keys are the view's partition columns and the input's: the values
come from the log alone and both the read and the replace are partition-pruned (Databricks' name for it).
Key types: integers, strings, dates, booleans, decimals (their literals are exact); others are an issue.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from framework.incremental.analysis import (
    GROUP_AGGREGATE,
    PARTITION_OVERWRITE,
    WINDOW_FUNCTION,
    Analysis,
    Issue,
)
from framework.incremental.changes import Change, Snapshot
from framework.storage.plain import file_path
from framework.storage.url import is_local

MAX_KEYS = 10_000  # more changed key values than this: the predicate grows large, a recompute costs as much
_INTEGERS = ("tinyint", "smallint", "int", "bigint")


@dataclass(frozen=True)
class Keys:
    """Key columns: the view's names, the input's names and their Spark types (``simpleString``)."""

    view: tuple[str, ...]
    input: tuple[str, ...]
    types: tuple[str, ...]


@dataclass(frozen=True)
class Keyed:
    """One keyed technique for one refresh: why not (issues), its cost, the keys and the touched values."""

    issues: tuple[Issue, ...] = ()
    cost: int | None = None
    keys: Keys | None = None
    values: frozenset[tuple[Any, ...]] = frozenset()

    def predicate(self) -> str:
        """The SQL condition on the view's key columns that holds for the touched values' rows."""
        assert self.keys is not None
        return predicate(self.keys.view, self.keys.types, self.values)


def view_issues(analysis: Analysis, view_partitions: Iterable[str]) -> dict[str, tuple[Issue, ...]]:
    """What stops ``PARTITION_OVERWRITE`` for this view whatever its input's changes (no partition columns, or
    one that is not a key of the query)."""
    if not analysis.applicable(PARTITION_OVERWRITE):
        return {}
    pairs = _partition_pairs(analysis, tuple(view_partitions))
    return {PARTITION_OVERWRITE: (pairs,)} if isinstance(pairs, Issue) else {}


def keyed_techniques(analysis: Analysis, change: Change | None, view_path: str,
                     view_partitions: Iterable[str]) -> dict[str, Keyed]:
    """``WINDOW_FUNCTION`` and ``PARTITION_OVERWRITE`` for a view whose one input changed as ``change`` (None:
    the view reads several inputs, or none); the view at ``view_path`` is partitioned by ``view_partitions``."""
    out: dict[str, Keyed] = {}
    partitions = tuple(view_partitions)
    for technique in (WINDOW_FUNCTION, PARTITION_OVERWRITE):
        if not analysis.applicable(technique):
            out[technique] = Keyed()  # the analysis' issues are the planner's
        elif change is None:
            out[technique] = Keyed((Issue("INPUT_NOT_DELTA", "a keyed recompute needs one Delta input"),))
        elif change.issue is not None and change.issue.issue_type == "INPUT_REPLACED":
            out[technique] = Keyed((change.issue,))
        else:
            pairs = analysis.keyed if technique == WINDOW_FUNCTION else _partition_pairs(analysis, partitions)
            found = pairs if isinstance(pairs, Issue) else key_columns(pairs, change.snapshot, technique)
            out[technique] = Keyed((found,)) if isinstance(found, Issue) else \
                _estimate(change.snapshot, change.seen, found, view_path)
    return out


def keyed_groups(analysis: Analysis, change: Change | None, view_path: str) -> Keyed:
    """``GROUP_AGGREGATE`` by recomputing the groups whose keys the input's changes touched (when the groups
    cannot be merged: ``avg``, ``count(DISTINCT)``, an update or a delete of the input, ...)."""
    if change is None:
        return Keyed((Issue("INPUT_NOT_DELTA", "recomputing the changed groups needs one Delta input"),))
    if change.issue is not None and change.issue.issue_type == "INPUT_REPLACED":
        return Keyed((change.issue,))
    found = key_columns(analysis.keyed, change.snapshot, GROUP_AGGREGATE)
    return Keyed((found,)) if isinstance(found, Issue) else _estimate(change.snapshot, change.seen, found, view_path)


def _partition_pairs(analysis: Analysis, partitions: tuple[str, ...]) -> tuple[tuple[str, str], ...] | Issue:
    if not partitions:
        return Issue("VIEW_NOT_PARTITIONED", "the view has no partition columns (partition_cols / PARTITIONED BY)")
    by_view = {v.lower(): (v, i) for v, i in analysis.keyed}
    missing = [p for p in partitions if p.lower() not in by_view]
    if missing:
        return Issue("PARTITION_NOT_KEY", f"the view's partition column {missing[0]} is not an input column that "
                                          "every GROUP BY and PARTITION BY of the query keeps")
    return tuple(by_view[p.lower()] for p in partitions)


def key_columns(pairs: tuple[tuple[str, str], ...], snap: Snapshot, technique: str = WINDOW_FUNCTION) -> Keys | Issue:
    """The key columns (view column, ``snap``'s column) with their types, or why one cannot key a recompute."""
    types = {f.name.lower(): f.dataType.simpleString() for f in snap.schema().fields}
    partitioned = {c.lower() for c in snap.partition_columns}
    for _, column in pairs:
        kind = types.get(column.lower(), "")
        if not (kind in (*_INTEGERS, "string", "date", "boolean") or kind.startswith("decimal")):
            return Issue("KEY_TYPE_NOT_SUPPORTED", f"the key column {column} is {kind or 'unknown'}")
        if technique == PARTITION_OVERWRITE and column.lower() not in partitioned:
            return Issue("INPUT_NOT_PARTITIONED_LIKE_VIEW", f"the view's partition column comes from {column}, "
                                                            f"which does not partition {snap.path}")
    return Keys(tuple(v for v, _ in pairs), tuple(i for _, i in pairs), tuple(types[i.lower()] for _, i in pairs))


def _estimate(snap: Snapshot, seen: int, keys: Keys, view_path: str) -> Keyed:
    """The touched values and the cost: the changed files' bytes read for them (none for partition values),
    the input's bytes that may hold them (read) and the view's (read and rewritten)."""
    from framework.storage.log import live_files, protocol_and_metadata

    if seen == snap.version:  # unchanged (the plan is NO_OP): no log to read
        return Keyed((), 0, keys)
    found = touched(snap, seen, keys)
    if isinstance(found, Issue):
        return Keyed((found,))
    values, read_bytes = found
    if len(values) > MAX_KEYS:
        return Keyed((Issue("TOO_MANY_CHANGED_KEYS", f"{len(values):,} key values changed (more than "
                                                     f"{MAX_KEYS:,})"),))
    view = protocol_and_metadata(view_path)
    view_partitions = tuple((view[2] or {}).get("partitionColumns") or ()) if view is not None else ()
    source = holding_bytes(live_files(snap.path) or {}, snap.partition_columns, keys.input, keys.types, values)
    target = holding_bytes(live_files(view_path) or {}, view_partitions, keys.view, keys.types, values)
    return Keyed((), read_bytes + source + 2 * target, keys, frozenset(values))


def touched(snap: Snapshot, seen: int, keys: Keys) -> tuple[set[tuple[Any, ...]], int] | Issue:
    """The key values of every row the commits after ``seen`` added or removed, and the bytes read to find
    them; or why they cannot be told."""
    from framework.storage.log import commit_actions, protocol_and_metadata

    if not is_local(snap.path):
        return Issue("CHANGES_UNAVAILABLE", f"{snap.path}: its log is read by the driver on a local disk only")
    found = protocol_and_metadata(snap.path)
    if found is None or ((found[2] or {}).get("configuration") or {}).get("delta.columnMapping.mode",
                                                                          "none") != "none":
        return Issue("INPUT_LAYOUT", f"{snap.path}: column mapping (the files' column names are not the table's)")
    files: list[dict[str, Any]] = []
    for version in range(seen + 1, snap.version + 1):
        actions = commit_actions(snap.path, version)
        if actions is None:
            return Issue("CHANGES_UNAVAILABLE", f"{snap.path}: commit {version} is gone from the log")
        for action in actions:
            if isinstance(action.get("metaData"), dict):
                return Issue("INPUT_SCHEMA_CHANGED", f"{snap.path}: version {version} changed the table's metadata")
            for kind in ("add", "remove"):
                item = action.get(kind)
                if isinstance(item, dict) and item.get("dataChange", True):
                    files.append({**item, "__removed": kind == "remove"})
    return _values(snap, files, keys)


def _values(snap: Snapshot, files: list[dict[str, Any]], keys: Keys) -> tuple[set[tuple[Any, ...]], int] | Issue:
    import pyarrow as pa
    import pyarrow.parquet as pq

    partitioned = {c.lower() for c in snap.partition_columns}
    data = [c for c in keys.input if c.lower() not in partitioned]
    values: set[tuple[Any, ...]] = set()
    read_bytes = 0
    for item in files:
        given = {k.lower(): v for k, v in (item.get("partitionValues") or {}).items()}
        if item["__removed"] and not item.get("extendedFileMetadata") and \
                any(c.lower() in partitioned and c.lower() not in given for c in keys.input):
            # a remove without its partition values (no extendedFileMetadata): the key is unknown, not NULL (with
            # extendedFileMetadata a NULL value is left out of the map: Delta 4.4's UPDATE writes such removes)
            return Issue("CHANGES_UNAVAILABLE", f"{snap.path}: a changed file's partition values are not logged")
        fixed = {c: typed(given.get(c.lower()), t) for c, t in zip(keys.input, keys.types, strict=True)
                 if c.lower() in partitioned}
        if not data:
            values.add(tuple(fixed[c] for c in keys.input))
            continue
        try:
            rows = pq.read_table(file_path(snap.path, str(item["path"])).removeprefix("file:"), columns=data)
        except (OSError, pa.ArrowInvalid, KeyError) as exc:
            return Issue("CHANGES_UNAVAILABLE", f"{snap.path}: a changed file cannot be read "
                                                f"({type(exc).__name__})")
        read_bytes += int(item.get("size") or 0)
        distinct = rows.group_by(data, use_threads=False).aggregate([]).to_pylist() if rows.num_rows else []
        for row in distinct:
            values.add(tuple(fixed[c] if c in fixed else typed(row[c], t)
                             for c, t in zip(keys.input, keys.types, strict=True)))
    return values, read_bytes


def typed(value: Any, kind: str) -> Any:
    """A key value (a Python value, or the text of a partition value or a statistic) as its canonical Python
    value: int, str, date, bool or Decimal; None for NULL."""
    if value is None:
        return None
    if kind in _INTEGERS:
        return int(value)
    if kind == "date":
        return value if isinstance(value, datetime.date) else datetime.date.fromisoformat(str(value)[:10])
    if kind == "boolean":
        return value if isinstance(value, bool) else str(value).lower() == "true"
    if kind.startswith("decimal"):
        return value if isinstance(value, Decimal) else Decimal(str(value))
    return str(value)


def holding_bytes(files: Mapping[str, dict[str, Any]], partition_columns: Iterable[str], columns: tuple[str, ...],
                  types: tuple[str, ...], values: Iterable[tuple[Any, ...]]) -> int:
    """The bytes of the files that may hold rows with those key values (by partition values, else by the
    files' min/max statistics; a file without statistics may hold any)."""
    partitioned = {c.lower() for c in partition_columns}
    wanted = [{v[i] for v in values} for i in range(len(columns))]
    total = 0
    for item in files.values():
        stats = _stats(item)
        given = {k.lower(): v for k, v in (item.get("partitionValues") or {}).items()}
        if all(_may_hold(c, t, w, given, stats, c.lower() in partitioned)
               for c, t, w in zip(columns, types, wanted, strict=True)):
            total += int(item.get("size") or 0)
    return total


def _stats(item: dict[str, Any]) -> dict[str, Any]:
    try:
        found = json.loads(item.get("stats") or "{}")
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}


def _may_hold(column: str, kind: str, wanted: set[Any], given: dict[str, Any], stats: dict[str, Any],
              partition: bool) -> bool:
    try:
        if partition:
            return typed(given.get(column.lower()), kind) in wanted
        low, high = (stats.get(k, {}).get(column) for k in ("minValues", "maxValues"))
        if low is None or high is None:
            return True
        low, high = typed(low, kind), typed(high, kind)
        return (None in wanted and bool(stats.get("nullCount", {}).get(column, 1))) or \
            any(low <= w <= high for w in wanted if w is not None)
    except (ValueError, TypeError, AttributeError):
        return True


def predicate(columns: tuple[str, ...], types: tuple[str, ...], values: Iterable[tuple[Any, ...]]) -> str:
    """A SQL condition, true exactly for rows whose key columns hold one of ``values`` (NULL: IS NULL);
    ``false`` for none."""
    quoted = [f"`{c.replace('`', '``')}`" for c in columns]
    rows = sorted(set(values), key=repr)
    if not rows:
        return "false"
    if len(columns) == 1:
        present = [_literal(v[0], types[0]) for v in rows if v[0] is not None]
        parts = [f"{quoted[0]} IN ({', '.join(present)})"] if present else []
        parts += [f"{quoted[0]} IS NULL"] if any(v[0] is None for v in rows) else []
        return " OR ".join(parts)
    return " OR ".join("(" + " AND ".join(f"{q} IS NULL" if v is None else f"{q} = {_literal(v, t)}"
                                          for q, v, t in zip(quoted, row, types, strict=True)) + ")" for row in rows)


def _literal(value: Any, kind: str) -> str:
    """An exact SQL literal of the key value (a string with its quotes and backslashes escaped)."""
    if kind == "string":
        return "'" + str(value).replace("\\", "\\\\").replace("'", "\\'") + "'"
    text = "true" if value is True else "false" if value is False else str(value)
    return f"CAST('{text}' AS {kind.upper()})"
