"""Delta snapshots of the tables an update wrote, computed while the warm engine waits for its next command.

A Delta streaming sink checks that its batch was not committed already with the table's ``txn`` actions, and
Delta (4.4) takes them from the full state of the table's newest snapshot (``DeltaSink.addBatch`` ->
``txnVersion`` -> ``Snapshot.computedState``): a state reconstruction, three stages and 0.13-0.25 s on two cores,
per streaming table and per update, on the update's critical path. The newest snapshot of each table an update
wrote is the one the next update starts from, as long as nothing else writes the table. ``medallion serve``
computes that state once it has answered a command (:func:`warm_written`), so the next update finds it done; an
in-process run never calls it, and a table written meanwhile only costs its next writer what it costs today.

The state is computed by Spark jobs tagged :data:`WARMING_TAG`: a command that arrives meanwhile cancels them
(:func:`cancel_warming`, called by the server as it accepts the command) instead of waiting for them, since one
large table's state can take seconds (7-36 s were seen between commands), and a cancelled computation leaves
the table for its next writer to read as usual.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING

from framework.internals import delta_snapshot

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

WARMING_TAG = "medallion-prewarm"
_written: list[str] = []
_lock = threading.Lock()


@contextmanager
def warming_jobs(spark: SparkSession) -> Iterator[None]:
    """Tag the Spark jobs this thread starts inside the block with :data:`WARMING_TAG`."""
    context = spark.sparkContext
    context.addJobTag(WARMING_TAG)
    try:
        yield
    finally:
        context.removeJobTag(WARMING_TAG)


def cancel_warming(spark: SparkSession) -> None:
    """Cancel the running warming jobs, if any (safe from any thread): a command is waiting."""
    with suppress(Exception):
        spark.sparkContext.cancelJobsWithTag(WARMING_TAG)


def note_written(paths: Iterable[str]) -> None:
    """Remember the Delta tables an update's streaming sinks wrote (replacing what an earlier update noted)."""
    with _lock:
        _written[:] = list(dict.fromkeys(paths))


def warm_written(spark: SparkSession, should_stop: Callable[[], bool] = lambda: False) -> int:
    """Compute the state of the newest snapshot of each table noted, one table at a time until ``should_stop()``
    (a command waits: the rest stay noted); returns how many were done. Reads only: a table that cannot be read
    is skipped (its writer reads it as usual)."""
    done = 0
    while not should_stop():
        with _lock:
            if not _written:
                break
            path = _written.pop(0)
        with suppress(Exception), warming_jobs(spark):
            delta_snapshot(spark, path).transactions()
        done += 1
    return done
