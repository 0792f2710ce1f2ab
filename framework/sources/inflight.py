"""Transactions in flight at an offset query, and the rule that keeps a watermark read exactly once although
transactions commit in another order than they took their watermark values (pure: no database, no Spark).

The problem. A row's watermark value is taken while its transaction runs (``nextval`` of an identity or
serial column, ``now()`` at the transaction's start) and the row becomes visible only when that transaction
commits. Transaction A takes sequence 6, B takes 7 and commits, an update reads up to 7 and moves the
watermark to 7, A commits: a read of ``seq > 7`` never sees 6.

The rule. The offset query that finds a batch's end also returns, in the same statement and so from the same
snapshot S, the transactions in flight: the snapshot's in-progress list (``pg_current_snapshot()``) and every
id from the snapshot's ``xmin`` up to the next id to be assigned whose ``pg_xact_status`` is ``in progress``,
checked right after S. The snapshot alone is not enough: it lists top-level ids only (a row written in a
subtransaction, even one released, has the subtransaction's id as its ``xmin``) and not a running transaction
whose id is at or above its ``xmax`` (no later id completed yet); a released subtransaction keeps no lock of
its own, so ``pg_locks`` does not show it either. The status of a subcommitted subtransaction follows its
parent's. The next id comes from ``age(xmax)``, which a statement without an id of its own measures from it.
The offset carries the ids (``inFlight``), each with the watermark above which its rows can lie (``after``).
A batch ``start -> end`` reads

1. the rows with ``start - lookback < column <= end`` whose ``xmin`` is not one of ``end``'s in-flight ids;
2. for each id in flight at ``start`` and no longer at ``end`` (it ended: committed or rolled back), its rows
   with ``after < column <= start - lookback`` (the rows above that come with part 1).

``end``'s in-flight ids keep the ``after`` they had at ``start``; ids new at ``end`` get ``start``'s
watermark.

Why every row is read once. Assumption V: a (sub)transaction holds its id when it takes a watermark value.
An identity or serial default is taken by the ``INSERT`` that assigns the id (the value an instant before the
id, inside that one statement: an offset query whose snapshot falls in that instant is the case V leaves
out); ``now()`` is the transaction's start, so V asks that its first statement write. Write ``S(k)``,
``I(k)`` and ``W(k)`` for offset k's snapshot, in-flight ids and watermark. Claim: after batch k the rows
loaded, each once (rows of the lookback window aside, read again on purpose), are L(k): the committed rows
with ``column <= W(k)`` whose ``xmin`` is not in ``I(k)``. Batch k+1 must add L(k+1) minus L(k):

- rows above ``W(k)``: part 1, whose range starts at or below ``W(k)``;
- rows at or below ``W(k)`` not in L(k): their ``xmin`` x is in ``I(k)``. Otherwise x held no id at ``S(k)``
  (by V its values came later, above ``W(k)``), or x was in flight at ``S(k)`` and ended before the status
  check (its rows are committed before batch k's read, which took them: part 1 above ``W(k-1) - lookback``,
  part 2 below if x was in ``I(k-1)``, and x held no id at ``I(k-1)``'s check otherwise, so by V its values
  are above ``W(k-1)``). x is no longer in ``I(k+1)``, so part 2 reads the rows from its ``after`` to
  ``W(k) - lookback`` and part 1 the rest; part 2 reads nothing else, as it names only ids of ``I(k)``.

``after`` is below all of an id's values: an id new in ``I(k+1)`` held no id at ``I(k)``'s check (it would
be in ``I(k)``, being in flight then), so by V its values came after ``S(k)``, above ``W(k)``; an id carried
keeps its ``after``. Rows of ids in ``I(k+1)`` are not in L(k+1) and part 1 excludes them.

A batch is re-read after a failure or a kill -9 with the offsets Spark logged before it ran, and both parts
depend only on those offsets and on committed rows (an id excluded is still excluded, an id ended stays
ended), so the rows are the same and the checkpoint commits them once.

Wraparound. The offsets keep 64-bit ids (``xid8``, as the snapshot functions and ``pg_xact_status`` take
them), so "still in flight" is exact across the 32-bit wrap. A row's ``xmin`` is 32-bit and compared with
``id mod 2**32`` (as ``xid``). In-flight ids are within 2**31 of each other, so no two share a 32-bit value;
a frozen old row whose raw ``xmin`` happens to equal one of them modulo 2**32 is excluded from part 1 and read
by part 2 when that id ends: late, never twice or lost. The ids found in progress cost one status check per
id from the snapshot's ``xmin`` on: none when no writer is open, as many as the ids assigned since the oldest
open writer started when one is.

What V excludes: values taken before the transaction writes (a sequence value fetched in advance by the
application or an ORM's pooled ids; ``now()`` in a transaction that reads before its first write, across an
update's offset query; timestamps from a client clock). For those, a ``lookback`` covering the gap reads them
again and APPLY CHANGES keyed on the row removes the duplicates (docs/database-sources.md). A ``query`` or a
view has no ``xmin`` to compare: no ids are tracked and only ``lookback`` helps.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

XID_SPACE = 2**32
TRACKED_RELKINDS = ("r", "p")  # tables and partitioned tables: their rows have an xmin


@dataclass(frozen=True)
class InFlight:
    """Transactions in flight at an offset query whose rows can lie above ``after`` (None: anywhere)."""

    after: str | None
    xids: tuple[int, ...]

    def to_json(self) -> dict[str, object]:
        """The offset's JSON form (``{"after": ..., "xids": [...]}``)."""
        return {"after": self.after, "xids": list(self.xids)}


