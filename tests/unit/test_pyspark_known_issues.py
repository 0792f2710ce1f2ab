"""Facts about the pinned PySpark that pipelines run into, pinned by tests so that an upgrade that changes them
is noticed (README, "Known PySpark issues").

``applyInPandasWithState`` with an ``ArrayType`` (or ``MapType``) field in its state schema fails in the Python
worker with ``KeyError: 'elementType'`` (issue 36). The cause: the worker reads the state schema's JSON from its
configuration through ``Conf.get``, which lower-cases string values unless ``lower_str=False`` is passed, and
``EvalConf.state_value_schema`` does not pass it, so ``elementType`` / ``containsNull`` / ``keyType`` arrive as
``elementtype`` / ``containsnull`` / ``keytype``. PySpark 4.2.1 and 4.3.0 (the newest on PyPI when this was
written) read it the same way, so no release fixes it yet. The workaround: keep such a value in the state as a
JSON string (``json.dumps`` in the function, a ``string`` state field), or use ``transformWithStateInPandas``,
whose state schema does not travel through that configuration.
"""

from __future__ import annotations

import pytest
from pyspark.sql.types import ArrayType, LongType, StringType, StructField, StructType

STATE = StructType([StructField("seen", ArrayType(LongType()))])


def _worker_state_schema(schema: StructType) -> StructType:
    """The state schema as the Python worker of applyInPandasWithState reads it."""
    from pyspark.worker import EvalConf

    conf = EvalConf()
    conf._conf["state_value_schema"] = schema.json()  # as the JVM sends it
    return conf.state_value_schema  # type: ignore[return-value]


def test_array_state_fields_fail_in_the_worker() -> None:
    with pytest.raises(KeyError, match="elementType"):
        _worker_state_schema(STATE)


def test_the_workaround_a_json_string_field_reads_back() -> None:
    as_text = StructType([StructField("seen", StringType())])
    assert _worker_state_schema(as_text) == as_text
