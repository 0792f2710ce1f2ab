"""Record parsing in the JVM: JSON and CSV records become each schema column's raw text plus the entries that fit
no column, then typed columns, the rescued-data JSON and the new-column guard are computed from them in Spark
expressions.

The raw texts come from the framework jar's parsers (:mod:`framework.autoloader.jvm`, one pass per record) or,
without the jar, from Spark's built-in expressions (``from_json`` into a map, ``from_csv``). Every record of the
input becomes exactly one output row: values that do not fit the schema go to the rescued column as text, and
records that cannot be parsed keep their raw text there under ``_corrupt_record``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, MapType, StringType, StructField, StructType

from framework.autoloader import jvm, schemas
from framework.autoloader.options import CloudFilesOptions

PATH = "__cf_path"
RAW = "__cf_raw"
MAP = "__cf_map"
PARSED = "__cf_parsed"
KEYS = "__cf_rescue_keys"
VALS = "__cf_vals"
CORRUPT = "__cf_corrupt"
FILE_PATH_KEY = "_file_path"
CORRUPT_KEY = "_corrupt_record"
RAW_MAP = MapType(StringType(), StringType())
RAW_MAP_DDL = "map<string,string>"
_CSV_PARSER_OPTIONS = ("sep", "delimiter", "quote", "escape", "charToEscapeQuoteEscaping", "nullValue",
                       "emptyValue", "ignoreLeadingWhiteSpace", "ignoreTrailingWhiteSpace", "nanValue",
                       "positiveInf", "negativeInf", "dateFormat", "timestampFormat", "maxCharsPerColumn",
                       "unescapedQuoteHandling", "locale")
_JSON_PARSER_OPTIONS = ("allowBackslashEscapingAnyCharacter", "allowComments", "allowNonNumericNumbers",
                        "allowNumericLeadingZeros", "allowSingleQuotes", "allowUnquotedControlChars",
                        "allowUnquotedFieldNames")


@dataclass(frozen=True)
class Plan:
    """What the projection must produce."""

    data: StructType
    partitions: StructType
    rescued_column: str | None
    guard: str | None  # None, "addNewColumns" or "failOnNewColumns"
    case_sensitive: bool
    # the raw text of struct columns may hold keys no field has (Spark's built-in path): a struct value with a
    # top-level key outside its fields then counts as a mismatch, so the whole value is rescued
    check_struct_keys: bool = False


def _opts(opts: CloudFilesOptions, names: tuple[str, ...]) -> dict[str, str]:
    wanted = {n.lower(): n for n in names}
    return {wanted[k.lower()]: v for k, v in opts.reader_options.items() if k.lower() in wanted}


def typed_value(raw: Column, field: StructField) -> Column:
    """The raw text converted to the field's type; NULL when it does not convert."""
    dt = field.dataType
    if isinstance(dt, StringType):
        return raw
    if isinstance(dt, (StructType, MapType)):
        return F.when(F.ltrim(raw).startswith("{"), F.from_json(raw, dt.json()))
    if isinstance(dt, ArrayType):
        return F.when(F.ltrim(raw).startswith("["), F.from_json(raw, dt))
    return raw.try_cast(dt)


_SEP = "\u0001"


def _lower_all(keys: Column) -> Column:
    """Lower-case every string of an array, and drop array indices from nested paths (``items[2].y`` →
    ``items.y``), without a lambda (keeps whole-stage codegen)."""
    return F.split(F.regexp_replace(F.lower(F.array_join(keys, _SEP)), r"\[[0-9]+\]", ""), _SEP)


def _str_array(values: list[str]) -> Column:
    return F.array(*[F.lit(v) for v in values]) if values else F.array().cast(ArrayType(StringType()))


def _guard_message(plan: Plan, new_keys: Column) -> Column:
    """The JSON payload of the new-column guard, read back as data by ``framework/failures.py``."""
    from framework.failures import VIOLATION_KEY

    return F.to_json(F.struct(F.lit("UNKNOWN_FIELD_EXCEPTION").alias(VIOLATION_KEY), new_keys.alias("fields"),
                              F.lit(plan.guard == "addNewColumns").alias("retryable"), F.col(PATH).alias("file")))


def known_names(plan: Plan) -> list[str]:
    """The columns, and the dotted paths of the fields inside struct columns (the JSON parser reports a nested
    key no field has under its path)."""
    return ([f.name for f in plan.data.fields] + [f.name for f in plan.partitions.fields]
            + schemas.nested_paths(plan.data))


