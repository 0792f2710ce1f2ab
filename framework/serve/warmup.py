"""The warm server's warm-up: two throw-away updates of the built-in sample pipeline (a first one into empty
storage, then an incremental one), run once the server listens, so that the first command a user sends finds
the JVM's code for Auto Loader, expectations, APPLY CHANGES, materialized views and Delta commits compiled
already. Without it the server's first update is the JVM's first update, no faster than a cold run.

The updates write into a temporary folder (landing files, storage) that is removed afterwards, and publish
their tables to a schema of their own (:data:`SCHEMA`), dropped afterwards: nothing of them is left for the
user's commands to see. A command that arrives meanwhile interrupts the warm-up (:meth:`WarmUp.interrupt`,
called by the server as it accepts the command: SIGINT to the main thread, as a Ctrl-C of a command), so it
never waits for it; ``medallion serve --no-warm-up`` leaves it out.
"""

from __future__ import annotations

import io
import shutil
import signal
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, redirect_stderr, redirect_stdout, suppress
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

SCHEMA = "medallion_warm_up"
UPDATES = 2


class WarmUp:
    """The warm-up of one server: :meth:`run` on the main thread, :meth:`interrupt` from any thread."""

    def __init__(self, log: Callable[[str], None]) -> None:
        self.log = log
        self.lock = threading.Lock()
        self.running = False
        self.interrupted = False
        self.done = 0

    def run(self, spark: SparkSession) -> None:
        """Run the warm-up updates until done or interrupted, then remove what they wrote. A
        ``KeyboardInterrupt`` from :meth:`interrupt` is taken here; the caller guards against a late one."""
        spec = sample_spec()
        if spec is None:
            self.log("no warm-up: the sample pipeline (conf/sample.yaml) is not next to the framework")
            return
        folder = Path(tempfile.mkdtemp(prefix="medallion-warm-up-"))
        started = time.monotonic()
        try:
            with self.lock:
                self.running = not self.interrupted
            if self.running:
                _updates(spec, folder, self)
        except KeyboardInterrupt:
            pass
        except Exception as exc:  # an optimisation only: the server serves without it
            self.log(f"warm-up failed: {type(exc).__name__}: {exc}")
        finally:
            try:
                with self.lock:
                    self.running = False
            finally:
                _clean_up(spark, folder)
        how = "interrupted by a command" if self.interrupted else "done"
        self.log(f"warm-up {how}: {self.done} of {UPDATES} sample updates in {time.monotonic() - started:.2f} s")

    def interrupt(self) -> None:
        """Stop the warm-up if it runs (a command waits): SIGINT to the main thread, where PySpark's handler
        cancels the running jobs and raises ``KeyboardInterrupt``."""
        with self.lock:
            if self.interrupted:
                return
            self.interrupted = True
            if not self.running:
                return
            signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)


def sample_spec() -> dict[str, object] | None:
    """The built-in sample's spec as a dict, or None where the framework was installed without it."""
    from framework.settings import project_root

    path = project_root() / "conf" / "sample.yaml"
    if not path.is_file() or not (project_root() / "pipelines" / "sample").is_dir():
        return None
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    return raw if isinstance(raw, dict) else None


def _updates(raw: dict[str, object], folder: Path, warm_up: WarmUp) -> None:
    """Run the sample's updates into ``folder``, counting those completed in ``warm_up.done``."""
    from framework.runner.update import UpdateOptions, run_update
    from framework.sample_data import write_customer_changes, write_orders
    from framework.settings import project_root
    from framework.spec import load_spec

    landing = folder / "landing"
    spec_raw = {**{k: v for k, v in raw.items() if k != "environments"}, "root": str(project_root()),
                "schema": SCHEMA, "storage": str(folder / "storage"),
                "paths": {"dbfs:/mnt/landing": str(landing)}}
    spec_path = folder / "warm_up.yaml"
    spec_path.write_text(yaml.safe_dump(spec_raw), encoding="utf-8")
    spec = load_spec(spec_path)
    for batch in range(1, UPDATES + 1):
        if warm_up.interrupted:
            break
        write_orders(landing / "orders", batch)
        write_customer_changes(landing / "customers", batch)
        with _quiet() as out:
            result = run_update(spec, UpdateOptions(out=out))
        if not result.succeeded:
            raise RuntimeError(f"sample update {batch} did not succeed: {result.error or 'a flow failed'}")
        warm_up.done += 1


@contextmanager
def _quiet() -> Iterator[io.StringIO]:
    """The warm-up's progress and anything printed meanwhile, kept from the server's log."""
    out = io.StringIO()
    with redirect_stdout(out), redirect_stderr(out):
        yield out


def _clean_up(spark: SparkSession, folder: Path) -> None:
    """Stop what an interrupted update left running, drop the warm-up's schema, remove its folder."""
    from framework.runner.streams import stop_active_queries

    with suppress(Exception):
        stop_active_queries(spark)
    with suppress(Exception):
        spark.sql(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE")
    shutil.rmtree(folder, ignore_errors=True)
