"""A reference model of APPLY CHANGES (AUTO CDC), written in plain Python from Databricks' documentation only.

It shares no code with ``framework/cdc`` and knows nothing of batches: the target after any number of batches must
equal the model applied to every event seen so far, because Databricks documents the result as independent of
arrival order. Rules, with where they come from (pages under docs.databricks.com/aws/en/ldp/, read 2026-12):

* R1 (cdc, "How is CDC implemented with the AUTO CDC API?"): the sequence column is "a monotonically increasing
  representation of the proper ordering of the source data"; the pipeline "automatically handles data that arrives
  out of order". So events are applied in sequence order, whatever the arrival order and batching.
* R2 (same section): "there should be one distinct update per key at each sequencing value". Events with the same
  key and sequence are therefore only exact repeats here (they count once); differing ones are unsupported and the
  framework refuses them (tests/integration/cdc/test_state.py), so the model does not define them.
* R3 (cdc, SCD type 1 example): the target holds, per key, the row of its latest event, and no row when that event
  is a delete (``apply_as_deletes``).
* R4 (ldp-python-ref-apply-changes, ``apply_as_truncates``: SCD type 1 only; the rule is inferred from the
  documented example, where a TRUNCATE at sequence 3 leaves only the row whose latest event is above 3): a
  truncate removes every row whose latest event is older than it, and no older event counts afterwards (R1: the
  result does not depend on whether an older event arrived before or after the truncate).
* R5 (cdc, SCD type 2 example): the target holds every version of a key with ``__START_AT`` (the sequence of the
  event that opened it) and ``__END_AT`` (the sequence of the event that closed it, NULL while current). A delete
  closes the open version and adds none; an upsert after a delete, or as the key's first event, opens one.
* R6 (cdc, SCD type 2 example with ``track_history_except_column_list = ["city"]`` / ``TRACK HISTORY ON * EXCEPT
  (city)``; ldp-python-ref-apply-changes, ``track_history_column_list``): an upsert whose tracked columns differ
  from the open version's closes it at the upsert's sequence and opens a new version; an upsert that changes only
  untracked columns (or nothing) updates the open version in place, which keeps its ``__START_AT``. By default
  every column is tracked.
* R7 (cdc, ``IGNORE NULL UPDATES``; ldp-python-ref-apply-changes, ``ignore_null_updates`` and
  ``ignore_null_updates_column_list``): "when a CDC event matches an existing row", a NULL in an ignored column
  "retains its existing value in the target". For SCD 2 the existing row is the open version (in sequence order,
  R1): the upsert's NULLs in ignored columns take the open version's values before R6 compares tracked columns; an
  upsert with no open version (the key's first, or after a delete) keeps its NULLs.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

UPSERT, DELETE, TRUNCATE = "U", "D", "T"


@dataclass(frozen=True)
class Event:
    """One change event: ``key`` is None for a truncate; ``values`` are the value columns in target order."""

    key: int | None
    seq: int
    op: str
    values: tuple[Any, ...]


def _by_key(events: Iterable[Event]) -> dict[int, list[Event]]:
    """Per key, its distinct events in sequence order (R1, R2: a repeat counts once)."""
    timelines: dict[int, dict[int, Event]] = {}
    for event in events:
        if event.op != TRUNCATE:
            assert event.key is not None
            seen = timelines.setdefault(event.key, {})
            assert seen.get(event.seq, event) == event, (
                f"two different events at one key and sequence: {event}"
            )
            seen[event.seq] = event
    return {key: [seen[s] for s in sorted(seen)] for key, seen in timelines.items()}


def scd1(events: Sequence[Event]) -> list[tuple[Any, ...]]:
    """SCD type 1 rows ``(key, *values, seq)`` (R1-R4); the caller drops ``seq`` when the target has no sequence."""
    floor = max((e.seq for e in events if e.op == TRUNCATE), default=None)
    rows = []
    for key, timeline in _by_key(events).items():
        alive = [e for e in timeline if floor is None or e.seq > floor]
        if alive and alive[-1].op == UPSERT:
            rows.append((key, *alive[-1].values, alive[-1].seq))
    return rows


def scd2(events: Sequence[Event], tracked: Sequence[int], ignore_nulls: Sequence[int] = ()) -> list[tuple[Any, ...]]:
    """SCD type 2 rows ``(key, *values, __START_AT, __END_AT)`` (R1, R2, R5-R7); ``tracked``: the positions of
    the tracked value columns; ``ignore_nulls``: those whose NULLs in an upsert keep the open version's value."""
    rows = []
    for key, timeline in _by_key(events).items():
        versions: list[list[Any]] = []  # [values, start, end]
        for event in timeline:
            current = versions[-1] if versions and versions[-1][2] is None else None
            values = event.values
            if current is not None:
                values = tuple(current[0][i] if i in ignore_nulls and v is None else v for i, v in enumerate(values))
            if event.op == DELETE:
                if current is not None:
                    current[2] = event.seq
            elif current is None:
                versions.append([values, event.seq, None])
            elif any(current[0][i] != values[i] for i in tracked):
                current[2] = event.seq
                versions.append([values, event.seq, None])
            else:
                current[0] = values
        rows += [(key, *values, start, end) for values, start, end in versions]
    return rows
