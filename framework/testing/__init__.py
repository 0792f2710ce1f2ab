"""Pytest support for users' pipelines: ``pytest_plugins = ["framework.testing.plugin"]``."""
