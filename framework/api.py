"""The declaration API behind both spellings: ``import dlt`` and ``from pyspark import pipelines as dp``.

Decorators check their arguments, build frozen declarations (framework.declarations) and register them in
the active registry. Nothing here runs Spark. ``framework.shim.dlt`` and ``framework.shim.dp`` expose these
functions under Databricks' names and signatures.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Callable, Collection, Mapping
from typing import Any

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
    code = getattr(fn, "__code__", None)
    if code is None:
        return caller_location()
    return SourceLocation(code.co_filename, code.co_firstlineno)


def _fail(message: str, location: SourceLocation) -> DeclarationError:
    return DeclarationError(message, file=location.file, line=location.line)


def _decorator_misuse(decorator: str, arg: object, location: SourceLocation) -> DeclarationError:
    return _fail(
        f"@{decorator} got {type(arg).__name__} {arg!r} as its first positional argument, which is not a "
        f"query function. Use it bare (`@{decorator}`) or with keyword arguments "
        f"(`@{decorator}(name=\"my_table\", comment=\"...\")`).", location)


def _check_name(kind: str, name: object, location: SourceLocation) -> str:
    if not isinstance(name, str) or not name.strip():
        raise _fail(f"{kind} name must be a non-empty string, got {name!r}", location)
    return name


def _tuple_or_none(value: Any, what: str, location: SourceLocation) -> tuple[Any, ...] | None:
    if value is None:
        return None
    if isinstance(value, str):
        raise _fail(f"{what} must be a list, got the string {value!r}; write [{value!r}]", location)
    return tuple(value)


def _cols(value: Any, what: str, location: SourceLocation) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    return tuple(value)


def _dict(value: Mapping[str, Any] | None) -> dict[str, str]:
    return {str(k): str(v) for k, v in (value or {}).items()}


def _scd_type(value: Any, location: SourceLocation, *, default: int = 1) -> int:
    if value is None:
        return default
    if str(value).strip() in {"1", "2"}:
        return int(str(value).strip())
    raise _fail(f"stored_as_scd_type must be 1 or 2 (int or string), got {value!r}", location)


# ---------------------------------------------------------------------------------------------- expectations
def _expectation_decorator(action: ExpectationAction, expectations: Mapping[str, Any],
                           decorator: str) -> Callable[[QueryFunction], QueryFunction]:
    location = caller_location()
    built = _build_expectations(action, expectations, decorator, location)

    def decorate(fn: QueryFunction) -> QueryFunction:
        if not callable(fn):
            raise _fail(f"@{decorator}(...) must decorate a query function, got {fn!r}", location)
        if getattr(fn, _SINK_ATTR, None):
            raise _fail(f"sink '{getattr(fn, _SINK_ATTR)}': expectations are not allowed on sinks", location)
        if getattr(fn, _REGISTERED_ATTR, None):
            raise _fail(
                f"@{decorator} is above @dlt.table/@dlt.view on '{fn.__name__}': put expectation decorators "
                "below the dataset decorator (closer to the function).", location)
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
    return _expectation_decorator("warn", expectations, "expect_all")


def expect_all_or_drop(expectations: Mapping[str, Any]) -> Callable[[QueryFunction], QueryFunction]:
    return _expectation_decorator("drop", expectations, "expect_all_or_drop")


def expect_all_or_fail(expectations: Mapping[str, Any]) -> Callable[[QueryFunction], QueryFunction]:
    return _expectation_decorator("fail", expectations, "expect_all_or_fail")


def _build_expectations(action: ExpectationAction, expectations: Any, what: str,
                        location: SourceLocation) -> list[Expectation]:
    if not isinstance(expectations, Mapping):
        raise _fail(f"{what} takes a dict of name -> constraint, got {type(expectations).__name__}", location)
    built: list[Expectation] = []
    for name, constraint in expectations.items():
        _check_name("expectation", name, location)
        if not isinstance(constraint, str) and type(constraint).__name__ != "Column":
            raise _fail(f"expectation '{name}': the constraint must be a SQL string or a Column, got "
                        f"{type(constraint).__name__}", location)
        if isinstance(constraint, str) and not constraint.strip():
            raise _fail(f"expectation '{name}': the constraint is empty", location)
        built.append(Expectation(name, constraint, action, location))
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
def _register_dataset(fn: QueryFunction, *, kind: DatasetKind, decorator: str, name: str | None,
                      **options: Any) -> QueryFunction:
    location = function_location(fn)
    dataset_name = _check_name("dataset", name if name is not None else fn.__name__, location)
    expectations: tuple[Expectation, ...] = getattr(fn, _EXPECTATIONS_ATTR, ())
    registry = active_registry()
    dataset = Dataset(name=dataset_name, kind=kind, location=location, expectations=expectations, **options)
    registry.add_dataset(dataset)
    registry.add_flow(Flow(name=dataset_name, target=dataset_name, kind=FlowKind.QUERY, location=location,
                           query_function=fn, spark_conf=dataset.spark_conf, comment=dataset.comment))
    setattr(fn, _REGISTERED_ATTR, dataset_name)
    return fn


def _dataset_decorator(decorator: str, kind: DatasetKind, query_function: Any, name: str | None,
                       options: dict[str, Any]) -> Any:
    location = caller_location()
    if query_function is not None and not callable(query_function):
        raise _decorator_misuse(decorator, query_function, location)
    if name is not None:
        _check_name("dataset", name, location)
    if query_function is not None:
        return _register_dataset(query_function, kind=kind, decorator=decorator, name=name, **options)

    def decorate(fn: QueryFunction) -> QueryFunction:
        if not callable(fn):
            raise _decorator_misuse(decorator, fn, location)
        return _register_dataset(fn, kind=kind, decorator=decorator, name=name, **options)

    return decorate


def _table_options(location: SourceLocation, *, comment: str | None = None,
                   spark_conf: Mapping[str, str] | None = None, table_properties: Mapping[str, str] | None = None,
                   partition_cols: Collection[str] | None = None, path: str | None = None, schema: Any = None,
                   private: bool = False, cluster_by: Collection[str] | None = None,
                   cluster_by_auto: bool = False, row_filter: str | None = None,
                   refresh_policy: str | None = None) -> dict[str, Any]:
    parts = _cols(partition_cols, "partition_cols", location)
    clusters = _cols(cluster_by, "cluster_by", location)
    if parts and clusters:
        raise _fail("partition_cols and cluster_by cannot be used together: choose one layout", location)
    if schema is not None and not isinstance(schema, str) and type(schema).__name__ != "StructType":
        raise _fail(f"schema must be a DDL string or a StructType, got {type(schema).__name__}", location)
    return dict(comment=comment, spark_conf=_dict(spark_conf), table_properties=_dict(table_properties),
                partition_cols=parts, cluster_by=clusters, cluster_by_auto=bool(cluster_by_auto), path=path,
                schema=schema, private=bool(private), row_filter=row_filter, refresh_policy=refresh_policy)


def table(query_function: QueryFunction | None = None, name: str | None = None, comment: str | None = None,
          spark_conf: dict[str, str] | None = None, table_properties: dict[str, str] | None = None,
          partition_cols: list[str] | None = None, path: str | None = None, schema: Any = None,
          temporary: bool = False, cluster_by: list[str] | None = None, row_filter: str | None = None,
          *, private: bool | None = None, cluster_by_auto: bool = False, format: str | None = None,
          _spelling: str = "dlt.table") -> Any:
    """A table: a streaming table when the query is streaming, else a materialized view."""
    location = caller_location()
    options = _table_options(location, comment=comment, spark_conf=spark_conf, table_properties=table_properties,
                             partition_cols=partition_cols, path=path, schema=schema,
                             private=temporary if private is None else private, cluster_by=cluster_by,
                             cluster_by_auto=cluster_by_auto, row_filter=row_filter)
    _check_format(format, location)
    return _dataset_decorator(_spelling, DatasetKind.TABLE, query_function, name, options)


def materialized_view(query_function: QueryFunction | None = None, name: str | None = None,
                      comment: str | None = None, spark_conf: dict[str, str] | None = None,
                      table_properties: dict[str, str] | None = None, partition_cols: list[str] | None = None,
                      path: str | None = None, schema: Any = None, private: bool = False,
                      cluster_by: list[str] | None = None, row_filter: str | None = None,
                      cluster_by_auto: bool = False, refresh_policy: str | None = None,
                      format: str | None = None) -> Any:
    """A materialized view: a batch query recomputed on every update."""
    location = caller_location()
    options = _table_options(location, comment=comment, spark_conf=spark_conf, table_properties=table_properties,
                             partition_cols=partition_cols, path=path, schema=schema, private=private,
                             cluster_by=cluster_by, cluster_by_auto=cluster_by_auto, row_filter=row_filter,
                             refresh_policy=refresh_policy)
    _check_format(format, location)
    return _dataset_decorator("dp.materialized_view", DatasetKind.MATERIALIZED_VIEW, query_function, name,
                              options)


def view(query_function: QueryFunction | None = None, name: str | None = None, comment: str | None = None,
         spark_conf: dict[str, str] | None = None, *, _spelling: str = "dlt.view") -> Any:
    """A temporary view: computed when read, never stored."""
    return _dataset_decorator(_spelling, DatasetKind.VIEW, query_function, name,
                              dict(comment=comment, spark_conf=_dict(spark_conf)))


def _check_format(format: str | None, location: SourceLocation) -> None:
    if format is not None and format.lower() != "delta":
        raise _fail(f"format={format!r} is not supported: pipeline tables are Delta tables", location)


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
    _check_format(format, location)
    options = _table_options(location, comment=comment, spark_conf=spark_conf, table_properties=table_properties,
                             partition_cols=partition_cols, path=path, schema=schema, private=private,
                             cluster_by=cluster_by, cluster_by_auto=cluster_by_auto, row_filter=row_filter)
    expectations = _expectations_from_dicts(name, location, expect_all=expect_all,
                                            expect_all_or_drop=expect_all_or_drop,
                                            expect_all_or_fail=expect_all_or_fail)
    active_registry().add_dataset(Dataset(name=name, kind=DatasetKind.STREAMING_TABLE, location=location,
                                          expectations=expectations, declared_without_query=True, **options))


def _deprecated(old: str, new: str) -> None:
    warnings.warn(f"dlt.{old} is deprecated; use dlt.{new} instead", DeprecationWarning, stacklevel=3)


def create_streaming_live_table(*args: Any, **kwargs: Any) -> None:
    _deprecated("create_streaming_live_table", "create_streaming_table")
    create_streaming_table(*args, **kwargs)


def create_target_table(*args: Any, **kwargs: Any) -> None:
    _deprecated("create_target_table", "create_streaming_table")
    create_streaming_table(*args, **kwargs)


def create_table(*args: Any, **kwargs: Any) -> Any:
    _deprecated("create_table", "table")
    return table(*args, **kwargs)


def create_view(*args: Any, **kwargs: Any) -> Any:
    _deprecated("create_view", "view")
    return view(*args, **kwargs)


# ---------------------------------------------------------------------------------------------------- flows
def append_flow(name: str | None = None, target: str | None = None, comment: str | None = None,
                spark_conf: dict[str, str] | None = None, once: bool = False,
                *, depends_on: Any = None) -> Callable[[QueryFunction], None]:
    """A flow that appends its query's rows to a streaming table or a sink."""
    location = caller_location()
    if callable(name):
        raise _fail("@append_flow needs a target: write @append_flow(target=\"my_table\")", location)
    if target is None:
        raise _fail("@append_flow(...) needs `target=` naming a streaming table or sink", location)
    _check_name("append_flow target", target, location)

    def decorate(fn: QueryFunction) -> None:
        if not callable(fn):
            raise _decorator_misuse("append_flow", fn, location)
        flow_name = _check_name("flow", name if name is not None else fn.__name__, location)
        active_registry().add_flow(Flow(
            name=flow_name, target=target, kind=FlowKind.APPEND, location=function_location(fn),
            query_function=fn, once=bool(once), comment=comment, spark_conf=_dict(spark_conf),
            expectations=getattr(fn, _EXPECTATIONS_ATTR, ())))

    return decorate


