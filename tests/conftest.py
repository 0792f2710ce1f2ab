"""Shared fixtures: the session-scoped SparkSession and a storage root per test (framework.testing.plugin)."""

from __future__ import annotations

from pathlib import Path

pytest_plugins = ["framework.testing.plugin"]

REPO_ROOT = Path(__file__).resolve().parent.parent
