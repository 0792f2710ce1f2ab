"""The shape of an APPLY CHANGES target, known before any change is applied: what downstream flows see while
the pipeline is analysed."""

from __future__ import annotations

from typing import TYPE_CHECKING

from framework.stand_ins import empty_frame

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

    from framework.declarations import ApplyChanges, ApplyChangesFromSnapshot


def target_stand_in(spark: SparkSession, source: DataFrame,
                    spec: ApplyChanges | ApplyChangesFromSnapshot) -> DataFrame:
    """An empty batch DataFrame with the columns an APPLY CHANGES target of ``source`` will have: the selected
    source columns, plus ``__START_AT``/``__END_AT`` (typed like the sequence) for SCD type 2."""
    from pyspark.sql import functions as F

    from framework.cdc.columns import simple_name
    from framework.cdc.events import sequence_column

    columns = list(source.columns)
    column_list = getattr(spec, "column_list", None)
    except_list = getattr(spec, "except_column_list", None)
    if column_list:
        columns = [simple_name(c) or str(c) for c in column_list]
    elif except_list:
        drop = {(simple_name(c) or str(c)).lower() for c in except_list}
        columns = [c for c in columns if c.lower() not in drop]
    extra: list[Column] = []
    if spec.stored_as_scd_type == 2:
        # computed on the source: the sequence column is usually excluded from the target's columns
        seq = getattr(spec, "sequence_by", None)
        seq_col = sequence_column(seq) if seq is not None else F.current_timestamp()
        extra = [seq_col.alias("__START_AT"), seq_col.alias("__END_AT")]
    df = source.select(*columns, *extra)
    return empty_frame(spark, df.schema)
