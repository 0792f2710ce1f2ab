"""Our ``dlt`` / ``pyspark.pipelines`` shims match the official signatures (databricks-dlt stubs, pyspark 4.2).

The official modules are loaded by file path under private names, so that nothing here depends on what
``sys.modules['dlt']`` holds at the moment (the framework's loader swaps it while loading pipelines).
"""

from __future__ import annotations

import ast
import importlib.metadata
import importlib.util
import inspect
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import framework.shim.dlt as shim_dlt
import framework.shim.dp as shim_dp

_EMPTY = inspect.Parameter.empty
_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
_KEYWORD = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)


def _load_package(alias: str, package_dir: Path) -> ModuleType:
    """Import the package at ``package_dir`` as ``alias`` (relative imports inside it keep working)."""
    if alias in sys.modules:
        return sys.modules[alias]
    spec = importlib.util.spec_from_file_location(alias, package_dir / "__init__.py",
                                                  submodule_search_locations=[str(package_dir)])
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[alias] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def official_dlt() -> tuple[ModuleType, ModuleType]:
    """(dlt package, dlt.api) from the installed databricks-dlt distribution."""
    try:
        dist = importlib.metadata.distribution("databricks-dlt")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - environment problem
        pytest.fail("databricks-dlt (the official stubs) is not installed: it is a test dependency")
    package_dir = Path(str(dist.locate_file("dlt")))
    package = _load_package("_official_databricks_dlt", package_dir)
    return package, sys.modules["_official_databricks_dlt.api"]


def _public_functions(module: ModuleType) -> dict[str, Any]:
    return {name: value for name, value in vars(module).items()
            if not name.startswith("_") and inspect.isfunction(value) and value.__module__ == module.__name__}


def _compare(name: str, official: inspect.Signature, ours: inspect.Signature) -> list[str]:
    """Same parameter names, kinds and defaults in the same order; ours may add keyword-only parameters."""
    problems = []
    ours_params = list(ours.parameters.values())
    for index, param in enumerate(official.parameters.values()):
        if index >= len(ours_params):
            problems.append(f"{name}: missing parameter '{param.name}'")
            continue
        mine = ours_params[index]
        if mine.name != param.name:
            problems.append(f"{name}: parameter {index} is '{mine.name}', expected '{param.name}'")
            continue
        if mine.kind != param.kind:
            problems.append(f"{name}({param.name}): kind {mine.kind.description}, expected {param.kind.description}")
        if mine.default != param.default:
            problems.append(f"{name}({param.name}): default {mine.default!r}, expected {param.default!r}")
    for extra in ours_params[len(official.parameters):]:
        if extra.kind is not inspect.Parameter.KEYWORD_ONLY:
            problems.append(f"{name}: extra parameter '{extra.name}' must be keyword-only")
    return problems


def test_official_stubs_are_the_expected_package(official_dlt) -> None:
    _package, api_module = official_dlt
    assert Path(api_module.__file__).parent.parent.name == "site-packages"
    assert {"table", "view", "apply_changes", "create_streaming_table"} <= set(_public_functions(api_module))


def test_every_stub_function_exists_with_the_same_parameters(official_dlt) -> None:
    _package, api_module = official_dlt
    functions = _public_functions(api_module)
    assert len(functions) >= 15
    problems: list[str] = []
    for name, official in sorted(functions.items()):
        ours = getattr(shim_dlt, name, None)
        if ours is None:
            problems.append(f"missing function dlt.{name}")
            continue
        problems += _compare(name, inspect.signature(official), inspect.signature(ours))
    assert not problems, "framework.shim.dlt differs from the databricks-dlt stubs:\n  " + "\n  ".join(problems)


def test_every_name_the_stub_package_exports_exists(official_dlt) -> None:
    package, _api = official_dlt
    exported = set(getattr(package, "__all__", ())) | {
        n for n, v in vars(package).items() if not n.startswith("_") and inspect.isfunction(v)
        and v.__module__.startswith(package.__name__)}
    exported -= {"deprecation_warn"}
    missing = sorted(n for n in exported if not hasattr(shim_dlt, n))
    assert not missing, f"framework.shim.dlt lacks: {missing}"
    assert set(shim_dlt.__all__) >= set(package.__all__)


@pytest.mark.parametrize("module", [shim_dlt, shim_dp], ids=["dlt", "dp"])
def test_public_signatures_have_no_private_parameters(module: ModuleType) -> None:
    """What pipeline code can call takes only Databricks' parameters (and documented keyword-only extras)."""
    private = [f"{name}({param})" for name in module.__all__ if callable(getattr(module, name))
               for param in inspect.signature(getattr(module, name)).parameters if param.startswith("_")]
    assert private == []


