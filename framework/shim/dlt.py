"""``import dlt`` inside a pipeline loaded by the framework resolves to this module."""

from framework.api import (
    append_flow,
    apply_changes,
    apply_changes_from_snapshot,
    create_auto_cdc_flow,
    create_auto_cdc_from_snapshot_flow,
    create_sink,
    create_streaming_live_table,
    create_streaming_table,
    create_table,
    create_target_table,
    create_view,
    enable_local_execution,
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
    readStream,
    table_decorator,
    view_decorator,
)

# The dataset decorators name themselves as written here (`@dlt.table`) in their messages.
table = table_decorator("dlt.table")
view = view_decorator("dlt.view")
materialized_view = materialized_view_decorator("dlt.materialized_view")
temporary_view = view_decorator("dlt.temporary_view")

__all__ = [
    "append_flow", "apply_changes", "apply_changes_from_snapshot", "create_auto_cdc_flow",
    "create_auto_cdc_from_snapshot_flow", "create_sink", "create_streaming_live_table", "create_streaming_table",
    "create_table", "create_target_table", "create_view", "enable_local_execution", "expect", "expect_all",
    "expect_all_or_drop", "expect_all_or_fail", "expect_or_drop", "expect_or_fail", "foreach_batch_sink",
    "materialized_view", "on_event_hook", "read", "readStream", "read_stream", "table", "temporary_view", "view",
]

del materialized_view_decorator, table_decorator, view_decorator  # factories, not Databricks' names
