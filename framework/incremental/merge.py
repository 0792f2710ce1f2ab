"""``GROUP_AGGREGATE``: the changed groups' partial aggregates merged into the view's rows.

The query over the appended rows only gives, per changed group, the count, sum, min and max of the new rows.
Each merges with the group's row in the view: counts add, sums add (NULL when both are NULL: ``sum`` of no
non-NULL value), ``least``/``greatest`` keep the smaller/greater (both skip NULLs). Groups are matched with
NULL-safe equality (a NULL key is a group). The result is cast back to the view's column types (a sum of two
``DECIMAL(p, s)`` sums widens by one digit). Valid only while the inputs are appended to.
"""

from __future__ import annotations

from functools import reduce
from typing import TYPE_CHECKING

from framework.incremental.analysis import OutputColumn

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame


def merged_view(existing: DataFrame, partial: DataFrame, columns: tuple[OutputColumn, ...]) -> DataFrame:
    """The view's new rows: ``existing`` with ``partial``'s groups merged in (see the module's docstring)."""
    from pyspark.sql import functions as F

    old, new = existing.alias("old"), partial.alias("new")
    keys = [c.name for c in columns if c.kind == "key"]
    condition = reduce(lambda a, b: a & b, (_col("old", k).eqNullSafe(_col("new", k)) for k in keys), F.lit(True))
    joined = old.join(new, condition, "full_outer")
    kinds = {c.name: c.kind for c in columns}
    types = {f.name: f.dataType for f in existing.schema.fields}
    out = [_merge(kinds[name], name).cast(types[name]).alias(name) for name in existing.columns]
    return joined.select(*out)


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
