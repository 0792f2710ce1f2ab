"""The record parsers of the framework's jar (``jvm/src/medallion/autoloader``), as Spark SQL functions.

The jar is built at set-up when a JDK is present (``framework/runner/jars.py``). Without it, or with the session
setting ``medallion.autoloader.jvmParser=false``, :mod:`framework.autoloader.records` builds the same columns from
Spark's built-in expressions (slower: every JSON value goes through ``from_json`` into a map, CSV files are read
whole).

Each parser object carries its configuration (the schema's columns, parser options), so a query registers its
own function, named after the configuration's hash, and rows pass only their data.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from py4j.protocol import Py4JJavaError
from pyspark.errors.exceptions.captured import CapturedException
from pyspark.sql import SparkSession
from pyspark.sql.types import StructField

from framework import internals
from framework.autoloader.schemas import has_struct
from framework.errors import AutoLoaderError

SWITCH = "medallion.autoloader.jvmParser"
SEP = "\u0001"


@dataclass(frozen=True)
class Parser:
    """A parser of the jar: the prefix of its function names, its SQL return type, its ``Register`` method."""

    name: str
    return_type: str
    register: str


REGISTER_CLASS = "medallion.autoloader.Register"
JSON_FIELDS = Parser("medallion_json_fields", "struct<v:array<string>,u:map<string,string>>", "json")
# non-deterministic: it takes a file's header line before the file's records, so it must see each line once, in
# order (Spark neither repeats nor reorders a non-deterministic expression)
CSV_LINES = Parser("medallion_csv_lines",
                   "struct<r:string,v:array<string>,u:map<string,string>,h:array<string>,s:boolean>", "csv")

_in_jar: dict[int, bool] = {}  # per SparkContext: are the parsers on the class path


def available(spark: SparkSession) -> bool:
    """Whether the parsers can be used: switched on and in the session's jars."""
    if (spark.conf.get(SWITCH, "true") or "true").lower() == "false":
        return False
    key = id(spark.sparkContext)
    if key not in _in_jar:
        _in_jar[key] = type(_register_class(spark)).__name__ == "JavaClass"  # else a py4j JavaPackage: no class
    return _in_jar[key]


def function(spark: SparkSession, parser: Parser, config: str) -> str | None:
    """Register the parser with this configuration in the session; the function's name, or None when the parsers
    are not available (then use the built-in-expression path)."""
    if not available(spark):
        return None
    name = f"{parser.name}_{hashlib.sha1(config.encode()).hexdigest()[:16]}"
    try:
        getattr(_register_class(spark), parser.register)(internals.java_session(spark), name, config, parser.return_type)
    except (Py4JJavaError, CapturedException) as exc:  # pyspark turns most JVM errors into CapturedException
        message = (str(exc).strip().splitlines() or ["?"])[0].rstrip(".")
        raise AutoLoaderError(f"invalid {parser.register.upper()} reader options: {message}. Fix the source's "
                              ".option(...) values") from None
    return name


def _register_class(spark: SparkSession) -> Any:
    target: Any = internals.jvm(spark)
    for part in REGISTER_CLASS.split("."):
        target = getattr(target, part)
    return target


def json_fields_config(case_sensitive: bool, parser_options: dict[str, str], fields: list[StructField]) -> str:
    """The JSON parser's configuration: case sensitivity, Spark JSON parser options, the schema's columns (a
    column holding structs carries its type, so that nested keys no field has are reported)."""
    features = ",".join(f"{k}={v}" for k, v in sorted(parser_options.items()))
    columns = [f"{f.name}\u0002{f.dataType.json()}" if has_struct(f.dataType) else f.name for f in fields]
    return SEP.join(["1" if case_sensitive else "0", features, *columns])


def csv_config(case_sensitive: bool, header: bool, width: int, skip_rows: int, comment: str | None,
               line_sep: str | None, names: list[str], parser_options: dict[str, str]) -> str:
    """The CSV parser's configuration (``key=value`` entries, see ``CsvLayout.parse``)."""
    entries = {"caseSensitive": "1" if case_sensitive else "0", "header": "1" if header else "0",
               "width": str(width), "skipRows": str(skip_rows), "comment": comment or "", "lineSep": line_sep or "",
               "names": "\u0002".join(names)}
    entries.update({f"csv.{k}": v for k, v in sorted(parser_options.items())})
    return SEP.join(f"{k}={v}" for k, v in entries.items())