def _column_list(value: Any, what: str, location: SourceLocation) -> tuple[Any, ...] | None:
    return _tuple_or_none(value, what, location)


def _exclusive(a: Any, b: Any, names: str, location: SourceLocation) -> None:
    if a is not None and b is not None:
        first, second = names.split("|")
        raise _fail(f"{first} and {second} cannot both be given: keep one of them", location)


def apply_changes(target: str, source: str, keys: Any, sequence_by: Any, where: Any = None,
                  ignore_null_updates: bool | None = None, apply_as_deletes: Any = None,
                  apply_as_truncates: Any = None, column_list: Any = None, except_column_list: Any = None,
                  stored_as_scd_type: str | int = "1", track_history_column_list: Any = None,
                  track_history_except_column_list: Any = None, flow_name: str | None = None,
                  once: bool = False, ignore_null_updates_column_list: Any = None,
                  ignore_null_updates_except_column_list: Any = None, columns_to_update: Any = None) -> None:
    """APPLY CHANGES INTO ``target`` from the CDC feed ``source`` (SCD type 1 or 2)."""
    location = caller_location()
    _check_name("apply_changes target", target, location)
    _check_name("apply_changes source", source, location)
    if sequence_by is None:
        raise _fail("apply_changes needs sequence_by (a column name, col(...) or struct(...))", location)
    key_cols = _tuple_or_none(keys, "keys", location)
    if not key_cols:
        raise _fail("apply_changes needs a non-empty list of keys, e.g. keys=[\"id\"]", location)
    scd = _scd_type(stored_as_scd_type, location)
    _exclusive(column_list, except_column_list, "column_list|except_column_list", location)
    _exclusive(track_history_column_list, track_history_except_column_list,
               "track_history_column_list|track_history_except_column_list", location)
    _exclusive(ignore_null_updates_column_list, ignore_null_updates_except_column_list,
               "ignore_null_updates_column_list|ignore_null_updates_except_column_list", location)
    if apply_as_truncates is not None and scd != 1:
        raise _fail("apply_as_truncates is only supported with stored_as_scd_type=1", location)
    if scd != 2 and (track_history_column_list is not None or track_history_except_column_list is not None):
        raise _fail("track_history_column_list / track_history_except_column_list need stored_as_scd_type=2",
                    location)
    spec = ApplyChanges(
        source=source, keys=key_cols, sequence_by=sequence_by, where=where,
        ignore_null_updates=bool(ignore_null_updates), apply_as_deletes=apply_as_deletes,
        apply_as_truncates=apply_as_truncates,
        column_list=_column_list(column_list, "column_list", location),
        except_column_list=_column_list(except_column_list, "except_column_list", location),
        stored_as_scd_type=scd,
        track_history_column_list=_column_list(track_history_column_list, "track_history_column_list", location),
        track_history_except_column_list=_column_list(track_history_except_column_list,
                                                      "track_history_except_column_list", location),
        ignore_null_updates_column_list=_column_list(ignore_null_updates_column_list,
                                                     "ignore_null_updates_column_list", location),
        ignore_null_updates_except_column_list=_column_list(ignore_null_updates_except_column_list,
                                                            "ignore_null_updates_except_column_list", location),
        columns_to_update=columns_to_update)
    name = _check_name("flow", flow_name if flow_name is not None else target, location)
    active_registry().add_flow(Flow(name=name, target=target, kind=FlowKind.AUTO_CDC, location=location,
                                    once=bool(once), cdc=spec))


