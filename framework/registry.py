"""The registry that pipeline code declares into, scoped with a ``ContextVar``.

Decorators register into the active registry; outside :func:`registration_context` they fail with a clear
error, as they do upstream. The registry only collects declarations; it never runs Spark.
"""

from __future__ import annotations

import contextvars
import difflib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace

from framework.declarations import Dataset, EventHook, Expectation, Flow, Sink, SourceLocation
from framework.errors import DeclarationError, RegistrationContextError


@dataclass
class Registry:
    """Everything one pipeline declares: datasets, flows, sinks and event hooks, in declaration order."""

    datasets: dict[str, Dataset] = field(default_factory=dict)
    flows: dict[str, Flow] = field(default_factory=dict)
    sinks: dict[str, Sink] = field(default_factory=dict)
    event_hooks: list[EventHook] = field(default_factory=list)
    catalog: str | None = None  # the pipeline's default catalog and schema (SQL's USE scope is relative to them)
    schema: str = "default"

    def add_dataset(self, dataset: Dataset) -> None:
        """Register ``dataset``; datasets and sinks share one case-insensitive namespace."""
        self._check_unique("DECLARATION_DUPLICATE_DATASET", dataset.name, dataset.location)
        self.datasets[normalize_name(dataset.name)] = dataset

    def add_sink(self, sink: Sink) -> None:
        """Register ``sink``; datasets and sinks share one case-insensitive namespace."""
        self._check_unique("DECLARATION_DUPLICATE_SINK", sink.name, sink.location)
        self.sinks[normalize_name(sink.name)] = sink

    def _check_unique(self, code: str, name: str, location: SourceLocation) -> None:
        existing = self.datasets.get(normalize_name(name)) or self.sinks.get(normalize_name(name))
        if existing is not None:
            raise DeclarationError.of(code, file=location.file, line=location.line, name=name,
                                      existing=existing.name, first_file=existing.location.file,
                                      first_line=existing.location.line)

    def add_flow(self, flow: Flow) -> None:
        """Register ``flow``; its name must be unique among flows (case-insensitively)."""
        key = normalize_name(flow.name)
        existing = self.flows.get(key)
        if existing is not None:
            raise DeclarationError.of("DECLARATION_DUPLICATE_FLOW", file=flow.location.file,
                                      line=flow.location.line, name=flow.name, existing=existing.name,
                                      first_file=existing.location.file, first_line=existing.location.line)
        self.flows[key] = flow

    def add_expectations(self, dataset_name: str, expectations: tuple[Expectation, ...]) -> None:
        """Attach expectations to an already declared dataset (used by create_streaming_table(expect_all=...))."""
        key = normalize_name(dataset_name)
        dataset = self.datasets[key]
        self.datasets[key] = replace(dataset, expectations=merge_expectations(
            dataset.name, dataset.expectations, expectations))

    def dataset(self, name: str) -> Dataset | None:
        """The dataset called ``name`` (any case), or None."""
        return self.datasets.get(normalize_name(name))

    def flows_into(self, target: str) -> list[Flow]:
        """The flows writing into ``target`` (any case), in declaration order."""
        key = normalize_name(target)
        return [f for f in self.flows.values() if normalize_name(f.target) == key]

    def did_you_mean(self, name: str) -> str:
        """A hint naming the declared dataset or sink closest to ``name``, or an empty string."""
        names = [d.name for d in self.datasets.values()] + [s.name for s in self.sinks.values()]
        close = difflib.get_close_matches(name, names, n=1)
        return f" Did you mean '{close[0]}'?" if close else ""


def normalize_name(name: str) -> str:
    """Dataset names are case-insensitive, as in the metastore."""
    return name.strip().lower()


def merge_expectations(dataset: str, first: tuple[Expectation, ...],
                       more: tuple[Expectation, ...]) -> tuple[Expectation, ...]:
    """``first`` then ``more``, refusing an expectation name that is already used on ``dataset``."""
    seen = {e.name: e for e in first}
    for exp in more:
        if exp.name in seen:
            earlier = seen[exp.name].location
            raise DeclarationError.of("DECLARATION_DUPLICATE_EXPECTATION", file=exp.location.file,
                                      line=exp.location.line, name=exp.name, dataset=dataset,
                                      first_file=earlier.file, first_line=earlier.line)
        seen[exp.name] = exp
    return (*first, *more)


_ACTIVE: contextvars.ContextVar[Registry | None] = contextvars.ContextVar("medallion_registry", default=None)


def active_registry() -> Registry:
    """The registry being declared into; fails outside a pipeline-loading context."""
    registry = _ACTIVE.get()
    if registry is None:
        raise RegistrationContextError(
            "no pipeline is being loaded: dataset and flow declarations (@dlt.table, @dlt.view, "
            "dlt.create_streaming_table, ...) only work inside a pipeline file run by the framework "
            "(`medallion run SPEC`, `framework.load_pipeline(...)`) or on Databricks.")
    return registry


def has_active_registry() -> bool:
    """Whether declarations made now would be registered (a pipeline is being loaded)."""
    return _ACTIVE.get() is not None


@contextmanager
def registration_context(registry: Registry | None = None) -> Iterator[Registry]:
    """Make ``registry`` (or a fresh one) the target of declarations within the block."""
    registry = registry if registry is not None else Registry()
    token = _ACTIVE.set(registry)
    try:
        yield registry
    finally:
        _ACTIVE.reset(token)