def test_dataset_decorators_are_bound_to_their_spelling() -> None:
    """``dlt.table`` and ``dp.table`` are made by one factory each; only their messages differ."""
    pairs = [(shim_dlt.table, shim_dp.table), (shim_dlt.materialized_view, shim_dp.materialized_view),
             (shim_dlt.temporary_view, shim_dp.temporary_view), (shim_dlt.view, shim_dp.temporary_view)]
    for ours, theirs in pairs:
        assert ours is not theirs
        assert inspect.signature(ours) == inspect.signature(theirs)
        assert ours.__code__ is theirs.__code__
    assert shim_dlt.table.__name__ == "table" and shim_dp.temporary_view.__name__ == "temporary_view"


def test_deprecated_stub_aliases_take_any_arguments() -> None:
    for name in ("create_table", "create_view", "create_streaming_live_table", "create_target_table"):
        params = list(inspect.signature(getattr(shim_dlt, name)).parameters.values())
        kinds = {p.kind for p in params}
        assert kinds == {inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD}, name


def test_read_stream_alias() -> None:
    assert shim_dlt.readStream is shim_dlt.read_stream


DP_NAMES = ["table", "materialized_view", "temporary_view", "create_auto_cdc_flow",
            "create_auto_cdc_from_snapshot_flow", "create_sink", "foreach_batch_sink", "append_flow",
            "create_streaming_table", "expect", "expect_or_drop", "expect_or_fail", "expect_all",
            "expect_all_or_drop", "expect_all_or_fail", "on_event_hook"]


def test_dp_has_the_current_names() -> None:
    missing = [n for n in DP_NAMES if not callable(getattr(shim_dp, n, None))]
    assert not missing, f"framework.shim.dp lacks: {missing}"
    assert set(DP_NAMES) <= set(shim_dp.__all__)
    for name in shim_dp.__all__:
        assert hasattr(shim_dp, name), name


@pytest.mark.parametrize("module", [shim_dlt, shim_dp], ids=["dlt", "dp"])
def test_dir_shows_exactly_the_public_names(module: ModuleType) -> None:
    """Issue 36: ``dir(dlt)`` / ``dir(dp)`` list Databricks' names and nothing of ours (no decorator factories)."""
    names = [n for n in dir(module) if n.isidentifier() and not n.startswith("_")]  # not pytest's @py_builtins
    assert sorted(names) == sorted(module.__all__)


def test_dp_lacks_what_only_dlt_has() -> None:
    """Databricks' ``pyspark.pipelines`` has no ``read``/``read_stream`` (``spark.read.table`` instead) and no
    legacy ``apply_changes*`` (``create_auto_cdc*`` instead): a pipeline using them would fail there."""
    for name in ("read", "read_stream", "readStream", "apply_changes", "apply_changes_from_snapshot", "view"):
        assert not hasattr(shim_dp, name), name
        assert hasattr(shim_dlt, name), name


def test_dlt_also_has_the_new_names() -> None:
    for name in ("materialized_view", "temporary_view", "create_auto_cdc_flow",
                 "create_auto_cdc_from_snapshot_flow", "create_sink", "foreach_batch_sink"):
        assert callable(getattr(shim_dlt, name, None)), name


def test_dp_flow_name_parameter_is_name() -> None:
    params = inspect.signature(shim_dp.create_auto_cdc_flow).parameters
    assert "name" in params and "flow_name" not in params
    assert "name" in inspect.signature(shim_dp.create_auto_cdc_from_snapshot_flow).parameters
    assert "private" in inspect.signature(shim_dp.materialized_view).parameters
    assert "refresh_policy" in inspect.signature(shim_dp.materialized_view).parameters
    assert "depends_on" in inspect.signature(shim_dp.append_flow).parameters


# ------------------------------------------------------------------------------------ pyspark.pipelines (OSS)
def _pyspark_pipelines_signatures() -> dict[str, inspect.Signature]:
    """Public functions of pyspark.pipelines (imported, or parsed with ast if importing it fails)."""
    dist = importlib.metadata.distribution("pyspark")
    package_dir = Path(str(dist.locate_file("pyspark/pipelines")))
    init_tree = ast.parse((package_dir / "__init__.py").read_text())
    exported: list[str] = []
    for node in init_tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            exported = list(ast.literal_eval(node.value))
    assert exported, "pyspark.pipelines has no __all__"
    try:
        import pyspark.pipelines.api as pipelines_api

        return {n: inspect.signature(getattr(pipelines_api, n)) for n in exported}
    except Exception:  # pragma: no cover - depends on optional Spark Connect dependencies
        return _signatures_from_source(package_dir / "api.py", exported)