def create_auto_cdc_flow(target: str, source: str, keys: Any, sequence_by: Any, where: Any = None,
                         ignore_null_updates: bool | None = None, apply_as_deletes: Any = None,
                         apply_as_truncates: Any = None, column_list: Any = None,
                         except_column_list: Any = None, stored_as_scd_type: str | int = "1",
                         track_history_column_list: Any = None, track_history_except_column_list: Any = None,
                         name: str | None = None, once: bool = False,
                         ignore_null_updates_column_list: Any = None,
                         ignore_null_updates_except_column_list: Any = None,
                         columns_to_update: Any = None) -> None:
    """``dp`` spelling of :func:`apply_changes` (the flow name parameter is ``name``)."""
    apply_changes(target, source, keys, sequence_by, where, ignore_null_updates, apply_as_deletes,
                  apply_as_truncates, column_list, except_column_list,
                  "1" if stored_as_scd_type is None else stored_as_scd_type, track_history_column_list,
                  track_history_except_column_list, name, once, ignore_null_updates_column_list,
                  ignore_null_updates_except_column_list, columns_to_update)


def apply_changes_from_snapshot(target: str, source: Any = None, keys: Any = None,
                                stored_as_scd_type: str | int | None = None, snapshot_and_version: Any = None,
                                track_history_column_list: Any = None,
                                track_history_except_column_list: Any = None, *, name: str | None = None
                                ) -> None:
    """CDC from snapshots: compare consecutive snapshots of ``source`` and apply the differences."""
    location = caller_location()
    _check_name("apply_changes_from_snapshot target", target, location)
    if source is not None and snapshot_and_version is not None:
        raise _fail("give either source= (a table/view name or a next_snapshot_and_version function) or "
                    "snapshot_and_version=, not both", location)
    src = source if source is not None else snapshot_and_version
    if src is None:
        raise _fail("apply_changes_from_snapshot needs source= (a table/view name or a function "
                    "next_snapshot_and_version(latest_version) -> (DataFrame, version) | None)", location)
    if not isinstance(src, str) and not callable(src):
        raise _fail(f"source must be a table name or a function, got {type(src).__name__}", location)
    key_cols = _tuple_or_none(keys, "keys", location)
    if not key_cols:
        raise _fail("apply_changes_from_snapshot needs a non-empty list of keys", location)
    scd = _scd_type(stored_as_scd_type, location)
    _exclusive(track_history_column_list, track_history_except_column_list,
               "track_history_column_list|track_history_except_column_list", location)
    if scd != 2 and (track_history_column_list is not None or track_history_except_column_list is not None):
        raise _fail("track_history_column_list / track_history_except_column_list need stored_as_scd_type=2",
                    location)
    spec = ApplyChangesFromSnapshot(
        source=src, keys=key_cols, stored_as_scd_type=scd,
        track_history_column_list=_column_list(track_history_column_list, "track_history_column_list", location),
        track_history_except_column_list=_column_list(track_history_except_column_list,
                                                      "track_history_except_column_list", location))
    active_registry().add_flow(Flow(name=_check_name("flow", name or target, location), target=target,
                                    kind=FlowKind.AUTO_CDC_SNAPSHOT, location=location, snapshot_cdc=spec))


