"""Every private Spark, Delta and PySpark entry point the framework calls, in one place (issue 35).

PySpark's public API does not reach some of what a local runner needs: the JVM view of the session (Hadoop file
systems, Delta's log), the analysed and optimized plans of a query (its output mode, its size), the SQL parser
(the tables a SQL text reads), Delta's ``DeltaLog`` (a snapshot, a checkpoint). Each use goes through one
function here, and :data:`ENTRY_POINTS` names each with a smoke check that ``tests/integration/test_internals.py``
runs on a real session: when a PySpark, Spark or Delta release renames or removes one, that test fails naming
the entry point, instead of a fallback somewhere hiding it.

Nothing here imports the rest of the framework.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import DataType


def active_jvm() -> Any | None:
    """The JVM view of the active SparkContext (``SparkContext._jvm``), or None when none is running."""
    from pyspark import SparkContext

    if SparkContext._active_spark_context is None:
        return None
    return SparkContext._jvm


def gateway_started() -> bool:
    """Whether this process has a Py4J gateway to a JVM already (``SparkContext._gateway``)."""
    from pyspark import SparkContext

    return SparkContext._gateway is not None


def initialize_gateway(gateway: Any) -> None:
    """Have PySpark use ``gateway`` (a JVM this process started) for its SparkContext
    (``SparkContext._ensure_initialized``)."""
    from pyspark import SparkContext

    SparkContext._ensure_initialized(gateway=gateway)


def find_spark_home() -> str:
    """The Spark installation PySpark uses (``pyspark.find_spark_home._find_spark_home``)."""
    from pyspark.find_spark_home import _find_spark_home

    return str(_find_spark_home())


def jvm(spark: SparkSession) -> Any:
    """The JVM view of ``spark``'s context (``SparkContext._jvm``)."""
    view = spark.sparkContext._jvm
    assert view is not None, "the SparkContext has no JVM"
    return view


def java_session(spark: SparkSession) -> Any:
    """``spark``'s JVM ``SparkSession`` (``SparkSession._jsparkSession``)."""
    return spark._jsparkSession


def java_frame(df: DataFrame) -> Any:
    """``df``'s JVM ``Dataset`` (``DataFrame._jdf``)."""
    return df._jdf


def hadoop_conf(spark: SparkSession) -> Any:
    """A new Hadoop configuration with the session's settings (``sessionState().newHadoopConf()``)."""
    return java_session(spark).sessionState().newHadoopConf()


def sql_conf(spark: SparkSession) -> Any:
    """The session's JVM ``SQLConf`` (``sessionState().conf()``)."""
    return java_session(spark).sessionState().conf()


def parse_plan(spark: SparkSession, sql: str) -> Any:
    """The parsed, unresolved logical plan of ``sql`` (``sessionState().sqlParser().parsePlan``)."""
    return java_session(spark).sessionState().sqlParser().parsePlan(sql)


def analyzed_plan(df: DataFrame) -> Any:
    """``df``'s analysed logical plan (``queryExecution().analyzed()``)."""
    return java_frame(df).queryExecution().analyzed()


def optimized_plan(df: DataFrame) -> Any:
    """``df``'s optimized logical plan (``queryExecution().optimizedPlan()``)."""
    return java_frame(df).queryExecution().optimizedPlan()


def column_sql(df: DataFrame, column: Any) -> str:
    """The SQL text of a PySpark ``Column``, resolved against ``df``'s columns without their qualifiers (the
    analysed expression's ``sql()`` over an empty frame of ``df``'s schema): a predicate given as a Column where
    Delta takes a string (``replaceWhere``)."""
    frame = empty_frame(df.sparkSession, df.schema).select(column.alias("__sql"))
    return str(analyzed_plan(frame).projectList().head().child().sql())


def schema_default_size(df: DataFrame) -> int:
    """Spark's estimate of one row's size from ``df``'s schema (``StructType.defaultSize``)."""
    return int(java_frame(df).schema().defaultSize())


def lookup_data_source(spark: SparkSession, name: str) -> Any:
    """The class of data source ``name``; raises when it is not on the class path (``DataSource.lookupDataSource``)."""
    return jvm(spark).org.apache.spark.sql.execution.datasources.DataSource.lookupDataSource(name, sql_conf(spark))


def empty_frame(spark: SparkSession, schema: DataType) -> DataFrame:
    """An empty DataFrame of exactly ``schema`` (the JVM's ``createDataFrame`` of an empty list: PySpark's own
    keeps CHAR/VARCHAR metadata and takes a Python round trip)."""
    from pyspark.sql import DataFrame

    session = java_session(spark)
    return DataFrame(session.createDataFrame(jvm(spark).java.util.ArrayList(), session.parseDataType(schema.json())),
                     spark)


