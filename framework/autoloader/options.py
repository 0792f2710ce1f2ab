"""Auto Loader (``cloudFiles``) options: parsing, defaults and validation (no Spark needed).

Option keys are case-insensitive, as in Spark. Every problem raises :class:`AutoLoaderError` naming the option and
the fix; unknown options get a "did you mean" suggestion (``cloudFiles.validateOptions`` true, the default).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from framework.errors import AutoLoaderError

FORMATS = ("json", "csv", "parquet", "avro", "text", "binaryfile", "xml", "orc")
CANONICAL_FORMAT = {"binaryfile": "binaryFile"}
EVOLUTION_MODES = {"addnewcolumns": "addNewColumns", "rescue": "rescue", "failonnewcolumns": "failOnNewColumns",
                   "none": "none"}
DEFAULT_MAX_FILES_PER_TRIGGER = 1000
DEFAULT_RETENTION_S = 30 * 86400.0

# Options Auto Loader itself understands (``cloudFiles.`` prefix).
CLOUD_FILES_OPTIONS = (
    "allowOverwrites", "backfillInterval", "cleanSource", "cleanSource.moveDestination",
    "cleanSource.retentionDuration", "cleanSource.waitForCompletion", "format", "includeExistingFiles",
    "inferColumnTypes", "maxBytesPerTrigger", "maxFileAge", "maxFilesPerTrigger", "partitionColumns",
    "schemaEvolutionMode", "schemaHints", "schemaLocation", "useStrictGlobber", "validateOptions",
    "useIncrementalListing", "useNotifications", "useManagedFileEvents", "fetchParallelism", "pathRewrites",
    "resourceTag", "region", "queueUrl", "roleArn", "roleExternalId", "roleSessionName", "stsEndpoint",
    "connectionString", "resourceGroup", "subscriptionId", "tenantId", "clientId", "clientSecret", "queueName",
    "projectId", "subscription", "client", "clientEmail", "privateKey", "privateKeyId",
    "schemaInference.sampleSize.numFiles", "schemaInference.sampleSize.numBytes",
    # Not in the options reference, but Databricks accepts it under validateOptions and its own demos set it
    # (the DMS CDC demo, the feature-store streaming demo): a no-op, Auto Loader infers whenever no schema is given.
    "inferSchema",
)
# Options of the file source and every format (no prefix).
GENERIC_OPTIONS = ("ignoreCorruptFiles", "ignoreMissingFiles", "modifiedAfter", "modifiedBefore",
                   "pathGlobFilter", "fileNamePattern", "recursiveFileLookup", "rescuedDataColumn", "mergeSchema", "encoding",
                   "charset", "readerCaseSensitive", "mode", "badRecordsPath", "columnNameOfCorruptRecord",
                   "lineSep", "locale", "timeZone", "dateFormat", "timestampFormat", "timestampNTZFormat",
                   "multiLine", "datetimeRebaseMode", "int96RebaseMode", "samplingRatio")
FORMAT_OPTIONS: dict[str, tuple[str, ...]] = {
    "json": ("allowBackslashEscapingAnyCharacter", "allowComments", "allowNonNumericNumbers",
             "allowNumericLeadingZeros", "allowSingleQuotes", "allowUnquotedControlChars",
             "allowUnquotedFieldNames", "dropFieldIfAllNull", "inferTimestamp", "prefersDecimal",
             "primitivesAsString", "singleVariantColumn"),
    "csv": ("charToEscapeQuoteEscaping", "comment", "delimiter", "sep", "emptyValue", "enforceSchema", "escape",
            "header", "ignoreLeadingWhiteSpace", "ignoreTrailingWhiteSpace", "inferSchema", "maxCharsPerColumn",
            "maxColumns", "nanValue", "negativeInf", "nullValue", "parserCaseSensitive", "positiveInf",
            "preferDate", "quote", "skipRows", "unescapedQuoteHandling", "escapeQuotes"),
    "parquet": (),
    "orc": (),
    "avro": ("avroSchema",),
    "text": ("wholeText", "wholetext"),
    "binaryfile": (),
    "xml": ("rowTag", "rootTag", "excludeAttribute", "attributePrefix", "valueTag", "ignoreSurroundingSpaces",
            "rowValidationXSDPath", "ignoreNamespace", "declaration", "arrayElementName", "nullValue",
            "wildcardColName", "inferSchema"),
}
# Options that only matter with cloud notifications or Databricks services: accepted, no effect locally.
NO_OP_OPTIONS = {o.lower() for o in (
    "backfillInterval", "useStrictGlobber", "useIncrementalListing", "useNotifications", "useManagedFileEvents",
    "fetchParallelism", "pathRewrites", "resourceTag", "region", "queueUrl", "roleArn", "roleExternalId",
    "roleSessionName", "stsEndpoint", "connectionString", "resourceGroup", "subscriptionId", "tenantId",
    "clientId", "clientSecret", "queueName", "projectId", "subscription", "client", "clientEmail", "privateKey",
    "privateKeyId", "cleanSource.waitForCompletion", "badRecordsPath")}

_UNITS = {"ms": 0.001, "millisecond": 0.001, "s": 1.0, "sec": 1.0, "second": 1.0, "m": 60.0, "min": 60.0,
          "minute": 60.0, "h": 3600.0, "hour": 3600.0, "d": 86400.0, "day": 86400.0, "w": 604800.0,
          "week": 604800.0, "month": 30 * 86400.0, "year": 365 * 86400.0}


def parse_duration(text: str, option: str) -> float:
    """Parse an interval string such as ``"30 days"``, ``"1 hour 30 minutes"``, ``"10s"`` or ``"0"`` into seconds.

    Raises:
        AutoLoaderError: the text is not an interval.
    """
    s = text.strip().lower()
    if s.startswith("interval"):
        s = s[len("interval"):].strip()
    if re.fullmatch(r"\d+(\.\d+)?", s):
        return float(s)
    parts = re.findall(r"(\d+(?:\.\d+)?)\s*([a-z]+)", s)
    rebuilt = "".join(f"{n}{u}" for n, u in parts)
    if not parts or rebuilt != re.sub(r"\s+", "", s):
        raise AutoLoaderError(f"option '{option}' = '{text}' is not an interval; use e.g. '30 days', '1 hour' or "
                              "'0 seconds'")
    total = 0.0
    for number, unit in parts:
        key = unit if unit in _UNITS else unit[:-1] if unit.endswith("s") else unit
        if key not in _UNITS:
            raise AutoLoaderError(f"option '{option}' = '{text}': unknown time unit '{unit}'; use seconds, "
                                  "minutes, hours, days or weeks")
        total += float(number) * _UNITS[key]
    return total


def parse_bytes(text: str, option: str) -> int:
    """Parse a byte size such as ``"10g"``, ``"512m"``, ``"1024"`` into bytes."""
    m = re.fullmatch(r"\s*(\d+)\s*([kmgt]?)b?\s*", text.lower())
    if not m:
        raise AutoLoaderError(f"option '{option}' = '{text}' is not a byte size; use e.g. '10g', '512m' or '1024'")
    return int(m.group(1)) * 1024 ** " kmgt".index(m.group(2) or " ")


def _parse_bool(text: str, option: str) -> bool:
    value = text.strip().lower()
    if value in ("true", "false"):
        return value == "true"
    raise AutoLoaderError(f"option '{option}' = '{text}' must be 'true' or 'false'")


def _parse_int(text: str, option: str, minimum: int = 1) -> int:
    try:
        value = int(text.strip())
    except ValueError:
        raise AutoLoaderError(f"option '{option}' = '{text}' must be an integer >= {minimum}") from None
    if value < minimum:
        raise AutoLoaderError(f"option '{option}' = '{text}' must be an integer >= {minimum}")
    return value


def _parse_timestamp(text: str, option: str) -> datetime:
    try:
        ts = datetime.fromisoformat(text.strip())
    except ValueError:
        raise AutoLoaderError(f"option '{option}' = '{text}' is not a timestamp; use the form "
                              "YYYY-MM-DDTHH:mm:ss, e.g. 2024-06-01T13:00:00") from None
    return ts if ts.tzinfo else ts.replace(tzinfo=UTC)


@dataclass(frozen=True)
class CloudFilesOptions:
    """The parsed ``cloudFiles`` options of one stream.

    ``reader_options`` holds the format options passed on to Spark's parsers (json/csv/xml/...), with Spark's
    own spelling; everything Auto Loader-specific is a typed field.
    """

    format: str
    schema_location: str | None = None
    infer_column_types: bool = False
    schema_hints: str | None = None
    evolution_mode: str | None = None
    include_existing_files: bool = True
    max_files_per_trigger: int | None = None
    max_bytes_per_trigger: int | None = None
    max_file_age: str | None = None
    allow_overwrites: bool = False
    partition_columns: tuple[str, ...] | None = None
    clean_source: str = "OFF"
    move_destination: str | None = None
    retention_s: float = DEFAULT_RETENTION_S
    rescued_data_column: str | None = None
    path_glob_filter: str | None = None
    recursive_file_lookup: bool = False
    modified_after: datetime | None = None
    modified_before: datetime | None = None
    reader_case_sensitive: bool = True
    ignore_missing_files: bool = False
    ignore_corrupt_files: bool = False
    multi_line: bool = False
    sample_files: int = 1000
    sample_bytes: int = 50 * 1024**3
    reader_options: dict[str, str] = field(default_factory=dict)

    def option(self, name: str, default: str | None = None) -> str | None:
        """A reader option by case-insensitive name."""
        for key, value in self.reader_options.items():
            if key.lower() == name.lower():
                return value
        return default


def _known_names(fmt: str) -> dict[str, str]:
    names = {f"cloudfiles.{o.lower()}": f"cloudFiles.{o}" for o in CLOUD_FILES_OPTIONS}
    for o in GENERIC_OPTIONS + FORMAT_OPTIONS.get(fmt, ()):
        names[o.lower()] = o
    return names


def _all_names() -> list[str]:
    names = {f"cloudFiles.{o}" for o in CLOUD_FILES_OPTIONS} | set(GENERIC_OPTIONS)
    for opts in FORMAT_OPTIONS.values():
        names |= set(opts)
    return sorted(names)


def suggest(name: str, candidates: list[str]) -> str:
    """A ' Did you mean ...?' suffix, or an empty string."""
    lowered = {c.lower(): c for c in candidates}
    close = difflib.get_close_matches(name.lower(), list(lowered), n=1, cutoff=0.6)
    if not close and not name.lower().startswith("cloudfiles."):
        close = difflib.get_close_matches(f"cloudfiles.{name.lower()}", list(lowered), n=1, cutoff=0.6)
    return f" Did you mean '{lowered[close[0]]}'?" if close else ""


def parse_options(options: dict[str, str], *, user_schema: bool) -> CloudFilesOptions:
    """Parse and validate the options given to ``readStream.format("cloudFiles")``.

    Args:
        options: option name → value, as collected from ``.option(...)`` / ``.options(...)`` calls.
        user_schema: whether the stream has a user schema (changes the evolution-mode default, and CSV's
            ``header`` default: true when the schema is inferred, as Auto Loader assumes a header row then).

    Returns:
        The typed options.

    Raises:
        AutoLoaderError: a missing or unknown format, an unknown option (with a suggestion), a bad value, or an
            inconsistent combination.
    """
    opts = {str(k).lower(): str(v) for k, v in options.items()}
    fmt = _format(opts.get("cloudfiles.format"))
    known = _known_names(fmt)
    if _parse_bool(opts.get("cloudfiles.validateoptions", "true"), "cloudFiles.validateOptions"):
        _check_known(options, fmt, known)

    def get(name: str) -> str | None:
        return opts.get(name.lower())

    if fmt == "json" and get("singleVariantColumn"):
        raise AutoLoaderError("option 'singleVariantColumn' is not supported locally by cloudFiles; remove it")
    rescued = get("rescuedDataColumn")
    if rescued is not None and not rescued.strip():
        raise AutoLoaderError("option 'rescuedDataColumn' is empty: give a column name such as '_rescued_data'")
    reader_options = _reader_options(options, known)
    if fmt == "csv" and not user_schema and "header" not in opts:
        # Auto Loader's rule: "When inferring schema for CSV data, Auto Loader assumes that the files contain
        # headers" (docs: Auto Loader schema inference); Databricks' DMS CDC demo reads DMS files this way
        reader_options["header"] = "true"
    clean, move_dest, retention_s = _clean_source(get)
    return CloudFilesOptions(
        format=CANONICAL_FORMAT.get(fmt, fmt),
        schema_location=get("cloudFiles.schemaLocation"),
        evolution_mode=_evolution_mode(get("cloudFiles.schemaEvolutionMode"), user_schema),
        schema_hints=get("cloudFiles.schemaHints"),
        max_file_age=get("cloudFiles.maxFileAge"),
        partition_columns=_partition_columns(get("cloudFiles.partitionColumns")),
        clean_source=clean, move_destination=move_dest, retention_s=retention_s,
        rescued_data_column=rescued.strip() if rescued else None,
        path_glob_filter=get("pathGlobFilter") or get("fileNamePattern"),
        modified_after=_parse_timestamp(v, "modifiedAfter") if (v := get("modifiedAfter")) else None,
        modified_before=_parse_timestamp(v, "modifiedBefore") if (v := get("modifiedBefore")) else None,
        max_files_per_trigger=(_parse_int(v, "cloudFiles.maxFilesPerTrigger")
                               if (v := get("cloudFiles.maxFilesPerTrigger")) else None),
        max_bytes_per_trigger=(parse_bytes(v, "cloudFiles.maxBytesPerTrigger")
                               if (v := get("cloudFiles.maxBytesPerTrigger")) else None),
        sample_files=_parse_int(get("cloudFiles.schemaInference.sampleSize.numFiles") or "1000",
                                "cloudFiles.schemaInference.sampleSize.numFiles"),
        sample_bytes=parse_bytes(get("cloudFiles.schemaInference.sampleSize.numBytes") or "50g",
                                 "cloudFiles.schemaInference.sampleSize.numBytes"),
        reader_options=reader_options,
        **{name: _parse_bool(get(option) or default, option) for name, (option, default) in _FLAGS.items()},
    )


# CloudFilesOptions field -> (option, default) of the true/false options
_FLAGS = {
    "infer_column_types": ("cloudFiles.inferColumnTypes", "false"),
    "include_existing_files": ("cloudFiles.includeExistingFiles", "true"),
    "allow_overwrites": ("cloudFiles.allowOverwrites", "false"),
    "recursive_file_lookup": ("recursiveFileLookup", "false"),
    "reader_case_sensitive": ("readerCaseSensitive", "true"),
    "ignore_missing_files": ("ignoreMissingFiles", "false"),
    "ignore_corrupt_files": ("ignoreCorruptFiles", "false"),
    "multi_line": ("multiLine", "false"),
}
# generic options that are typed fields, not passed on to the format's parser
_TYPED_GENERIC = {"rescueddatacolumn", "pathglobfilter", "filenamepattern", "recursivefilelookup", "modifiedafter",
                  "modifiedbefore", "readercasesensitive", "ignoremissingfiles", "ignorecorruptfiles", "multiline"}


def _format(raw_format: str | None) -> str:
    formats = ", ".join(CANONICAL_FORMAT.get(f, f) for f in FORMATS)
    if raw_format is None:
        raise AutoLoaderError("option 'cloudFiles.format' is required: add .option(\"cloudFiles.format\", "
                              f"\"json\") (one of {formats})")
    fmt = raw_format.strip().lower()
    if fmt not in FORMATS:
        raise AutoLoaderError(f"option 'cloudFiles.format' = '{raw_format}' is not a supported format; use one of "
                              f"{formats}.{suggest(fmt, list(FORMATS))}")
    return fmt


def _check_known(options: dict[str, str], fmt: str, known: dict[str, str]) -> None:
    for key in options:
        if key.lower() not in known:
            in_other = [f for f, names in FORMAT_OPTIONS.items() if key.lower() in {n.lower() for n in names}]
            hint = (f" It is an option of the {', '.join(in_other)} format, not of {fmt}."
                    if in_other else suggest(key, list(known.values())) or suggest(key, _all_names()))
            raise AutoLoaderError(f"unknown Auto Loader option '{key}' for cloudFiles.format '{fmt}'.{hint} "
                                  "Remove it, or set cloudFiles.validateOptions to false to ignore it.")


def _evolution_mode(text: str | None, user_schema: bool) -> str | None:
    if text is None:
        return None
    mode = EVOLUTION_MODES.get(text.strip().lower())
    if mode is None:
        raise AutoLoaderError(f"option 'cloudFiles.schemaEvolutionMode' = '{text}' is not valid; use one "
                              "of addNewColumns, rescue, failOnNewColumns, none")
    if user_schema and mode == "addNewColumns":
        raise AutoLoaderError("cloudFiles.schemaEvolutionMode 'addNewColumns' is not supported when a schema "
                              "is given with .schema(...): remove the schema (and let Auto Loader infer it, "
                              "with cloudFiles.schemaHints) or use 'rescue' / 'none'")
    return mode


def _clean_source(get: Callable[[str], str | None]) -> tuple[str, str | None, float]:
    """``cloudFiles.cleanSource`` (OFF, MOVE or DELETE), its move destination and its retention in seconds."""
    clean = (get("cloudFiles.cleanSource") or "OFF").strip().upper()
    if clean not in ("OFF", "MOVE", "DELETE"):
        raise AutoLoaderError(f"option 'cloudFiles.cleanSource' = '{get('cloudFiles.cleanSource')}' is not valid; "
                              "use OFF, MOVE or DELETE")
    move_dest = get("cloudFiles.cleanSource.moveDestination")
    if clean == "MOVE" and not move_dest:
        raise AutoLoaderError("cloudFiles.cleanSource is MOVE but cloudFiles.cleanSource.moveDestination is not "
                              "set: give the archive folder (outside the source folder)")
    retention = get("cloudFiles.cleanSource.retentionDuration")
    retention_s = (parse_duration(retention, "cloudFiles.cleanSource.retentionDuration") if retention
                   else DEFAULT_RETENTION_S)
    return clean, move_dest, retention_s


def _partition_columns(text: str | None) -> tuple[str, ...] | None:
    return None if text is None else tuple(p.strip() for p in text.split(",") if p.strip())


def _reader_options(options: dict[str, str], known: dict[str, str]) -> dict[str, str]:
    """The options passed on to the format's parser, in Spark's spelling."""
    return {known.get(k.lower(), k): v for k, v in options.items()
            if not k.lower().startswith("cloudfiles.") and k.lower() not in _TYPED_GENERIC
            and k.lower() not in NO_OP_OPTIONS}