def _signatures_from_source(path: Path, names: list[str]) -> dict[str, inspect.Signature]:
    tree = ast.parse(path.read_text())
    out: dict[str, inspect.Signature] = {}
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef) or node.name not in names:
            continue
        if any(isinstance(d, ast.Name) and d.id == "overload" for d in node.decorator_list):
            continue
        args = node.args
        params: list[inspect.Parameter] = []
        positional = args.posonlyargs + args.args
        defaults = [_EMPTY] * (len(positional) - len(args.defaults)) + [_value(d) for d in args.defaults]
        for arg, default in zip(positional, defaults, strict=True):
            params.append(inspect.Parameter(arg.arg, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=default))
        for arg, kw_default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
            default = _EMPTY if kw_default is None else _value(kw_default)
            params.append(inspect.Parameter(arg.arg, inspect.Parameter.KEYWORD_ONLY, default=default))
        out[node.name] = inspect.Signature(params)
    return out


def _value(node: ast.expr) -> Any:
    try:
        return ast.literal_eval(node)
    except ValueError:
        return ast.unparse(node)


# Defaults that differ in spelling but mean the same (pyspark: None means SCD type 1).
_EQUIVALENT_DEFAULTS = {("create_auto_cdc_flow", "stored_as_scd_type"): {None, "1"}}


def test_pyspark_pipelines_names_exist_in_dp_with_compatible_parameters() -> None:
    signatures = _pyspark_pipelines_signatures()
    assert {"table", "materialized_view", "temporary_view", "create_streaming_table"} <= set(signatures)
    problems: list[str] = []
    for name, official in sorted(signatures.items()):
        ours_fn = getattr(shim_dp, name, None)
        if ours_fn is None:
            problems.append(f"missing function dp.{name}")
            continue
        ours = inspect.signature(ours_fn).parameters
        ours_list = list(ours)
        for index, param in enumerate(official.parameters.values()):
            mine = ours.get(param.name)
            if mine is None:
                problems.append(f"dp.{name}: missing parameter '{param.name}'")
                continue
            if param.kind in _POSITIONAL and param.default is _EMPTY and ours_list.index(param.name) != index:
                problems.append(f"dp.{name}: required positional '{param.name}' is at position "
                                f"{ours_list.index(param.name)}, pyspark has it at {index}")
            if param.kind is inspect.Parameter.KEYWORD_ONLY and mine.kind not in _KEYWORD:
                problems.append(f"dp.{name}({param.name}): cannot be passed by keyword")
            if param.kind in _POSITIONAL and mine.kind not in _POSITIONAL:
                problems.append(f"dp.{name}({param.name}): cannot be passed positionally")
            equivalent = _EQUIVALENT_DEFAULTS.get((name, param.name), set())
            if param.default is not _EMPTY and mine.default != param.default and not {mine.default, param.default} <= equivalent:
                problems.append(f"dp.{name}({param.name}): default {mine.default!r}, pyspark {param.default!r}")
            if param.default is _EMPTY and mine.default is not _EMPTY and param.kind in _POSITIONAL:
                problems.append(f"dp.{name}({param.name}): required in pyspark, optional here")
    assert not problems, "framework.shim.dp is incompatible with pyspark.pipelines:\n  " + "\n  ".join(problems)


def test_pyspark_source_parser_agrees_with_import() -> None:
    """The ast fallback reads the same parameter names as inspect does."""
    dist = importlib.metadata.distribution("pyspark")
    api_path = Path(str(dist.locate_file("pyspark/pipelines/api.py")))
    imported = _pyspark_pipelines_signatures()
    parsed = _signatures_from_source(api_path, list(imported))
    assert set(parsed) == set(imported)
    for name, signature in imported.items():
        assert list(parsed[name].parameters) == list(signature.parameters), name


def test_the_unit_suite_never_starts_spark(request: pytest.FixtureRequest) -> None:
    """No unit test asks for Spark, and when the unit folder runs on its own nothing has started a JVM.

    (In `make test` the integration tests share the process and start the session first, so the JVM check
    only applies when every collected test is a unit test.)
    """
    from pyspark import SparkContext

    unit_dir = Path(__file__).resolve().parent
    items = request.session.items
    unit_items = [i for i in items if unit_dir in Path(str(i.path)).resolve().parents]
    assert [i.nodeid for i in unit_items if "spark" in getattr(i, "fixturenames", ())] == []
    if len(unit_items) == len(items):
        assert SparkContext._active_spark_context is None
        assert SparkContext._gateway is None
