"""Medallion framework: Databricks DLT / Lakeflow declarative pipelines, runnable locally on open-source
Spark + Delta with Databricks' semantics, and deployable unchanged to Databricks.

Pipeline files import ``dlt`` (or ``from pyspark import pipelines as dp``) and nothing from here. This package
is for running and testing them::

    from framework import load_spec, run_update
    result = run_update(load_spec("conf/sample.yaml"))
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from framework.errors import ExpectationViolation, GraphError, LoadError, PipelineError, SpecError
    from framework.loader import load_pipeline
    from framework.runner.update import UpdateOptions, UpdateResult
    from framework.spec import PipelineSpec, load_spec

__all__ = [
    "ExpectationViolation", "GraphError", "LoadError", "PipelineError", "PipelineSpec", "SpecError",
    "UpdateOptions", "load_pipeline", "load_spec", "run_update",
]

# Imported on first use, so that ``import framework.<module>`` (every CLI call, each Python process Spark starts
# for the database source) does not load the spec and pipeline loader it does not need.
_LAZY = {"ExpectationViolation": "framework.errors", "GraphError": "framework.errors",
         "LoadError": "framework.errors", "PipelineError": "framework.errors", "SpecError": "framework.errors",
         "load_pipeline": "framework.loader", "PipelineSpec": "framework.spec", "load_spec": "framework.spec",
         "UpdateOptions": "framework.runner.update"}


def run_update(spec: PipelineSpec, options: UpdateOptions | None = None, spark: Any = None) -> UpdateResult:
    """Run one triggered update of ``spec`` on the local shim (see ``framework.runner.update.run_update``)."""
    from framework.runner.update import run_update as _run

    return _run(spec, options, spark)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(name)
