"""Calling a flow's query function, in both phases of an update."""

from __future__ import annotations

from typing import TYPE_CHECKING

from framework.errors import PipelineError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from framework.declarations import Flow


def call_query_function(flow: Flow) -> DataFrame:
    """Run ``flow``'s query function and check that it returned a DataFrame."""
    from pyspark.sql import DataFrame as ClassicDataFrame

    assert flow.query_function is not None
    result = flow.query_function()
    if not isinstance(result, ClassicDataFrame):
        loc = flow.location
        raise PipelineError(
            f"the query function of '{flow.name}' returned {type(result).__name__}, not a DataFrame: "
            "return the DataFrame (e.g. `return spark.read.table(...)`)", code="QUERY_FUNCTION_RETURNED_NON_DATAFRAME",
            file=loc.file, line=loc.line)
    return result
