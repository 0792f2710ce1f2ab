"""The test kit on real pipelines: the sample pipeline from its spec (the README's example, run as written), a
folder of pipeline files with configuration and external tables, isolation between runs, and the kit's errors."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from framework.errors import PipelineError, SpecError
from framework.testing import assert_df_equal, run_pipeline
from tests.conftest import REPO_ROOT

pytestmark = pytest.mark.spark

README = (REPO_ROOT / "README.md").read_text()

ORDERS_PIPELINE = '''
import dlt
from pyspark.sql import functions as F

@dlt.table
@dlt.expect_or_drop("positive_amount", "amount > 0")
@dlt.expect("small_amount", "amount < 100")
def orders():
    return spark.readStream.format("json").schema("id bigint, amount double, country string") \\
        .load(spark.conf.get("landing"))

@dlt.view
def big_orders():
    return dlt.read("orders").where("amount > 10")

@dlt.table
def by_region():
    regions = spark.read.table("ref.regions")
    return dlt.read("big_orders").join(regions, "country").groupBy("region").agg(F.sum("amount").alias("total"))
'''

REGIONS = ([("DE", "EU"), ("FR", "EU"), ("US", "NA")], "country string, region string")


def readme_test_code() -> str:
    """The Python block of the README's "Testing your pipelines" section."""
    section = README.split("## Testing your pipelines", 1)[1]
    block = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert block is not None, "the README's testing section has a Python example"
    return block.group(1)


def test_readme_example_runs(run_pipeline) -> None:  # type: ignore[no-untyped-def]
    namespace: dict[str, object] = {}
    exec(compile(readme_test_code(), "README.md", "exec"), namespace)
    tests = [f for name, f in namespace.items() if name.startswith("test_") and callable(f)]
    assert tests, "the README example defines a test"
    for test in tests:
        test(run_pipeline)


@pytest.fixture
def orders_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "src" / "orders_pipeline"
    folder.mkdir(parents=True)
    (folder / "orders.py").write_text(ORDERS_PIPELINE)
    return folder


def test_folder_with_configuration_and_external_table(run_pipeline, orders_folder: Path) -> None:  # type: ignore[no-untyped-def]
    run = run_pipeline(orders_folder, configuration={"landing": "{inputs}/orders"}, tables={"ref.regions": REGIONS},
                       inputs={"orders/a.json": [{"id": 1, "amount": 5.0, "country": "DE"},
                                                 {"id": 2, "amount": -1.0, "country": "FR"},
                                                 {"id": 3, "amount": 500.0, "country": "US"},
                                                 {"id": 4, "amount": 50.0, "country": "FR"}]})
    assert run.succeeded, run.error
    orders = run.flow("orders")
    assert (orders.rows_in, orders.rows_out, orders.dropped) == (4, 3, 1)
    checks = {(e.dataset, e.name): (e.passed_records, e.failed_records) for e in run.expectations}
    assert checks == {("orders", "positive_amount"): (3, 1), ("orders", "small_amount"): (3, 1)}
    assert orders.expectations["small_amount"].action == "warn"
    assert sorted(run.tables) == ["by_region", "orders"]
    assert_df_equal(run.table("by_region"), [("EU", 50.0), ("NA", 500.0)], "region string, total double")
    with pytest.raises(PipelineError) as view:
        run.table("big_orders")
    assert view.value.code == "TABLE_NOT_STORED"
    with pytest.raises(PipelineError) as flow:
        run.flow("nope")
    assert flow.value.code == "UNKNOWN_FLOW"

    again = run.run_again(inputs={"orders/b.json": '{"id": 5, "amount": 20.0, "country": "DE"}\n'})
    assert again.succeeded, again.error
    assert again.flow("orders").rows_in == 1  # only the new file: the same storage, incrementally
    assert_df_equal(again.table("orders").select("id"), [(1,), (3,), (4,), (5,)])
    assert_df_equal(again.table("by_region"), [("EU", 70.0), ("NA", 500.0)])