def guarded(plan: Plan, unknown: Column, value: Column) -> Column:
    """``value``, or raise UNKNOWN_FIELD_EXCEPTION when ``unknown`` (names not in the schema, exact case) holds a
    name that is not just a case variant of a schema column. The message lists every name of ``unknown``.
    Lambda-free, so the projection keeps whole-stage code generation."""
    if plan.guard is None:
        return value
    known_lower = sorted({n.lower() for n in known_names(plan)})
    is_new = F.size(F.array_except(_lower_all(unknown), _str_array(known_lower))) > 0
    return F.when((F.size(unknown) > 0) & is_new, F.raise_error(_guard_message(plan, unknown))).otherwise(value)


def _mismatch(raw: Column, typed: Column, field: StructField, check_struct_keys: bool = False) -> Column:
    """The raw value is present but did not convert (for nested types: is not a JSON object/array at all; with
    ``check_struct_keys``, a struct's object has a key that is none of its fields)."""
    bad = typed.isNull()
    if isinstance(field.dataType, (StructType, MapType)):
        bad = bad | ~F.ltrim(raw).startswith("{")
        if check_struct_keys and isinstance(field.dataType, StructType):
            names = _str_array([f.name for f in field.dataType.fields])
            bad = bad | (F.size(F.array_except(F.coalesce(F.json_object_keys(raw), _str_array([])), names)) > 0)
    elif isinstance(field.dataType, ArrayType):
        bad = bad | ~F.ltrim(raw).startswith("[")
    return raw.isNotNull() & bad


def _mismatched_names(plan: Plan, raws: dict[str, Column], typed: dict[str, Column]) -> Column | None:
    checks = [F.when(_mismatch(raws[f.name], typed[f.name], f, plan.check_struct_keys), F.lit(f.name))
              for f in plan.data.fields if not isinstance(f.dataType, StringType)]
    if not checks:
        return None
    return F.array_except(F.array(*checks), F.array(F.lit(None).cast("string")))


def _corrupt_json() -> Column:
    return F.to_json(F.create_map(F.lit(CORRUPT_KEY), F.col(RAW), F.lit(FILE_PATH_KEY), F.col(PATH)))


def partition_values(plan: Plan) -> list[Column]:
    """One column per partition column of the plan, read from the file's path (``/<name>=<value>/``):
    URL-decoded and converted to the column's type; NULL when the folder is missing, empty or
    ``__HIVE_DEFAULT_PARTITION__``, or when the value does not convert."""
    cols = []
    for f in plan.partitions.fields:
        pattern = "/" + re.escape(f.name) + "=([^/]*)/"
        raw = F.regexp_extract(F.col(PATH), pattern, 1)
        raw = F.when((raw == "") | (raw == "__HIVE_DEFAULT_PARTITION__"), None).otherwise(F.try_url_decode(raw))
        cols.append(typed_value(raw, f).alias(f.name))
    return cols


def project_map(df: DataFrame, plan: Plan) -> DataFrame:
    """From columns (PATH, RAW, MAP) to the output columns. MAP is NULL for a corrupt record.

    The common row (every key known, every value converts) costs one look-up and one cast per column and a few
    boolean tests: a row may hold an unknown key only if MAP has more entries than known keys with a value, and
    only such rows (or rows with a value that did not convert) compute the exact unknown names, the guard and the
    rescued JSON.
    """
    plan = replace(plan, check_struct_keys=True)
    m = F.col(MAP)
    if not plan.case_sensitive:
        df = df.select(PATH, RAW, F.transform_keys(m, lambda k, _v: F.lower(k)).alias(MAP))
    names = _names(plan)

    def maybe_unknown(raws: list[Column]) -> Column:
        present: Column = F.lit(0)
        for raw in raws:
            present = present + raw.isNotNull().cast("int")
        # False positives (a known key with a JSON null) only send the row down the exact path.
        return m.isNotNull() & (F.size(m) > present)

    def rescue_map(keys: Column) -> Column:
        return F.map_filter(m, lambda k, _v: F.array_contains(keys, k))

    return _project(df, plan, [m[n] for n in names], maybe_unknown,
                    F.array_except(F.map_keys(m), _str_array(names)), m.isNull(), rescue_map)


