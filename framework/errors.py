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
        """The problem as one line, ``file:line: [CODE] message`` (the location only where known), as
        :class:`ProblemsError` lists it."""
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

    def locate(self, file: str, line: int | None) -> None:
        """Give an error raised without a place the place it came from (a query function's line)."""
        self.file, self.line = file, line
        self.args = (self.render(), *self.args[1:])

    def render(self) -> str:
        """The error's text, ``[CODE] file:line: message`` (the location only where known)."""
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
        """The code of each problem, in the order reported."""
        return [p.code for p in self.problems]


class DeclarationError(PipelineError):
    """A decorator or declaration function was called with arguments Databricks would reject.

    Each failure has its own stable ``code`` (a key of :data:`DECLARATION_MESSAGES`) and keeps what it is about in
    ``params`` (the names and values its message is rendered from), so that callers and tests never read the text.
    """

    code = "INVALID_DECLARATION"

    def __init__(self, message: str, *, code: str | None = None, file: str | None = None, line: int | None = None,
                 params: dict[str, object] | None = None) -> None:
        self.params: dict[str, object] = dict(params or {})
        super().__init__(message, code=code, file=file, line=line)

    @classmethod
    def of(cls, code: str, *, file: str | None = None, line: int | None = None,
           **params: object) -> DeclarationError:
        """The error for ``code``, its message rendered from ``DECLARATION_MESSAGES[code]`` with ``params``.

        Args:
            code: a key of :data:`DECLARATION_MESSAGES`.
            file: the file of the faulty declaration.
            line: its line.
            **params: the values the message names; kept as ``params``.

        Returns:
            The error (the caller raises it).
        """
        return cls(DECLARATION_MESSAGES[code].format(**params), code=code, file=file, line=line, params=params)


