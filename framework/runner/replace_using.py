"""REPLACE USING flows (``@dp.replace_flow``, ``@dp.table(replace_using=[...], sequence_by=...)``): a stream of
partial snapshots keyed by columns keeps a streaming table in sync.

Databricks' semantics (``ldp/flows-replace-using``): for each key, the highest sequence wins; a key's rows in the
target are replaced by a micro-batch's rows for that key when their sequence is higher than the target's; rows
with the same key and the same sequence as the target's are appended; a lower sequence never overwrites a higher
one; keys the batch lacks are untouched. Within a batch only each key's highest-sequence rows count. Each
micro-batch is one Delta MERGE (deletes of the replaced keys' rows and inserts of the new rows, one commit).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from framework.errors import PipelineError

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

    from framework.runner.results import FlowResult

_SEQ, _TARGET_SEQ, _OP = "__replace_seq", "__replace_target_seq", "__replace_op"


def check_columns(df: DataFrame, flow: Any, dataset: str) -> None:
    """The key columns and a column ``sequence_by`` are columns of the flow's output, else PipelineError
    (REPLACE_USING_COLUMN_MISSING) naming the dataset and where the flow was declared."""
    names = {c.lower() for c in df.columns}
    wanted = [*flow.replace_using, *([flow.sequence_by] if isinstance(flow.sequence_by, str) else [])]
    missing = [c for c in wanted if c.lower() not in names]
    if missing:
        raise PipelineError(f"REPLACE USING flow '{flow.name}' into '{dataset}': {', '.join(missing)} "
                            f"{'is not a column' if len(missing) == 1 else 'are not columns'} of the flow's "
                            f"output ({', '.join(df.columns)})", code="REPLACE_USING_COLUMN_MISSING",
                            file=flow.location.file, line=flow.location.line)


def run_replace_using(executor: Any, result: FlowResult) -> None:
    """Run ``executor``'s REPLACE USING flow (a ``FlowExecutor``): a stream, each micro-batch merged."""
    from framework.quality.engine import apply_expectations, observation_name
    from framework.runner.streams import start_query

    flow, dataset = executor.flow, executor._dataset_name()
    df = executor._conform(executor._query())
    if not df.isStreaming:
        raise PipelineError(f"REPLACE USING flow '{flow.name}' into '{dataset}' must return a streaming DataFrame",
                            code="FLOW_NOT_STREAMING", file=flow.location.file, line=flow.location.line)
    check_columns(df, flow, dataset)
    path = executor.env.table_path(executor.registry, executor.target_key)
    out, observation = apply_expectations(df, executor.expectations, dataset=dataset, flow=flow.name,
                                          observation_name=observation_name(executor.key),
                                          rescued_column=executor._rescued_column())
    keys, sequence = tuple(flow.replace_using), flow.sequence_by
    checkpoint = executor._checkpoint()

    def merge(batch: DataFrame, batch_id: int) -> None:
        replace_batch(batch.sparkSession, path, batch, keys, sequence, txn=(_query_id(checkpoint), batch_id))

    writer = (out.writeStream.foreachBatch(merge).option("checkpointLocation", executor._checkpoint())
              .trigger(**executor.trigger).queryName(flow.name))
    query = start_query(out, writer.start)
    query.awaitTermination()
    executor._streamed(result, list(query.recentProgress), observation, failed=False)


def _query_id(checkpoint: str) -> str:
    """The streaming query's id, kept in its checkpoint across restarts: the ``txn`` app id of its batches."""
    import json

    from framework.storage import state_files

    return str(json.loads(state_files.read_text(f"{checkpoint.rstrip('/')}/metadata"))["id"])


def replace_batch(spark: SparkSession, path: str, batch: DataFrame, keys: tuple[str, ...], sequence: Any,
                  txn: tuple[str, int]) -> None:
    """Apply one micro-batch of partial snapshots to the Delta table at ``path`` (one commit) under Delta's
    ``txn`` (query id, batch id): a batch replayed after a crash finds its commit and writes nothing (a row at
    the target's sequence would otherwise be appended twice)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    from framework.cdc.storage import TxnWriter
    from framework.storage.log import has_commit

    data = batch.columns
    latest = (batch.withColumn(_SEQ, _sequence(sequence))
              .withColumn("__replace_max", F.max(_SEQ).over(Window.partitionBy(*keys)))
              .where(F.col(_SEQ) == F.col("__replace_max")).drop("__replace_max"))
    if not has_commit(path):
        (latest.select(*data).write.format("delta").mode("append").option("mergeSchema", "true")
         .option("txnAppId", txn[0]).option("txnVersion", str(txn[1])).save(path))
        return
    source, condition = _merge_source(spark, path, latest, data, keys, sequence)
    TxnWriter(spark).run(*txn, lambda session: _merge(session, path, source, condition, data))


def _merge(session: SparkSession, path: str, source: DataFrame, condition: str, data: list[str]) -> None:
    """The MERGE of one batch, in ``session`` (the writer's, with the batch's ``txn`` set)."""
    from delta.tables import DeltaTable

    (DeltaTable.forPath(session, path).alias("t").merge(source.alias("s"), f"{condition} AND s.{_OP} = 'delete'")
     .whenMatchedDelete()
     .whenNotMatchedInsert(condition=f"s.{_OP} = 'insert'", values={f"`{c}`": f"s.`{c}`" for c in data})
     .withSchemaEvolution().execute())


def _merge_source(spark: SparkSession, path: str, latest: DataFrame, data: list[str], keys: tuple[str, ...],
                  sequence: Any) -> tuple[DataFrame, str]:
    """The MERGE's source (rows to insert, keys whose rows are replaced) and its match condition."""
    from pyspark.sql import functions as F

    current = (spark.read.format("delta").load(path).withColumn(_SEQ, _sequence(sequence))
               .groupBy(*keys).agg(F.max(_SEQ).alias(_TARGET_SEQ)))
    on = [latest[k].eqNullSafe(current[k]) for k in keys]
    joined = latest.join(current, on, "left").select(*[latest[c] for c in latest.columns], current[_TARGET_SEQ])
    inserts = joined.where(F.col(_TARGET_SEQ).isNull() | (F.col(_SEQ) >= F.col(_TARGET_SEQ)))
    replaced = joined.where(F.col(_SEQ) > F.col(_TARGET_SEQ)).select(*keys).distinct()
    source = (inserts.select(*data, F.lit("insert").alias(_OP))
              .unionByName(replaced.select(*[F.col(k).alias(f"__replace_key_{i}") for i, k in enumerate(keys)],
                                           F.lit("delete").alias(_OP)), allowMissingColumns=True))
    return source, " AND ".join(f"t.`{k}` <=> s.`__replace_key_{i}`" for i, k in enumerate(keys))


def _sequence(sequence: Any) -> Column:
    from pyspark.sql import functions as F

    return F.col(sequence) if isinstance(sequence, str) else sequence
