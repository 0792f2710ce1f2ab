"""A checkout of an earlier commit to time beside this one (``bench_devloop --against REV``): a git worktree
with its own framework jar and class-data sharing archive, so that neither checkout invalidates the other's.

The worktree shares this checkout's virtual environment and its Maven jars (symlinked one by one); its
framework jar is built from its own ``jvm/src`` and its archive written by its own training run, as its
``make setup`` would (about a minute, before any timed run).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FRAMEWORK_JAR_PREFIX = "medallion-jvm-"


def prepare(rev: str, work: Path) -> Path:
    """A worktree of ``rev`` under ``work``, ready for cold runs; returns its root."""
    root = work / f"against-{rev}"
    if not root.exists():
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", "-f", str(root), rev], check=True,
                       capture_output=True)
    jars = root / ".cache" / "jars"
    jars.mkdir(parents=True, exist_ok=True)
    for jar in (REPO / ".cache" / "jars").glob("*.jar"):
        if not jar.name.startswith(FRAMEWORK_JAR_PREFIX) and not (jars / jar.name).exists():
            (jars / jar.name).symlink_to(jar)
    if not (root / ".venv").exists():
        (root / ".venv").symlink_to(REPO / ".venv")
    print(f"  preparing {rev}: its framework jar and class-data sharing archive", file=sys.stderr, flush=True)
    subprocess.run([sys.executable, "-m", "framework.cds_training", "build"], cwd=root, capture_output=True)
    return root


def remove(root: Path) -> None:
    """Remove the worktree (its caches with it)."""
    subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(root)], capture_output=True)