# One code per declaration failure, with the message it renders (``str.format`` with the error's ``params``).
DECLARATION_MESSAGES: dict[str, str] = {
    # a decorator used the wrong way
    "DECLARATION_NOT_CALLABLE": (
        "@{decorator} got {argument_type} {argument!r} as its first positional argument, which is not a query "
        "function. Use it bare (`@{decorator}`) or with keyword arguments "
        "(`@{decorator}(name=\"my_table\", comment=\"...\")`)."),
    "DECLARATION_NOT_A_QUERY_FUNCTION": "@{decorator}(...) must decorate a query function, got {argument!r}",
    "DECLARATION_EXPECTATION_ABOVE_DATASET": (
        "@{decorator} is above @dlt.table/@dlt.view on '{function}': put expectation decorators below the dataset "
        "decorator (closer to the function)."),
    "DECLARATION_EXPECTATIONS_ON_SINK": "sink '{sink}': expectations are not allowed on sinks",
    # names and argument types
    "DECLARATION_NAME_INVALID": "{kind} name must be a non-empty string, got {name!r}",
    "DECLARATION_LIST_EXPECTED": "{argument} must be a list, got the string {value!r}; write [{value!r}]",
    "DECLARATION_SCHEMA_TYPE": "schema must be a DDL string or a StructType, got {schema_type}",
    "DECLARATION_SCHEMA_COLUMN": "schema: {detail}",
    "DECLARATION_FORMAT_UNSUPPORTED": "format={format!r} is not supported: pipeline tables are Delta tables",
    "DECLARATION_REFRESH_POLICY": (
        "refresh_policy must be one of 'auto', 'incremental', 'incremental_strict', 'full', got {value!r}"),
    "DECLARATION_LAYOUT_CONFLICT": "partition_cols and cluster_by cannot be used together: choose one layout",
    # expectations
    "DECLARATION_EXPECTATIONS_NOT_A_DICT": "{decorator} takes a dict of name -> constraint, got {argument_type}",
    "DECLARATION_CONSTRAINT_TYPE": (
        "expectation '{expectation}': the constraint must be a SQL string or a Column, got {constraint_type}"),
    "DECLARATION_CONSTRAINT_EMPTY": "expectation '{expectation}': the constraint is empty",
    "DECLARATION_REPLACE_WHERE_TYPE": (
        "replace_where must be a SQL predicate (a non-empty string) or a Column, e.g. "
        "replace_where=col(\"date\") >= date_sub(current_date(), 7); got {predicate!r}"),
    # flows, APPLY CHANGES and snapshots
    "DECLARATION_TARGET_REQUIRED": (
        "@{decorator}(...) needs `target=` naming a streaming table or sink: write "
        "@{decorator}(target=\"my_table\")"),
    "DECLARATION_SEQUENCE_BY_REQUIRED": "{function} needs sequence_by (a column name, col(...) or struct(...))",
    "DECLARATION_KEYS_REQUIRED": "{function} needs a non-empty list of keys, e.g. keys=[\"id\"]",
    "DECLARATION_SCD_TYPE_INVALID": "stored_as_scd_type must be 1 or 2 (int or string), got {value!r}",
    "DECLARATION_ARGUMENTS_EXCLUSIVE": "{first} and {second} cannot both be given: keep one of them",
    "DECLARATION_TRUNCATES_NEED_SCD1": (
        "apply_as_truncates is only supported with stored_as_scd_type=1, got stored_as_scd_type={scd_type}"),
    "DECLARATION_TRACK_HISTORY_NEEDS_SCD2": (
        "{argument} needs stored_as_scd_type=2 (it picks the columns whose changes start a new version), got "
        "stored_as_scd_type={scd_type}"),
    "DECLARATION_SOURCE_REQUIRED": (
        "{function} needs source= (a table/view name or a function "
        "next_snapshot_and_version(latest_version) -> (DataFrame, version) | None)"),
    "DECLARATION_SOURCE_TYPE": "source must be a table name or a function, got {source_type}",
    "DECLARATION_UNSUPPORTED_ARGUMENT": "{function}({argument}=...): {why}; remove the argument",
    # sinks
    "DECLARATION_SINK_FORMAT": "sink '{sink}': format must be one of {supported}, got {format!r}",
    "DECLARATION_SINK_OPTIONS_REQUIRED": (
        "delta sink '{sink}' needs options={{\"path\": ...}} or {{\"tableName\": ...}}"),
    # one name, two declarations
    "DECLARATION_DUPLICATE_DATASET": (
        "dataset '{name}' is defined twice (first at {first_file}:{first_line}). Give each table, view and sink a "
        "unique name."),
    "DECLARATION_DUPLICATE_SINK": (
        "sink '{name}' clashes with '{existing}' defined at {first_file}:{first_line}. Sinks and datasets share one "
        "namespace."),
    "DECLARATION_DUPLICATE_FLOW": (
        "flow '{name}' is defined twice (first at {first_file}:{first_line}). Pass a unique `name=` to "
        "@append_flow (or `flow_name=` to apply_changes)."),
    "DECLARATION_DUPLICATE_EXPECTATION": (
        "expectation '{name}' is declared twice on dataset '{dataset}' (also at {first_file}:{first_line}). "
        "Expectation names must be unique per dataset."),
}


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
    """An ``expect_or_fail`` expectation was violated: the flow was rolled back.

    Attributes:
        flow: the flow that failed. dataset: its target. expectations: the names of the violated rules.
        record: the offending record as JSON text (Spark's ``to_json`` of the row).
    """

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


@dataclass(frozen=True)
class CauseInfo:
    """One exception of a failure's cause chain, as the event log's ``error.exceptions`` shows it."""

    class_name: str
    message: str
    error_class: str | None = None

    def headline(self) -> str:
        """``Class: first line of the message`` (or ``[ERROR_CLASS] ...`` for Spark errors)."""
        first = next((line.strip() for line in self.message.splitlines() if line.strip()), "")
        short = self.class_name.rsplit(".", 1)[-1]
        return f"{short}: {first}" if first else short


class FlowError(PipelineError):
    """A flow failed at run time: its query function raised, or Spark failed while running it.

    Attributes:
        flow: the flow. dataset: its target. root: the root cause. chain: the whole cause chain, outermost
        first. retryable: True when running the flow again can succeed (Auto Loader widened a schema).
    """

    code = "FLOW_FAILED"

    def __init__(self, flow: str, dataset: str, root: CauseInfo, chain: Sequence[CauseInfo], *,
                 file: str | None = None, line: int | None = None, retryable: bool = False) -> None:
        self.flow = flow
        self.dataset = dataset
        self.root = root
        self.chain = tuple(chain)
        self.retryable = retryable
        super().__init__(f"flow '{flow}' failed: {root.headline()}", file=file, line=line)


