"""The cost model and the choice of a technique, and the ``planning_information`` event that reports it.

Costs are bytes from the Delta logs, no Spark job: a full recompute reads every input and writes the view;
``APPEND_ONLY`` reads the appended files and appends; ``GROUP_AGGREGATE`` reads the appended files, reads the
view and writes it back (the changed groups merged into it); ``ROW_BASED`` reads, per input with appended rows,
those rows and the other inputs whole, and appends (after updates or deletes, read from the change data feed, it
also reads and rewrites the view; after a change on a join's non-preserved side, the cheaper of that and the
join key's recompute, ``join_keyed.py``, given by the refresh); ``WINDOW_FUNCTION`` and ``PARTITION_OVERWRITE``
(``keyed.py``) read the changed files' key columns, the input's files that may hold a changed key and rewrite
the view's. ``NO_OP`` (no input changed) costs nothing.

``AUTO`` picks the cheapest applicable technique; ``INCREMENTAL`` and ``INCREMENTAL STRICT`` the cheapest
incremental one when one applies (STRICT fails the flow when none does); ``FULL`` always recomputes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from framework.incremental.analysis import (
    APPEND_ONLY,
    COMPLETE_RECOMPUTE,
    GROUP_AGGREGATE,
    PARTITION_OVERWRITE,
    ROW_BASED,
    WINDOW_FUNCTION,
    Analysis,
    Issue,
)
from framework.incremental.changes import Change, Snapshot
from framework.refresh_policy import RefreshPolicy

NO_OP = "NO_OP"
APPENDS = (APPEND_ONLY, GROUP_AGGREGATE, ROW_BASED)  # refreshed from the inputs' appended rows only
INCREMENTAL_TECHNIQUES = (*APPENDS, WINDOW_FUNCTION, PARTITION_OVERWRITE)


@dataclass(frozen=True)
class Candidate:
    """One technique considered: applicable or not (with the issues), and its estimated cost."""

    technique: str
    issues: tuple[Issue, ...] = ()
    cost: int | None = None

    @property
    def applicable(self) -> bool:
        """Whether it can refresh the view."""
        return not self.issues


@dataclass(frozen=True)
class Plan:
    """The technique chosen for one refresh and every technique considered."""

    policy: RefreshPolicy
    chosen: str
    candidates: tuple[Candidate, ...]
    reason: str = ""

    @property
    def incremental(self) -> bool:
        """Whether the refresh reads only changes (or nothing)."""
        return self.chosen != COMPLETE_RECOMPUTE

    def blocking_issues(self) -> list[Issue]:
        """Why no incremental technique applies (what INCREMENTAL STRICT reports)."""
        issues: list[Issue] = []
        for candidate in self.candidates:
            if candidate.technique in INCREMENTAL_TECHNIQUES:
                issues.extend(i for i in candidate.issues if i not in issues)
        return issues

    def details(self, sources: Sequence[Change | Snapshot], view_bytes: int) -> dict[str, Any]:
        """The ``planning_information`` event's details, in Databricks' shape."""
        techniques = [{"maintenance_type": f"MAINTENANCE_TYPE_{c.technique}", "is_chosen": c.technique == self.chosen,
                       "is_applicable": c.applicable, **({"cost": c.cost} if c.cost is not None else {}),
                       **({"incrementalization_issues": [i.as_event() for i in c.issues]} if c.issues else {})}
                      for c in self.candidates]
        return {"technique_information": techniques, "refresh_policy": self.policy.value,
                "source_table_information": [_source(s) for s in sources],
                "target_table_information": {"table_size_bytes": view_bytes}, **({"reason": self.reason}
                                                                                  if self.reason else {})}


def _source(source: Change | Snapshot) -> dict[str, Any]:
    snap = source.snapshot if isinstance(source, Change) else source
    out: dict[str, Any] = {"table_path": snap.path, "table_version": snap.version,
                           "table_size_bytes": snap.table_bytes}
    if isinstance(source, Change):
        out.update(previous_version=source.seen, appended_bytes=source.appended_bytes,
                   appended_rows=source.appended_rows)
    return out


def full_plan(policy: RefreshPolicy, reason: str) -> Plan:
    """A full recompute decided without looking at changes (FULL, a first refresh, a full refresh)."""
    return Plan(policy, COMPLETE_RECOMPUTE, (Candidate(COMPLETE_RECOMPUTE),), reason)


def choose(policy: RefreshPolicy, analysis: Analysis, changes: Sequence[Change] | None, view_bytes: int,
           context: Sequence[Issue] = (), reason_without_state: str = "", *,
           own_issues: Mapping[str, Sequence[Issue]] | None = None,
           own_costs: Mapping[str, int | None] | None = None, groups: bool = False) -> Plan:
    """The plan of one refresh. ``changes``: each input's change since the view's last refresh, None when the
    view has no usable refresh state (then the incremental techniques are reported with that reason);
    ``context``: issues of the view itself that stop every incremental technique; ``own_issues`` and
    ``own_costs``: a technique's own issues and cost found at refresh time (the keyed techniques': their
    changes are not the appended rows, so the inputs' append issues are not theirs)."""
    inputs = sum(c.snapshot.table_bytes for c in changes or ())
    appended = sum(c.appended_bytes for c in changes or ())
    change_issues = [c.issue for c in changes or () if c.issue is not None]
    if changes is None:
        change_issues = [Issue("NO_PREVIOUS_REFRESH", reason_without_state or "the view has no refresh state")]
    costs: dict[str, int | None] = {APPEND_ONLY: appended, GROUP_AGGREGATE: appended + 2 * view_bytes,
                                    ROW_BASED: _row_based(changes or (), view_bytes)}
    costs.update({t: c for t, c in (own_costs or {}).items() if t != GROUP_AGGREGATE or groups})
    appends = [t for t in APPENDS if t != GROUP_AGGREGATE or not groups]
    full = inputs + view_bytes
    candidates = [Candidate(COMPLETE_RECOMPUTE, cost=full)]
    for technique in INCREMENTAL_TECHNIQUES:
        from_appends = change_issues if technique in appends or changes is None else []
        if technique == ROW_BASED and changes is not None:  # updates and deletes read from the change data feed
            from_appends = [c.issue for c in changes if c.issue is not None and not c.feed]
        found = analysis.issues.get(technique, ())
        if technique == ROW_BASED and any(c.feed for c in changes or ()):  # a filter/projection's deletes too
            found = tuple(i for i in found if i.issue_type != "NO_JOIN")
        issues = (*found, *context, *(own_issues or {}).get(technique, ()), *from_appends)
        candidates.append(Candidate(technique, tuple(dict.fromkeys(issues)), costs.get(technique)))
    usable = [c for c in candidates if c.applicable and c.cost is not None and c.technique in INCREMENTAL_TECHNIQUES]
    if usable and changes is not None and all(c.unchanged for c in changes):
        return Plan(policy, NO_OP, (Candidate(NO_OP, cost=0), *candidates), "no input changed")
    # a tie goes to PARTITION_OVERWRITE: the same partitions recomputed as GROUP_AGGREGATE's or WINDOW_FUNCTION's
    # changed keys would be, named as Databricks names it
    best = min(usable, key=lambda c: (c.cost or 0, c.technique != PARTITION_OVERWRITE), default=None)
    if best is None or (policy is RefreshPolicy.AUTO and (best.cost or 0) >= full):
        return Plan(policy, COMPLETE_RECOMPUTE, tuple(candidates))
    return Plan(policy, best.technique, tuple(candidates))


def _row_based(changes: Sequence[Change], view_bytes: int) -> int:
    """``ROW_BASED`` reads, for each input with appended rows (or change data), those rows and every other input
    whole; with updates or deletes it also reads and rewrites the view (their rows removed)."""
    total = sum(c.snapshot.table_bytes for c in changes)
    rewrite = 2 * view_bytes if any(c.feed for c in changes) else 0
    return rewrite + sum(c.appended_bytes + total - c.snapshot.table_bytes for c in changes if c.appended_bytes)


def query_issues(analysis: Analysis, own_issues: Mapping[str, Sequence[Issue]] | None = None) -> list[Issue]:
    """Why the query itself (and the view's own issues per technique) allows no incremental technique
    (empty: one applies)."""
    own = own_issues or {}
    if any(analysis.applicable(t) and not own.get(t) for t in INCREMENTAL_TECHNIQUES):
        return []
    issues: list[Issue] = []
    for technique in INCREMENTAL_TECHNIQUES:
        issues.extend(i for i in (*analysis.issues.get(technique, ()), *own.get(technique, ())) if i not in issues)
    return issues