def project_parsed(df: DataFrame, plan: Plan, corrupt: Column | None = None) -> DataFrame:
    """From columns (PATH, RAW, PARSED) to the output columns, PARSED being a record of the framework jar's parsers
    (``v``: each column's raw text, ``u``: the entries of other keys or NULL). A corrupt record is one where
    ``corrupt`` holds, by default one whose PARSED is NULL.

    The projection's columns are unresolved expressions that depend on ``plan`` alone; built through Py4J (a few
    hundred calls, about 0.1 s), they are kept per Spark context and plan and applied again to each new source
    of the same plan (every update of a warm session builds its Auto Loader sources anew)."""
    if corrupt is not None:
        return _apply(df, _parsed_stages(plan, corrupt))
    cache: dict[Plan, list[list[Column | str]]] = df.sparkSession.sparkContext.__dict__.setdefault(
        "_medallion_parsed_projections", {})
    stages = cache.get(plan)
    if stages is None:
        stages = _parsed_stages(plan, None)
        if len(cache) >= _CACHED_PLANS:
            cache.clear()
        cache[plan] = stages
    return _apply(df, stages)


_CACHED_PLANS = 64


def _parsed_stages(plan: Plan, corrupt: Column | None) -> list[list[Column | str]]:
    parsed = F.col(PARSED)
    unknown = parsed["u"]

    def rescue_map(keys: Column) -> Column:
        # the unknown entries and the raw values of mismatched columns (only non-string columns can mismatch);
        # lambda-free, so the projection keeps whole-stage code generation
        empty = F.create_map().cast(RAW_MAP)
        mismatched = [F.when(F.array_contains(keys, f.name), F.create_map(F.lit(f.name), F.col(c))).otherwise(empty)
                      for f, c in zip(plan.data.fields, _raw_cols(plan), strict=True)
                      if not isinstance(f.dataType, StringType)]
        return F.map_concat(F.coalesce(unknown, empty), *mismatched)

    return _stages(plan, [parsed["v"][i] for i in range(len(plan.data.fields))], lambda _raws: unknown.isNotNull(),
                   F.map_keys(unknown), parsed.isNull() if corrupt is None else corrupt, rescue_map)


def _names(plan: Plan) -> list[str]:
    return [f.name if plan.case_sensitive else f.name.lower() for f in plan.data.fields]


def _raw_cols(plan: Plan) -> list[str]:
    return [f"__cf_r{i}" for i in range(len(plan.data.fields))]


def _apply(df: DataFrame, stages: list[list[Column | str]]) -> DataFrame:
    for columns in stages:
        df = df.select(*columns)
    return df


def _project(df: DataFrame, plan: Plan, raw_values: list[Column], maybe_unknown: Callable[[list[Column]], Column],
             unknown: Column, corrupt: Column, rescue_map: Callable[[Column], Column]) -> DataFrame:
    return _apply(df, _stages(plan, raw_values, maybe_unknown, unknown, corrupt, rescue_map))


def _stages(plan: Plan, raw_values: list[Column], maybe_unknown: Callable[[list[Column]], Column],
            unknown: Column, corrupt: Column, rescue_map: Callable[[Column], Column]) -> list[list[Column | str]]:
    """The projections, applied in order, that give the typed columns, the new-column guard and the rescued JSON
    from each column's raw text.

    ``maybe_unknown`` (given the raw columns) is true for every row with a key outside the schema; only those
    rows evaluate ``unknown`` (their exact unknown names) and the guard. ``rescue_map`` gives, for the names to
    rescue, the map to write as JSON (``_file_path`` is added). Each stage is its own projection so that look-ups
    and casts are evaluated once per row; the guard is folded into every output column, so pruning columns cannot
    skip it.
    """
    raw_cols = _raw_cols(plan)
    typed_cols = [f"__cf_t{i}" for i in range(len(raw_cols))]
    stages: list[list[Column | str]] = [["*", *[v.alias(c) for v, c in zip(raw_values, raw_cols, strict=True)]]]
    raws = {f.name: F.col(c) for f, c in zip(plan.data.fields, raw_cols, strict=True)}
    stages.append(["*", *[typed_value(raws[f.name], f).alias(c)
                          for f, c in zip(plan.data.fields, typed_cols, strict=True)]])
    typed = {f.name: F.col(c) for f, c in zip(plan.data.fields, typed_cols, strict=True)}
    mu = maybe_unknown([F.col(c) for c in raw_cols])
    mismatch = _any_mismatch(plan, raws, typed)
    flags = [mu.alias("__cf_mu")]
    if mismatch is not None:
        flags.append(mismatch.alias("__cf_mm_any"))
    if plan.guard is not None:
        flags.append(F.when(mu, guarded(plan, unknown, F.lit(False))).otherwise(F.lit(False)).alias("__cf_guard"))
    stages.append(["*", *flags])

    def output(value: Column) -> Column:
        return F.when(F.col("__cf_guard"), F.lit(None)).otherwise(value) if plan.guard is not None else value

    out: list[Column | str] = [output(typed[f.name]).alias(f.name) for f in plan.data.fields]
    out += partition_values(plan)
    if not plan.rescued_column:
        return [*stages, out]
    mism = _mismatched_names(plan, raws, typed)
    keys = (F.when(F.col("__cf_mu"), unknown).otherwise(_str_array([])))
    if mism is not None:
        keys = F.concat(keys, mism)
    suspicious = F.col("__cf_mu") | F.col("__cf_mm_any") if mismatch is not None else F.col("__cf_mu")
    stages.append(["*", corrupt.alias(CORRUPT), F.when(suspicious, keys).alias(KEYS)])
    rescued = (F.when(F.col(CORRUPT), _corrupt_json())
               .when(F.size(F.col(KEYS)) > 0,
                     F.to_json(F.map_concat(rescue_map(F.col(KEYS)),
                                            F.create_map(F.lit(FILE_PATH_KEY), F.col(PATH))))))
    return [*stages, [*out, rescued.alias(plan.rescued_column)]]


