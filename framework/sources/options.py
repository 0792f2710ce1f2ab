"""The options of a ``jdbc_incremental`` read, checked all at once (pure: no database, no Spark).

Spark hands a Python data source its options as a case-insensitive mapping of strings; this module turns
them into a frozen :class:`JdbcIncrementalOptions` or a :class:`~framework.sources.errors.SourceOptionsError`
listing every unknown, missing or malformed option, with the closest known name for a typo.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from urllib.parse import quote, unquote, urlsplit

from framework.errors import Problem
from framework.sources.errors import SourceOptionsError

SOURCE_NAME = "jdbc_incremental"
PYTHON_SOURCE_NAME = "jdbc_incremental_python"  # the Python source beside its JVM twin (see framework.sources)
REQUIRED = ("url", "watermarkColumn")
OPTIONAL = ("dbtable", "query", "user", "password", "startingWatermark", "lookback", "maxRowsPerBatch",
            "fetchSize", "numPartitions")
# Spark adds the path option to every reader; Databricks adds none of these to a Python data source.
IGNORED = ("path",)
KNOWN = {name.lower(): name for name in (*REQUIRED, *OPTIONAL)}

DEFAULT_FETCH_SIZE = 50_000
_INTERVAL_UNIT = r"(?:microseconds?|milliseconds?|seconds?|secs?|minutes?|mins?|hours?|days?|weeks?)"
_INTERVAL = re.compile(rf"^\s*(?:\d+(?:\.\d+)?\s*{_INTERVAL_UNIT}\s*)+$", re.IGNORECASE)


@dataclass(frozen=True)
class JdbcIncrementalOptions:
    """A checked ``jdbc_incremental`` read.

    Attributes:
        url: the JDBC URL as given (``jdbc:postgresql://host:port/db``).
        relation: the SQL text of the relation read: the ``dbtable`` name, or ``(query) AS ...``.
        watermark_column: the column whose values order the rows (``start < column <= end`` per batch).
        user: the database user, if any (else the URL's).
        password: the password, if any (never printed).
        starting_watermark: the exclusive lower bound of the first batch; None reads everything.
        lookback: how far below the last watermark each batch reads again (interval text or a number); None: 0.
        max_rows_per_batch: the most rows a micro-batch admits (rows with equal watermarks are never split).
        fetch_size: the most rows per Arrow batch handed to Spark.
        num_partitions: how many ranges (and database connections) a batch's read is split into.
    """

    url: str
    relation: str
    watermark_column: str
    user: str | None = None
    password: str | None = None
    starting_watermark: str | None = None
    lookback: str | None = None
    max_rows_per_batch: int | None = None
    fetch_size: int = DEFAULT_FETCH_SIZE
    num_partitions: int = 1

    @property
    def lookback_is_interval(self) -> bool:
        """True when ``lookback`` is an interval (``"2 hours"``), False when a number or not set."""
        return self.lookback is not None and _number(self.lookback) is None

    def libpq_uri(self) -> str:
        """The libpq connection URI of ``url`` with the user and password, sessions in UTC."""
        return libpq_uri(self.url, self.user, self.password)

    def secrets(self) -> tuple[str, ...]:
        """The values never to show: the password and the URIs holding it (raw and percent-encoded)."""
        if not self.password:
            return ()
        return (self.libpq_uri(), self.password, quote(self.password, safe=""))


def parse_options(options: Mapping[str, str]) -> JdbcIncrementalOptions:
    """Check ``options`` (names case-insensitive, as Spark gives them) and build the read.

    Raises:
        SourceOptionsError: code ``INVALID_SOURCE_OPTIONS``, every problem at once.
    """
    given = {str(k).lower(): str(v) for k, v in options.items() if str(k).lower() not in IGNORED}
    problems = [_unknown(key) for key in given if key not in KNOWN]
    problems += [Problem("MISSING_SOURCE_OPTION", f"option '{name}' is required: .option(\"{name}\", ...)")
                 for name in REQUIRED if not given.get(name.lower(), "").strip()]
    has_table, has_query = bool(given.get("dbtable", "").strip()), bool(given.get("query", "").strip())
    if has_table == has_query:
        problems.append(Problem("SOURCE_RELATION", "give exactly one of 'dbtable' (a table or view name) and "
                                                   "'query' (a SELECT statement)"))
    if given.get("url") and not given["url"].startswith("jdbc:postgresql:"):
        problems.append(Problem("UNSUPPORTED_URL", f"'url' must be a PostgreSQL JDBC URL "
                                                   f"(jdbc:postgresql://host:port/database), got "
                                                   f"'{_scheme(given['url'])}...'"))
    ints = {name: _positive_int(given, name, problems) for name in ("maxRowsPerBatch", "fetchSize", "numPartitions")}
    lookback = given.get("lookback")
    if lookback is not None and _number(lookback) is None and not _INTERVAL.match(lookback):
        problems.append(Problem("INVALID_LOOKBACK", f"'lookback' must be a number (sequences) or an interval such "
                                                    f"as '2 hours' or '30 minutes' (timestamps), got '{lookback}'"))
    elif lookback is not None and (_number(lookback) or 0) < 0:
        problems.append(Problem("INVALID_LOOKBACK", f"'lookback' must not be negative, got '{lookback}'"))
    if problems:
        raise SourceOptionsError(SOURCE_NAME, problems)
    query = given.get("query", "").strip().rstrip(";")
    relation = given["dbtable"].strip() if has_table else f"({query}) AS medallion_source"
    return JdbcIncrementalOptions(
        url=given["url"], relation=relation, watermark_column=given["watermarkcolumn"].strip(),
        user=given.get("user"), password=given.get("password"), starting_watermark=given.get("startingwatermark"),
        lookback=lookback, max_rows_per_batch=ints["maxRowsPerBatch"],
        fetch_size=ints["fetchSize"] or DEFAULT_FETCH_SIZE, num_partitions=ints["numPartitions"] or 1)


def _unknown(key: str) -> Problem:
    close = difflib.get_close_matches(key, sorted(KNOWN), n=1)
    hint = f"; did you mean '{KNOWN[close[0]]}'?" if close else f" (known: {', '.join(sorted(KNOWN.values()))})"
    return Problem("UNKNOWN_SOURCE_OPTION", f"unknown option '{key[:100]}'{hint}")


def _scheme(url: str) -> str:
    return url.split("//", 1)[0][:30]


def _number(text: str) -> Decimal | None:
    try:
        return Decimal(text.strip())
    except InvalidOperation:
        return None


def _positive_int(given: Mapping[str, str], name: str, problems: list[Problem]) -> int | None:
    text = given.get(name.lower())
    if text is None:
        return None
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value <= 0:
        problems.append(Problem("INVALID_SOURCE_OPTION", f"'{name}' must be a positive whole number, got '{text}'"))
        return None
    return value


def libpq_uri(url: str, user: str | None, password: str | None) -> str:
    """A libpq URI (``postgresql://user:password@host:port/db?...``) from a PostgreSQL JDBC URL.

    The JDBC URL's own ``user``/``password`` parameters are used when the options give none; its other
    parameters (``ssl``, ``sslmode``, ...) are passed on where libpq knows them. Sessions run in UTC so that
    timestamps print the same everywhere.
    """
    parts = urlsplit(url.removeprefix("jdbc:"))
    params = dict(p.split("=", 1) for p in parts.query.split("&") if "=" in p)
    user = user or unquote(params.pop("user", "")) or None
    password = password or unquote(params.pop("password", "")) or None
    params.pop("user", None)
    params.pop("password", None)
    if params.pop("ssl", "").lower() == "true":
        params.setdefault("sslmode", "require")
    keep = {k: v for k, v in params.items() if k in {"sslmode", "connect_timeout", "application_name"}}
    keep.setdefault("connect_timeout", "10")
    keep["options"] = quote("-c TimeZone=UTC -c DateStyle=ISO", safe="")
    credentials = ""
    if user:
        credentials = quote(user, safe="") + (f":{quote(password, safe='')}" if password else "") + "@"
    query = "&".join(f"{k}={v}" for k, v in keep.items())
    return f"postgresql://{credentials}{parts.netloc}{parts.path}?{query}"
