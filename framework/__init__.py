"""Medallion framework: Databricks DLT / Lakeflow declarative pipelines, runnable locally on open-source
Spark + Delta with Databricks' semantics, and deployable unchanged to Databricks.

Pipeline files import ``dlt`` (or ``from pyspark import pipelines as dp``) and nothing from here. This package
is for running and testing them::

    from framework import load_spec, run_update
    result = run_update(load_spec("conf/sample.yaml"))
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from framework.errors import (
    ExpectationViolation,
    GraphError,
    LoadError,
    PipelineError,
    SpecError,
)
from framework.loader import load_pipeline
from framework.spec import PipelineSpec, load_spec

if TYPE_CHECKING:
    from framework.runner.update import UpdateOptions, UpdateResult

__all__ = [
    "ExpectationViolation", "GraphError", "LoadError", "PipelineError", "PipelineSpec", "SpecError",
    "UpdateOptions", "load_pipeline", "load_spec", "run_update",
]


def run_update(spec: PipelineSpec, options: UpdateOptions | None = None, spark: Any = None) -> UpdateResult:
    """Run one triggered update of ``spec`` on the local shim (see ``framework.runner.update.run_update``)."""
    from framework.runner.update import run_update as _run

    return _run(spec, options, spark)


def __getattr__(name: str) -> Any:
    if name == "UpdateOptions":
        from framework.runner.update import UpdateOptions

        return UpdateOptions
    raise AttributeError(name)
