"""``ROW_BASED`` by the join key: a view over a left, right, semi or anti join whose non-preserved side ``B``
changed, when the view outputs the preserved column ``A.x`` that the join condition equates with ``B.y``
(``analysis.JoinKey.view_column``, say ``c``), refreshed as ``WINDOW_FUNCTION`` refreshes its partitions
(``keyed.py``).

Let ``K`` hold the ``y`` values of every row ``B``'s commits added or removed and the ``x`` values of every row
``A``'s commits did (from the changed files' key columns, ``keyed.touched``). A view row whose ``c`` is not in
``K`` comes from an ``A`` row that did not change and the ``B`` rows with the same key, which did not change
either: it stays. So with every other input unchanged, the query for ``c IN K`` (Catalyst pushes the filter to
``A``'s scan, and through the join's equality to ``B``'s) replaces the view's rows of ``K`` in one
``replaceWhere`` commit (``techniques._keyed_recompute``): the view's other rows are not read or rewritten,
unlike the signed rule's overwrite (``feed.py``). ``K``'s NULL selects ``c IS NULL``. Expectations are applied to
the recomputed rows as in any keyed recompute.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from framework.incremental.analysis import Issue
from framework.incremental.keyed import MAX_KEYS, Keyed, Keys, holding_bytes, key_columns, touched

if TYPE_CHECKING:
    from framework.incremental.feed import KeyedTerm
    from framework.incremental.refresh import ViewRefresh


def keyed_join(refresh: ViewRefresh, terms: dict[int, KeyedTerm], views: dict[int, str | None]) -> Keyed:
    """The touched key values and the cost of refreshing by the join key (``terms``: the changed reads on a
    join's non-preserved side; ``views``: each term's view column), or why it does not apply."""
    from framework.storage.log import live_files

    columns = {views[i] for i in terms}
    preserved = {(t.preserved_read, t.preserved_column) for t in terms.values()}
    if None in columns or len(columns) != 1 or len(preserved) != 1:
        return Keyed((Issue("NO_KEY_COLUMN", "the view does not output the preserved side's join key as it is"),))
    (read, column), view_column = next(iter(preserved)), str(next(iter(columns)))
    keyed = {read: column, **{i: t.fixed_column for i, t in terms.items()}}
    moved = [p for i, p in enumerate(refresh.read_paths) if i not in keyed and not refresh.input_changes[p].unchanged]
    if moved:
        return Keyed((Issue("INPUT_CHANGED", f"{moved[0]} changed too: its rows are not keyed by the join key"),))
    values: set[tuple[object, ...]] = set()
    cost, found_keys = 0, list[Keys]()
    for i, name in keyed.items():
        snap, change = refresh.snapshots[refresh.read_paths[i]], refresh.input_changes[refresh.read_paths[i]]
        keys = key_columns(((view_column, name),), snap)
        if isinstance(keys, Issue):
            return Keyed((keys,))
        found = touched(snap, change.seen, keys) if not change.unchanged else (set(), 0)
        if isinstance(found, Issue):
            return Keyed((found,))
        found_keys.append(keys)
        values |= found[0]
        cost += found[1]
    types = {k.types[0] for k in found_keys}
    if len(types) != 1:
        return Keyed((Issue("KEY_TYPE_NOT_SUPPORTED", f"the join key's types differ: {', '.join(sorted(types))}"),))
    if len(values) > MAX_KEYS:
        return Keyed((Issue("TOO_MANY_CHANGED_KEYS", f"{len(values):,} key values changed (more than "
                                                     f"{MAX_KEYS:,})"),))
    keys = Keys((view_column,), (column,), (types.pop(),))
    for i, name in keyed.items():
        snap = refresh.snapshots[refresh.read_paths[i]]
        cost += holding_bytes(live_files(snap.path) or {}, snap.partition_columns, (name,), keys.types, values)
    cost += 2 * holding_bytes(live_files(refresh.path) or {}, refresh._partition_cols(), keys.view, keys.types, values)
    return Keyed((), cost, keys, frozenset(values))
