"""``from pyspark import pipelines as dp`` inside a pipeline loaded by the framework resolves to this module."""

from framework.api import (
    append_flow,
    apply_changes,
    apply_changes_from_snapshot,
    create_auto_cdc_flow,
    create_auto_cdc_from_snapshot_flow,
    create_sink,
    create_streaming_table,
    expect,
    expect_all,
    expect_all_or_drop,
    expect_all_or_fail,
    expect_or_drop,
    expect_or_fail,
    foreach_batch_sink,
    materialized_view_decorator,
    on_event_hook,
    read,
    read_stream,
    table_decorator,
    view_decorator,
)

# The dataset decorators name themselves as written here (`@dp.table`) in their messages.
table = table_decorator("dp.table")
materialized_view = materialized_view_decorator("dp.materialized_view")
temporary_view = view_decorator("dp.temporary_view")

__all__ = [
    "append_flow", "apply_changes", "apply_changes_from_snapshot", "create_auto_cdc_flow",
    "create_auto_cdc_from_snapshot_flow", "create_sink", "create_streaming_table", "expect", "expect_all",
    "expect_all_or_drop", "expect_all_or_fail", "expect_or_drop", "expect_or_fail", "foreach_batch_sink",
    "materialized_view", "on_event_hook", "read", "read_stream", "table", "temporary_view",
]
