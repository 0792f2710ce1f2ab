"""One-time JVM initialisations that a fresh session would otherwise pay on an update's critical path, started
in the background as soon as the session exists.

Two of them showed in the bronze commit of a cold 1M-row run (``jcmd Thread.print`` and a Java Flight Recorder
profile of the stream's thread between the write job's end and the commit's):

1. Delta's ``Snapshot`` companion object builds the schema of the Delta log's actions (``Action.logSchema``) with
   Scala runtime reflection when it is first used: 0.4 s in an idle fresh JVM, 0.7 s during a cold update.
2. Delta reads and writes the log's actions with Jackson's Scala module, which introspects each action class the
   first time it meets it: 0.25 s for a commit's actions in an idle fresh JVM.

Both are paid once per JVM, by the first Delta commit or snapshot, usually inside the first flow's micro-batch.
Done early, while the update loads and resolves the pipeline (mostly Python: one core is free), they are off the
critical path; a class is initialised once, and a thread that needs it meanwhile waits for the one initialising it.

Nothing here runs a Spark job, changes a setting or touches a file; a failure changes nothing (the work is then
done where it is first needed, as without this module).
"""

from __future__ import annotations

import threading
from contextlib import suppress
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# Initialised in this order: each is slow the first time only.
CLASSES = ("org.apache.spark.sql.delta.Snapshot$",)

# One action of each kind a commit writes, read and written back once with Delta's own JSON code.
ACTIONS = (
    '{"commitInfo":{"timestamp":0,"operation":"WRITE","operationParameters":{"mode":"Append"},'
    '"isBlindAppend":true,"operationMetrics":{"numFiles":"1"},"engineInfo":"medallion","txnId":"warm-up"}}',
    '{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}',
    '{"metaData":{"id":"warm-up","format":{"provider":"parquet","options":{}},'
    '"schemaString":"{\\"type\\":\\"struct\\",\\"fields\\":[]}","partitionColumns":[],"configuration":{},'
    '"createdTime":0}}',
    '{"add":{"path":"warm-up.parquet","partitionValues":{},"size":1,"modificationTime":0,"dataChange":true,'
    '"stats":"{\\"numRecords\\":1}"}}',
    '{"txn":{"appId":"warm-up","version":0,"lastUpdated":0}}',
    '{"remove":{"path":"warm-up.parquet","deletionTimestamp":0,"dataChange":true}}',
)


def start_warmup(spark: SparkSession) -> threading.Thread:
    """Initialise :data:`CLASSES` and read and write back :data:`ACTIONS` in the session's JVM, on a daemon thread;
    return the thread."""
    thread = threading.Thread(target=_initialise, args=(spark,), name="medallion-jvm-warmup", daemon=True)
    thread.start()
    return thread


def _initialise(spark: SparkSession) -> None:
    jvm = spark.sparkContext._jvm
    if jvm is None:
        return
    for name in CLASSES:
        with suppress(Exception):  # a class missing here is initialised where it is used, as without this
            jvm.java.lang.Class.forName(name)
    for action in ACTIONS:
        with suppress(Exception):
            round_trip(jvm, action)


def round_trip(jvm: Any, action: str) -> str:
    """``action`` (one line of a Delta commit) read and written back by Delta's ``Action`` JSON code."""
    return str(jvm.org.apache.spark.sql.delta.actions.Action.fromJson(action).json())