def _any_mismatch(plan: Plan, raws: dict[str, Column], typed: dict[str, Column]) -> Column | None:
    """True when some non-string value is present but did not convert."""
    checks = [_mismatch(raws[f.name], typed[f.name], f, plan.check_struct_keys) for f in plan.data.fields
              if not isinstance(f.dataType, StringType)]
    if not checks:
        return None
    result = checks[0]
    for check in checks[1:]:
        result = result | check
    return result


def json_records(source: DataFrame, opts: CloudFilesOptions, plan: Plan) -> DataFrame:
    """JSON lines (or whole multiLine files) read as text → output rows."""
    parser = _opts(opts, _JSON_PARSER_OPTIONS)
    text = source.select(F.col("value"), F.col("_metadata.file_path").alias(PATH))
    text = text.where(_json_kept(F.col("value")))
    config = jvm.json_fields_config(plan.case_sensitive, parser, list(plan.data.fields))
    parse = None if opts.multi_line else jvm.function(source.sparkSession, jvm.JSON_FIELDS, config)
    if parse is not None:
        df = text.select(PATH, F.col("value").alias(RAW), F.call_function(parse, F.col("value")).alias(PARSED))
        return project_parsed(df, plan)
    if not opts.multi_line:
        df = text.select(PATH, F.col("value").alias(RAW), F.from_json("value", RAW_MAP_DDL, parser).alias(MAP))
    else:
        as_list = (F.when(F.ltrim("value").startswith("["), F.from_json("value", "array<map<string,string>>", parser))
                   .otherwise(F.array(F.from_json("value", RAW_MAP_DDL, parser))))
        df = text.select(PATH, F.col("value").alias(RAW),
                         F.explode(F.coalesce(as_list, F.array(F.lit(None).cast(RAW_MAP)))).alias(MAP))
    return project_map(df, plan)


# Blank lines are no records, as in Spark: its JSON reader skips a line in which Jackson finds no token (only
# spaces, tabs, CR and LF), its CSV reader a line whose String.trim() is empty (every char <= U+0020).
_JSON_BLANK = "^[ \\t\\r\\n]*$"
_CSV_BLANK = "^[\\x00-\\x20]*$"


def _json_kept(text: Column) -> Column:
    """A JSON line (or multiLine file) to parse: not blank."""
    return ~text.rlike(_JSON_BLANK)


def _keep_line(line: Column, comment: str | None) -> Column:
    """A CSV line to read: not blank and not a comment."""
    cond = ~line.rlike(_CSV_BLANK)
    if comment:
        cond = cond & ~line.startswith(comment)
    return cond


def csv_reads_whole_files(spark: SparkSession, header: bool) -> bool:
    """Whether ``csv_records`` needs each file as one text (with a header, on Spark's built-in expressions) rather
    than line by line."""
    return header and not jvm.available(spark)


def csv_width(plan: Plan, header_width: int) -> int:
    """How many CSV fields to parse per line: a line with more is kept whole as a corrupt record."""
    return max(len(plan.data.fields), header_width) + 8


