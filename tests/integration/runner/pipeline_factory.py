"""Write a small pipeline (files + spec) into a temp folder for a test."""

from __future__ import annotations

import textwrap
from pathlib import Path

from framework.spec import PipelineSpec, parse_spec


def make_pipeline(root: Path, files: dict[str, str], configuration: dict[str, str] | None = None,
                  name: str = "test_pipeline", **settings: object) -> PipelineSpec:
    (root / "pipeline").mkdir(parents=True, exist_ok=True)
    for filename, body in files.items():
        (root / "pipeline" / filename).write_text(textwrap.dedent(body))
    raw = {"name": name, "libraries": [{"glob": {"include": "pipeline/**"}}], "storage": "storage",
           "schema": settings.pop("schema", "it_" + root.name.replace("-", "_")[-20:]),
           "configuration": configuration or {}, **settings}
    return parse_spec(raw, source=str(root / "spec.yaml"), default_root=root)


def write_json_lines(folder: Path, name: str, rows: list[str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("\n".join(rows) + "\n")
    return path
