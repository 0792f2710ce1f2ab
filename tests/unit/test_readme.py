"""The README's example and commands are true: the example is a loadable pipeline, the commands exist."""

from __future__ import annotations

import re
from pathlib import Path

from framework.cli import build_parser
from framework.graph import build_graph
from framework.loader import load_pipeline
from framework.spec import parse_spec
from framework.static_reads import static_reads
from tests.conftest import REPO_ROOT

README = (REPO_ROOT / "README.md").read_text()


def test_readme_example_is_a_valid_pipeline(tmp_path: Path) -> None:
    example = re.search(r"```python\n(.*?)```", README, re.DOTALL)
    assert example is not None
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "silver.py").write_text(example.group(1))
    (tmp_path / "p" / "bronze.py").write_text(
        "import dlt\n\n@dlt.table\ndef orders_raw():\n    return spark.readStream.table('landing.orders')\n")
    spec = parse_spec({"name": "readme", "libraries": [{"glob": {"include": "p/**"}}]}, source="README.md",
                      default_root=tmp_path)
    loaded = load_pipeline(spec)
    reads, streaming = static_reads(loaded.registry)
    graph = build_graph(loaded.registry, reads, streaming)
    dataset = loaded.registry.datasets["orders_clean"]
    assert [e.name for e in dataset.expectations] == ["known_currency", "valid_order_id", "positive_amount"]
    assert graph.inputs["orders_clean"] == ["orders_raw"] and graph.layers["orders_clean"] == "silver"


def test_readme_sql_example_is_a_valid_pipeline(tmp_path: Path) -> None:
    example = re.search(r"```sql\n(.*?)```", README, re.DOTALL)
    assert example is not None
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "gold.sql").write_text(example.group(1))
    (tmp_path / "p" / "silver.py").write_text(
        "import dlt\n\n@dlt.table\ndef orders_clean():\n    return spark.readStream.table('landing.orders')\n")
    spec = parse_spec({"name": "readme", "libraries": [{"glob": {"include": "p/**"}}]}, source="README.md",
                      default_root=tmp_path)
    loaded = load_pipeline(spec)
    reads, streaming = static_reads(loaded.registry)
    graph = build_graph(loaded.registry, reads, streaming)
    dataset = loaded.registry.datasets["revenue_by_country"]
    assert [(e.name, e.action) for e in dataset.expectations] == [("known_country", "warn"),
                                                                   ("positive_revenue", "drop")]
    assert dataset.table_properties == {"quality": "gold"}
    assert graph.inputs["revenue_by_country"] == ["orders_clean"]


def test_readme_commands_exist() -> None:
    makefile = (REPO_ROOT / "Makefile").read_text()
    for target in re.findall(r"^make (\w+)", README, re.MULTILINE):
        assert re.search(rf"^{target}:", makefile, re.MULTILINE), f"README mentions `make {target}`"
    commands = set(build_parser()._subparsers._group_actions[0].choices)  # type: ignore[union-attr]
    for command in re.findall(r"\.venv/bin/medallion (\w+)", README):
        assert command in commands, f"README mentions `medallion {command}`"
    ci = (REPO_ROOT / ".ci" / "run").read_text()
    assert "make test" in ci and "make test" in README
