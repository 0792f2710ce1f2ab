"""``GROUP_AGGREGATE`` through Spark, for a view the driver does not rewrite (large, a layout only Delta writes,
on an object store): a Delta MERGE of the changed groups' partial aggregates into the view, so Delta rewrites only
the files that hold a changed group, with the refresh's ``txn`` (Delta's session confs, on the thread's private
session: ``framework.cdc.storage.TxnWriter``).

The query over the appended rows only gives, per changed group, the count, sum, min and max of the new rows.
Each merges with the group's row in the view: counts add, sums add (NULL when both are NULL: ``sum`` of no
non-NULL value), ``least``/``greatest`` keep the smaller/greater (both skip NULLs); a group the view lacks is
inserted. Groups are matched with NULL-safe equality (a NULL key is a group). Values are cast back to the view's
column types (a sum of two ``DECIMAL(p, s)`` sums widens by one digit). Valid only while the inputs are appended to.
"""

from __future__ import annotations

from functools import reduce
from typing import TYPE_CHECKING

from framework.incremental.analysis import OutputColumn

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession


def merge_into(path: str, partial: DataFrame, columns: tuple[OutputColumn, ...], txn: tuple[str, int]) -> None:
    """MERGE ``partial``'s groups into the Delta view at ``path`` in one commit carrying ``txn``."""
    from delta.tables import DeltaTable
    from pyspark.sql import functions as F

    from framework.cdc.storage import TxnWriter

    kinds = {c.name: c.kind for c in columns}
    condition = reduce(lambda a, b: a & b, (_col("old", c.name).eqNullSafe(_col("new", c.name))
                                            for c in columns if c.kind == "key"), F.lit(True))

    def merge(session: SparkSession) -> None:
        view = DeltaTable.forPath(session, path)
        types = {f.name: f.dataType for f in view.toDF().schema.fields}
        updates: dict[str, str | Column] = {_quoted(n): _merge(kinds[n], n).cast(t) for n, t in types.items() if kinds[n] != "key"}
        inserts: dict[str, str | Column] = {_quoted(n): _col("new", n).cast(t) for n, t in types.items()}
        view.alias("old").merge(partial.alias("new"), condition).whenMatchedUpdate(set=updates) \
            .whenNotMatchedInsert(values=inserts).execute()

    TxnWriter(partial.sparkSession).run(txn[0], txn[1], merge)


def _quoted(name: str) -> str:
    return f"`{name.replace('`', '``')}`"


def _merge(kind: str, name: str) -> Column:
    from pyspark.sql import functions as F

    old, new = _col("old", name), _col("new", name)
    if kind == "key":
        return F.coalesce(old, new)
    if kind == "count":
        return F.coalesce(old, F.lit(0)) + F.coalesce(new, F.lit(0))
    if kind == "sum":
        return F.when(old.isNull(), new).when(new.isNull(), old).otherwise(old + new)
    if kind == "min":
        return F.least(old, new)
    if kind == "max":
        return F.greatest(old, new)
    raise ValueError(f"no merge for {kind}")


def _col(side: str, name: str) -> Column:
    from pyspark.sql import functions as F

    return F.col(f"{side}.`{name.replace('`', '``')}`")