@dataclass(frozen=True)
class _Csv:
    """The CSV reading settings shared by the steps of ``csv_records``."""

    plan: Plan
    parser: dict[str, str]
    comment: str | None
    skip: int
    width: int
    names: list[str]  # the schema's columns, lower-cased unless case-sensitive

    @property
    def idx_cols(self) -> list[str]:
        """Per schema column, the column holding its 1-based position in the line's values (0: absent)."""
        return [f"__cf_i{j}" for j in range(len(self.names))]

    def as_array(self, line: Column) -> Column:
        parse_schema = StructType([StructField(f"_c{i}", StringType(), True) for i in range(self.width)])
        parsed = F.from_csv(line, parse_schema.simpleString(), self.parser)
        return F.array(*[parsed[f"_c{i}"] for i in range(self.width)])


def csv_records(source: DataFrame, opts: CloudFilesOptions, plan: Plan, *, header: bool,
                width: int) -> DataFrame:
    """CSV lines → output rows; with ``header``, each file's header line names its columns.

    With the framework jar, lines are read one by one and parsed by its CSV parser (each file's header line
    arrives before its records, see ``CsvLines.java``). Without it (``csv_reads_whole_files``), each file is read as
    one text: per file (cheap, lambdas allowed) the header's column names, each schema column's position, the
    positions whose name is not in the schema; per row (codegen only, no lambdas on the common path) the parsed
    values, positional look-ups, and the rescued JSON only for rows that need one.
    """
    parser = _opts(opts, _CSV_PARSER_OPTIONS)
    comment = opts.option("comment")
    skip = int(opts.option("skipRows", "0") or 0)
    config = jvm.csv_config(plan.case_sensitive, header, width, skip, comment, opts.option("lineSep"),
                            [f.name for f in plan.data.fields], parser)
    parse = jvm.function(source.sparkSession, jvm.CSV_LINES, config)
    if parse is not None:
        return _csv_rows_in_jvm(source, plan, parse, comment)
    csv = _Csv(plan, parser, comment, skip, width,
               [f.name if plan.case_sensitive else f.name.lower() for f in plan.data.fields])
    rows = _csv_with_header(source, csv, opts.option("lineSep")) if header else _csv_without_header(source, csv)
    return _csv_project(rows, csv)


def _csv_rows_in_jvm(source: DataFrame, plan: Plan, parse: str, comment: str | None) -> DataFrame:
    kept = source.select(F.col("value"), F.col("_metadata.file_path").alias(PATH),
                         F.col("_metadata.file_block_start").alias("__cf_block"))
    kept = kept.where(_keep_line(F.col("value"), comment))
    rows = kept.select(PATH, F.call_function(parse, F.col("value"), F.col(PATH), F.col("__cf_block"))
                       .alias(PARSED))
    # header lines and skipped lines are no records; the new-column guard raises on a file's header line
    rows = rows.where(guarded(plan, F.col(PARSED)["h"], ~F.col(PARSED)["s"]))
    rows = rows.select(PATH, F.col(PARSED)["r"].alias(RAW), PARSED)
    return project_parsed(rows, replace(plan, guard=None), corrupt=F.col(RAW).isNotNull())


def _csv_with_header(source: DataFrame, csv: _Csv, line_sep: str | None) -> DataFrame:
    """Whole files → one row per record, with the file's keys (header names), each schema column's position and
    the positions of the columns the schema lacks."""
    pattern = re.escape(line_sep) if line_sep else "\r?\n"
    lines = F.filter(F.split(F.col("value"), pattern), lambda line: _keep_line(line, csv.comment))
    files = source.select(lines.alias("__cf_lines"),
                          F.col("_metadata.file_path").alias(PATH)).where(F.size("__cf_lines") > csv.skip)
    files = files.select(PATH, "__cf_lines", csv.as_array(F.col("__cf_lines")[csv.skip]).alias("__cf_header"))
    raw_keys = F.transform(F.col("__cf_header"), lambda k, i: F.coalesce(k, F.concat(F.lit("_c"), i)))
    if not csv.plan.case_sensitive:
        raw_keys = F.transform(raw_keys, lambda k: F.lower(k))
    files = files.select(PATH, "__cf_lines", "__cf_header", raw_keys.alias("__cf_rk"))
    keys = F.transform(F.col("__cf_rk"), lambda k, i: F.when(F.array_position(F.col("__cf_rk"), k) != i + 1,
                                                             F.concat(k, i)).otherwise(k))
    files = files.select(PATH, "__cf_lines", "__cf_header", keys.alias(KEYS))
    named = F.filter(F.col("__cf_header"), lambda k: k.isNotNull())
    unknown_named = F.array_except(named, _str_array(csv.names))
    files = files.select(PATH, "__cf_lines", guarded(csv.plan, unknown_named, F.col(KEYS)).alias(KEYS))
    positions = F.sequence(F.lit(0), F.lit(csv.width - 1))
    files = files.select(
        PATH, "__cf_lines", KEYS,
        *[F.array_position(F.col(KEYS), n).cast("int").alias(c) for n, c in zip(csv.names, csv.idx_cols, strict=True)],
        F.transform(positions, lambda i: F.when(F.col(KEYS)[i].isin(csv.names), -1).otherwise(i)
                    if csv.names else i).alias("__cf_u"))
    body = F.slice(F.col("__cf_lines"), csv.skip + 2, 2**31 - 1)
    return files.select(PATH, KEYS, "__cf_u", *csv.idx_cols, F.explode(body).alias(RAW))


