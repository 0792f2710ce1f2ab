"""Shared by the reliability suite: pipelines written as a user writes them (files + a YAML spec), the command
line in a fresh process, and the event log read back as plain rows."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.conftest import REPO_ROOT

TRACEBACK = "Traceback (most recent call last)"
# A JVM stack trace as printed, or as it appears inside a JSON log line (PySpark's own error loggers)
JAVA_TRACE = re.compile(r"(\t|\\t)at (org\.apache\.spark|py4j)\.")


def write_spec(root: Path, files: dict[str, str], *, name: str = "reliability", storage: Path | None = None,
               configuration: dict[str, str] | None = None, schema: str | None = None) -> Path:
    """Pipeline files under ``root/pipeline`` and ``root/spec.yaml`` naming them; returns the spec's path."""
    (root / "pipeline").mkdir(parents=True, exist_ok=True)
    for filename, body in files.items():
        (root / "pipeline" / filename).write_text(textwrap.dedent(body))
    raw = {"name": name, "libraries": [{"glob": {"include": "pipeline/**"}}],
           "storage": str(storage if storage is not None else root / "storage"),
           "schema": schema or schema_name(root), "configuration": configuration or {}}
    spec = root / "spec.yaml"
    spec.write_text(yaml.safe_dump(raw))
    return spec


def schema_name(root: Path) -> str:
    """A catalog schema of its own for each test (tests share one session, and so one catalog)."""
    return "rel_" + re.sub(r"\W", "_", root.name.lower())[-24:]


def medallion_env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(REPO_ROOT))


def medallion(*args: str, timeout: int = 600) -> subprocess.CompletedProcess[str]:
    """``medallion <args>`` in a fresh interpreter, as a user runs it."""
    return subprocess.run([sys.executable, "-m", "framework.cli", *args], cwd=REPO_ROOT, env=medallion_env(),
                          capture_output=True, text=True, timeout=timeout, check=False)


def medallion_popen(*args: str, **kwargs: Any) -> subprocess.Popen[str]:
    """``medallion <args>`` started in its own process group (so that a kill reaches its JVM too)."""
    return subprocess.Popen([sys.executable, "-m", "framework.cli", *args], cwd=REPO_ROOT, env=medallion_env(),
                            text=True, start_new_session=True, **kwargs)


@dataclass(frozen=True)
class Event:
    """One event-log row, flattened for assertions."""

    id: str
    update_id: str
    seq: int
    event_type: str
    flow_name: str | None
    details: dict[str, Any]
    level: str
    error: list[dict[str, Any]] | None
    message: str

    @property
    def status(self) -> str | None:
        """``flow_progress.status`` or ``update_progress.state``."""
        inner = self.details.get(self.event_type) or {}
        return inner.get("status") or inner.get("state")


def read_events(spark: Any, events_dir: Path) -> list[Event]:
    """Every event of the log at ``events_dir``, ordered by update and sequence number."""
    if not any((events_dir / "_delta_log").glob("*.json")):
        return []  # no event was ever committed (a killed update's first commit may not have happened)
    rows = spark.read.format("delta").load(str(events_dir)).collect()
    out = [Event(r.id, r.origin.update_id, r.sequence.data_plane_id.seq_no, r.event_type, r.origin.flow_name,
                 json.loads(r.details), r.level,
                 [e.asDict() for e in r.error.exceptions] if r.error is not None else None, r.message)
           for r in rows]
    return sorted(out, key=lambda e: (e.update_id, e.seq))


def of_update(events: list[Event], update_id: str) -> list[Event]:
    return [e for e in events if e.update_id == update_id]


def final_state(events: list[Event], update_id: str) -> str | None:
    """The last ``update_progress`` state of an update."""
    states = [e.status for e in of_update(events, update_id) if e.event_type == "update_progress"]
    return states[-1] if states else None
