"""Shared fixtures: the session-scoped SparkSession, a storage root per test and the pipeline test kit
(framework.testing.plugin).

The plugin reaches pytest through the ``pytest11`` entry point of the installed package (``make setup`` installs
it editable). Naming it in ``pytest_plugins`` as well would register it twice, which pytest refuses; it is named
here only when the entry point is not loaded: not installed (an old ``.venv``) or autoloading disabled
(``PYTEST_DISABLE_PLUGIN_AUTOLOAD``).
"""

from __future__ import annotations

import os
from importlib.metadata import entry_points
from pathlib import Path

PLUGIN = "framework.testing.plugin"
# The project's own CLI tests run in-process: a developer's `medallion serve` for this repository must not take
# their commands (tests/e2e/test_serve.py starts its own servers and clears this).
os.environ.setdefault("MEDALLION_NO_SERVER", "1")


def plugin_autoloaded() -> bool:
    """Whether pytest loads the framework's plugin by itself, through the installed entry point."""
    if os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD"):
        return False
    return any(ep.value == PLUGIN for ep in entry_points(group="pytest11"))


pytest_plugins = [] if plugin_autoloaded() else [PLUGIN]

REPO_ROOT = Path(__file__).resolve().parent.parent


def pytest_collection_modifyitems(items: list) -> None:  # type: ignore[type-arg]
    """Unit tests first: they never start Spark, and some check what pipeline code does without a SparkContext,
    which the shared session of the Spark tests would otherwise be by then."""
    items.sort(key=lambda item: 0 if "/tests/unit/" in str(getattr(item, "path", item.fspath)) else 1)