def from_offset(offset: dict[str, object]) -> list[InFlight]:
    """The in-flight groups of an offset (none in an offset written before they were tracked)."""
    groups = offset.get("inFlight") or []
    assert isinstance(groups, list)
    return [InFlight(g.get("after"), tuple(int(x) for x in g.get("xids", []))) for g in groups]


def in_flight(snapshot: str, running: str | None) -> list[int]:
    """The ids in flight, sorted: the in-progress list of ``pg_current_snapshot()``'s text
    (``xmin:xmax:xip,...``) and the ids found in progress right after it (comma-separated)."""
    xip = snapshot.split(":")[2]
    return sorted({int(x) for x in [*xip.split(","), *(running or "").split(",")] if x})


def carried(start: Sequence[InFlight], start_watermark: str | None, now: Iterable[int]) -> list[InFlight]:
    """The end offset's groups: ids still in flight keep their ``after``; new ones get ``start_watermark``."""
    current = set(now)
    out: list[InFlight] = []
    seen: set[int] = set()
    for group in start:
        kept = tuple(x for x in group.xids if x in current)
        seen.update(group.xids)
        if kept:
            out.append(InFlight(group.after, kept))
    new = sorted(current - seen)
    if not new:
        return out
    for index, group in enumerate(out):
        if group.after == start_watermark:
            out[index] = InFlight(group.after, tuple(sorted({*group.xids, *new})))
            return out
    return [*out, InFlight(start_watermark, tuple(new))]


def ended(start: Sequence[InFlight], end: Sequence[InFlight]) -> list[InFlight]:
    """The groups of ``start`` restricted to the ids no longer in flight at ``end``."""
    still = {x for group in end for x in group.xids}
    out = [InFlight(g.after, tuple(x for x in g.xids if x not in still)) for g in start]
    return [g for g in out if g.xids]


def xid_array(xids: Iterable[int]) -> str:
    """The ids as a SQL ``xid[]`` of their 32-bit values, for ``xmin = ANY (...)``."""
    return "CAST('{" + ",".join(str(x % XID_SPACE) for x in sorted(set(xids))) + "}' AS xid[])"


def excluded(groups: Sequence[InFlight]) -> str | None:
    """The condition that leaves out the rows of ids in flight (None when there are none)."""
    xids = [x for g in groups for x in g.xids]
    return f"NOT (xmin = ANY ({xid_array(xids)}))" if xids else None


def ended_condition(
    groups: Sequence[InFlight], column: str, typed_after: Sequence[str | None], upper: str
) -> str:
    """Part 2 of a batch: the rows of the ids that ended, each group above its ``after`` (typed in SQL by the
    caller, in the same order) and at most ``upper``."""
    parts = []
    for group, after in zip(groups, typed_after, strict=True):
        lower = "" if after is None else f"{column} > {after} AND "
        parts.append(f"({lower}{column} <= {upper} AND xmin = ANY ({xid_array(group.xids)}))")
    return " OR ".join(parts)
