"""A DataFrame's analyzed logical plan as JSON, the one private Spark entry point incremental refresh needs.

``queryExecution().analyzed().toJSON()`` (Catalyst's ``TreeNode.toJSON``, reached through
``framework.internals.analyzed_plan``) is not public API: pyspark has no way to walk a plan. It is one Py4J call
(milliseconds) and no Spark job. Its smoke checks (``tests/integration/mv/test_analysis.py`` and
``tests/integration/test_internals.py``) fail naming the entry point when a Spark upgrade removes or changes it.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from framework import internals

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

ENTRY_POINT = "DataFrame._jdf.queryExecution().analyzed().toJSON()"


def analyzed_plan(df: DataFrame) -> list[dict[str, Any]]:
    """The analyzed plan of ``df``: a pre-order list of plan nodes (see ``analysis.py``)."""
    text = internals.analyzed_plan(df).toJSON()
    plan = json.loads(str(text))
    if not isinstance(plan, list):
        raise TypeError(f"{ENTRY_POINT} returned {type(plan).__name__}, not a list of plan nodes")
    return plan
