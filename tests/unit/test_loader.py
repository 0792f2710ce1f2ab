"""Loading pipeline libraries without Spark: files, notebooks, globs, the shim modules, errors with locations."""

from __future__ import annotations

import builtins
import sys
import textwrap
import warnings
from pathlib import Path

import pyspark
import pytest

import framework.shim.dlt as shim_dlt
from framework.dbutils import LocalDbutils
from framework.declarations import DatasetKind
from framework.errors import DeclarationError, LoadError, PipelineError, SpecError
from framework.loader import ConfOnlySpark, load_pipeline, resolve_libraries
from framework.paths import PathMapper
from framework.spec import PipelineSpec, load_spec, parse_spec

FIXTURES = Path(__file__).parent / "fixtures"
BASIC = FIXTURES / "basic"


def make_pipeline(root: Path, files: dict[str, str], *, libraries: list[dict] | None = None,
                  configuration: dict[str, str] | None = None, paths: dict[str, str] | None = None
                  ) -> PipelineSpec:
    """Write ``files`` under ``root`` and return a spec whose libraries are those files (or ``libraries``)."""
    for name, text in files.items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(textwrap.dedent(text))
    raw = {"name": "t", "libraries": libraries or [{"file": {"path": name}} for name in files],
           "configuration": configuration or {}, "paths": paths or {}}
    return parse_spec(raw, source=str(root / "spec.yaml"), default_root=root)


