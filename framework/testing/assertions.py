"""DataFrame and schema assertions for tests of pipelines, with diffs a reader can act on.

``assert_df_equal`` compares rows as a multiset by default (Spark gives no row order without ``orderBy``) and
names the rows missing and the rows unexpected, with their counts; ``assert_schema_equal`` names the columns
missing, extra, or of another type. Both raise ``AssertionError`` (a failed test, not a framework error).
Everything is collected to the driver: meant for the few rows of a test.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, Row
    from pyspark.sql.types import DataType, StructType

# At most this many differing rows are listed in a message (the counts are always complete).
MAX_LISTED_ROWS = 20


@dataclass(frozen=True)
class SchemaDiff:
    """How two schemas differ, by column name (top-level columns; nested types are compared whole).

    Attributes:
        missing: Columns of the expected schema that the actual one lacks.
        extra: Columns of the actual schema that the expected one lacks.
        changed: ``(column, actual type, expected type)`` for columns of both whose types differ.
        order: True when both have the same columns in a different order (only reported when asked).
    """

    missing: tuple[str, ...] = ()
    extra: tuple[str, ...] = ()
    changed: tuple[tuple[str, str, str], ...] = ()
    order: bool = False

    def __bool__(self) -> bool:
        return bool(self.missing or self.extra or self.changed or self.order)

    def render(self) -> str:
        """The differences, one line each."""
        lines = [f"missing column {name!r} (expected, not in actual)" for name in self.missing]
        lines += [f"extra column {name!r} (in actual, not expected)" for name in self.extra]
        lines += [f"column {name!r} is {actual}, expected {expected}" for name, actual, expected in self.changed]
        if self.order:
            lines.append("the columns are in a different order")
        return "\n".join(lines)


def schema_diff(actual: StructType, expected: StructType, *, check_nullable: bool = False,
                check_order: bool = False) -> SchemaDiff:
    """Compare two schemas column by column (names compared exactly, as Delta stores them).

    Args:
        actual: The schema under test.
        expected: The schema it should have.
        check_nullable: Whether nullability (of columns, array elements, map values, struct fields) counts.
        check_order: Whether the same columns in another order count as a difference.
    """
    theirs = {f.name: f for f in actual.fields}
    ours = {f.name: f for f in expected.fields}
    changed = []
    for name, field in ours.items():
        other = theirs.get(name)
        if other is None:
            continue
        left, right = other.dataType, field.dataType
        if not check_nullable:
            left, right = without_nullability(left), without_nullability(right)
        if left != right or (check_nullable and other.nullable != field.nullable):
            changed.append((name, _type_text(other.dataType, other.nullable, check_nullable),
                            _type_text(field.dataType, field.nullable, check_nullable)))
    missing = tuple(n for n in ours if n not in theirs)
    extra = tuple(n for n in theirs if n not in ours)
    order = check_order and not (missing or extra) and list(theirs) != list(ours)
    return SchemaDiff(missing, extra, tuple(changed), order)


def _type_text(data_type: DataType, nullable: bool, check_nullable: bool) -> str:
    text = data_type.simpleString()
    return f"{text}{'' if nullable else ' NOT NULL'}" if check_nullable else text


def without_nullability(data_type: DataType) -> DataType:
    """``data_type`` with every nested nullability flag set to True (so that only types are compared)."""
    from pyspark.sql.types import ArrayType, MapType, StructField, StructType

    if isinstance(data_type, StructType):
        return StructType([StructField(f.name, without_nullability(f.dataType), True) for f in data_type.fields])
    if isinstance(data_type, ArrayType):
        return ArrayType(without_nullability(data_type.elementType), True)
    if isinstance(data_type, MapType):
        return MapType(without_nullability(data_type.keyType), without_nullability(data_type.valueType), True)
    return data_type


def assert_schema_equal(actual: DataFrame | StructType, expected: DataFrame | StructType | str, *,
                        check_nullable: bool = False, check_order: bool = False) -> None:
    """Assert that two schemas have the same columns and types.

    Args:
        actual: A DataFrame or its schema.
        expected: A DataFrame, a schema, or a DDL string (``"id bigint, name string"``).
        check_nullable: Whether nullability counts (off by default: Delta and Spark differ on it freely).
        check_order: Whether column order counts.

    Raises:
        AssertionError: The columns missing, extra, and of another type, one line each.
    """
    diff = schema_diff(_schema(actual), _schema(expected), check_nullable=check_nullable, check_order=check_order)
    if diff:
        raise AssertionError("schemas differ:\n" + diff.render())


def _schema(value: Any) -> StructType:
    from pyspark.sql.types import StructType

    from framework import internals

    if isinstance(value, StructType):
        return value
    if isinstance(value, str):
        parsed = internals.parse_datatype(value)
        if not isinstance(parsed, StructType):
            raise TypeError(f"expected a DDL list of columns such as 'id bigint, name string', got {value!r}")
        return parsed
    return value.schema


def assert_df_equal(actual: DataFrame, expected: DataFrame | Sequence[Any], schema: StructType | str | None = None,
                    *, order: bool = False, check_nullable: bool = False) -> None:
    """Assert that a DataFrame holds exactly the expected rows (and, when known, the expected schema).

    Args:
        actual: The DataFrame under test (a table of a run, or any DataFrame).
        expected: A DataFrame, or rows: tuples (in the column order of ``schema``, or of ``actual`` without one),
            dicts or ``Row`` objects (by column name).
        schema: The expected schema of rows, as a ``StructType`` or DDL string. Without it (and with rows), only
            the values are compared, in ``actual``'s columns.
        order: Whether row order counts (``actual`` then needs an ``orderBy``); off by default.
        check_nullable: Whether nullability counts in the schema comparison.

    Raises:
        AssertionError: The schema differences, or the rows missing from ``actual`` and the rows it should not
            have, with how often each occurs.
    """
    columns = actual.columns
    if isinstance(expected, Sequence):
        if schema is not None:
            assert_schema_equal(actual, schema, check_nullable=check_nullable)
            columns = _schema(schema).fieldNames()
        want = [_row_values(row, columns) for row in expected]
    else:
        assert_schema_equal(actual, expected, check_nullable=check_nullable)
        columns = expected.columns
        want = [_row_values(row, columns) for row in expected.collect()]
    got = [_row_values(row, columns) for row in actual.select(*[f"`{c}`" for c in columns]).collect()]
    message = _ordered_difference(got, want) if order else _multiset_difference(got, want)
    if message:
        raise AssertionError(f"rows differ (columns {', '.join(columns)}):\n{message}")


def _row_values(row: Row | Mapping[str, Any] | Sequence[Any], columns: Sequence[str]) -> tuple[Any, ...]:
    from pyspark.sql import Row

    if isinstance(row, Row) and hasattr(row, "__fields__"):
        mapping = row.asDict(recursive=False)
        return tuple(_comparable(mapping.get(c)) for c in columns)
    if isinstance(row, Mapping):
        unknown = sorted(set(row) - set(columns))
        if unknown:
            raise AssertionError(f"expected row {dict(row)!r} has columns that are not compared: {unknown} "
                                 f"(columns: {list(columns)})")
        return tuple(_comparable(row.get(c)) for c in columns)
    values = tuple(row)
    if len(values) != len(columns):
        raise AssertionError(f"expected row {values!r} has {len(values)} values for {len(columns)} columns "
                             f"{list(columns)}")
    return tuple(_comparable(v) for v in values)


def _comparable(value: Any) -> Any:
    """A hashable value that compares the way the data does: nested rows as tuples, maps as sorted pairs."""
    from pyspark.sql import Row

    if isinstance(value, Row):
        return tuple(_comparable(v) for v in value)
    if isinstance(value, Mapping):
        return tuple(sorted(((_comparable(k), _comparable(v)) for k, v in value.items()), key=repr))
    if isinstance(value, list | tuple):
        return tuple(_comparable(v) for v in value)
    if isinstance(value, bytearray):
        return bytes(value)
    return value


def _multiset_difference(got: list[tuple[Any, ...]], want: list[tuple[Any, ...]]) -> str:
    have, need = Counter(got), Counter(want)
    missing, unexpected = need - have, have - need
    if not missing and not unexpected:
        return ""
    parts = [f"actual has {len(got)} rows, expected {len(want)}"]
    if missing:
        parts.append(f"missing ({sum(missing.values())}, expected but not in actual):")
        parts += _listed(missing.items())
    if unexpected:
        parts.append(f"unexpected ({sum(unexpected.values())}, in actual but not expected):")
        parts += _listed(unexpected.items())
    return "\n".join(parts)


def _listed(counted: Iterable[tuple[tuple[Any, ...], int]]) -> list[str]:
    rows = sorted(counted, key=lambda item: repr(item[0]))
    lines = [f"  {_render(row)}" + (f"  x{n}" if n > 1 else "") for row, n in rows[:MAX_LISTED_ROWS]]
    if len(rows) > MAX_LISTED_ROWS:
        lines.append(f"  ... and {len(rows) - MAX_LISTED_ROWS} more")
    return lines


def _render(row: tuple[Any, ...]) -> str:
    return "(" + ", ".join(_value_text(v) for v in row) + ")"


def _value_text(value: Any) -> str:
    if isinstance(value, datetime | date):
        return value.isoformat(sep=" ") if isinstance(value, datetime) else value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    return repr(value)


def _ordered_difference(got: list[tuple[Any, ...]], want: list[tuple[Any, ...]]) -> str:
    lines = [f"row {i}: actual {_render(a)}, expected {_render(e)}"
             for i, (a, e) in enumerate(zip(got, want, strict=False)) if a != e]
    if len(got) != len(want):
        lines.insert(0, f"actual has {len(got)} rows, expected {len(want)}")
        longer, which = (got, "actual") if len(got) > len(want) else (want, "expected")
        lines += [f"row {i}: only in {which}: {_render(r)}" for i, r in enumerate(longer[min(len(got), len(want)):],
                                                                                 start=min(len(got), len(want)))]
    if len(lines) > MAX_LISTED_ROWS:
        lines = [*lines[:MAX_LISTED_ROWS], f"... and {len(lines) - MAX_LISTED_ROWS} more"]
    return "\n".join(lines)