def create_auto_cdc_from_snapshot_flow(target: str, source: Any = None, keys: Any = None,
                                       stored_as_scd_type: str | int | None = None,
                                       track_history_column_list: Any = None,
                                       track_history_except_column_list: Any = None,
                                       name: str | None = None) -> None:
    """``dp`` spelling of :func:`apply_changes_from_snapshot`."""
    apply_changes_from_snapshot(target, source, keys, stored_as_scd_type, None, track_history_column_list,
                                track_history_except_column_list, name=name)


# ---------------------------------------------------------------------------------------------------- sinks
SINK_FORMATS = ("delta", "kafka")


def create_sink(name: str, format: str, options: dict[str, str] | None = None) -> None:
    """An external Delta table or Kafka topic that append flows can write to."""
    location = caller_location()
    _check_name("sink", name, location)
    if not isinstance(format, str) or format.lower() not in SINK_FORMATS:
        raise _fail(f"sink '{name}': format must be one of {', '.join(SINK_FORMATS)}, got {format!r}", location)
    opts = _dict(options)
    if format.lower() == "delta" and not ({"path", "tableName"} & set(opts)):
        raise _fail(f"delta sink '{name}' needs options={{\"path\": ...}} or {{\"tableName\": ...}}", location)
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
        raise _fail(f"sink '{sink_name}': expectations are not allowed on sinks", location)
    active_registry().add_sink(Sink(name=sink_name, format="foreach_batch", location=function_location(fn),
                                    handler=fn))
    setattr(fn, _SINK_ATTR, sink_name)
    return fn