def parse_datatype(text: str) -> DataType:
    """A DDL type or column list as a PySpark type (``pyspark.sql.types._parse_datatype_string``)."""
    from pyspark.sql.types import _parse_datatype_string

    return _parse_datatype_string(text)


def set_active_session(spark: SparkSession) -> None:
    """Make ``spark`` the JVM's active session on the calling thread (``SparkSession.setActiveSession`` of the
    JVM: PySpark's own sets only the Python side). The class is named whole: one look-up that
    ``runner/py4j_lookups.py`` keeps, where ``jvm.org.apache...`` is a round trip per package."""
    getattr(jvm(spark), "org.apache.spark.sql.SparkSession").setActiveSession(java_session(spark))


def delta_log(spark: SparkSession, path: str) -> Any:
    """Delta's ``DeltaLog`` of the table at ``path`` (``DeltaLog.forTable``)."""
    return getattr(jvm(spark), "org.apache.spark.sql.delta.DeltaLog").forTable(java_session(spark), path)


def delta_schema_json(spark: SparkSession, path: str) -> str:
    """The table's schema JSON from Delta's last computed snapshot (``DeltaLog.unsafeVolatileSnapshot``): no
    update of the log."""
    return str(delta_log(spark, path).unsafeVolatileSnapshot().metadata().schemaString())


def delta_snapshot(spark: SparkSession, path: str) -> Any:
    """The newest snapshot of the table at ``path``, its state computed (``DeltaLog.update``)."""
    none = jvm(spark).scala.Option.empty()
    return delta_log(spark, path).update(False, none, none)


def delta_checkpoint(spark: SparkSession, path: str) -> None:
    """Have Delta write a checkpoint of the table's newest version and clean up expired log files
    (``DeltaLog.checkpointAndCleanUpDeltaLog``)."""
    log = delta_log(spark, path)
    none = jvm(spark).scala.Option.empty()
    log.checkpointAndCleanUpDeltaLog(log.update(False, none, none), none)


def _smoke_context(_spark: SparkSession, _path: str) -> None:
    from pyspark import SparkContext

    view = active_jvm()
    assert view is not None and gateway_started()
    assert view.java.lang.System.nanoTime() > 0
    assert callable(SparkContext._ensure_initialized)
    assert find_spark_home()


def _smoke_session(spark: SparkSession, _path: str) -> None:
    assert java_session(spark).version()
    assert hadoop_conf(spark).get("fs.file.impl.disable.cache") in (None, "true", "false")
    assert sql_conf(spark).sessionLocalTimeZone()
    lookup_data_source(spark, "parquet")


def _smoke_types(spark: SparkSession, _path: str) -> None:
    assert empty_frame(spark, parse_datatype("a STRING, b INT")).columns == ["a", "b"]


def _smoke_plans(spark: SparkSession, _path: str) -> None:
    df = spark.range(5).selectExpr("id", "id * 2 AS twice")
    assert analyzed_plan(df).output().size() == 2
    assert str(analyzed_plan(df).toJSON()).startswith("[")  # incremental refresh walks the plan as JSON
    assert optimized_plan(df).collectLeaves().size() == 1
    assert schema_default_size(df) == 16
    from pyspark.sql import functions as F

    predicate = column_sql(df, (F.col("twice") > 2) & F.col("id").between(1, 3))
    assert df.where(predicate).count() == 2 and "AND" in predicate  # SQL that Spark parses again
    assert parse_plan(spark, "SELECT * FROM a JOIN b").collectLeaves().size() == 2


def _smoke_delta(spark: SparkSession, path: str) -> None:
    spark.range(3).write.format("delta").mode("overwrite").save(path)
    assert delta_snapshot(spark, path).version() >= 0
    assert "id" in delta_schema_json(spark, path)
    delta_checkpoint(spark, path)
    set_active_session(spark)


# entry points -> a check on a real session (and a scratch folder) that fails when one of them is broken
ENTRY_POINTS: dict[str, Callable[[SparkSession, str], None]] = {
    "SparkContext._jvm, _active_spark_context, _gateway, _ensure_initialized; _find_spark_home": _smoke_context,
    "SparkSession._jsparkSession, sessionState().newHadoopConf() / conf(), DataSource.lookupDataSource":
        _smoke_session,
    "JVM createDataFrame / parseDataType; pyspark.sql.types._parse_datatype_string": _smoke_types,
    "DataFrame._jdf, queryExecution().analyzed() / optimizedPlan(), schema().defaultSize(), sqlParser(), "
    "Expression.sql()":
        _smoke_plans,
    "DeltaLog.forTable, update, unsafeVolatileSnapshot, checkpointAndCleanUpDeltaLog; JVM setActiveSession":
        _smoke_delta,
}