class ConnectorMissingError(PipelineError):
    """A query reads a data source whose connector is not on Spark's class path (Kafka, Avro, ...)."""

    code = "DATA_SOURCE_NOT_FOUND"

    _PACKAGES = {"kafka": "spark-sql-kafka-0-10", "avro": "spark-avro"}

    def __init__(self, source_format: str) -> None:
        self.source_format = source_format
        artifact = self._PACKAGES.get(source_format.lower())
        if artifact is not None:
            try:
                from pyspark import __version__ as spark_version
            except ImportError:  # pragma: no cover - pyspark is a dependency
                spark_version = "<spark version>"
            fix = (f"its connector ships separately from Spark: add `spark.jars.packages: "
                   f"org.apache.spark:{artifact}_2.13:{spark_version}` under spark_conf in conf/spark.yaml "
                   "(fetched once from Maven Central)")
        else:
            fix = "add the jar that provides it to spark.jars or spark.jars.packages in conf/spark.yaml"
        super().__init__(f"the '{source_format}' data source is not on Spark's class path; {fix}")


class KafkaError(PipelineError):
    """A Kafka read or sink cannot be used, found on the driver before Spark plans the flow:
    ``KAFKA_BROKER_UNREACHABLE`` (no broker of ``kafka.bootstrap.servers`` answered in time),
    ``KAFKA_TOPIC_NOT_FOUND``, ``KAFKA_AUTHENTICATION_FAILED`` (SASL/SSL refused), ``KAFKA_OPTIONS_INVALID``.

    Attributes:
        servers: the bootstrap servers tried. topics: the topics concerned (missing ones for TOPIC_NOT_FOUND).
    """

    code = "KAFKA_ERROR"

    def __init__(self, message: str, *, code: str, servers: str = "", topics: Sequence[str] = ()) -> None:
        self.servers = servers
        self.topics = tuple(topics)
        super().__init__(message, code=code)


class SqlError(PipelineError):
    """A DLT SQL statement the framework cannot take: a parse error, an unsupported statement or clause. Names
    the file, line and column, and the dataset where known (``column`` holds the column)."""

    code = "SQL_ERROR"

    def __init__(self, message: str, *, code: str, file: str | None = None, line: int | None = None,
                 column: int | None = None, dataset: str | None = None) -> None:
        self.column = column
        self.dataset = dataset
        where = f"dataset '{dataset}': " if dataset else ""
        super().__init__(where + message, code=code, file=file, line=line)

    def render(self) -> str:
        """``[CODE] file:line:column: message``."""
        if self.file and self.line and self.column:
            return f"[{self.code}] {self.file}:{self.line}:{self.column}: {self.message}"
        return super().render()


class ConcurrentUpdateError(PipelineError):
    """Another update is running on the same storage root."""

    code = "UPDATE_ALREADY_RUNNING"


def full_refresh_command(dataset: str, spec: str = "<spec>") -> str:
    """The command that fully refreshes only ``dataset`` (its table, checkpoints and hidden state), as an error's
    fix says it; ``--full-refresh`` takes no name (it refreshes everything)."""
    return f"medallion run {spec} --full-refresh-select {dataset}"


class SchemaChangeError(PipelineError):
    """A persisted table or CDC target changed incompatibly; a full refresh is needed.

    Attributes:
        dataset: the dataset to refresh, when known; the message then ends with the command that does it.
    """

    code = "INCOMPATIBLE_CHANGE_REQUIRES_FULL_REFRESH"

    def __init__(self, message: str, *, dataset: str | None = None) -> None:
        self.dataset = dataset
        if dataset is not None:
            message += (f" To rebuild it: `{full_refresh_command(dataset)}` (on Databricks: a full refresh of "
                        f"'{dataset}' from the pipeline's UI or `full_refresh_selection`).")
        super().__init__(message)


class CdcError(PipelineError):
    """APPLY CHANGES input that breaks the contract (NULL key, NULL sequence, duplicate key+sequence)."""

    code = "APPLY_CHANGES_INVALID_INPUT"


class AutoLoaderError(PipelineError):
    """An Auto Loader (cloudFiles) option or file problem."""

    code = "CLOUD_FILES_ERROR"


