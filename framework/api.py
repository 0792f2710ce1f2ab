"""The declaration API behind both spellings: ``import dlt`` and ``from pyspark import pipelines as dp``.

Decorators check their arguments, build frozen declarations (framework.declarations) and register them in
the active registry. Nothing here runs Spark. ``framework.shim.dlt`` and ``framework.shim.dp`` expose these
functions under Databricks' names and signatures; the dataset decorators, whose messages name the spelling the
user wrote (``@dlt.table`` or ``@dp.table``), are made for each module by :func:`table_decorator`,
:func:`materialized_view_decorator` and :func:`view_decorator`.

Every failure raises a :class:`~framework.errors.DeclarationError` with its own code and parameters (the codes
and their messages are listed in ``framework.errors.DECLARATION_MESSAGES``). The rules of APPLY CHANGES that
relate several arguments are checked here, once: the ``cdc`` package relies on them.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Callable, Collection, Mapping
from typing import Any

from framework.columns import ColumnClauseError, split_column_list
from framework.context import current_reader
from framework.declarations import (
    ApplyChanges,
    ApplyChangesFromSnapshot,
    Dataset,
    DatasetKind,
    EventHook,
    Expectation,
    ExpectationAction,
    Flow,
    FlowKind,
    Sink,
    SourceLocation,
)
from framework.errors import DeclarationError
from framework.refresh_policy import parse_policy
from framework.registry import active_registry, merge_expectations

QueryFunction = Callable[[], Any]
_EXPECTATIONS_ATTR = "__medallion_expectations__"
_REGISTERED_ATTR = "__medallion_dataset__"
_SINK_ATTR = "__medallion_sink__"
_FRAMEWORK_DIR = os.path.dirname(os.path.abspath(__file__))


# --------------------------------------------------------------------------------------------------- helpers
def caller_location() -> SourceLocation:
    """The first stack frame outside the framework package: where the user called us."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = os.path.abspath(frame.f_code.co_filename)
        if not filename.startswith(_FRAMEWORK_DIR + os.sep) and not filename.startswith("<frozen importlib"):
            return SourceLocation(frame.f_code.co_filename, frame.f_lineno)
        frame = frame.f_back  # type: ignore[assignment]
    return SourceLocation("<unknown>", 0)