def on_event_hook(user_event_hook_fn: Callable[..., Any] | None = None,
                  max_allowable_consecutive_failures: int | None = None) -> Any:
    """Register a function called with every event of the update (as a dict in the event-log shape)."""
    location = caller_location()

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        active_registry().event_hooks.append(EventHook(fn.__name__, fn, max_allowable_consecutive_failures,
                                                       function_location(fn)))
        return fn

    if user_event_hook_fn is not None:
        if not callable(user_event_hook_fn):
            raise _decorator_misuse("on_event_hook", user_event_hook_fn, location)
        return register(user_event_hook_fn)
    return register


# ---------------------------------------------------------------------------------------------------- reads
def dp_table(query_function: QueryFunction | None = None, name: str | None = None, comment: str | None = None,
             spark_conf: dict[str, str] | None = None, table_properties: dict[str, str] | None = None,
             partition_cols: list[str] | None = None, path: str | None = None, schema: Any = None,
             temporary: bool = False, cluster_by: list[str] | None = None, row_filter: str | None = None,
             *, private: bool | None = None, cluster_by_auto: bool = False, format: str | None = None) -> Any:
    """``dp.table``: a streaming table when the query is streaming, else a materialized view."""
    return table(query_function, name, comment, spark_conf, table_properties, partition_cols, path, schema,
                 temporary, cluster_by, row_filter, private=private, cluster_by_auto=cluster_by_auto,
                 format=format, _spelling="dp.table")


def temporary_view(query_function: QueryFunction | None = None, name: str | None = None,
                   comment: str | None = None, spark_conf: dict[str, str] | None = None) -> Any:
    """``dp.temporary_view``: computed when read, never stored."""
    return view(query_function, name, comment, spark_conf, _spelling="dp.temporary_view")


def read(name: str) -> Any:
    """A batch read of a pipeline dataset (or an external table)."""
    return current_reader().read(name)


def read_stream(name: str) -> Any:
    """A streaming read of a pipeline dataset (or an external table)."""
    return current_reader().read_stream(name)


readStream = read_stream


def enable_local_execution() -> None:
    """Kept for compatibility with the stubs: local execution is what this framework does."""