class UnknownFieldError(AutoLoaderError):
    """A new column appeared in addNewColumns/failOnNewColumns mode: the schema was widened (or not) and the
    stream stopped, as Auto Loader does.

    Attributes:
        fields: the new columns (nested ones as paths). retryable: True when the schema was widened, so that
        running the flow again continues with the new columns (addNewColumns). where: the file or folder.
    """

    code = "UNKNOWN_FIELD_EXCEPTION"

    def __init__(self, fields: Iterable[str], *, retryable: bool, where: str, fix: str | None = None) -> None:
        self.fields = tuple(fields)
        self.retryable = retryable
        self.where = where
        fix = fix or ("the schema at the schema location is widened on the next start, which continues with the "
                      "new columns" if retryable else
                      "cloudFiles.schemaEvolutionMode is failOnNewColumns: add the columns to the schema "
                      "(schemaHints or a user schema), or use addNewColumns/rescue")
        super().__init__(
            f"[UNKNOWN_FIELD_EXCEPTION.NEW_FIELDS_IN_RECORD_WITH_FILE_PATH] Encountered unknown fields during "
            f"parsing: [{', '.join(self.fields)}], which can be fixed by an automatic retry: "
            f"{'true' if retryable else 'false'}. {where}. {fix}.")


class RuleFileError(ProblemsError):
    """A data-quality rule file has mistakes."""

    def __init__(self, source: str, problems: Sequence[Problem]) -> None:
        super().__init__(f"invalid rule file {source}: {len(problems)} problem(s)", problems,
                         code="INVALID_RULE_FILE")


class SqlSyntaxError(PipelineError):
    """A SQL library (``.sql`` file or SQL notebook) is not valid SQL: an unterminated string, quoted identifier
    or block comment, or a statement its grammar rejects.

    Attributes:
        column: the 1-based column where the problem starts (with ``file`` and ``line``), or None.
    """

    code = "SQL_SYNTAX_ERROR"

    def __init__(self, message: str, *, code: str | None = None, file: str | None = None, line: int | None = None,
                 column: int | None = None) -> None:
        self.column = column
        super().__init__(message, code=code, file=file, line=line)

    def render(self) -> str:
        """``[CODE] file:line:column: message`` (the column left out when unknown)."""
        if self.file and self.line and self.column:
            return f"[{self.code}] {self.file}:{self.line}:{self.column}: {self.message}"
        return super().render()


class ObjectStoreError(PipelineError):
    """An object store (``s3a://``) holding a pipeline's storage or files cannot be used, found before any flow
    runs: ``OBJECT_STORE_UNREACHABLE`` (no answer from the endpoint), ``OBJECT_STORE_ACCESS_DENIED`` (credentials
    refused), ``OBJECT_STORE_BUCKET_NOT_FOUND``, ``OBJECT_STORE_UNSAFE_COMMITS`` (a configuration under which
    two drivers could commit to one table, see ``framework/storage/url.py``), ``OBJECT_STORE_UNSUPPORTED``.

    Attributes:
        path: the path that could not be used.
    """

    code = "OBJECT_STORE_UNAVAILABLE"

    def __init__(self, message: str, *, code: str | None = None, path: str = "") -> None:
        self.path = path
        super().__init__(message, code=code)


class NotIncrementalizableError(PipelineError):
    """A materialized view with ``REFRESH POLICY INCREMENTAL STRICT`` cannot be refreshed incrementally.

    Attributes:
        dataset: the view. issues: ``(issue_type, reason)`` of each reason, as the planning_information event
        lists them.
    """

    code = "MATERIALIZED_VIEW_NOT_INCREMENTALIZABLE"

    def __init__(self, dataset: str, issues: Sequence[tuple[str, str]]) -> None:
        self.dataset = dataset
        self.issues = tuple(issues)
        reasons = "; ".join(f"{kind}: {reason}" for kind, reason in self.issues) or "no technique applies"
        super().__init__(f"materialized view '{dataset}' has REFRESH POLICY INCREMENTAL STRICT but cannot be "
                         f"refreshed incrementally ({reasons}). Change the query, or use REFRESH POLICY "
                         "INCREMENTAL or AUTO to allow a full recompute.")