def function_location(fn: Callable[..., Any]) -> SourceLocation:
    """Where ``fn`` is defined (its first line), or the caller's location for objects without code."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return caller_location()
    return SourceLocation(code.co_filename, code.co_firstlineno)


def _fail(code: str, location: SourceLocation, **params: object) -> DeclarationError:
    return DeclarationError.of(code, file=location.file, line=location.line, **params)


def _decorator_misuse(decorator: str, arg: object, location: SourceLocation) -> DeclarationError:
    return _fail("DECLARATION_NOT_CALLABLE", location, decorator=decorator, argument=arg,
                 argument_type=type(arg).__name__)


def _check_name(kind: str, name: object, location: SourceLocation) -> str:
    if not isinstance(name, str) or not name.strip():
        raise _fail("DECLARATION_NAME_INVALID", location, kind=kind, name=name)
    return name


def _tuple_or_none(value: Any, argument: str, location: SourceLocation) -> tuple[Any, ...] | None:
    if value is None:
        return None
    if isinstance(value, str):
        raise _fail("DECLARATION_LIST_EXPECTED", location, argument=argument, value=value)
    return tuple(value)


def _cols(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    return tuple(value)


def _dict(value: Mapping[str, Any] | None) -> dict[str, str]:
    return {str(k): str(v) for k, v in (value or {}).items()}


def _scd_type(value: Any, location: SourceLocation) -> int:
    if value is None:
        return 1
    if str(value).strip() in {"1", "2"}:
        return int(str(value).strip())
    raise _fail("DECLARATION_SCD_TYPE_INVALID", location, value=value)


# ---------------------------------------------------------------------------------------------- expectations
def _expectation_decorator(action: ExpectationAction, expectations: Mapping[str, Any],
                           decorator: str) -> Callable[[QueryFunction], QueryFunction]:
    location = caller_location()
    built = _build_expectations(action, expectations, decorator, location)

    def decorate(fn: QueryFunction) -> QueryFunction:
        if not callable(fn):
            raise _fail("DECLARATION_NOT_A_QUERY_FUNCTION", location, decorator=decorator, argument=fn)
        if getattr(fn, _SINK_ATTR, None):
            raise _fail("DECLARATION_EXPECTATIONS_ON_SINK", location, sink=getattr(fn, _SINK_ATTR))
        if getattr(fn, _REGISTERED_ATTR, None):
            raise _fail("DECLARATION_EXPECTATION_ABOVE_DATASET", location, decorator=decorator,
                        function=fn.__name__)
        existing: tuple[Expectation, ...] = getattr(fn, _EXPECTATIONS_ATTR, ())
        merged = merge_expectations(getattr(fn, "__name__", "?"), tuple(built), existing)
        setattr(fn, _EXPECTATIONS_ATTR, merged)
        return fn

    return decorate


def expect(name: str, inv: Any) -> Callable[[QueryFunction], QueryFunction]:
    """Warn: failing rows are written and counted."""
    return _expectation_decorator("warn", {name: inv}, "expect")


def expect_or_drop(name: str, inv: Any) -> Callable[[QueryFunction], QueryFunction]:
    """Drop: failing rows are removed before the write and counted as dropped."""
    return _expectation_decorator("drop", {name: inv}, "expect_or_drop")


def expect_or_fail(name: str, inv: Any) -> Callable[[QueryFunction], QueryFunction]:
    """Fail: the first failing row stops the flow, which is rolled back."""
    return _expectation_decorator("fail", {name: inv}, "expect_or_fail")


def expect_all(expectations: Mapping[str, Any]) -> Callable[[QueryFunction], QueryFunction]:
    """:func:`expect` for each ``name: constraint`` entry."""
    return _expectation_decorator("warn", expectations, "expect_all")


def expect_all_or_drop(expectations: Mapping[str, Any]) -> Callable[[QueryFunction], QueryFunction]:
    """:func:`expect_or_drop` for each ``name: constraint`` entry."""
    return _expectation_decorator("drop", expectations, "expect_all_or_drop")


def expect_all_or_fail(expectations: Mapping[str, Any]) -> Callable[[QueryFunction], QueryFunction]:
    """:func:`expect_or_fail` for each ``name: constraint`` entry."""
    return _expectation_decorator("fail", expectations, "expect_all_or_fail")


def _build_expectations(action: ExpectationAction, expectations: Any, decorator: str,
                        location: SourceLocation) -> list[Expectation]:
    if not isinstance(expectations, Mapping):
        raise _fail("DECLARATION_EXPECTATIONS_NOT_A_DICT", location, decorator=decorator,
                    argument_type=type(expectations).__name__)
    built: list[Expectation] = []
    for name, constraint in expectations.items():
        _check_name("expectation", name, location)
        if not isinstance(constraint, str) and type(constraint).__name__ != "Column":
            raise _fail("DECLARATION_CONSTRAINT_TYPE", location, expectation=name,
                        constraint_type=type(constraint).__name__)
        if isinstance(constraint, str) and not constraint.strip():
            raise _fail("DECLARATION_CONSTRAINT_EMPTY", location, expectation=name)
        built.append(Expectation(name=name, constraint=constraint, action=action, location=location))
    return built


def _expectations_from_dicts(dataset: str, location: SourceLocation, **by_action: Mapping[str, Any] | None
                             ) -> tuple[Expectation, ...]:
    out: list[Expectation] = []
    actions: dict[str, ExpectationAction] = {"expect_all": "warn", "expect_all_or_drop": "drop",
                                             "expect_all_or_fail": "fail"}
    for key, mapping in by_action.items():
        if mapping is not None:
            out.extend(_build_expectations(actions[key], mapping, key, location))
    return merge_expectations(dataset, (), tuple(out))


# ------------------------------------------------------------------------------------------------- datasets
def _register_dataset(fn: QueryFunction, *, kind: DatasetKind, name: str | None,
                      flow_options: Mapping[str, Any] | None = None, **options: Any) -> QueryFunction:
    location = function_location(fn)
    dataset_name = _check_name("dataset", name if name is not None else fn.__name__, location)
    expectations: tuple[Expectation, ...] = getattr(fn, _EXPECTATIONS_ATTR, ())
    registry = active_registry()
    dataset = Dataset(name=dataset_name, kind=kind, location=location, expectations=expectations, **options)
    registry.add_dataset(dataset)
    registry.add_flow(Flow(name=dataset_name, target=dataset_name, kind=FlowKind.QUERY, location=location,
                           query_function=fn, spark_conf=dataset.spark_conf, comment=dataset.comment,
                           **(flow_options or {})))
    setattr(fn, _REGISTERED_ATTR, dataset_name)
    return fn


def _dataset_decorator(*, decorator: str, kind: DatasetKind, query_function: Any, name: str | None,
                       options: dict[str, Any], location: SourceLocation,
                       flow_options: Mapping[str, Any] | None = None) -> Any:
    """Register ``query_function`` now (bare ``@decorator``), or return the decorator (``@decorator(...)``)."""
    if query_function is not None and not callable(query_function):
        raise _decorator_misuse(decorator, query_function, location)
    if name is not None:
        _check_name("dataset", name, location)
    if query_function is not None:
        return _register_dataset(query_function, kind=kind, name=name, flow_options=flow_options, **options)

    def decorate(fn: QueryFunction) -> QueryFunction:
        if not callable(fn):
            raise _decorator_misuse(decorator, fn, location)
        return _register_dataset(fn, kind=kind, name=name, flow_options=flow_options, **options)

    return decorate


def _table_options(location: SourceLocation, *, comment: str | None = None,
                   spark_conf: Mapping[str, str] | None = None, table_properties: Mapping[str, str] | None = None,
                   partition_cols: Collection[str] | None = None, path: str | None = None, schema: Any = None,
                   private: bool = False, cluster_by: Collection[str] | None = None,
                   cluster_by_auto: bool = False, row_filter: str | None = None,
                   refresh_policy: str | None = None, format: str | None = None) -> dict[str, Any]:
    """The checked, normalized options of a table, materialized view or streaming table."""
    parts = _cols(partition_cols)
    clusters = _cols(cluster_by)
    if parts and clusters:
        raise _fail("DECLARATION_LAYOUT_CONFLICT", location, partition_cols=parts, cluster_by=clusters)
    if schema is not None and not isinstance(schema, str) and type(schema).__name__ != "StructType":
        raise _fail("DECLARATION_SCHEMA_TYPE", location, schema_type=type(schema).__name__)
    if isinstance(schema, str):
        _check_column_clauses(schema, location)
    if format is not None and format.lower() != "delta":
        raise _fail("DECLARATION_FORMAT_UNSUPPORTED", location, format=format)
    if refresh_policy is not None and parse_policy(refresh_policy) is None:
        raise _fail("DECLARATION_REFRESH_POLICY", location, value=refresh_policy)
    return dict(comment=comment, spark_conf=_dict(spark_conf), table_properties=_dict(table_properties),
                partition_cols=parts, cluster_by=clusters, cluster_by_auto=bool(cluster_by_auto), path=path,
                schema=schema, private=bool(private), row_filter=row_filter, refresh_policy=refresh_policy)


def _check_column_clauses(schema: str, location: SourceLocation) -> None:
    """A DDL ``schema``'s generation, identity and default clauses read (``framework/columns.py``), and
    ``MASK`` refused, at declaration (Spark checks the rest when the update resolves the dataset)."""
    try:
        split_column_list(schema)
    except ColumnClauseError as exc:
        raise _fail("DECLARATION_SCHEMA_COLUMN", location, detail=str(exc), column=exc.column,
                    clause=exc.clause) from None


def _spelled(fn: Callable[..., Any], spelling: str) -> Callable[..., Any]:
    """Name a decorator made for one module after its attribute there (``dp.table`` → ``table``)."""
    fn.__name__ = fn.__qualname__ = spelling.rpartition(".")[2]
    return fn


def table_decorator(spelling: str) -> Callable[..., Any]:
    """``dlt.table`` / ``dp.table``, naming itself ``spelling`` in its messages.

    Args:
        spelling: how pipeline code writes it, e.g. ``"dlt.table"``.

    Returns:
        The decorator, with the signature of Databricks' ``dlt.table`` (plus keyword-only ``private``,
        ``cluster_by_auto`` and ``format``).
    """

    def table(query_function: QueryFunction | None = None, name: str | None = None, comment: str | None = None,
              spark_conf: dict[str, str] | None = None, table_properties: dict[str, str] | None = None,
              partition_cols: list[str] | None = None, path: str | None = None, schema: Any = None,
              temporary: bool = False, cluster_by: list[str] | None = None, row_filter: str | None = None,
              *, private: bool | None = None, cluster_by_auto: bool = False, format: str | None = None,
              replace_using: list[str] | None = None, sequence_by: Any = None, replace_where: Any = None) -> Any:
        """A table: a streaming table when the query is streaming, else a materialized view (with
        ``replace_using`` and ``sequence_by``: a streaming table kept by a REPLACE USING flow; with
        ``replace_where``, a SQL string or a Column: a streaming table kept by a REPLACE WHERE flow of its
        name, which replaces the rows matching the predicate with the batch query's rows each update)."""
        location = caller_location()
        flow_options = _replace_using(replace_using, sequence_by, location, spelling)
        kind = DatasetKind.TABLE
        if replace_where is not None:
            flow_options = _replace_where(replace_where, flow_options, location)
            kind = DatasetKind.STREAMING_TABLE
        options = _table_options(location, comment=comment, spark_conf=spark_conf,
                                 table_properties=table_properties, partition_cols=partition_cols, path=path,
                                 schema=schema, private=temporary if private is None else private,
                                 cluster_by=cluster_by, cluster_by_auto=cluster_by_auto, row_filter=row_filter,
                                 format=format)
        return _dataset_decorator(decorator=spelling, kind=kind, query_function=query_function,
                                  name=name, options=options, location=location, flow_options=flow_options)

    return _spelled(table, spelling)


def _replace_where(predicate: Any, flow_options: dict[str, Any], location: SourceLocation) -> dict[str, Any]:
    """A REPLACE WHERE flow's checked option: a non-empty SQL string or a Column, not with REPLACE USING."""
    if flow_options:
        raise _fail("DECLARATION_ARGUMENTS_EXCLUSIVE", location, first="replace_using", second="replace_where")
    if (not isinstance(predicate, str) and type(predicate).__name__ != "Column") or \
            (isinstance(predicate, str) and not predicate.strip()):
        raise _fail("DECLARATION_REPLACE_WHERE_TYPE", location, predicate=predicate)
    return {"replace_where": predicate}


def _replace_using(replace_using: Any, sequence_by: Any, location: SourceLocation, decorator: str
                   ) -> dict[str, Any]:
    """A REPLACE USING flow's checked options: at least one key column, no repeats, and a ``sequence_by``."""
    if replace_using is None and sequence_by is None:
        return {}
    keys = _cols(replace_using)
    if not keys or len(set(keys)) != len(keys):  # Databricks: at least one key column, none repeated
        raise _fail("DECLARATION_KEYS_REQUIRED", location, function=f"{decorator}(replace_using=...)")
    if sequence_by is None:
        raise _fail("DECLARATION_SEQUENCE_BY_REQUIRED", location, function=f"{decorator}(replace_using=...)")
    return {"replace_using": keys, "sequence_by": sequence_by}


def replace_flow(target: str | None = None, replace_using: list[str] | None = None, sequence_by: Any = None,
                 name: str | None = None, comment: str | None = None, spark_conf: dict[str, str] | None = None
                 ) -> Callable[[QueryFunction], None]:
    """A REPLACE USING flow into a streaming table: each key's rows are replaced by a stream of partial
    snapshots, the highest ``sequence_by`` winning (``framework/runner/replace_using.py``)."""
    location = caller_location()
    if callable(target) or target is None:
        raise _fail("DECLARATION_TARGET_REQUIRED", location, decorator="replace_flow")
    _check_name("replace_flow target", target, location)
    options = _replace_using(replace_using if replace_using is not None else [], sequence_by, location,
                             "replace_flow")

    def decorate(fn: QueryFunction) -> None:
        if not callable(fn):
            raise _decorator_misuse("replace_flow", fn, location)
        flow_name = _check_name("flow", name if name is not None else fn.__name__, location)
        active_registry().add_flow(Flow(
            name=flow_name, target=target, kind=FlowKind.APPEND, location=function_location(fn),
            query_function=fn, comment=comment, spark_conf=_dict(spark_conf),
            expectations=getattr(fn, _EXPECTATIONS_ATTR, ()), **options))

    return decorate


def materialized_view_decorator(spelling: str) -> Callable[..., Any]:
    """``dp.materialized_view`` / ``dlt.materialized_view``, naming itself ``spelling`` in its messages.

    Args:
        spelling: how pipeline code writes it, e.g. ``"dp.materialized_view"``.

    Returns:
        The decorator.
    """

    def materialized_view(query_function: QueryFunction | None = None, name: str | None = None,
                          comment: str | None = None, spark_conf: dict[str, str] | None = None,
                          table_properties: dict[str, str] | None = None,
                          partition_cols: list[str] | None = None, path: str | None = None, schema: Any = None,
                          private: bool = False, cluster_by: list[str] | None = None,
                          row_filter: str | None = None, cluster_by_auto: bool = False,
                          refresh_policy: str | None = None, format: str | None = None) -> Any:
        """A materialized view: a batch query recomputed on every update."""
        location = caller_location()
        options = _table_options(location, comment=comment, spark_conf=spark_conf,
                                 table_properties=table_properties, partition_cols=partition_cols, path=path,
                                 schema=schema, private=private, cluster_by=cluster_by,
                                 cluster_by_auto=cluster_by_auto, row_filter=row_filter,
                                 refresh_policy=refresh_policy, format=format)
        return _dataset_decorator(decorator=spelling, kind=DatasetKind.MATERIALIZED_VIEW,
                                  query_function=query_function, name=name, options=options, location=location)

    return _spelled(materialized_view, spelling)


def view_decorator(spelling: str) -> Callable[..., Any]:
    """``dlt.view`` / ``dp.temporary_view`` / ``dlt.temporary_view``, naming itself ``spelling`` in its messages.

    Args:
        spelling: how pipeline code writes it, e.g. ``"dlt.view"``.

    Returns:
        The decorator, with the signature of Databricks' ``dlt.view``.
    """

    def view(query_function: QueryFunction | None = None, name: str | None = None, comment: str | None = None,
             spark_conf: dict[str, str] | None = None) -> Any:
        """A temporary view: computed when read, never stored."""
        return _dataset_decorator(decorator=spelling, kind=DatasetKind.VIEW, query_function=query_function,
                                  name=name, options=dict(comment=comment, spark_conf=_dict(spark_conf)),
                                  location=caller_location())

    return _spelled(view, spelling)


def create_streaming_table(name: str, comment: str | None = None, spark_conf: dict[str, str] | None = None,
                           table_properties: dict[str, str] | None = None,
                           partition_cols: Collection[str] | None = None, path: str | None = None,
                           schema: Any = None, expect_all: dict[str, Any] | None = None,
                           expect_all_or_drop: dict[str, Any] | None = None,
                           expect_all_or_fail: dict[str, Any] | None = None,
                           cluster_by: list[str] | None = None, row_filter: str | None = None,
                           *, private: bool = False, cluster_by_auto: bool = False,
                           format: str | None = None) -> None:
    """Declare a streaming table whose flows (append flows, APPLY CHANGES) are declared separately."""
    location = caller_location()
    _check_name("streaming table", name, location)
    options = _table_options(location, comment=comment, spark_conf=spark_conf, table_properties=table_properties,
                             partition_cols=partition_cols, path=path, schema=schema, private=private,
                             cluster_by=cluster_by, cluster_by_auto=cluster_by_auto, row_filter=row_filter,
                             format=format)
    expectations = _expectations_from_dicts(name, location, expect_all=expect_all,
                                            expect_all_or_drop=expect_all_or_drop,
                                            expect_all_or_fail=expect_all_or_fail)
    active_registry().add_dataset(Dataset(name=name, kind=DatasetKind.STREAMING_TABLE, location=location,
                                          expectations=expectations, declared_without_query=True, **options))


def _deprecated(old: str, new: str) -> None:
    warnings.warn(f"dlt.{old} is deprecated; use dlt.{new} instead", DeprecationWarning, stacklevel=3)


def create_streaming_live_table(*args: Any, **kwargs: Any) -> None:
    """Deprecated spelling of :func:`create_streaming_table`."""
    _deprecated("create_streaming_live_table", "create_streaming_table")
    create_streaming_table(*args, **kwargs)


def create_target_table(*args: Any, **kwargs: Any) -> None:
    """Deprecated spelling of :func:`create_streaming_table`."""
    _deprecated("create_target_table", "create_streaming_table")
    create_streaming_table(*args, **kwargs)


def create_table(*args: Any, **kwargs: Any) -> Any:
    """Deprecated spelling of ``dlt.table``."""
    _deprecated("create_table", "table")
    return table_decorator("dlt.table")(*args, **kwargs)


def create_view(*args: Any, **kwargs: Any) -> Any:
    """Deprecated spelling of ``dlt.view``."""
    _deprecated("create_view", "view")
    return view_decorator("dlt.view")(*args, **kwargs)


# ---------------------------------------------------------------------------------------------------- flows
def append_flow(name: str | None = None, target: str | None = None, comment: str | None = None,
                spark_conf: dict[str, str] | None = None, once: bool = False,
                *, depends_on: Any = None) -> Callable[[QueryFunction], None]:
    """A flow that appends its query's rows to a streaming table or a sink (after the flows of ``depends_on``)."""
    location = caller_location()
    if callable(name) or target is None:
        raise _fail("DECLARATION_TARGET_REQUIRED", location, decorator="append_flow")
    _check_name("append_flow target", target, location)
    after = _depends_on(depends_on, location)

    def decorate(fn: QueryFunction) -> None:
        if not callable(fn):
            raise _decorator_misuse("append_flow", fn, location)
        flow_name = _check_name("flow", name if name is not None else fn.__name__, location)
        active_registry().add_flow(Flow(
            name=flow_name, target=target, kind=FlowKind.APPEND, location=function_location(fn),
            query_function=fn, once=bool(once), comment=comment, spark_conf=_dict(spark_conf),
            expectations=getattr(fn, _EXPECTATIONS_ATTR, ()), depends_on=after))

    return decorate


def _depends_on(value: Any, location: SourceLocation) -> tuple[str, ...]:
    """``depends_on``: one flow name or a list of them (Databricks' flow ordering: this flow starts only after
    each named flow completed)."""
    if value is None:
        return ()
    names = [value] if isinstance(value, str) else list(value) if isinstance(value, list | tuple) else [value]
    return tuple(_check_name("depends_on flow", name, location) for name in names)


def update_flow(name: str | None = None, target: str | None = None, comment: str | None = None,
                spark_conf: dict[str, str] | None = None, *, depends_on: Any = None) -> Callable[[QueryFunction], None]:
    """A flow that writes its streaming query to a sink in update output mode (only the rows that changed in
    each micro-batch), so stateful aggregations need no watermark."""
    location = caller_location()
    if callable(name) or target is None:
        raise _fail("DECLARATION_TARGET_REQUIRED", location, decorator="update_flow")
    _check_name("update_flow target", target, location)
    after = _depends_on(depends_on, location)

    def decorate(fn: QueryFunction) -> None:
        if not callable(fn):
            raise _decorator_misuse("update_flow", fn, location)
        flow_name = _check_name("flow", name if name is not None else fn.__name__, location)
        active_registry().add_flow(Flow(
            name=flow_name, target=target, kind=FlowKind.APPEND, location=function_location(fn),
            query_function=fn, comment=comment, spark_conf=_dict(spark_conf), output_mode="update",
            expectations=getattr(fn, _EXPECTATIONS_ATTR, ()), depends_on=after))

    return decorate


# ------------------------------------------------------------------------------------------------ APPLY CHANGES
_EXCLUSIVE_LISTS = (("column_list", "except_column_list"),
                    ("track_history_column_list", "track_history_except_column_list"),
                    ("ignore_null_updates_column_list", "ignore_null_updates_except_column_list"))
_TRACK_HISTORY_LISTS = ("track_history_column_list", "track_history_except_column_list")


def _check_cross_field_rules(arguments: Mapping[str, Any], scd: int, location: SourceLocation) -> None:
    """Check the rules of APPLY CHANGES (and of its snapshot form) that relate several arguments.

    They are checked only here, at declaration: the ``cdc`` package takes a declared ``ApplyChanges`` as valid.
    """
    for first, second in _EXCLUSIVE_LISTS:
        if arguments.get(first) is not None and arguments.get(second) is not None:
            raise _fail("DECLARATION_ARGUMENTS_EXCLUSIVE", location, first=first, second=second)
    if arguments.get("apply_as_truncates") is not None and scd != 1:
        raise _fail("DECLARATION_TRUNCATES_NEED_SCD1", location, scd_type=scd)
    given = [argument for argument in _TRACK_HISTORY_LISTS if arguments.get(argument) is not None]
    if scd != 2 and given:
        raise _fail("DECLARATION_TRACK_HISTORY_NEEDS_SCD2", location, argument=given[0], scd_type=scd)


def apply_changes(target: str, source: str, keys: Any, sequence_by: Any, where: Any = None,
                  ignore_null_updates: bool | None = None, apply_as_deletes: Any = None,
                  apply_as_truncates: Any = None, column_list: Any = None, except_column_list: Any = None,
                  stored_as_scd_type: str | int = "1", track_history_column_list: Any = None,
                  track_history_except_column_list: Any = None, flow_name: str | None = None,
                  once: bool = False, ignore_null_updates_column_list: Any = None,
                  ignore_null_updates_except_column_list: Any = None, columns_to_update: Any = None) -> None:
    """APPLY CHANGES INTO ``target`` from the CDC feed ``source`` (SCD type 1 or 2)."""
    _declare_auto_cdc(
        caller_location(), flow_name=flow_name, once=once, target=target, source=source, keys=keys,
        sequence_by=sequence_by, stored_as_scd_type=stored_as_scd_type, where=where,
        ignore_null_updates=ignore_null_updates, apply_as_deletes=apply_as_deletes,
        apply_as_truncates=apply_as_truncates, column_list=column_list, except_column_list=except_column_list,
        track_history_column_list=track_history_column_list,
        track_history_except_column_list=track_history_except_column_list,
        ignore_null_updates_column_list=ignore_null_updates_column_list,
        ignore_null_updates_except_column_list=ignore_null_updates_except_column_list,
        columns_to_update=columns_to_update)


def create_auto_cdc_flow(target: str, source: str, keys: Any, sequence_by: Any, where: Any = None,
                         ignore_null_updates: bool | None = None, apply_as_deletes: Any = None,
                         apply_as_truncates: Any = None, column_list: Any = None,
                         except_column_list: Any = None, stored_as_scd_type: str | int | None = "1",
                         track_history_column_list: Any = None, track_history_except_column_list: Any = None,
                         name: str | None = None, once: bool = False,
                         ignore_null_updates_column_list: Any = None,
                         ignore_null_updates_except_column_list: Any = None,
                         columns_to_update: Any = None, *, system_sequence_by: Any = None) -> None:
    """``dp`` spelling of :func:`apply_changes` (the flow name parameter is ``name``; None is SCD type 1).
    ``system_sequence_by`` (the system-time order of Databricks' bitemporal targets, Beta) is refused."""
    if system_sequence_by is not None:
        raise _fail("DECLARATION_UNSUPPORTED_ARGUMENT", caller_location(), function="create_auto_cdc_flow",
                    argument="system_sequence_by", why="it orders the system time of a STORED AS BITEMPORAL "
                    "target (Beta on Databricks), which the local runner does not support")
    _declare_auto_cdc(
        caller_location(), flow_name=name, once=once, target=target, source=source, keys=keys,
        sequence_by=sequence_by, stored_as_scd_type=stored_as_scd_type, where=where,
        ignore_null_updates=ignore_null_updates, apply_as_deletes=apply_as_deletes,
        apply_as_truncates=apply_as_truncates, column_list=column_list, except_column_list=except_column_list,
        track_history_column_list=track_history_column_list,
        track_history_except_column_list=track_history_except_column_list,
        ignore_null_updates_column_list=ignore_null_updates_column_list,
        ignore_null_updates_except_column_list=ignore_null_updates_except_column_list,
        columns_to_update=columns_to_update)


def declare_auto_cdc_flow(location: SourceLocation, *, target: str, source: str, keys: Any, sequence_by: Any,
                          flow_name: str | None = None, once: bool = False, stored_as_scd_type: Any = 1,
                          **arguments: Any) -> None:
    """An AUTO CDC flow declared by other than Python code (DLT SQL's ``APPLY CHANGES INTO``): the same checks
    as :func:`create_auto_cdc_flow`, with errors at ``location``. ``arguments`` are its optional keywords."""
    given = {"where": None, "ignore_null_updates": None, "apply_as_deletes": None, "apply_as_truncates": None,
             "columns_to_update": None, **{name: None for name in _CDC_LISTS}, **arguments}
    _declare_auto_cdc(location, flow_name=flow_name, once=once, target=target, source=source, keys=keys,
                      sequence_by=sequence_by, stored_as_scd_type=stored_as_scd_type, **given)


_CDC_LISTS = ("column_list", "except_column_list", "track_history_column_list", "track_history_except_column_list",
              "ignore_null_updates_column_list", "ignore_null_updates_except_column_list")


def _declare_auto_cdc(location: SourceLocation, *, flow_name: str | None, once: bool, target: str, source: str,
                      keys: Any, sequence_by: Any, stored_as_scd_type: Any, **arguments: Any) -> None:
    """Check ``apply_changes`` / ``create_auto_cdc_flow`` arguments and register the AUTO CDC flow."""
    _check_name("apply_changes target", target, location)
    _check_name("apply_changes source", source, location)
    if sequence_by is None:
        raise _fail("DECLARATION_SEQUENCE_BY_REQUIRED", location, function="apply_changes")
    key_cols = _tuple_or_none(keys, "keys", location)
    if not key_cols:
        raise _fail("DECLARATION_KEYS_REQUIRED", location, function="apply_changes")
    scd = _scd_type(stored_as_scd_type, location)
    _check_cross_field_rules(arguments, scd, location)
    lists = {argument: _tuple_or_none(arguments[argument], argument, location) for argument in _CDC_LISTS}
    spec = ApplyChanges(
        source=source, keys=key_cols, sequence_by=sequence_by, where=arguments["where"],
        ignore_null_updates=bool(arguments["ignore_null_updates"]), apply_as_deletes=arguments["apply_as_deletes"],
        apply_as_truncates=arguments["apply_as_truncates"], stored_as_scd_type=scd,
        columns_to_update=arguments["columns_to_update"], **lists)
    name = _check_name("flow", flow_name if flow_name is not None else target, location)
    active_registry().add_flow(Flow(name=name, target=target, kind=FlowKind.AUTO_CDC, location=location,
                                    once=bool(once), cdc=spec))


def apply_changes_from_snapshot(target: str, source: Any = None, keys: Any = None,
                                stored_as_scd_type: str | int | None = None, snapshot_and_version: Any = None,
                                track_history_column_list: Any = None,
                                track_history_except_column_list: Any = None, *, name: str | None = None,
                                once: bool = False) -> None:
    """CDC from snapshots: compare consecutive snapshots of ``source`` and apply the differences (``once``: in
    the first update only, and again after a full refresh)."""
    _declare_snapshot_cdc(
        caller_location(), name=name, target=target, source=source, snapshot_and_version=snapshot_and_version,
        keys=keys, stored_as_scd_type=stored_as_scd_type, track_history_column_list=track_history_column_list,
        track_history_except_column_list=track_history_except_column_list, once=once)


def create_auto_cdc_from_snapshot_flow(target: str, source: Any = None, keys: Any = None,
                                       stored_as_scd_type: str | int | None = None,
                                       track_history_column_list: Any = None,
                                       track_history_except_column_list: Any = None,
                                       name: str | None = None, once: bool = False) -> None:
    """``dp`` spelling of :func:`apply_changes_from_snapshot` (``once`` as Databricks' reference documents it)."""
    _declare_snapshot_cdc(
        caller_location(), name=name, target=target, source=source, snapshot_and_version=None, keys=keys,
        stored_as_scd_type=stored_as_scd_type, track_history_column_list=track_history_column_list,
        track_history_except_column_list=track_history_except_column_list, once=once)


def _snapshot_source(source: Any, snapshot_and_version: Any, location: SourceLocation) -> Any:
    if source is not None and snapshot_and_version is not None:
        raise _fail("DECLARATION_ARGUMENTS_EXCLUSIVE", location, first="source", second="snapshot_and_version")
    chosen = source if source is not None else snapshot_and_version
    if chosen is None:
        raise _fail("DECLARATION_SOURCE_REQUIRED", location, function="apply_changes_from_snapshot")
    if isinstance(chosen, tuple) and len(chosen) == 2 and hasattr(chosen[0], "schema"):
        return _one_snapshot(*chosen)  # (DataFrame, version), as Databricks' snapshot demo passes it
    if not isinstance(chosen, str) and not callable(chosen):
        raise _fail("DECLARATION_SOURCE_TYPE", location, source_type=type(chosen).__name__)
    return chosen


def declare_auto_cdc_from_snapshot_flow(location: SourceLocation, *, target: str, source: str, keys: Any,
                                        stored_as_scd_type: Any, flow_name: str | None = None,
                                        once: bool = False, **track_history: Any) -> None:
    """An AUTO CDC FROM SNAPSHOT flow declared by other than Python code (DLT SQL): the same checks as
    :func:`create_auto_cdc_from_snapshot_flow`, with errors at ``location``."""
    _declare_snapshot_cdc(location, name=flow_name, target=target, source=source, snapshot_and_version=None,
                          keys=keys, stored_as_scd_type=stored_as_scd_type, once=once, **track_history)


def _one_snapshot(snapshot: Any, version: Any) -> Callable[[Any], Any]:
    """A ``next_snapshot_and_version`` function for one given snapshot: it is applied once, while its version is
    newer than the last one processed."""
    def next_snapshot_and_version(latest_version: Any) -> Any:
        return (snapshot, version) if latest_version is None or version > latest_version else None
    return next_snapshot_and_version


def _declare_snapshot_cdc(location: SourceLocation, *, name: str | None, target: str, source: Any,
                          snapshot_and_version: Any, keys: Any, stored_as_scd_type: Any, once: bool = False,
                          **track_history: Any) -> None:
    """Check ``apply_changes_from_snapshot`` / ``create_auto_cdc_from_snapshot_flow`` arguments and register."""
    _check_name("apply_changes_from_snapshot target", target, location)
    chosen = _snapshot_source(source, snapshot_and_version, location)
    key_cols = _tuple_or_none(keys, "keys", location)
    if not key_cols:
        raise _fail("DECLARATION_KEYS_REQUIRED", location, function="apply_changes_from_snapshot")
    scd = _scd_type(stored_as_scd_type, location)
    _check_cross_field_rules(track_history, scd, location)
    spec = ApplyChangesFromSnapshot(
        source=chosen, keys=key_cols, stored_as_scd_type=scd,
        **{argument: _tuple_or_none(track_history[argument], argument, location)
           for argument in _TRACK_HISTORY_LISTS})
    active_registry().add_flow(Flow(name=_check_name("flow", name or target, location), target=target,
                                    kind=FlowKind.AUTO_CDC_SNAPSHOT, location=location, snapshot_cdc=spec,
                                    once=bool(once)))


# ---------------------------------------------------------------------------------------------------- sinks
SINK_FORMATS = ("delta", "kafka")


def create_sink(name: str, format: str, options: dict[str, str] | None = None) -> None:
    """An external Delta table or Kafka topic that append flows can write to."""
    location = caller_location()
    _check_name("sink", name, location)
    if not isinstance(format, str) or format.lower() not in SINK_FORMATS:
        raise _fail("DECLARATION_SINK_FORMAT", location, sink=name, format=format,
                    supported=", ".join(SINK_FORMATS))
    opts = _dict(options)
    if format.lower() == "delta" and not ({"path", "tableName"} & set(opts)):
        raise _fail("DECLARATION_SINK_OPTIONS_REQUIRED", location, sink=name)
    active_registry().add_sink(Sink(name=name, format=format.lower(), options=opts, location=location))


def foreach_batch_sink(name: str | None = None) -> Callable[[Callable[[Any, int], Any]], Any]:
    """A sink whose handler ``handler(df, batch_id)`` receives each micro-batch."""
    location = caller_location()
    if callable(name):
        return _register_foreach(name, None, location)

    def decorate(fn: Callable[[Any, int], Any]) -> Any:
        return _register_foreach(fn, name, location)

    return decorate


def _register_foreach(fn: Callable[[Any, int], Any], name: str | None, location: SourceLocation) -> Any:
    sink_name = _check_name("sink", name or fn.__name__, location)
    if getattr(fn, _EXPECTATIONS_ATTR, ()):
        raise _fail("DECLARATION_EXPECTATIONS_ON_SINK", location, sink=sink_name)
    active_registry().add_sink(Sink(name=sink_name, format="foreach_batch", location=function_location(fn),
                                    handler=fn))
    setattr(fn, _SINK_ATTR, sink_name)
    return fn


def foreach_sink(name: Any = None, func: Callable[[Any], Any] | None = None, writer: Any = None) -> Any:
    """A ForEach sink: ``func(row)`` or ``writer.process(row)`` (with ``open(partition_id, epoch_id)`` and
    ``close(error)`` where the writer has them) for every row of each micro-batch (Spark's ``foreach``).
    ``@foreach_sink(name=...)`` decorates a row function; ``foreach_sink(name=..., writer=obj)`` or
    ``foreach_sink(name=..., func=fn)`` registers directly."""
    location = caller_location()
    if callable(name) and func is None and writer is None:  # bare @foreach_sink
        return _register_row_sink(name, None, location)
    if func is not None and writer is not None:
        raise _fail("DECLARATION_ARGUMENTS_EXCLUSIVE", location, first="func", second="writer")
    if writer is not None:
        if not callable(getattr(writer, "process", None)):
            raise _decorator_misuse("foreach_sink", writer, location)
        return _register_row_sink(writer, name or type(writer).__name__.lower(), location)
    if func is not None:
        return _register_row_sink(func, name, location)
    return lambda fn: _register_row_sink(fn, name, location)


def _register_row_sink(handler: Any, name: str | None, location: SourceLocation) -> Any:
    if not (callable(handler) or callable(getattr(handler, "process", None))):
        raise _decorator_misuse("foreach_sink", handler, location)
    sink_name = _check_name("sink", name or handler.__name__, location)
    if getattr(handler, _EXPECTATIONS_ATTR, ()):
        raise _fail("DECLARATION_EXPECTATIONS_ON_SINK", location, sink=sink_name)
    where = function_location(handler) if callable(handler) and hasattr(handler, "__code__") else location
    active_registry().add_sink(Sink(name=sink_name, format="foreach", location=where, row_writer=handler))
    return handler


def on_event_hook(user_event_hook_fn: Callable[..., Any] | None = None,
                  max_allowable_consecutive_failures: int | None = None) -> Any:
    """Register a function called with every event of the update (as a dict in the event-log shape)."""
    location = caller_location()

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        active_registry().event_hooks.append(EventHook(
            name=fn.__name__, function=fn, location=function_location(fn),
            max_allowable_consecutive_failures=max_allowable_consecutive_failures))
        return fn

    if user_event_hook_fn is not None:
        if not callable(user_event_hook_fn):
            raise _decorator_misuse("on_event_hook", user_event_hook_fn, location)
        return register(user_event_hook_fn)
    return register


# ---------------------------------------------------------------------------------------------------- reads
def read(name: str) -> Any:
    """A batch read of a pipeline dataset (or an external table)."""
    return current_reader().read(name)


def read_stream(name: str) -> Any:
    """A streaming read of a pipeline dataset (or an external table)."""
    return current_reader().read_stream(name)


readStream = read_stream


def enable_local_execution() -> None:
    """Kept for compatibility with the stubs: local execution is what this framework does."""
