"""Resolve APPLY CHANGES column arguments (names or ``Column``s) against a source schema.

Everything here is pure planning on names: which columns land in the target, which are tracked for history,
which ignore NULL updates, and how the sequence is computed. No Spark action runs here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from framework.errors import CdcError

START_AT = "__START_AT"
END_AT = "__END_AT"
ACTION = "__action"  # what an SCD 2 batch does to a version: insert, update, delete, tombstone
SCD2_COLUMNS = (START_AT, END_AT)

_COLUMN_REPR = re.compile(r"Column<'(.*)'>", re.S)
_SIMPLE_NAME = re.compile(r"`?([A-Za-z_][A-Za-z0-9_]*)`?")


def column_text(value: Any) -> str:
    """The text of a column argument: the name itself for a str, the expression text for a ``Column``."""
    if isinstance(value, str):
        return value
    text = str(value)
    match = _COLUMN_REPR.fullmatch(text)
    return match.group(1) if match else text


def simple_name(value: Any) -> str | None:
    """The plain column name of ``value`` when it is a name or a bare ``col(name)``, else None."""
    match = _SIMPLE_NAME.fullmatch(column_text(value).strip())
    return match.group(1) if match else None


def column_names(values: Iterable[Any] | None, what: str, target: str) -> tuple[str, ...] | None:
    """Names of a column list given as names or bare ``col()``s; anything else is a declaration mistake."""
    if values is None:
        return None
    names = []
    for value in values:
        name = simple_name(value)
        if name is None:
            raise CdcError(
                f"APPLY CHANGES into '{target}': {what} entry {column_text(value)!r} is not a column name. "
                f"Pass plain column names or col('name')."
            )
        names.append(name)
    return tuple(names)


def _find(name: str, available: Sequence[str]) -> str | None:
    lowered = name.lower()
    for candidate in available:
        if candidate.lower() == lowered:
            return candidate
    return None


def _resolve(names: Iterable[str], available: Sequence[str], what: str, target: str) -> list[str]:
    resolved = []
    for name in names:
        found = _find(name, available)
        if found is None:
            raise CdcError(
                f"APPLY CHANGES into '{target}': {what} column '{name}' is not in the source columns "
                f"{list(available)}. Fix the name or add the column to the source."
            )
        resolved.append(found)
    return resolved


@dataclass(frozen=True)
class ColumnPlan:
    """Which source columns play which role for one target.

    Attributes:
        keys: key column names as they appear in the source.
        values: non-key target columns, in target order.
        tracked: SCD 2 columns whose change opens a new version (subset of ``values``).
        ignore_nulls: columns where a NULL in an upsert keeps the existing value.
        inline_sequence: SCD 1: the target column that holds the sequence (so no hidden state is needed), or None.
    """

    keys: tuple[str, ...]
    values: tuple[str, ...]
    tracked: tuple[str, ...]
    ignore_nulls: tuple[str, ...]
    inline_sequence: str | None

    @property
    def output(self) -> tuple[str, ...]:
        """User columns of the target, keys first."""
        return self.keys + self.values


def plan_columns(spec: Any, source_columns: Sequence[str], target: str,
                 schema_columns: Sequence[str] | None = None,
                 exclude: Sequence[str] = ()) -> ColumnPlan:
    """Decide the target's columns for an ``ApplyChanges`` / ``ApplyChangesFromSnapshot`` spec.

    Args:
        spec: the declaration (only the attributes it has are used).
        source_columns: the source DataFrame's columns.
        target: target dataset name, for messages.
        schema_columns: user columns of a declared target schema (without ``__START_AT``/``__END_AT``), if any.
        exclude: source columns that never land in the target (e.g. the ``columns_to_update`` column).

    Returns:
        The column plan.

    Raises:
        CdcError: a named column does not exist.
    """
    # keys present, and not both of a list and its except list: checked once, at declaration (framework/api.py)
    keys = tuple(_resolve(column_names(spec.keys, "keys", target) or (), source_columns, "key", target))
    column_list = column_names(getattr(spec, "column_list", None), "column_list", target)
    except_list = column_names(getattr(spec, "except_column_list", None), "except_column_list", target)
    if column_list is not None:
        chosen = _resolve(column_list, source_columns, "column_list", target)
    else:
        dropped = {c.lower() for c in _resolve(except_list or (), source_columns, "except_column_list", target)}
        dropped |= {c.lower() for c in exclude}
        chosen = [c for c in source_columns if c.lower() not in dropped]
    if schema_columns is not None:
        chosen = _resolve([c for c in schema_columns if c not in SCD2_COLUMNS], source_columns,
                          "declared schema", target)
    key_set = {k.lower() for k in keys}
    values = tuple(c for c in chosen if c.lower() not in key_set and c not in SCD2_COLUMNS)

    tracked = _subset(spec, values, "track_history_column_list", "track_history_except_column_list", target)
    if tracked is None:
        tracked = values
    ignore_nulls = _subset(spec, values, "ignore_null_updates_column_list", "ignore_null_updates_except_column_list",
                           target)
    if ignore_nulls is None:
        ignore_nulls = values if getattr(spec, "ignore_null_updates", False) else ()

    inline = None
    seq = getattr(spec, "sequence_by", None)
    seq_name = simple_name(seq) if seq is not None else None
    if seq_name is not None:
        inline = _find(seq_name, values)
    return ColumnPlan(keys, values, tracked, ignore_nulls, inline)


def _subset(spec: Any, values: tuple[str, ...], list_arg: str, except_arg: str,
            target: str) -> tuple[str, ...] | None:
    """The value columns a ``<list_arg>`` / ``<except_arg>`` pair selects (in ``values`` order), or None if neither
    is given.

    Raises:
        CdcError: they name unknown columns.
    """
    chosen = column_names(getattr(spec, list_arg, None), list_arg, target)
    excluded = column_names(getattr(spec, except_arg, None), except_arg, target)
    if chosen is not None:
        wanted = {c.lower() for c in _resolve(chosen, values, list_arg, target)}
        return tuple(c for c in values if c.lower() in wanted)
    if excluded is not None:
        unwanted = {c.lower() for c in _resolve(excluded, values, except_arg, target)}
        return tuple(c for c in values if c.lower() not in unwanted)
    return None
