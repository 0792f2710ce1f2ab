"""Helpers that work the same in a pipeline loaded by the framework and on Databricks."""

from __future__ import annotations

from types import ModuleType
from typing import Any

from framework.registry import has_active_registry


def dlt_module() -> ModuleType:
    """The ``dlt`` module to declare with: ours while the framework loads a pipeline, else Databricks' own."""
    if has_active_registry():
        from framework.shim import dlt as shim

        return shim
    import dlt  # the Databricks runtime module (locally: the databricks-dlt stubs)

    return dlt


def resolve_dlt(module: ModuleType | Any | None = None) -> Any:
    """The ``dlt`` module to declare with: ``module`` if given (e.g. a test double), else :func:`dlt_module`."""
    return module if module is not None else dlt_module()
