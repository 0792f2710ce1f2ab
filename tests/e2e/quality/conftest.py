"""Use the integration tests' rule files (tests/integration/quality/rules)."""

from tests.integration.quality.conftest import test_rule_files

__all__ = ["test_rule_files"]
