"""A test kit for pipelines: run one in a test, read its tables, assert on DataFrames.

The pytest plugin (``framework.testing.plugin``, registered as ``medallion`` through the ``pytest11`` entry point)
provides the fixtures ``spark``, ``storage``, ``run_pipeline``, ``pipeline_run``, ``postgres`` and
``postgres_db``. The names below are imported when first used, so that loading the plugin stays cheap.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from framework.testing.assertions import assert_df_equal, assert_schema_equal, schema_diff
    from framework.testing.run import FlowMetrics, PipelineRun, TestPipeline, run_pipeline

_EXPORTS = {
    "assert_df_equal": "framework.testing.assertions",
    "assert_schema_equal": "framework.testing.assertions",
    "schema_diff": "framework.testing.assertions",
    "FlowMetrics": "framework.testing.run",
    "PipelineRun": "framework.testing.run",
    "TestPipeline": "framework.testing.run",
    "run_pipeline": "framework.testing.run",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'framework.testing' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


__all__ = ["FlowMetrics", "PipelineRun", "TestPipeline", "assert_df_equal", "assert_schema_equal",
           "run_pipeline", "schema_diff"]
