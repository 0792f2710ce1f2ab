"""One error hierarchy for the whole framework.

Every error carries a stable ``code`` (tests assert it), a message that names the object, the file and line where
known, and the fix. ``PipelineError`` is the root: catch it to handle anything the framework raises on purpose.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    """One problem found while validating something that can have many (a spec, a graph, a rule file)."""

    code: str
    message: str
    file: str | None = None
    line: int | None = None

    def render(self) -> str:
        where = ""
        if self.file:
            where = f"{self.file}:{self.line}: " if self.line else f"{self.file}: "
        return f"{where}[{self.code}] {self.message}"


class PipelineError(Exception):
    """Root of every error the framework raises on purpose."""

    code = "PIPELINE_ERROR"

    def __init__(self, message: str, *, code: str | None = None, file: str | None = None,
                 line: int | None = None) -> None:
        if code is not None:
            self.code = code
        self.file = file
        self.line = line
        self.message = message
        super().__init__(self.render())

    def render(self) -> str:
        where = ""
        if self.file:
            where = f"{self.file}:{self.line}: " if self.line else f"{self.file}: "
        return f"[{self.code}] {where}{self.message}"


class ProblemsError(PipelineError):
    """Several problems reported at once (a spec, a graph or a rule file with more than one mistake)."""

    def __init__(self, summary: str, problems: Sequence[Problem], *, code: str) -> None:
        self.problems = tuple(problems)
        lines = [summary] + [f"  - {p.render()}" for p in self.problems]
        super().__init__("\n".join(lines), code=code)

    @property
    def codes(self) -> list[str]:
        return [p.code for p in self.problems]


class DeclarationError(PipelineError):
    """A decorator or declaration function was called with arguments Databricks would reject."""

    code = "INVALID_DECLARATION"


class RegistrationContextError(PipelineError):
    """A decorator was used outside a pipeline registration context."""

    code = "NO_ACTIVE_PIPELINE"


class LoadError(PipelineError):
    """A pipeline library (file, notebook, glob) could not be loaded."""

    code = "LIBRARY_LOAD_FAILED"


class SpecError(ProblemsError):
    """A pipeline spec (YAML or Databricks settings JSON) is invalid."""

    def __init__(self, source: str, problems: Sequence[Problem]) -> None:
        super().__init__(f"invalid pipeline spec {source}: {len(problems)} problem(s)", problems,
                         code="INVALID_SPEC")


class GraphError(ProblemsError):
    """The dataset graph has unresolved names, cycles or batch/streaming mismatches."""

    def __init__(self, problems: Sequence[Problem]) -> None:
        super().__init__(f"the pipeline graph is invalid: {len(problems)} problem(s)", problems,
                         code="INVALID_GRAPH")


class PathMappingError(PipelineError):
    """A Databricks path (dbfs:/, /Volumes/, ...) has no local mapping."""

    code = "UNMAPPED_DATABRICKS_PATH"


class EnvironmentSetupError(PipelineError):
    """The local environment is incomplete (missing Delta jars, wrong Java, ...)."""

    code = "ENVIRONMENT_NOT_READY"


class UpdateError(PipelineError):
    """A pipeline update failed; carries the per-flow failures."""

    code = "UPDATE_FAILED"


class ExpectationViolation(PipelineError):
    """An ``expect_or_fail`` expectation was violated: the flow was rolled back."""

    code = "EXPECTATION_VIOLATION"

    def __init__(self, flow: str, dataset: str, expectations: Iterable[str], record: str) -> None:
        self.flow = flow
        self.dataset = dataset
        self.expectations = tuple(expectations)
        self.record = record
        names = ", ".join(f"'{e}'" for e in self.expectations)
        super().__init__(
            f"Flow '{flow}' failed due to a failed expectation: the record {record} violated "
            f"expectation(s) {names} on dataset '{dataset}'. Nothing was written for this flow; fix the data "
            "or the rule, then run the update again."
        )


class ConcurrentUpdateError(PipelineError):
    """Another update is running on the same storage root."""

    code = "UPDATE_ALREADY_RUNNING"


class SchemaChangeError(PipelineError):
    """A persisted table or CDC target changed incompatibly; a full refresh is needed."""

    code = "INCOMPATIBLE_CHANGE_REQUIRES_FULL_REFRESH"


class CdcError(PipelineError):
    """APPLY CHANGES input that breaks the contract (NULL key, NULL sequence, duplicate key+sequence)."""

    code = "APPLY_CHANGES_INVALID_INPUT"


class AutoLoaderError(PipelineError):
    """An Auto Loader (cloudFiles) option or file problem."""

    code = "CLOUD_FILES_ERROR"


class UnknownFieldError(AutoLoaderError):
    """A new column appeared in addNewColumns/failOnNewColumns mode: the schema was widened (or not) and the
    stream stopped, as Auto Loader does."""

    code = "UNKNOWN_FIELD_EXCEPTION"


class RuleFileError(ProblemsError):
    """A data-quality rule file has mistakes."""

    def __init__(self, source: str, problems: Sequence[Problem]) -> None:
        super().__init__(f"invalid rule file {source}: {len(problems)} problem(s)", problems,
                         code="INVALID_RULE_FILE")
