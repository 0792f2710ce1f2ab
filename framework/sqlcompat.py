"""Databricks SQL syntax that open-source Spark lacks, translated to equivalent Spark SQL.

``details:flow_progress:data_quality:expectations`` (or ``details:flow_progress.metrics``) — Databricks' JSON
path operator, used by its event-log monitoring queries — becomes
``get_json_object(details, '$.flow_progress.data_quality.expectations')``. Quoted strings are left alone.
"""

from __future__ import annotations

import re

_TOKEN = re.compile(
    r"""('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")"""  # quoted strings: keep
    r"""|(?<![\w:])([A-Za-z_][\w.]*)((?:\s*:\s*(?!:)[A-Za-z_]\w*(?:\.[A-Za-z_]\w*|\[\d+\])*)+)""",
)


def translate_databricks_sql(query: str) -> str:
    """Rewrite the ``col:path`` JSON operator into ``get_json_object``; everything else is unchanged."""

    def replace(match: re.Match[str]) -> str:
        if match.group(1) is not None:
            return match.group(0)
        column, path = match.group(2), match.group(3)
        parts = [p.strip() for p in path.split(":") if p.strip()]
        return f"get_json_object({column}, '$.{'.'.join(parts)}')"

    return _TOKEN.sub(replace, query)
