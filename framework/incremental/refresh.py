"""One materialized view's refresh: plan it (policy, analysis, changes, cost), run the incremental technique or
hand the full recompute back to the runner's executor with what its commit must carry.

Used by ``FlowExecutor._run_materialized_view`` (``framework/runner/flows.py``)::

    refresh = ViewRefresh(executor)
    if not refresh.incrementally(result):      # NO_OP, APPEND_ONLY or GROUP_AGGREGATE done and committed
        df = refresh.full_query()              # the query over the inputs pinned to the planned versions
        refresh.before_commit()                # the refresh record (state.py), before the data commit
        ... the overwrite, carrying refresh.txn ...

Inputs are read through the flow's reader with a substitute (``ExecuteReader.substitute``): their rows as of the
version the plan saw (so the record names exactly what was read), or only the files appended since the last
refresh. A query that reads anything else than the pipeline's Delta tables is planned as a full recompute.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from framework.errors import NotIncrementalizableError, PipelineError
from framework.incremental.analysis import GROUP_AGGREGATE, ROW_BASED, Analysis, Issue, analyze
from framework.incremental.changes import Change, Snapshot, change_since, snapshot
from framework.incremental.keyed import Keyed, keyed_groups, keyed_techniques, view_issues
from framework.incremental.plan_json import analyzed_plan
from framework.incremental.planner import NO_OP, Plan, choose, full_plan, query_issues
from framework.incremental.state import (
    APP_ID,
    RefreshState,
    SeenInput,
    committed_state,
    last_refresh,
    state_folder,
    write_state,
)
from framework.refresh_policy import RefreshPolicy, policy_of
from framework.storage import state_files
from framework.storage.url import is_local

if TYPE_CHECKING:
    from collections.abc import Iterator

    import pyarrow as pa
    from pyspark.sql import DataFrame

    from framework.incremental.feed import KeyedTerm
    from framework.runner.flows import FlowExecutor
    from framework.runner.results import FlowResult


class ViewRefresh:
    """The refresh of the materialized view ``executor`` runs (see the module's docstring)."""

    def __init__(self, executor: FlowExecutor) -> None:
        self.ex = executor
        self.spark = executor.env.spark
        dataset = executor.dataset
        self.policy = policy_of(dataset.refresh_policy if dataset is not None else None)
        self.path = executor.env.table_path(executor.registry, executor.target_key)
        self.folder = state_folder(executor.env.checkpoint_path(executor.flow))
        self.snapshots: dict[str, Snapshot] = {}
        self.reads = 0  # reads of the pipeline's Delta tables through the substitute (an input read twice: 2)
        self.plan: Plan | None = None
        self.analysis: Analysis | None = None
        self.txn: tuple[str, int] | None = None
        self._full: DataFrame | None = None
        self.changed: DataFrame | None = None  # the query over the appended rows (a state to refresh from)
        self.input_changes: dict[str, Change] = {}
        self.read_paths: list[str] = []  # the inputs in the order the query read them (ROW_BASED's terms)
        self.read_frames: list[DataFrame] = []  # each read (its relation in the plan: ROW_BASED's join sides)
        self.changed_plan: list[dict[str, Any]] | None = None
        self.view_bytes = -1
        self.keyed: dict[str, Keyed] = {}  # WINDOW_FUNCTION's and PARTITION_OVERWRITE's touched keys and costs
        self.keyed_terms: dict[int, KeyedTerm] = {}  # ROW_BASED: changed reads on a join's non-preserved side
        self.join_keyed: Keyed | None = None  # ROW_BASED by the join key (join_keyed.py), when it is chosen
        self.row_based_cost: int | None = None  # ROW_BASED's cost with keyed terms (the chosen way's)
        self._started = time.monotonic()

    # ------------------------------------------------------------------------------------------ planning
    def incrementally(self, result: FlowResult) -> bool:
        """Plan the refresh; run it when it is incremental (True), else leave the recompute to the caller."""
        if self.policy is RefreshPolicy.FULL:
            self._planned(result, full_plan(self.policy, "REFRESH POLICY FULL"), [])
            return False
        state = committed_state(self.path, self.folder) if state_files.exists(self.path) else None
        if state is not None:  # the query over only what changed: analysed, and run if the plan is incremental
            self.changed = self._query(lambda key, path: self._change_read(state, path))
            self.changed_plan = analyzed_plan(self.changed)
            analysis = self.analysis = analyze(self.changed_plan)
        else:
            self._full = self._query(self._snapshot_read)
            analysis = self.analysis = analyze(analyzed_plan(self._full))
        context, own = self._context_issues(analysis), self._own_issues(analysis)
        if self.policy is RefreshPolicy.INCREMENTAL_STRICT:
            self._strict(query_issues(analysis, own) + context)
        changes, why = self._changes(state, analysis)
        self.view_bytes = self._view_bytes()
        if changes is not None:
            self._keyed_plans(analysis, changes, own)
        plan = choose(self.policy, analysis, changes, self.view_bytes, context, why, own_issues=own,
                      own_costs=self._own_costs(), groups=GROUP_AGGREGATE in self.keyed)
        if self.policy is RefreshPolicy.INCREMENTAL_STRICT and changes is not None and not plan.incremental:
            self._strict([(i) for i in plan.blocking_issues()])
        self.txn = (APP_ID, last_refresh(self.path) + 1)
        self._planned(result, plan, changes if changes is not None else list(self.snapshots.values()))
        if plan.chosen == NO_OP:
            result.num_output_rows = 0
            result.status = "COMPLETED"
            return True
        if not plan.incremental:
            return False
        assert changes is not None
        from framework.incremental.techniques import run_technique

        run_technique(self, plan.chosen, changes, result)
        return True

    def full_query(self) -> DataFrame:
        """The query a full recompute writes: over the inputs pinned to the planned versions (FULL: as read)."""
        if self.policy is RefreshPolicy.FULL:
            return self.ex._query()
        if self._full is None:
            self._full = self._query(self._snapshot_read)
        return self._full

    def before_commit(self, technique: str | None = None) -> None:
        """Write the refresh record the next commit's ``txn`` will point to (nothing for FULL).

        Raises:
            PipelineError: ``MV_REFRESH_ALREADY_COMMITTED``: the view's log holds this refresh's ``txn`` already
                (another writer refreshed the view since it was planned). Delta would skip the write as done,
                and the flow would wait forever for the metrics of a query that never ran.
        """
        if self.txn is None or self.analysis is None:
            return
        if last_refresh(self.path) >= self.txn[1]:
            raise PipelineError(f"materialized view '{self.ex._dataset_name()}' was refreshed by another writer "
                                f"while this update planned refresh {self.txn[1]}; run the update again",
                                code="MV_REFRESH_ALREADY_COMMITTED")
        inputs = {p: SeenInput(s.version, s.table_id) for p, s in self.snapshots.items()}
        chosen = technique or (self.plan.chosen if self.plan is not None else "COMPLETE_RECOMPUTE")
        write_state(self.folder, RefreshState(self.txn[1], self.analysis.fingerprint, chosen, inputs,
                                              round(time.monotonic() - self._started, 3)))

    def writer_options(self) -> dict[str, str]:
        """Delta's idempotent-write options carrying the refresh's ``txn`` (none for FULL)."""
        if self.txn is None:
            return {}
        return {"txnAppId": self.txn[0], "txnVersion": str(self.txn[1])}

    # ------------------------------------------------------------------------------------------ helpers
    def _query(self, substitute: Any) -> DataFrame:
        reader = self.ex.reader
        previous = reader.substitute
        reader.substitute = substitute
        try:
            return self.ex._query()
        finally:
            reader.substitute = previous

    def _snapshot_read(self, key: str, path: str) -> DataFrame | None:
        snap = self.snapshots.get(path) or snapshot(path)
        if snap is None:
            return None
        self.snapshots[path] = snap
        self.reads += 1
        return snap.read(self.spark, max_plain_bytes=self.ex.env.small_input_bytes)

    def _change_read(self, state: RefreshState, path: str) -> DataFrame | None:
        """An input as the rows its commits appended since the last refresh read it (none: an empty relation);
        an input that changed otherwise, or was not read last time, is read whole (the plan then recomputes)."""
        snap = self.snapshots.get(path) or snapshot(path)
        if snap is None:
            return None
        self.snapshots[path] = snap
        self.reads += 1
        self.read_paths.append(path)
        seen = state.inputs.get(path)
        if seen is None:
            df = snap.read(self.spark, max_plain_bytes=self.ex.env.small_input_bytes)
        else:
            change = self.input_changes[path] = self.input_changes.get(path) or \
                change_since(snap, seen.version, seen.table_id)
            df = snap.read(self.spark, max_plain_bytes=self.ex.env.small_input_bytes) if change.issue is not None \
                else snap.read(self.spark, change.appended)
        self.read_frames.append(df)
        return df

    def _row_based_issues(self, analysis: Analysis) -> list[Issue]:
        """ROW_BASED's issues of this refresh: an input changed on the side of a left, right, semi or anti join
        that the join does not preserve (``analysis._fixed``) without a join key to refresh it by
        (``feed.keyed_terms``, kept in :attr:`keyed_terms`), or reads that cannot be told apart in the plan. With
        keyed terms, the cheaper way to refresh them (by the join key, :attr:`join_keyed`, or the signed rule)
        and its cost (:attr:`row_based_cost`)."""
        from framework.incremental.feed import keyed_cost, keyed_terms
        from framework.incremental.join_keyed import keyed_join

        if not analysis.fixed:  # inner joins only: every read may change (no plan call per read)
            return []
        reads = [(path, _first_column_id(df)) for path, df in zip(self.read_paths, self.read_frames, strict=True)]
        if any(read_id not in analysis.relation_ids for _, read_id in reads):
            return [Issue("JOIN_SIDES_UNKNOWN", "the query's reads cannot be matched with its joins' sides")]
        self.keyed_terms, issues = keyed_terms(analysis, reads, self.input_changes)
        signed = self.row_based_cost = keyed_cost(self, self.keyed_terms) if self.keyed_terms else None
        if signed is not None and not issues:
            views = {i: analysis.fixed_keys[rid].view_column for i, (_, rid) in enumerate(reads)
                     if i in self.keyed_terms and rid is not None}
            by_key = keyed_join(self, self.keyed_terms, views)
            if not by_key.issues and by_key.cost is not None and \
                    (by_key.cost <= signed or self.ex.expectations):  # the signed rule ignores them
                self.join_keyed, self.row_based_cost = by_key, by_key.cost
            elif self.ex.expectations:
                issues.append(Issue("EXPECTATIONS_WITH_DELETES", "expectations on a view whose rows a change of a "
                                    "join's non-preserved side may remove, and " + by_key.issues[0].reason))
        return issues

    def changed_rows(self, df: DataFrame) -> pa.Table:
        """The rows of ``df``, the query over the appended rows (conformed): evaluated on the driver from the
        appended files when ``arrow_eval.py`` can (one input, a simple plan, within the small-write size), else
        collected from Spark's job."""
        from pyspark.sql.pandas.types import to_arrow_schema

        from framework.incremental.arrow_eval import evaluate

        change = self.input_changes.get(self.read_paths[0]) if len(self.read_paths) == 1 else None
        if change is None or self.changed is None or self.changed_plan is None or not change.appended or \
                change.appended_bytes > self.ex.env.small_input_bytes or df.schema != self.changed.schema:
            return df.toArrow()
        rows = evaluate(self.changed_plan, change.appended)
        if rows is None:
            return df.toArrow()
        return rows.rename_columns(df.schema.names).cast(to_arrow_schema(df.schema, timezone="UTC"))

    def row_based_query(self) -> DataFrame:
        """``ROW_BASED``'s new rows: the query is linear in each of its reads (inner joins, filters,
        projections), so with the reads in call order, the union over each read ``i`` whose input has appended
        rows of the query with read ``i`` as those rows, the reads before it as their inputs were at the last
        refresh and those after it as they are now (for two inputs: dA JOIN B_new UNION ALL A_old JOIN dB)."""
        from functools import reduce

        terms = [self._query(self._term_read(i)) for i, path in enumerate(self.read_paths)
                 if self.input_changes[path].appended]
        assert self.changed is not None
        return reduce(lambda a, b: a.unionAll(b), terms) if terms else self.changed

    def row_based_rows(self) -> pa.Table | None:
        """``row_based_query``'s rows evaluated on the driver (``arrow_eval.py``), each term's reads from their
        files, when every input is a plain table and what the terms read stays within the small-write size; None:
        Spark runs the query."""
        import pyarrow as pa
        from pyspark.sql.pandas.types import to_arrow_schema

        from framework.incremental.arrow_eval import evaluate

        tables = []
        for i, path in enumerate(self.read_paths):
            if not self.input_changes[path].appended:
                continue
            sources: dict[int, tuple[str, ...]] = {}
            term = self._query(self._term_read(i, sources))
            rows = evaluate(analyzed_plan(term), sources) if sources else None
            if rows is None:
                return None
            tables.append(rows.rename_columns(term.schema.names).cast(to_arrow_schema(term.schema, timezone="UTC")))
        return pa.concat_tables(tables) if tables else None

    def next_read(self, calls: Iterator[int], path: str) -> int:
        """The position of a read of ``path`` by the query built again (``calls`` counts them), which must read
        what the first build read, in the same order."""
        call = next(calls)
        if call >= len(self.read_paths) or self.read_paths[call] != path:
            raise PipelineError(f"materialized view '{self.ex._dataset_name()}': its query read other tables "
                                "when built again; make it read the same tables each time",
                                code="MV_QUERY_READS_CHANGED")
        return call

    def _term_read(self, term: int, sources: dict[int, tuple[str, ...]] | None = None) -> Any:
        """The substitute of ``row_based_query``'s term ``term``; with ``sources``, each read's files are
        recorded there by the id of its first column, or (a read the driver would not do) ``sources`` is
        cleared and later reads are not recorded."""
        calls = iter(range(len(self.read_paths) + 1))
        budget, recording = [self.ex.env.small_input_bytes], [True]

        def read(key: str, path: str) -> DataFrame | None:
            call = self.next_read(calls, path)
            snap, change = self.snapshots[path], self.input_changes[path]
            if call == term:
                files, size = change.appended, change.appended_bytes
            elif call < term:
                appended = set(change.appended)
                files, size = tuple(f for f in snap.files if f not in appended), snap.table_bytes - change.appended_bytes
            else:
                files, size = snap.files, snap.table_bytes
            df = snap.read(self.spark, files) if call <= term else \
                snap.read(self.spark, max_plain_bytes=self.ex.env.small_input_bytes)
            budget[0] -= size
            if sources is not None and (budget[0] < 0 or not snap.plain):
                sources.clear()
                recording[0] = False
            if sources is not None and recording[0]:
                sources[int(analyzed_plan(df)[0]["output"][0][0]["exprId"]["id"])] = files
            return df

        return read

    def _changes(self, state: RefreshState | None, analysis: Analysis) -> tuple[list[Change] | None, str]:
        if state is None:
            return None, "first refresh, or the view changed since its last refresh"
        if state.fingerprint != analysis.fingerprint:
            return None, "the query or its inputs' columns changed since the last refresh"
        changes: list[Change] = []
        for path, snap in self.snapshots.items():
            seen = state.inputs.get(path)
            if seen is None:
                return None, f"{path} was not an input of the last refresh"
            changes.append(self.input_changes.get(path) or change_since(snap, seen.version, seen.table_id))
        return changes, ""

    def _context_issues(self, analysis: Analysis) -> list[Issue]:
        """What stops every incremental technique for this view."""
        if analysis.relations != self.reads or not self.snapshots:
            return [Issue("INPUT_NOT_DELTA", "the query reads a source that is not a Delta table of the pipeline")]
        return []

    def _own_issues(self, analysis: Analysis) -> dict[str, list[Issue]]:
        """What stops one technique for this view: GROUP_AGGREGATE's merge (expectations, a declared schema, a
        grouping column not in the view: then only recomputing the changed groups can, ``_merge_issues``),
        PARTITION_OVERWRITE's (the view's partitioning)."""
        own = {t: list(i) for t, i in view_issues(analysis, self._partition_cols()).items()}
        return {GROUP_AGGREGATE: [] if analysis.by_groups else self._merge_issues(analysis), **own}

    def _merge_issues(self, analysis: Analysis) -> list[Issue]:
        """Why GROUP_AGGREGATE cannot merge the changed groups into the view (the query's reasons and the
        view's)."""
        group = list(analysis.merge_issues)
        dataset = self.ex.dataset
        if dataset is not None and self.ex.expectations:
            group.append(Issue("EXPECTATIONS_ON_AGGREGATE", "expectations on an aggregate view"))
        if dataset is not None and dataset.schema is not None:
            group.append(Issue("DECLARED_SCHEMA", "an aggregate view with a declared schema"))
        if len(analysis.keys) != analysis.group_keys:
            group.append(Issue("GROUPING_EXPRESSION", "a GROUP BY column is not an output of the view"))
        return group if analysis.applicable(GROUP_AGGREGATE) else []

    def _partition_cols(self) -> tuple[str, ...]:
        dataset = self.ex.dataset
        return tuple(dataset.partition_cols or ()) if dataset is not None else ()

    def _keyed_plans(self, analysis: Analysis, changes: list[Change], own: dict[str, list[Issue]]) -> None:
        """The keyed techniques' touched values and costs (``keyed.py``), their issues added to ``own``; and
        GROUP_AGGREGATE's changed groups when they cannot be merged (kept in ``keyed`` too)."""
        change = changes[0] if len(changes) == 1 and analysis.relations == 1 else None
        self.keyed = keyed_techniques(analysis, change, self.path, self._partition_cols())
        own[ROW_BASED] = [*own.get(ROW_BASED, []), *self._row_based_issues(analysis)]
        if self.ex.expectations and any(c.feed for c in changes) and self.join_keyed is None:  # it applies them
            own[ROW_BASED] = [*own.get(ROW_BASED, []), Issue("EXPECTATIONS_WITH_DELETES", "expectations on a view "
                                                                "whose inputs updated or deleted rows")]
        merge = self._merge_issues(analysis)
        if analysis.by_groups and (merge or any(c.issue is not None for c in changes)):
            groups = keyed_groups(analysis, change, self.path)  # the groups cannot be merged: recomputed
            if groups.issues:
                own[GROUP_AGGREGATE] = [*merge, *groups.issues]
            else:
                self.keyed[GROUP_AGGREGATE] = groups
        for technique, keyed in self.keyed.items():
            own[technique] = [*own.get(technique, []), *(i for i in keyed.issues if i not in own.get(technique, []))]

    def _own_costs(self) -> dict[str, int | None]:
        """The costs found at refresh time: the keyed techniques', ROW_BASED's with keyed terms."""
        costs = {t: k.cost for t, k in self.keyed.items()}
        if self.row_based_cost is not None:
            costs[ROW_BASED] = self.row_based_cost
        return costs

    def _strict(self, issues: list[Issue]) -> None:
        if issues:
            raise NotIncrementalizableError(self.ex._dataset_name(), [(i.issue_type, i.reason) for i in issues])

    def _view_bytes(self) -> int:
        """The view's size: from the checksum of its newest version when there is one, else its live files."""
        from framework.storage.log import latest_version, live_files

        if not state_files.exists(self.path):
            return 0
        version = latest_version(self.path) if is_local(self.path) else None
        if version is not None:
            size = _checksum_bytes(self.path, version)
            if size is not None:
                return size
        files = live_files(self.path)
        return sum(int(f.get("size") or 0) for f in (files or {}).values())

    def _planned(self, result: FlowResult, plan: Plan, sources: list[Any]) -> None:
        self.plan = plan
        if self.view_bytes < 0:
            self.view_bytes = self._view_bytes()
        result.planning = plan.details(sources, max(self.view_bytes, 0))


def _first_column_id(df: DataFrame) -> int | None:
    """The id of the first column of the read's relation (how the plan names it)."""
    for node in analyzed_plan(df):
        output = node.get("output")
        if isinstance(output, list) and output and output[0]:
            return int(output[0][0]["exprId"]["id"])
    return None


def _checksum_bytes(path: str, version: int) -> int | None:
    """``tableSizeBytes`` of the version's checksum (``_delta_log/<version>.crc``), or None."""
    import json
    from pathlib import Path

    from framework.storage.checksum import checksum_path

    try:
        found = json.loads(checksum_path(Path(path.removeprefix("file:")), version).read_text(encoding="utf-8"))
        return int(found["tableSizeBytes"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