def line_of(path: Path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


# ------------------------------------------------------------------------------------------------- happy path
@pytest.fixture(scope="module")
def basic():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loaded = load_pipeline(load_spec(BASIC / "conf" / "basic.yaml"))
    loaded.warnings = [str(w.message) for w in caught]  # type: ignore[attr-defined]
    return loaded


def test_notebook_magic_cells_are_skipped_with_a_warning(basic) -> None:
    assert any("skipping a %pip cell" in w and "nb_gold.py" in w for w in basic.warnings)
    assert any("skipping a %sql cell" in w for w in basic.warnings)


def test_basic_fixture_declares_every_dataset(basic) -> None:
    assert list(basic.registry.datasets) == ["raw_orders", "clean_orders", "gold_summary"]
    assert basic.registry.dataset("clean_orders").kind is DatasetKind.MATERIALIZED_VIEW
    assert [e.name for e in basic.registry.dataset("clean_orders").expectations] == ["valid_id", "positive_amount"]


def test_files_in_library_order_glob_sorted_and_filtered(basic) -> None:
    pipelines = BASIC / "pipelines"
    assert [p.relative_to(pipelines).as_posix() for p in basic.files] == [
        "bronze.py", "sub/basic_fixture_helpers.py", "sub/silver.py", "nb_gold.py"]


def test_dlt_and_dp_resolve_to_the_shim_and_conf_and_widgets_are_served(basic) -> None:
    comment = basic.registry.dataset("raw_orders").comment
    assert comment == "framework.shim.dlt|dbfs:/mnt/basic/landing|dev|fallback"
    assert basic.registry.dataset("clean_orders").comment == "framework.shim.dp"


def test_locations_point_into_the_pipeline_files(basic) -> None:
    bronze = BASIC / "pipelines" / "bronze.py"
    raw = basic.registry.dataset("raw_orders")
    assert Path(raw.location.file) == bronze and raw.location.line == line_of(bronze, "@dlt.table")
    notebook = BASIC / "pipelines" / "nb_gold.py"
    gold = basic.registry.dataset("gold_summary")
    assert Path(gold.location.file) == notebook and gold.location.line == line_of(notebook, "@dlt.table")


def test_environment_override_reaches_the_widgets() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loaded = load_pipeline(load_spec(BASIC / "conf" / "basic.yaml", env="prod"))
    assert loaded.registry.dataset("raw_orders").comment.endswith("|prod|fallback")


def test_mapper_comes_from_the_spec(basic) -> None:
    assert basic.mapper.map("dbfs:/mnt/basic/landing/x.json") == str(BASIC / "data" / "basic" / "landing" / "x.json")


# ------------------------------------------------------------------------------------------ environment restore
class _Sentinel:
    pass


def test_dlt_module_and_pyspark_pipelines_are_restored(tmp_path, monkeypatch) -> None:
    real_dlt, real_pipelines = _Sentinel(), _Sentinel()
    monkeypatch.setitem(sys.modules, "dlt", real_dlt)
    monkeypatch.setitem(sys.modules, "pyspark.pipelines", real_pipelines)
    monkeypatch.setattr(pyspark, "pipelines", real_pipelines, raising=False)
    spec = make_pipeline(tmp_path, {"p.py": """
        import dlt
        from pyspark import pipelines as dp
        SEEN = (dlt.__name__, dp.__name__)

        @dlt.table(comment=repr(SEEN))
        def t():
            return None
    """})
    loaded = load_pipeline(spec)
    assert loaded.registry.dataset("t").comment == repr(("framework.shim.dlt", "framework.shim.dp"))
    assert sys.modules["dlt"] is real_dlt
    assert sys.modules["pyspark.pipelines"] is real_pipelines
    assert pyspark.pipelines is real_pipelines


def test_modules_absent_before_are_absent_after(tmp_path, monkeypatch) -> None:
    monkeypatch.delitem(sys.modules, "dlt", raising=False)
    spec = make_pipeline(tmp_path, {"p.py": "import dlt\n"})
    load_pipeline(spec)
    assert "dlt" not in sys.modules


def test_notebook_globals_are_removed_after_loading(tmp_path) -> None:
    for name in ("spark", "dbutils", "display"):
        assert not hasattr(builtins, name)
    spec = make_pipeline(tmp_path, {"p.py": """
        import helper_uses_builtins
        display("hello")
    """, "helper_uses_builtins.py": """
        # a helper module (not the pipeline file) sees the notebook globals too, as on Databricks
        VALUE = spark.conf.get("k")
        assert dbutils.widgets.get("k") == "v"
    """}, libraries=[{"file": {"path": "p.py"}}], configuration={"k": "v"})
    load_pipeline(spec)
    for name in ("spark", "dbutils", "display"):
        assert not hasattr(builtins, name)
    sys.modules.pop("helper_uses_builtins", None)


def test_sys_path_is_restored(tmp_path) -> None:
    before = list(sys.path)
    load_pipeline(make_pipeline(tmp_path, {"p.py": "x = 1\n"}))
    assert sys.path == before


def test_spark_and_dbutils_objects_given_by_the_caller_are_used(tmp_path) -> None:
    class FakeSpark:
        class conf:
            @staticmethod
            def get(key, default=None):
                return "from-fake"

    spec = make_pipeline(tmp_path, {"p.py": """
        import dlt

        @dlt.table(comment=spark.conf.get("anything") + "|" + dbutils)
        def t():
            return None
    """})
    loaded = load_pipeline(spec, spark=FakeSpark(), dbutils="fake-dbutils")
    assert loaded.registry.dataset("t").comment == "from-fake|fake-dbutils"


def test_dbutils_fs_works_through_the_mapping_while_loading(tmp_path) -> None:
    (tmp_path / "landing").mkdir()
    (tmp_path / "landing" / "a.json").write_text("{}")
    spec = make_pipeline(tmp_path, {"p.py": """
        import dlt
        FILES = [f.name for f in dbutils.fs.ls("dbfs:/mnt/landing")]

        @dlt.table(comment=",".join(FILES))
        def t():
            return None
    """}, paths={"dbfs:/mnt/landing": "landing"})
    loaded = load_pipeline(spec)
    assert loaded.registry.dataset("t").comment == "a.json"


def test_default_dbutils_is_local_with_secrets_file_at_the_root(tmp_path) -> None:
    (tmp_path / ".secrets.env").write_text("scope/key=s3cret\n")
    spec = make_pipeline(tmp_path, {"p.py": """
        import dlt

        @dlt.table(comment=type(dbutils).__name__ + ":" + dbutils.secrets.get("scope", "key"))
        def t():
            return None
    """})
    assert load_pipeline(spec).registry.dataset("t").comment == "LocalDbutils:s3cret"
    assert LocalDbutils  # the class named above


# --------------------------------------------------------------------------------------------------- ConfOnlySpark
def test_conf_only_spark_serves_configuration() -> None:
    spark = ConfOnlySpark({"a": "1"})
    assert spark.conf.get("a") == "1"
    assert spark.conf.get("missing", "d") == "d"
    spark.conf.set("b", 2)
    assert spark.conf.get("b") == "2"
    with pytest.raises(LoadError) as info:
        spark.conf.get("missing")
    assert info.value.code == "CONF_NOT_SET" and "configuration" in info.value.message


def test_conf_only_spark_refuses_other_spark_work() -> None:
    with pytest.raises(LoadError) as info:
        ConfOnlySpark({}).read  # noqa: B018
    assert info.value.code == "SPARK_NOT_STARTED"
    assert "spark.read is not available" in info.value.message and "query functions" in info.value.message


def test_conf_only_spark_explicit_none_default() -> None:
    assert ConfOnlySpark({}).conf.get("optional.setting", None) is None


# ------------------------------------------------------------------------------------------------------- errors
def test_failing_pipeline_file_names_path_and_line_and_chains(tmp_path) -> None:
    spec = make_pipeline(tmp_path, {"pipes/bad.py": """
        import dlt
        from loader_test_failing_helper import explode

        X = 1
        explode("boom")
    """, "pipes/loader_test_failing_helper.py": """
        def explode(message):
            raise ValueError(message)
    """}, libraries=[{"file": {"path": "pipes/bad.py"}}])
    try:
        with pytest.raises(LoadError) as info:
            load_pipeline(spec)
    finally:
        sys.modules.pop("loader_test_failing_helper", None)
    err = info.value
    path = tmp_path / "pipes" / "bad.py"
    assert err.code == "LIBRARY_LOAD_FAILED"
    assert err.file == str(path) and err.line == 6  # the failing statement of the pipeline file
    assert isinstance(err.__cause__, ValueError)
    assert "ValueError: boom" in str(err) and f"{path}:6" in str(err)


def test_failure_inside_a_function_of_the_same_file_names_the_innermost_line(tmp_path) -> None:
    spec = make_pipeline(tmp_path, {"bad.py": """
        def helper():
            return {}["missing"]


        helper()
    """})
    with pytest.raises(LoadError) as info:
        load_pipeline(spec)
    assert info.value.line == 3 and "KeyError" in info.value.message
    assert isinstance(info.value.__cause__, KeyError)


def test_syntax_error_names_the_line(tmp_path) -> None:
    spec = make_pipeline(tmp_path, {"bad.py": "import dlt\n\nx = (1,\ny = 2 +\n"})
    with pytest.raises(LoadError) as info:
        load_pipeline(spec)
    assert info.value.code == "LIBRARY_LOAD_FAILED"
    assert info.value.file == str(tmp_path / "bad.py") and info.value.line in (3, 4)
    assert "syntax error" in info.value.message
    assert isinstance(info.value.__cause__, SyntaxError)


def test_syntax_error_in_a_notebook_keeps_the_notebook_line(tmp_path) -> None:
    text = "# Databricks notebook source\n# MAGIC %md\n# MAGIC # Title\n\n# COMMAND ----------\n\nx = = 1\n"
    spec = make_pipeline(tmp_path, {"nb.py": text})
    with pytest.raises(LoadError) as info:
        load_pipeline(spec)
    assert info.value.line == 7


def test_declaration_error_in_a_pipeline_file_keeps_its_location(tmp_path) -> None:
    spec = make_pipeline(tmp_path, {"p.py": """
        import dlt

        dlt.apply_changes(target="t", source="s", keys="id", sequence_by="ts")
    """})
    with pytest.raises(DeclarationError) as info:
        load_pipeline(spec)
    assert info.value.file == str(tmp_path / "p.py") and info.value.line == 4
    assert "keys must be a list" in str(info.value)


def test_duplicate_dataset_across_files(tmp_path) -> None:
    body = "import dlt\n\n\n@dlt.table\ndef orders():\n    return None\n"
    spec = make_pipeline(tmp_path, {"a.py": body, "b.py": body})
    with pytest.raises(DeclarationError) as info:
        load_pipeline(spec)
    assert info.value.file == str(tmp_path / "b.py") and str(tmp_path / "a.py") in info.value.message


@pytest.mark.parametrize("statement", ['spark.conf.get("not.configured")', 'spark.read.json("/x")',
                                       'dlt.read("x")'])
def test_framework_errors_from_pipeline_code_name_file_and_line(tmp_path, statement) -> None:
    spec = make_pipeline(tmp_path, {"p.py": f"import dlt\n\nX = {statement}\n"})
    with pytest.raises(PipelineError) as info:
        load_pipeline(spec)
    assert info.value.file == str(tmp_path / "p.py") and info.value.line == 3


def test_framework_errors_from_pipeline_code_keep_their_code(tmp_path) -> None:
    spec = make_pipeline(tmp_path, {"p.py": 'X = spark.conf.get("not.configured")\n'})
    with pytest.raises(PipelineError) as info:
        load_pipeline(spec)
    assert info.value.code == "CONF_NOT_SET"


def test_missing_libraries_are_all_reported(tmp_path) -> None:
    (tmp_path / "ok.py").write_text("x = 1\n")
    spec = parse_spec({"name": "t", "libraries": [
        {"file": {"path": "ok.py"}}, {"file": {"path": "missing_one.py"}}, {"notebook": {"path": "nb/missing"}},
        {"glob": {"include": "nothing_here/**"}}]}, source="spec.yaml", default_root=tmp_path)
    with pytest.raises(SpecError) as info:
        load_pipeline(spec)
    assert info.value.codes == ["LIBRARY_NOT_FOUND"] * 3
    text = str(info.value)
    assert "missing_one.py" in text and "nb/missing" in text and "nothing_here/**" in text


# ------------------------------------------------------------------------------------------------ resolution
def test_glob_skips_init_pycache_and_non_python_files(tmp_path) -> None:
    d = tmp_path / "pipes"
    (d / "__pycache__").mkdir(parents=True)
    (d / "deep" / "deeper").mkdir(parents=True)
    for name in ("a.py", "__init__.py", "data.json", "README.md", "__pycache__/stale.py", "deep/deeper/z.py"):
        (d / name).write_text("x = 1\n")
    (d / "notebook_without_extension").write_text("# Databricks notebook source\nx = 1\n")
    spec = parse_spec({"name": "t", "libraries": [{"glob": {"include": "pipes/**"}}, {"file": {"path": "pipes/a.py"}}]},
                      source="s", default_root=tmp_path)
    files = resolve_libraries(spec, PathMapper())
    assert [f.relative_to(d).as_posix() for f in files] == ["a.py", "deep/deeper/z.py", "notebook_without_extension"]


def test_notebook_library_without_extension_resolves_to_py(tmp_path) -> None:
    (tmp_path / "nb.py").write_text("x = 1\n")
    spec = parse_spec({"name": "t", "libraries": [{"notebook": {"path": "nb"}}]}, source="s",
                      default_root=tmp_path)
    assert resolve_libraries(spec, PathMapper()) == [(tmp_path / "nb.py").resolve()]


def test_workspace_library_path_through_the_mapping(tmp_path) -> None:
    (tmp_path / "pipelines").mkdir()
    (tmp_path / "pipelines" / "a.py").write_text("x = 1\n")
    spec = parse_spec({"name": "t", "libraries": [{"file": {"path": "/Workspace/Repos/me/proj/pipelines/a.py"}}],
                       "paths": {"/Workspace/Repos/me/proj": "."}}, source="s", default_root=tmp_path)
    mapper = PathMapper.from_spec(spec.paths, spec.root)
    assert resolve_libraries(spec, mapper) == [(tmp_path / "pipelines" / "a.py").resolve()]


def test_helper_modules_beside_pipeline_files_are_importable(tmp_path) -> None:
    spec = make_pipeline(tmp_path, {"pipes/p.py": """
        import dlt
        from loader_test_helper_one import NAME

        dlt.create_streaming_table(NAME)
    """, "pipes/loader_test_helper_one.py": "NAME = 'from_helper'\n"},
        libraries=[{"file": {"path": "pipes/p.py"}}])
    try:
        assert load_pipeline(spec).registry.dataset("from_helper") is not None
    finally:
        sys.modules.pop("loader_test_helper_one", None)


def test_same_named_helpers_in_two_pipelines_do_not_leak(tmp_path) -> None:
    pipeline = "import dlt\nfrom loader_test_shared_helper import NAME\n\ndlt.create_streaming_table(NAME)\n"
    first = make_pipeline(tmp_path / "one", {"p.py": pipeline, "loader_test_shared_helper.py": "NAME = 'one'\n"},
                          libraries=[{"file": {"path": "p.py"}}])
    second = make_pipeline(tmp_path / "two", {"p.py": pipeline, "loader_test_shared_helper.py": "NAME = 'two'\n"},
                           libraries=[{"file": {"path": "p.py"}}])
    try:
        assert load_pipeline(first).registry.dataset("one") is not None
        assert load_pipeline(second).registry.dataset("two") is not None
    finally:
        sys.modules.pop("loader_test_shared_helper", None)


def test_shim_module_identity() -> None:
    assert shim_dlt.__name__ == "framework.shim.dlt"


def test_module_level_columns_load_without_spark(tmp_path) -> None:
    """``validate --static`` gets through ``sequence_by=col(...)`` at module level, as Databricks runs it (issue
    39): the columns are text-only stand-ins (framework/static_columns.py) and PySpark's functions come back after
    the load."""
    spec = make_pipeline(tmp_path, {"p.py": """
        import dlt
        from pyspark.sql import functions as F
        from pyspark.sql.functions import col, expr

        VALID = (F.col("amount") > 0) & ~F.col("id").isNull()

        dlt.create_streaming_table("dim")
        dlt.apply_changes(target="dim", source="changes", keys=["id"], sequence_by=col("updated_at"),
                          apply_as_deletes=expr("op = 'DELETE'"), except_column_list=[col("op")],
                          stored_as_scd_type=2)

        @dlt.table
        def changes():
            return spark.range(3).where(VALID)
    """})
    if pyspark.SparkContext._active_spark_context is not None:  # the whole suite in one process: stop it for a moment
        pytest.fail("this unit test needs a process without a SparkContext; run unit tests before Spark tests "
                    "(tests/conftest.py orders them)")
    import pyspark.sql.functions as functions

    real_col = functions.col
    loaded = load_pipeline(spec)
    assert functions.col is real_col
    cdc = next(f.cdc for f in loaded.registry.flows.values() if f.cdc is not None)
    from framework.cdc.columns import column_text, simple_name

    assert simple_name(cdc.sequence_by) == "updated_at"
    assert column_text(cdc.apply_as_deletes) == "op = 'DELETE'"


def test_an_assertion_in_pipeline_code_is_not_taken_for_missing_spark(tmp_path) -> None:
    spec = make_pipeline(tmp_path, {"p.py": "assert 1 == 2, 'own check'\n"})
    with pytest.raises(LoadError) as info:
        load_pipeline(spec)
    assert info.value.code == "LIBRARY_LOAD_FAILED" and "AssertionError: own check" in info.value.message


def test_unmapped_workspace_library_is_a_spec_problem_with_the_others(tmp_path) -> None:
    spec = parse_spec({"name": "t", "libraries": [{"file": {"path": "dbfs:/mnt/code/a.py"}},
                                                  {"file": {"path": "missing.py"}}]},
                      source="spec.yaml", default_root=tmp_path)
    with pytest.raises(SpecError) as info:
        resolve_libraries(spec, PathMapper.from_spec(spec.paths, spec.root))
    assert info.value.codes == ["UNMAPPED_DATABRICKS_PATH", "LIBRARY_NOT_FOUND"]


# ---------------------------------------------------------------------------------------------- SQL libraries
SQL_NOTEBOOK = "-- Databricks notebook source\n-- MAGIC %md\n-- MAGIC # Gold\n\n-- COMMAND ----------\n\n" \
               "CREATE MATERIALIZED VIEW gold AS SELECT * FROM silver\n"


@pytest.fixture
def fake_sql(monkeypatch):
    """Stands in for framework.sql.register_sql_library: records each call and declares one streaming table per
    `-- declares NAME` line, into whatever registry is active (so it must be called inside the load's context)."""
    import framework.sql
    from framework.registry import active_registry

    calls: list[tuple[str, str, int]] = []

    def register(text: str, file: str) -> None:
        calls.append((text, file, id(active_registry())))
        for line in text.splitlines():
            if line.startswith("-- declares "):
                dlt_name = line.removeprefix("-- declares ").strip()
                shim_dlt.create_streaming_table(dlt_name)

    monkeypatch.setattr(framework.sql, "register_sql_library", register)
    return calls


def test_glob_includes_sql_files_and_sql_notebooks_without_extension(tmp_path) -> None:
    d = tmp_path / "pipes"
    d.mkdir()
    for name in ("a.py", "b.sql", "notes.txt"):
        (d / name).write_text("-- x\n")
    (d / "sql_notebook").write_text(SQL_NOTEBOOK)
    (d / "plain_without_extension").write_text("SELECT 1\n")
    spec = parse_spec({"name": "t", "libraries": [{"glob": {"include": "pipes/**"}}]}, source="s",
                      default_root=tmp_path)
    assert [f.name for f in resolve_libraries(spec, PathMapper())] == ["a.py", "b.sql", "sql_notebook"]


def test_notebook_library_without_extension_resolves_to_a_sql_notebook(tmp_path) -> None:
    (tmp_path / "gold.sql").write_text(SQL_NOTEBOOK)
    spec = parse_spec({"name": "t", "libraries": [{"notebook": {"path": "gold"}}]}, source="s",
                      default_root=tmp_path)
    assert resolve_libraries(spec, PathMapper()) == [(tmp_path / "gold.sql").resolve()]


def test_sql_libraries_are_registered_in_the_same_context_in_library_order(tmp_path, fake_sql) -> None:
    spec = make_pipeline(tmp_path, {
        "a_first.py": "import dlt\n\ndlt.create_streaming_table('from_python_1')\n",
        "sql/b.sql": "-- declares from_sql_file\nSELECT 1;\n",
        "sql/c_notebook": SQL_NOTEBOOK.replace("CREATE", "-- declares from_sql_notebook\nCREATE"),
        "d_last.py": "import dlt\n\ndlt.create_streaming_table('from_python_2')\n",
    }, libraries=[{"file": {"path": "a_first.py"}}, {"glob": {"include": "sql/*"}},
                  {"notebook": {"path": "d_last"}}])
    loaded = load_pipeline(spec)
    assert list(loaded.registry.datasets) == ["from_python_1", "from_sql_file", "from_sql_notebook",
                                              "from_python_2"]
    assert [(Path(file).name, text.startswith(("-- declares", "-- Databricks"))) for text, file, _ in fake_sql] == [
        ("b.sql", True), ("c_notebook", True)]
    assert fake_sql[0][1] == str((tmp_path / "sql" / "b.sql").resolve())
    assert fake_sql[0][0] == (tmp_path / "sql" / "b.sql").read_text()  # the text as written, not as Python
    assert {registry for _, _, registry in fake_sql} == {id(loaded.registry)}


def test_a_python_notebook_is_still_python(tmp_path, fake_sql) -> None:
    spec = make_pipeline(tmp_path, {"nb": "# Databricks notebook source\nimport dlt\n\n"
                                          "dlt.create_streaming_table('py_nb')\n"},
                         libraries=[{"notebook": {"path": "nb"}}])
    assert list(load_pipeline(spec).registry.datasets) == ["py_nb"] and fake_sql == []


def test_errors_from_sql_libraries_keep_their_own_file_line_and_column(tmp_path, monkeypatch) -> None:
    import framework.sql
    from framework.errors import SqlSyntaxError

    def register(text: str, file: str) -> None:
        raise SqlSyntaxError("unknown clause FOO", file=file, line=3, column=7)

    monkeypatch.setattr(framework.sql, "register_sql_library", register)
    spec = make_pipeline(tmp_path, {"q.sql": "SELECT 1;\n\nCREATE VIEW v FOO;\n"})
    with pytest.raises(SqlSyntaxError) as info:
        load_pipeline(spec)
    path = str((tmp_path / "q.sql").resolve())
    assert (info.value.code, info.value.file, info.value.line, info.value.column) == ("SQL_SYNTAX_ERROR", path, 3, 7)
    assert f"{path}:3:7:" in str(info.value)


def test_sql_library_errors_without_a_file_get_the_library_path(tmp_path, monkeypatch) -> None:
    import framework.sql

    def register(text: str, file: str) -> None:
        raise LoadError("no file given", code="SOME_SQL_PROBLEM")

    monkeypatch.setattr(framework.sql, "register_sql_library", register)
    spec = make_pipeline(tmp_path, {"q.sql": "SELECT 1;\n"})
    with pytest.raises(LoadError) as info:
        load_pipeline(spec)
    path = str((tmp_path / "q.sql").resolve())
    assert info.value.code == "SOME_SQL_PROBLEM" and info.value.file == path and path in str(info.value)


def test_unexpected_failures_of_a_sql_library_are_load_errors_naming_it(tmp_path, monkeypatch) -> None:
    import framework.sql

    def register(text: str, file: str) -> None:
        raise KeyError("internal")

    monkeypatch.setattr(framework.sql, "register_sql_library", register)
    spec = make_pipeline(tmp_path, {"q.sql": "SELECT 1;\n"})
    with pytest.raises(LoadError) as info:
        load_pipeline(spec)
    assert info.value.code == "LIBRARY_LOAD_FAILED" and isinstance(info.value.__cause__, KeyError)
    assert info.value.file == str((tmp_path / "q.sql").resolve())


def test_a_mixed_python_and_sql_pipeline_loads_with_the_real_sql_registration(tmp_path) -> None:
    spec = make_pipeline(tmp_path, {
        "bronze.py": """
            import dlt

            @dlt.table
            def bronze():
                return spark.range(3)
        """,
        "silver.sql": """
            -- a SQL dataset reading a Python one
            CREATE OR REFRESH MATERIALIZED VIEW silver
            COMMENT 'from SQL'
            AS SELECT id FROM bronze;
        """,
        "gold.sql": SQL_NOTEBOOK.replace("FROM silver", "FROM LIVE.silver"),
    })
    loaded = load_pipeline(spec)
    assert list(loaded.registry.datasets) == ["bronze", "silver", "gold"]
    silver = loaded.registry.dataset("silver")
    assert silver.kind is DatasetKind.MATERIALIZED_VIEW and silver.comment == "from SQL"
    silver_file = tmp_path / "silver.sql"
    assert Path(silver.location.file) == silver_file.resolve()
    assert silver.location.line == line_of(silver_file, "CREATE OR REFRESH")
    gold = loaded.registry.dataset("gold")
    assert gold.kind is DatasetKind.MATERIALIZED_VIEW
    assert gold.location.line == SQL_NOTEBOOK.splitlines().index(
        "CREATE MATERIALIZED VIEW gold AS SELECT * FROM silver") + 1


def test_installed_packages_stay_imported_when_the_root_holds_the_virtualenv(tmp_path, monkeypatch) -> None:
    """A spec whose root contains the virtualenv (``root: .`` of a repository with ``.venv``, run from another
    folder): a package module first imported while loading stays, so there is one copy of it (two copies of
    pyspark's modules made its Column objects foreign to it: `should be Column or str, got Column`)."""
    venv = tmp_path / ".venv"
    (venv / "lib").mkdir(parents=True)
    (venv / "lib" / "loader_test_installed_pkg.py").write_text("VALUE = 1\n")
    (tmp_path / "loader_test_own_helper.py").write_text("VALUE = 2\n")
    monkeypatch.setattr(sys, "prefix", str(venv))
    monkeypatch.syspath_prepend(str(venv / "lib"))
    for name in ("loader_test_installed_pkg", "loader_test_own_helper"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    spec = make_pipeline(tmp_path, {"p.py": "import loader_test_installed_pkg\nimport loader_test_own_helper\n"})
    load_pipeline(spec)
    assert "loader_test_installed_pkg" in sys.modules  # installed: kept
    assert "loader_test_own_helper" not in sys.modules  # the pipeline's own helper: dropped, as before
