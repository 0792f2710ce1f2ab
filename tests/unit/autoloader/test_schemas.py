"""Schema widening for addNewColumns, including fields inside struct columns."""

from __future__ import annotations

from pyspark.sql.types import ArrayType, LongType, MapType, StringType, StructField, StructType

from framework.autoloader.schemas import has_struct, nested_paths, widen


def _struct(**fields: object) -> StructType:
    return StructType([StructField(k, v, True) for k, v in fields.items()])  # type: ignore[arg-type]


def test_widen_adds_top_level_and_nested_fields_and_keeps_types() -> None:
    current = _struct(id=LongType(), s=_struct(x=LongType()), items=ArrayType(_struct(a=LongType())),
                      m=MapType(StringType(), _struct(k=LongType())))
    candidate = _struct(ID=StringType(), s=_struct(X=StringType(), y=LongType()),
                        items=ArrayType(_struct(a=LongType(), b=StringType())),
                        m=MapType(StringType(), _struct(k=LongType(), v=LongType())), extra=StringType(),
                        part=StringType(), _corrupt_record=StringType())
    widened, added = widen(current, candidate, also_known=["part"])
    assert added == ["s.y", "items.b", "m.v", "extra"]
    assert widened == _struct(id=LongType(), s=_struct(x=LongType(), y=LongType()),
                              items=ArrayType(_struct(a=LongType(), b=StringType())),
                              m=MapType(StringType(), _struct(k=LongType(), v=LongType())), extra=StringType())


def test_widen_without_anything_new_changes_nothing() -> None:
    current = _struct(id=LongType(), s=_struct(x=LongType()))
    assert widen(current, _struct(s=_struct(x=StringType()))) == (current, [])
    assert widen(current, _struct(s=StringType())) == (current, [])  # a type change is no new field


def test_nested_paths_and_has_struct() -> None:
    schema = _struct(id=LongType(), s=_struct(x=LongType(), t=_struct(z=LongType())),
                     items=ArrayType(_struct(a=LongType())), m=MapType(StringType(), _struct(k=LongType())))
    assert nested_paths(schema) == ["s.x", "s.t", "s.t.z", "items.a"]
    assert [has_struct(f.dataType) for f in schema.fields] == [False, True, True, True]
    assert not has_struct(ArrayType(LongType()))
