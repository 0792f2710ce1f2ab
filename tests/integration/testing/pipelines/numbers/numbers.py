# A tiny pipeline for the pipeline_run fixture's test: numbers from a configured range, and their squares.
import dlt


@dlt.table
def numbers():
    return spark.range(int(spark.conf.get("numbers.count")))  # noqa: F821 (pipeline code: spark is given)


@dlt.table
@dlt.expect_or_drop("small", "square < 10")
def squares():
    return dlt.read("numbers").selectExpr("id", "id * id AS square")
