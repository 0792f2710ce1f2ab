"""AUTO CDC arguments of Databricks' newest reference (issue 36), without Spark: ``system_sequence_by`` refused
naming the argument; ``snapshot_and_version=(df, version)`` taken as one snapshot, applied once."""

from __future__ import annotations

import pytest

import framework.shim.dlt as dlt
import framework.shim.dp as dp
from framework.errors import DeclarationError
from framework.registry import registration_context


class FakeFrame:
    """Stands in for a DataFrame (the declaration only keeps it)."""

    schema = "id INT"


def test_system_sequence_by_is_refused_naming_it() -> None:
    with registration_context(), pytest.raises(DeclarationError) as info:
        dp.create_streaming_table("t")
        dp.create_auto_cdc_flow(target="t", source="s", keys=["id"], sequence_by="seq",
                                system_sequence_by="commit_ts")
    assert info.value.code == "DECLARATION_UNSUPPORTED_ARGUMENT"
    assert "system_sequence_by" in info.value.message and "BITEMPORAL" in info.value.message


def test_snapshot_and_version_as_a_tuple_is_one_snapshot() -> None:
    frame = FakeFrame()
    with registration_context() as registry:
        dlt.create_streaming_table("t")
        dlt.apply_changes_from_snapshot(target="t", keys=["id"], snapshot_and_version=(frame, 3))
    flow = next(f for f in registry.flows.values() if f.snapshot_cdc is not None)
    next_snapshot = flow.snapshot_cdc.source
    assert callable(next_snapshot)
    assert next_snapshot(None) == (frame, 3) and next_snapshot(2) == (frame, 3)
    assert next_snapshot(3) is None  # applied already