def _csv_without_header(source: DataFrame, csv: _Csv) -> DataFrame:
    """Lines → rows keyed by position: the schema's columns first, then ``_c<i>``."""
    static_keys = [csv.names[i] if i < len(csv.names) else f"_c{i}" for i in range(csv.width)]
    rows = source.select(F.col("value").alias(RAW), F.col("_metadata.file_path").alias(PATH))
    return rows.where(_keep_line(F.col(RAW), csv.comment)).select(
        PATH, RAW, _str_array(static_keys).alias(KEYS),
        F.array(*[F.lit(-1 if k in csv.names else i) for i, k in enumerate(static_keys)]).alias("__cf_u"),
        *[F.lit(static_keys.index(n) + 1 if n in static_keys else 0).alias(c)
          for n, c in zip(csv.names, csv.idx_cols, strict=True)])


def _csv_project(rows: DataFrame, csv: _Csv) -> DataFrame:
    """Rows with their keys and positions → typed columns, partition values and the rescued data."""
    plan, width, names = csv.plan, csv.width, csv.names
    rows = rows.select("*", csv.as_array(F.col(RAW)).alias(VALS))
    vals = F.col(VALS)
    corrupt = vals[width - 1].isNotNull()
    quote = csv.parser.get("quote", '"')
    if quote:
        quotes = F.length(RAW) - F.length(F.replace(F.col(RAW), F.lit(quote), F.lit("")))
        corrupt = corrupt | (quotes % 2 == 1)
    rows = rows.select("*", corrupt.alias(CORRUPT))
    raws = {f.name: F.when(~F.col(CORRUPT) & (F.col(c) > 0), F.get(vals, F.col(c) - 1))
            for f, c in zip(plan.data.fields, csv.idx_cols, strict=True)}
    typed = {f.name: typed_value(raws[f.name], f) for f in plan.data.fields}
    out = [typed[f.name].alias(f.name) for f in plan.data.fields] + partition_values(plan)
    if not plan.rescued_column:
        return rows.select(*out)
    u = F.col("__cf_u")
    unknown_vals = F.array(*[F.get(vals, u[i]) for i in range(width)])
    has_unknown = F.size(F.array_except(unknown_vals, F.array(F.lit(None).cast("string")))) > 0
    mism = _mismatched_names(plan, raws, typed)
    needs = has_unknown | (F.size(mism) > 0) if mism is not None else has_unknown
    mism_list = mism if mism is not None else _str_array([])
    rows = rows.select(*out, PATH, RAW, KEYS, VALS, CORRUPT, needs.alias("__cf_needs"), mism_list.alias("__cf_mm"))
    full = F.map_from_arrays(F.col(KEYS), F.col(VALS))
    picked = F.map_filter(full, lambda k, v: v.isNotNull() & (~k.isin(names) | F.array_contains(F.col("__cf_mm"), k))
                          if names else v.isNotNull())
    rescued = (F.when(F.col(CORRUPT), _corrupt_json())
               .when(F.col("__cf_needs"),
                     F.to_json(F.map_concat(picked, F.create_map(F.lit(FILE_PATH_KEY), F.col(PATH))))))
    return rows.select(*[F.col(f"`{f.name}`") for f in plan.data.fields],
                       *[F.col(f"`{f.name}`") for f in plan.partitions.fields],
                       rescued.alias(plan.rescued_column))
