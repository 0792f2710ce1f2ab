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

from pyspark.sql import SparkSession

SWITCH = "medallion.autoloader.jvmParser"
SEP = "\u0001"


@dataclass(frozen=True)
class Parser:
    """A parser class of the jar: the prefix of its function names, the class, its SQL return type."""

    name: str
    java_class: str
    return_type: str
    register: str  # the method of medallion.autoloader.Register


JSON_FIELDS = Parser("medallion_json_fields", "medallion.autoloader.JsonFields",
                     "struct<v:array<string>,u:map<string,string>>", "json")
# non-deterministic: it takes a file's header line before the file's records, so it must see each line once, in
# order (Spark neither repeats nor reorders a non-deterministic expression)
CSV_LINES = Parser("medallion_csv_lines", "medallion.autoloader.CsvLines",
                   "struct<r:string,v:array<string>,u:map<string,string>,h:array<string>,s:boolean>", "csv")

_in_jar: dict[tuple[int, str], bool] = {}  # per SparkContext and parser: is the class on the class path


def available(spark: SparkSession, parser: Parser) -> bool:
    """Whether the parser can be used: switched on and its class in the session's jars."""
    if (spark.conf.get(SWITCH, "true") or "true").lower() == "false":
        return False
    key = (id(spark.sparkContext), parser.name)
    if key not in _in_jar:
        try:
            _java_class(spark, parser)
            _in_jar[key] = True
        except Exception:  # a session without the framework's jar (no JDK at set-up): class not found
            _in_jar[key] = False
    return _in_jar[key]


def function(spark: SparkSession, parser: Parser, config: str) -> str | None:
    """Register the parser with this configuration in the session; the function's name, or None when the parser
    is not available (then use the built-in-expression path)."""
    if not available(spark, parser):
        return None
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    name = f"{parser.name}_{hashlib.sha1(config.encode()).hexdigest()[:16]}"
    register = getattr(jvm.medallion.autoloader.Register, parser.register)
    register(spark._jsparkSession, name, config, parser.return_type)
    return name


def _java_class(spark: SparkSession, parser: Parser) -> Any:
    target: Any = spark.sparkContext._jvm
    for part in parser.java_class.split("."):
        target = getattr(target, part)
    if type(target).__name__ != "JavaClass":  # py4j gives a JavaPackage for a name that is no class
        raise LookupError(f"{parser.java_class} is not in the session's jars")
    return target


def json_fields_config(case_sensitive: bool, parser_options: dict[str, str], names: list[str]) -> str:
    """The JSON parser's configuration: case sensitivity, Spark JSON parser options, the schema's column names."""
    features = ",".join(f"{k}={v}" for k, v in sorted(parser_options.items()))
    return SEP.join(["1" if case_sensitive else "0", features, *names])


def csv_config(case_sensitive: bool, header: bool, width: int, skip_rows: int, comment: str | None,
               line_sep: str | None, names: list[str], parser_options: dict[str, str]) -> str:
    """The CSV parser's configuration (``key=value`` entries, see ``CsvLayout.parse``)."""
    entries = {"caseSensitive": "1" if case_sensitive else "0", "header": "1" if header else "0",
               "width": str(width), "skipRows": str(skip_rows), "comment": comment or "", "lineSep": line_sep or "",
               "names": "\u0002".join(names)}
    entries.update({f"csv.{k}": v for k, v in sorted(parser_options.items())})
    return SEP.join(f"{k}={v}" for k, v in entries.items())
