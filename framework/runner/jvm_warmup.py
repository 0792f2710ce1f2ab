"""One-time JVM initialisations that a fresh session would otherwise pay on an update's critical path, started
in the background: :func:`start_early_warmup` as soon as the JVM answers (before the SparkContext exists),
:func:`start_warmup` as soon as the session exists.

Before the session (a Java Flight Recorder profile of a cold session start): Spark ML's session extension, which
Spark loads into every new session, builds Scala's runtime reflection universe on the session's critical path
(0.5-0.7 s); built on another thread while the SparkContext starts (JVM work on one core, the other free), the
session starts about 0.3 s sooner. The same extension then registers Spark ML's functions in Spark's global
registry, deriving their types with Scala reflection (:data:`EARLY_CLASSES`): 0.3 s more, also done here. SQL's
parser (the first schema string a pipeline declares) is the other session-independent first-use cost.

After the session: the first query's code generation compiles Spark's generated code with Janino, which is cold
(0.2-0.3 s); one projection compiled here leaves the first job 0.2-0.3 s shorter. Then three showed in the bronze
commit of a cold 1M-row run (``jcmd Thread.print`` and Java Flight
Recorder profiles of the stream's thread between the write job's end and the commit's):

1. Delta's ``Snapshot`` companion object builds the schema of the Delta log's actions (``Action.logSchema``) with
   Scala runtime reflection when it is first used: 0.4 s in an idle fresh JVM, 0.7 s during a cold update.
2. Delta reads and writes the log's actions with Jackson's Scala module, which introspects each action class the
   first time it meets it: 0.25 s for a commit's actions in an idle fresh JVM.
3. The commit that creates a table derives its checksum's file list from the empty table's state, a Dataset of
   Delta's ``SingleAction``, whose encoder is derived with Scala reflection when first asked for: 0.3 s in an idle
   fresh JVM (:data:`ENCODERS`).

Each is paid once per JVM, by the first job, Delta commit or snapshot, usually inside the first flow's micro-batch.
Done early, while the update loads and resolves the pipeline, they are off the critical path (on two busy cores
they compete with it: measured, the whole saves 0.3-0.4 s of a cold 1M-row run); a class is initialised once, and
a thread that needs it meanwhile waits for the one initialising it.

Nothing here runs a Spark job, changes a setting or touches a file; a failure changes nothing (the work is then
done where it is first needed, as without this module). ``MEDALLION_NO_WARMUP=1`` skips both warm-ups.
"""

from __future__ import annotations

import threading
from contextlib import suppress
from typing import TYPE_CHECKING, Any

from framework import internals

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# Initialised before the session exists: nothing in them depends on one. Spark ML's session extension (loaded
# into every session) registers its functions in Spark's global registry of internal functions when this object
# is initialised: 0.3 s of the session's start (median of 8 alternating fresh processes: 2.69 s against 3.01 s).
EARLY_CLASSES = ("org.apache.spark.sql.ml.InternalFunctionRegistration$",)

# Initialised in this order: each is slow the first time only.
CLASSES = ("org.apache.spark.sql.delta.Snapshot$",)

# Delta encoders derived on first use: (class with the static accessor, accessor).
ENCODERS = (("org.apache.spark.sql.delta.actions.SingleAction", "encoder"),)

# A schema string for the parser's first use.
SCHEMA = "id BIGINT, name STRING, amount DECIMAL(10,2), at TIMESTAMP"

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


def start_early_warmup(jvm: Any) -> threading.Thread:
    """Build Scala's reflection universe, initialise :data:`EARLY_CLASSES` and use SQL's parser once in a JVM
    that has no SparkContext yet, on a daemon thread; return the thread. Nothing here needs a session: no Spark or
    Delta class whose initialisation depends on one is touched (a failed class initialisation would stay failed
    for the JVM's life)."""
    thread = threading.Thread(target=_initialise_early, args=(jvm,), name="medallion-jvm-early-warmup", daemon=True)
    thread.start()
    return thread


def _initialise_early(jvm: Any) -> None:
    with suppress(Exception):  # not built here: built where it is first used, as without this
        jvm.scala.reflect.runtime.package.universe()
    for name in EARLY_CLASSES:
        with suppress(Exception):
            jvm.java.lang.Class.forName(name)
    with suppress(Exception):
        parse_schema(jvm, SCHEMA)


def parse_schema(jvm: Any, ddl: str) -> str:
    """``ddl`` parsed by Spark's session-independent SQL parser, as a DDL string again."""
    return str(jvm.org.apache.spark.sql.types.StructType.fromDDL(ddl).toDDL())


def compile_projection(jvm: Any, ddl: str) -> str:
    """Generate and compile (Janino) an unsafe projection of ``ddl``'s columns; the generated class's name."""
    schema = jvm.org.apache.spark.sql.types.StructType.fromDDL(ddl)
    return str(jvm.org.apache.spark.sql.catalyst.expressions.UnsafeProjection.create(schema).getClass().getName())


def start_warmup(spark: SparkSession) -> threading.Thread:
    """On a daemon thread of the session's JVM: compile one projection of :data:`SCHEMA`, initialise
    :data:`CLASSES`, read and write back :data:`ACTIONS` and derive :data:`ENCODERS`; return the thread."""
    thread = threading.Thread(target=_initialise, args=(spark,), name="medallion-jvm-warmup", daemon=True)
    thread.start()
    return thread


def _initialise(spark: SparkSession) -> None:
    jvm = internals.active_jvm()
    if jvm is None:
        return
    with suppress(Exception):
        compile_projection(jvm, SCHEMA)
    for name in CLASSES:
        with suppress(Exception):  # a class missing here is initialised where it is used, as without this
            jvm.java.lang.Class.forName(name)
    for action in ACTIONS:
        with suppress(Exception):
            round_trip(jvm, action)
    for owner, accessor in ENCODERS:
        with suppress(Exception):
            encoder(jvm, owner, accessor)


def round_trip(jvm: Any, action: str) -> str:
    """``action`` (one line of a Delta commit) read and written back by Delta's ``Action`` JSON code."""
    return str(jvm.org.apache.spark.sql.delta.actions.Action.fromJson(action).json())


def encoder(jvm: Any, owner: str, accessor: str) -> str:
    """The schema (as a DDL string) of the encoder ``owner.accessor()`` returns, derived now if it was not."""
    return str(getattr(getattr(jvm, owner), accessor)().schema().toDDL())
