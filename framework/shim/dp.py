"""``from pyspark import pipelines as dp`` inside a pipeline loaded by the framework resolves to this module.

Its public names are exactly Databricks' ``pyspark.pipelines`` (no ``read``, ``read_stream`` or the legacy
``apply_changes*``, which only ``dlt`` has): a pipeline that uses a name Databricks' ``dp`` lacks fails here too."""

from framework.api import (
    append_flow,
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
    foreach_sink,
    materialized_view_decorator,
    on_event_hook,
    replace_flow,
    table_decorator,
    update_flow,
    view_decorator,
)

# The dataset decorators name themselves as written here (`@dp.table`) in their messages.
table = table_decorator("dp.table")
materialized_view = materialized_view_decorator("dp.materialized_view")
temporary_view = view_decorator("dp.temporary_view")

__all__ = [
    "append_flow", "create_auto_cdc_flow",
    "create_auto_cdc_from_snapshot_flow", "create_sink", "create_streaming_table", "expect", "expect_all",
    "expect_all_or_drop", "expect_all_or_fail", "expect_or_drop", "expect_or_fail", "foreach_batch_sink",
    "foreach_sink", "materialized_view", "on_event_hook", "replace_flow", "table", "temporary_view",
    "update_flow",
]

del materialized_view_decorator, table_decorator, view_decorator  # factories, not Databricks' names