def test_two_runs_of_one_pipeline_are_isolated(spark, run_pipeline, orders_folder: Path) -> None:  # type: ignore[no-untyped-def]
    options = {"configuration": {"landing": "{inputs}"}, "tables": {"ref.regions": REGIONS}}
    first = run_pipeline(orders_folder, inputs={"a.json": '{"id": 1, "amount": 11.0, "country": "DE"}\n'}, **options)
    second = run_pipeline(orders_folder, inputs={"b.json": '{"id": 2, "amount": 12.0, "country": "US"}\n'},
                          **options)
    assert first.succeeded and second.succeeded, (first.error, second.error)
    assert first.spec.schema != second.spec.schema
    assert first.spec.storage != second.spec.storage
    assert_df_equal(spark.read.table(f"{first.spec.schema}.orders").select("id"), [(1,)])
    assert_df_equal(spark.read.table(f"{second.spec.schema}.orders").select("id"), [(2,)])


def test_failed_update_is_reported_not_raised(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # the plain function (no fixture): an expect_or_fail rule fails one flow, and the run reports it
    folder = tmp_path / "failing"
    folder.mkdir()
    (folder / "p.py").write_text(
        "import dlt\n\n@dlt.table\ndef ok():\n    return spark.range(3)\n\n"
        "@dlt.table\n@dlt.expect_or_fail('no_three', 'id <> 2')\ndef strict():\n    return dlt.read('ok')\n")
    run = run_pipeline(spark, folder, tmp_path=tmp_path, schema="kit_failed_run")
    assert not run.succeeded
    assert isinstance(run.error, PipelineError)
    assert run.flow("ok").status == "COMPLETED" and run.flow("strict").status == "FAILED"
    assert_df_equal(run.table("ok"), [(0,), (1,), (2,)], "id bigint")
    assert "strict" in run.output


def test_bad_inputs_and_tables_are_all_reported(spark, tmp_path: Path, orders_folder: Path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(SpecError) as bad:
        run_pipeline(spark, orders_folder, tmp_path=tmp_path, inputs={"../x.json": "{}", "rows.txt": [{"a": 1}],
                                                                      "n.json": 42})
    assert bad.value.codes == ["INVALID_TEST_INPUT"] * 3
    with pytest.raises(SpecError) as tables:
        run_pipeline(spark, orders_folder, tmp_path=tmp_path, tables={"regions": REGIONS, "ref.x": 3})
    assert tables.value.codes == ["INVALID_TEST_TABLE"] * 2


@pytest.mark.pipeline("tests/integration/testing/pipelines/numbers", configuration={"numbers.count": "5"})
def test_pipeline_run_fixture_runs_the_marked_pipeline(pipeline_run) -> None:  # type: ignore[no-untyped-def]
    assert pipeline_run.succeeded, pipeline_run.error
    assert pipeline_run.flow("squares").dropped == 1  # 16
    assert_df_equal(pipeline_run.table("squares"), [(0, 0), (1, 1), (2, 4), (3, 9)], "id bigint, square bigint")


def test_small_tables_are_read_from_their_live_files_with_delta_rows_and_schema(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from framework.settings import load_local_settings
    from framework.testing.run import small_table

    limit = load_local_settings().small_updates.max_input_bytes

    plain = tmp_path / "plain"
    spark.range(5).selectExpr("id", "cast(id * 1.5 as double) AS amount").write.format("delta").save(str(plain))
    spark.range(5, 7).selectExpr("id", "cast(id * 1.5 as double) AS amount").write.format("delta") \
        .mode("append").save(str(plain))
    spark.sql(f"ALTER TABLE delta.`{plain}` SET TBLPROPERTIES ('delta.enableDeletionVectors' = 'false')")
    spark.sql(f"DELETE FROM delta.`{plain}` WHERE id = 0")  # a file rewritten: a remove and an add in the log
    fast = small_table(spark, plain, limit)
    delta = spark.read.format("delta").load(str(plain))
    assert fast is not None and fast.schema == delta.schema
    assert_df_equal(fast, delta)
    assert fast.count() == 6

    strict = tmp_path / "strict"
    spark.sql(f"CREATE TABLE delta.`{strict}` (id BIGINT NOT NULL, name STRING) USING delta")
    spark.sql(f"INSERT INTO delta.`{strict}` VALUES (1, 'a')")
    assert small_table(spark, strict, limit) is None  # Parquet would report `id` nullable; Delta keeps NOT NULL
