"""The framework's own grammar for DLT SQL's statement envelope; everything after ``AS`` is Spark SQL.

Statements (Databricks' pipeline SQL reference, current and legacy spellings)::

    CREATE [OR REFRESH] [PRIVATE | TEMPORARY] [STREAMING] [LIVE] { TABLE | MATERIALIZED VIEW | VIEW }
        [IF NOT EXISTS] name [( column_definitions, CONSTRAINT c EXPECT (expr) [ON VIOLATION ...], ... )]
        [COMMENT '...' | TBLPROPERTIES (...) | PARTITIONED BY (...) | CLUSTER BY (...) | LOCATION '...' |
         USING DELTA] ... [AS query | FLOW ...]
    CREATE FLOW name [COMMENT '...'] AS { INSERT INTO [ONCE] target BY NAME query | AUTO CDC INTO ... }
    { APPLY CHANGES | AUTO CDC [ONCE] } INTO target FROM source KEYS (...)
        [IGNORE NULL UPDATES [ON (...) | ON * EXCEPT (...)]]
        [APPLY AS DELETE WHEN expr] [APPLY AS TRUNCATE WHEN expr] SEQUENCE BY expr
        [COLUMNS * EXCEPT (...) | COLUMNS (...)] [STORED AS SCD TYPE {1|2}]
        [TRACK HISTORY ON * EXCEPT (...) | TRACK HISTORY ON (...)] [COLUMNS TO UPDATE column]
    (SYSTEM SEQUENCE BY and STORED AS BITEMPORAL are refused, naming the clause)
    AUTO CDC [ONCE] INTO target FROM SNAPSHOT source KEYS (...) [STORED AS SCD TYPE {1|2}] [TRACK HISTORY ON ...]
    SET key = value | SET key

The parser keeps offsets into the statement text, so every error names its line and column.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from framework.sql.functions import is_function_statement
from framework.sql.tokens import IDENT, NUMBER, PUNCT, STRING, WORD, Token, tokenize


class EnvelopeError(ValueError):
    """A statement that does not fit the grammar; ``offset`` is where, ``code`` says what."""

    def __init__(self, message: str, offset: int, code: str = "SQL_PARSE_ERROR") -> None:
        super().__init__(message)
        self.offset = offset
        self.code = code


@dataclass(frozen=True)
class Fragment:
    """A piece of the statement's text (a query or an expression) with its offset in the statement."""

    text: str
    offset: int


@dataclass(frozen=True)
class Constraint:
    """``CONSTRAINT name EXPECT (expr) [ON VIOLATION DROP ROW | FAIL UPDATE]``."""

    name: str
    expression: Fragment
    action: str  # warn | drop | fail


@dataclass(frozen=True)
class ChangesClause:
    """The body of ``APPLY CHANGES INTO`` / ``AUTO CDC INTO``."""

    target: str
    source: str
    keys: tuple[str, ...]
    sequence_by: Fragment | None  # None: FROM SNAPSHOT (versioned by the update)
    ignore_null_updates: bool = False
    delete_when: Fragment | None = None
    truncate_when: Fragment | None = None
    column_list: tuple[str, ...] | None = None
    except_column_list: tuple[str, ...] | None = None
    scd_type: int = 1
    track_history: tuple[str, ...] | None = None
    track_history_except: tuple[str, ...] | None = None
    ignore_null_updates_column_list: tuple[str, ...] | None = None
    ignore_null_updates_except_column_list: tuple[str, ...] | None = None
    columns_to_update: str | None = None
    once: bool = False
    snapshot: bool = False  # AUTO CDC ... FROM SNAPSHOT source: a snapshot of source at each update
    offset: int = 0


@dataclass(frozen=True)
class CreateDataset:
    """``CREATE ... {STREAMING TABLE | MATERIALIZED VIEW | VIEW} name ...``."""

    kind: str  # streaming_table | materialized_view | view
    name: str
    offset: int
    private: bool = False
    columns: tuple[str, ...] = ()  # column definitions as DDL
    constraints: tuple[Constraint, ...] = ()
    comment: str | None = None
    properties: dict[str, str] = field(default_factory=dict)
    partition_cols: tuple[str, ...] = ()
    cluster_by: tuple[str, ...] = ()
    cluster_by_auto: bool = False
    location: str | None = None
    query: Fragment | None = None
    flow_once: bool = False  # FLOW INSERT ONCE BY NAME
    changes: ChangesClause | None = None  # FLOW AUTO CDC ...
    refresh_policy: str | None = None  # REFRESH POLICY {AUTO | INCREMENTAL | INCREMENTAL STRICT | FULL}
    replace_where: Fragment | None = None  # FLOW REPLACE WHERE predicate BY NAME query


@dataclass(frozen=True)
class CreateFlow:
    """``CREATE FLOW name AS INSERT INTO [ONCE] target BY NAME query`` (or ``AS AUTO CDC INTO ...``)."""

    name: str
    target: str
    offset: int
    once: bool = False
    query: Fragment | None = None
    changes: ChangesClause | None = None
    comment: str | None = None
    replace_where: Fragment | None = None  # INSERT INTO target BY NAME REPLACE WHERE predicate query
    replace_using: tuple[str, ...] = ()  # INSERT INTO target BY NAME REPLACE USING (cols) SEQUENCE BY seq query
    sequence_by: Fragment | None = None


@dataclass(frozen=True)
class ApplyChanges:
    """A stand-alone ``APPLY CHANGES INTO`` / ``AUTO CDC INTO`` statement."""

    changes: ChangesClause
    offset: int


@dataclass(frozen=True)
class SetStatement:
    """``SET key = value`` (value None for ``SET key``, which only shows the value)."""

    key: str
    value: str | None
    offset: int


@dataclass(frozen=True)
class UseStatement:
    """``USE CATALOG name`` / ``USE SCHEMA name`` (``USE DATABASE``, ``USE name``): the default catalog or schema
    of the statements after it."""

    kind: str  # catalog | schema
    name: str
    offset: int


@dataclass(frozen=True)
class FunctionStatement:
    """``CREATE [OR REPLACE] [TEMPORARY] FUNCTION ...``: a SQL function, created when the file is loaded (as a
    Python file's ``spark.sql`` at its top level); its text is Spark's to parse."""

    offset: int


Statement = CreateDataset | CreateFlow | ApplyChanges | SetStatement | UseStatement | FunctionStatement

_QUERY_WORDS = {"SELECT", "WITH", "FROM", "VALUES", "TABLE"}  # how a query starts (after REPLACE WHERE ...)
_CHANGES_WORDS = {"KEYS", "IGNORE", "APPLY", "SEQUENCE", "SYSTEM", "COLUMNS", "STORED", "TRACK", "WHERE"}


def parse_statement(text: str) -> Statement:
    """Parse one statement (without its ``;``)."""
    return _Parser(text).statement()


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = tokenize(text)
        self.i = 0

    # ------------------------------------------------------------------------------------------ cursor
    def peek(self, ahead: int = 0) -> Token | None:
        j = self.i + ahead
        return self.tokens[j] if j < len(self.tokens) else None

    def at(self, *words: str, ahead: int = 0) -> bool:
        token = self.peek(ahead)
        return token is not None and token.is_word(*words)

    def at_punct(self, char: str) -> bool:
        token = self.peek()
        return token is not None and token.kind == PUNCT and token.value == char

    def take(self) -> Token:
        token = self.peek()
        if token is None:
            raise EnvelopeError("unexpected end of the statement", len(self.text))
        self.i += 1
        return token

    def accept(self, *words: str) -> bool:
        if self.at(*words):
            self.i += 1
            return True
        return False

    def expect(self, *words: str) -> Token:
        token = self.peek()
        if token is None or not token.is_word(*words):
            found = f"'{token.value}'" if token is not None else "the end of the statement"
            raise EnvelopeError(f"expected {' or '.join(words)}, found {found}", self._offset())
        self.i += 1
        return token

    def expect_punct(self, char: str) -> Token:
        if not self.at_punct(char):
            token = self.peek()
            found = f"'{token.value}'" if token is not None else "the end of the statement"
            raise EnvelopeError(f"expected '{char}', found {found}", self._offset())
        return self.take()

    def _offset(self) -> int:
        token = self.peek()
        return token.start if token is not None else len(self.text)

    def rest(self) -> Fragment:
        """The text from the current token to the end (a query)."""
        start = self._offset()
        self.i = len(self.tokens)
        text = self.text[start:].strip()
        if not text:
            raise EnvelopeError("expected a query", start)
        return Fragment(text, start)

    # ----------------------------------------------------------------------------------------- pieces
    def name(self) -> str:
        """A possibly qualified name (``a``, ``LIVE.a``, ``cat.sch.a``, backticks allowed), as written."""
        parts = [self._name_part()]
        while self.at_punct("."):
            self.take()
            parts.append(self._name_part())
        return ".".join(parts)

    def _name_part(self) -> str:
        token = self.take()
        if token.kind == IDENT:
            return "`" + token.value.replace("`", "``") + "`"
        if token.kind != WORD:
            raise EnvelopeError(f"expected a name, found '{token.value}'", token.start)
        return token.value

    def string(self) -> str:
        token = self.take()
        if token.kind != STRING:
            raise EnvelopeError(f"expected a quoted string, found '{token.value}'", token.start)
        return token.value

    def parenthesized(self) -> Fragment:
        """The text inside the parentheses that start here (nested ones included)."""
        open_ = self.expect_punct("(")
        depth = 1
        while True:
            token = self.take()
            if token.kind == PUNCT and token.value == "(":
                depth += 1
            elif token.kind == PUNCT and token.value == ")":
                depth -= 1
                if depth == 0:
                    inner = self.text[open_.end:token.start]
                    stripped = inner.strip()
                    return Fragment(stripped, open_.end + (len(inner) - len(inner.lstrip())))

    def name_list(self) -> tuple[str, ...]:
        """``(a, b, c)``."""
        self.expect_punct("(")
        names = [self.name()]
        while self.at_punct(","):
            self.take()
            names.append(self.name())
        self.expect_punct(")")
        return tuple(names)

    def expression_until(self, stop: set[str]) -> Fragment:
        """The text of an expression up to the next word of ``stop`` outside parentheses (or the end)."""
        start = self._offset()
        end = start
        depth = 0
        while (token := self.peek()) is not None:
            if depth == 0 and token.kind == WORD and token.value.upper() in stop:
                break
            if token.kind == PUNCT and token.value in "([":
                depth += 1
            elif token.kind == PUNCT and token.value in ")]":
                depth -= 1
            end = token.end
            self.i += 1
        if end == start:
            raise EnvelopeError("expected an expression", start)
        return Fragment(self.text[start:end], start)

    # ------------------------------------------------------------------------------------- statements
    def statement(self) -> Statement:
        first = self.peek()
        if first is None:
            raise EnvelopeError("empty statement", 0)
        if first.is_word("SET"):
            return self._set()
        if first.is_word("USE"):
            self.take()
            kind = "catalog" if self.accept("CATALOG") else "schema"
            if kind == "schema":
                self.accept("SCHEMA", "DATABASE", "NAMESPACE")
            name = self.name()
            if (extra := self.peek()) is not None:
                raise EnvelopeError(f"unexpected '{extra.value}' after USE {kind.upper()} {name}", extra.start)
            return UseStatement(kind, name, first.start)
        if first.is_word("APPLY", "AUTO"):
            changes = self._changes()
            return ApplyChanges(changes, first.start)
        if first.is_word("CREATE") and is_function_statement(self.text):
            return FunctionStatement(first.start)
        if first.is_word("CREATE"):
            return self._create()
        raise EnvelopeError(f"'{first.value}' statements are not pipeline statements; a pipeline's SQL holds "
                            "CREATE ... TABLE / MATERIALIZED VIEW / VIEW / FLOW / FUNCTION, APPLY CHANGES INTO, SET and USE",
                            first.start, code="SQL_UNSUPPORTED_STATEMENT")

    def _set(self) -> SetStatement:
        start = self.take().start
        body = self.text[self._offset():].strip()
        self.i = len(self.tokens)
        key, eq, value = body.partition("=")
        if not key.strip():
            raise EnvelopeError("SET needs a key: SET key = value", start)
        return SetStatement(key.strip(), value.strip().strip("'\"") if eq else None, start)

    def _create(self) -> Statement:
        start = self.take().start
        if self.accept("OR"):
            self.expect("REFRESH", "REPLACE")
        private = bool(self.accept("PRIVATE", "TEMPORARY"))
        if self.accept("FLOW"):
            return self._flow(start)
        streaming = self.accept("STREAMING")
        live = self.accept("LIVE")
        if self.accept("MATERIALIZED"):
            self.expect("VIEW")
            kind = "materialized_view"
        elif self.accept("VIEW"):
            kind = "view"
        elif self.accept("TABLE"):
            kind = "streaming_table" if streaming or not live else "materialized_view"
            if not streaming and not live:
                kind = "table"  # decided below: CREATE TABLE ... AS query
        else:
            token = self.peek()
            raise EnvelopeError(f"expected TABLE, MATERIALIZED VIEW or VIEW, found "
                                f"'{token.value if token else 'the end'}'", self._offset(),
                                code="SQL_UNSUPPORTED_STATEMENT")
        if self.accept("IF"):
            self.expect("NOT")
            self.expect("EXISTS")
        return self._dataset(kind, private, start)

    def _dataset(self, kind: str, private: bool, start: int) -> CreateDataset:
        name = self.name()
        columns: tuple[str, ...] = ()
        constraints: tuple[Constraint, ...] = ()
        if self.at_punct("("):
            columns, constraints = self._table_spec()
        clauses = _Clauses()
        while (token := self.peek()) is not None and not token.is_word("AS", "FLOW"):
            self._clause(clauses, token)
        query = None
        once = False
        changes = None
        replace_where = None
        if self.accept("AS"):
            query = self.rest()
        elif self.accept("FLOW"):
            if self.accept("REPLACE"):  # FLOW REPLACE WHERE predicate BY NAME query
                replace_where, query = self._replace_where()
            else:
                once, query, changes = self._flow_body(name, insert_into=False)
            if kind == "table":  # CREATE TABLE ... FLOW: a table written by its flows (appends)
                kind = "streaming_table"
        if kind == "table":  # plain CREATE TABLE in a pipeline: a materialized view (legacy LIVE TABLE)
            kind = "materialized_view"
        if kind == "view" and query is None:
            raise EnvelopeError(f"view '{name}' needs AS query", start)
        if kind == "materialized_view" and query is None:
            raise EnvelopeError(f"materialized view '{name}' needs AS query", start)
        return CreateDataset(kind, name, start, private, columns, constraints, clauses.comment, clauses.properties,
                             clauses.partition_cols, clauses.cluster_by, clauses.cluster_auto, clauses.location,
                             query, once, changes, clauses.refresh_policy, replace_where)

    def _table_spec(self) -> tuple[tuple[str, ...], tuple[Constraint, ...]]:
        body = self.parenthesized()
        columns: list[str] = []
        constraints: list[Constraint] = []
        for piece in _split_top_level(body):
            sub = _Parser(piece.text)
            if sub.at("CONSTRAINT") and any(t.is_word("EXPECT") for t in sub.tokens[:4]):
                base = body.offset + piece.offset
                try:
                    constraints.append(sub._constraint(base))
                except EnvelopeError as exc:
                    raise EnvelopeError(str(exc), base + exc.offset, exc.code) from None
            elif sub.at("CONSTRAINT", "PRIMARY", "FOREIGN", "UNIQUE", "CHECK"):
                continue  # informational table constraints, accepted as on Databricks
            else:
                columns.append(piece.text)
        return tuple(columns), tuple(constraints)

    def _constraint(self, base: int) -> Constraint:
        self.expect("CONSTRAINT")
        name = self._name_part().strip("`")
        self.expect("EXPECT")
        expression = self.parenthesized()
        action = "warn"
        if self.accept("ON"):
            self.expect("VIOLATION")
            if self.accept("DROP"):
                self.expect("ROW")
                action = "drop"
            else:
                self.expect("FAIL")
                self.expect("UPDATE")
                action = "fail"
        if (extra := self.peek()) is not None:
            raise EnvelopeError(f"unexpected '{extra.value}' after constraint '{name}'", extra.start)
        return Constraint(name, Fragment(expression.text, base + expression.offset), action)

    def _clause(self, clauses: _Clauses, token: Token) -> None:
        if self.accept("COMMENT"):
            clauses.comment = self.string()
        elif self.accept("TBLPROPERTIES"):
            clauses.properties.update(self._properties())
        elif self.accept("PARTITIONED"):
            self.expect("BY")
            clauses.partition_cols = tuple(n.strip("`") for n in self.name_list())
        elif self.accept("CLUSTER"):
            self.expect("BY")
            if self.accept("AUTO"):
                clauses.cluster_auto = True
            elif not self.accept("NONE"):
                clauses.cluster_by = tuple(n.strip("`") for n in self.name_list())
        elif self.accept("LOCATION"):
            clauses.location = self.string()
        elif self.at("REFRESH") and self.at("POLICY", ahead=1):
            self.i += 2
            policy = self.expect("AUTO", "INCREMENTAL", "FULL").value.upper()
            clauses.refresh_policy = "INCREMENTAL STRICT" if policy == "INCREMENTAL" and self.accept("STRICT") \
                else policy
        elif self.accept("USING"):
            self.expect("DELTA")
        elif self.at("DEFAULT") and self.at("COLLATION", ahead=1):
            self.i += 3
        else:
            raise EnvelopeError(f"the clause '{token.value}' is not supported locally", token.start,
                                code="SQL_UNSUPPORTED_CLAUSE")

    def _properties(self) -> dict[str, str]:
        body = self.parenthesized()
        out: dict[str, str] = {}
        for piece in _split_top_level(body):
            sub = _Parser(piece.text)
            key_token = sub.take()
            key = key_token.value
            while sub.at_punct("."):
                sub.take()
                key += "." + sub.take().value
            if sub.at_punct("="):
                sub.take()
            value = sub.take()
            if value.kind not in (STRING, NUMBER, WORD):
                raise EnvelopeError("TBLPROPERTIES values are 'quoted', numbers or words",
                                    body.offset + piece.offset + value.start)
            out[key] = value.value
        return out

    def _flow(self, start: int) -> CreateFlow:
        name = self._name_part().strip("`")
        comment = None
        if self.accept("COMMENT"):
            comment = self.string()
        self.expect("AS")
        if self.at("APPLY", "AUTO"):
            changes = self._changes()
            return CreateFlow(name, changes.target, start, changes=changes, comment=comment)
        self.expect("INSERT")
        self.expect("INTO")
        once = self.accept("ONCE")
        target = self.name()
        self.expect("BY")
        self.expect("NAME")
        if not self.accept("REPLACE"):
            return CreateFlow(name, target, start, once=once, query=self.rest(), comment=comment)
        if self.accept("USING"):  # ... BY NAME REPLACE USING (cols) SEQUENCE BY seq query
            keys = tuple(k.strip("`") for k in self.name_list())
            self.expect("SEQUENCE")
            self.expect("BY")
            sequence = self.expression_until(_QUERY_WORDS)
            return CreateFlow(name, target, start, once=once, query=self.rest(), comment=comment,
                              replace_using=keys, sequence_by=sequence)
        self.expect("WHERE")  # ... BY NAME REPLACE WHERE predicate query
        predicate = self.expression_until(_QUERY_WORDS)
        return CreateFlow(name, target, start, once=once, query=self.rest(), comment=comment,
                          replace_where=predicate)

    def _replace_where(self) -> tuple[Fragment, Fragment]:
        """``WHERE predicate BY NAME query`` after ``FLOW REPLACE``: the predicate and the query."""
        self.expect("WHERE")
        predicate = self.expression_until({"BY"})
        self.expect("BY")
        self.expect("NAME")
        return predicate, self.rest()

    def _flow_body(self, target: str, insert_into: bool) -> tuple[bool, Fragment | None, ChangesClause | None]:
        """``FLOW INSERT [ONCE] BY NAME query`` or ``FLOW AUTO CDC ...`` of a streaming table."""
        if self.at("AUTO", "APPLY"):
            return False, None, self._changes(target=target)
        self.expect("INSERT")
        once = self.accept("ONCE")
        self.expect("BY")
        self.expect("NAME")
        return once, self.rest(), None

    def _changes(self, target: str | None = None) -> ChangesClause:
        start = self._offset()
        if self.accept("APPLY"):
            self.expect("CHANGES")
        else:
            self.expect("AUTO")
            self.expect("CDC")
        once = self.accept("ONCE")
        if target is None or self.at("INTO"):
            self.expect("INTO")
            target = self.name()
        self.expect("FROM")
        snapshot = self.at("SNAPSHOT") and not self.at("KEYS", ahead=1)  # (a source named snapshot: FROM snapshot KEYS)
        if snapshot:
            self.take()
        source = self._source()
        self.expect("KEYS")
        keys = self.name_list()
        changes = self._changes_options(target, source, tuple(k.strip("`") for k in keys), start, snapshot)
        return replace(changes, once=once, snapshot=snapshot)

    def _source(self) -> str:
        if self.at_punct("("):  # SNAPSHOT(name)
            self.take()
            name = self.name()
            self.expect_punct(")")
            return name
        if self.at("STREAM"):
            self.take()
            if self.at_punct("("):
                self.take()
                name = self.name()
                self.expect_punct(")")
                return name
            return self.name()
        return self.name()

    def _changes_options(self, target: str, source: str, keys: tuple[str, ...], start: int,
                         snapshot: bool = False) -> ChangesClause:
        options: dict[str, object] = {}
        sequence = None
        while (token := self.peek()) is not None:
            if self.accept("IGNORE"):
                self.expect("NULL")
                self.expect("UPDATES")
                if self.accept("ON"):  # ON (cols) | ON * EXCEPT (cols): only those columns
                    self._column_selection(options, "ignore_null_updates_column_list",
                                           "ignore_null_updates_except_column_list")
                else:
                    options["ignore_null_updates"] = True
            elif self.at("SYSTEM"):
                raise EnvelopeError("SYSTEM SEQUENCE BY orders a STORED AS BITEMPORAL target's system time, "
                                    "which the local runner does not support: remove the clause",
                                    token.start, code="SQL_UNSUPPORTED_CLAUSE")
            elif self.accept("APPLY"):
                self.expect("AS")
                which = self.expect("DELETE", "TRUNCATE").value.upper()
                self.expect("WHEN")
                options["delete_when" if which == "DELETE" else "truncate_when"] = self.expression_until(
                    _CHANGES_WORDS)
            elif self.accept("SEQUENCE"):
                self.expect("BY")
                sequence = self.expression_until(_CHANGES_WORDS)
            elif self.accept("COLUMNS"):
                if self.accept("TO"):  # COLUMNS TO UPDATE column: the array<string> of each event's columns
                    self.expect("UPDATE")
                    options["columns_to_update"] = self.name().strip("`")
                else:
                    self._column_selection(options, "column_list", "except_column_list")
            elif self.accept("STORED"):
                self.expect("AS")
                if self.at("BITEMPORAL"):
                    raise EnvelopeError("STORED AS BITEMPORAL (Beta on Databricks) is not supported by the local "
                                        "runner: use STORED AS SCD TYPE 1 or SCD TYPE 2", token.start,
                                        code="SQL_UNSUPPORTED_CLAUSE")
                self.expect("SCD")
                self.expect("TYPE")
                level = self.take()
                if level.value not in ("1", "2"):
                    raise EnvelopeError(f"STORED AS SCD TYPE takes 1 or 2, not {level.value}", level.start)
                options["scd_type"] = int(level.value)
            elif self.accept("TRACK"):
                self.expect("HISTORY")
                self.expect("ON")
                self._column_selection(options, "track_history", "track_history_except")
            else:
                raise EnvelopeError(f"'{token.value}' is not a clause of APPLY CHANGES", token.start,
                                    code="SQL_UNSUPPORTED_CLAUSE")
        if snapshot:
            _check_snapshot_options(options, sequence, start)
        elif sequence is None:
            raise EnvelopeError("APPLY CHANGES needs SEQUENCE BY", start)
        return ChangesClause(target, source, keys, sequence, offset=start, **options)  # type: ignore[arg-type]

    def _column_selection(self, options: dict[str, object], listed: str, excepted: str) -> None:
        if self.at_punct("*"):
            self.take()
            if self.accept("EXCEPT"):
                options[excepted] = tuple(n.strip("`") for n in self.name_list())
            return
        options[listed] = tuple(n.strip("`") for n in self.name_list())


_SNAPSHOT_OPTIONS = {"scd_type", "track_history", "track_history_except"}


def _check_snapshot_options(options: dict[str, object], sequence: Fragment | None, start: int) -> None:
    """``AUTO CDC ... FROM SNAPSHOT`` takes KEYS, STORED AS and TRACK HISTORY only (a snapshot's version orders
    it)."""
    given = sorted(k for k in options if k not in _SNAPSHOT_OPTIONS) + (["sequence_by"] if sequence else [])
    if given:
        raise EnvelopeError(f"AUTO CDC ... FROM SNAPSHOT takes KEYS, STORED AS SCD TYPE and TRACK HISTORY only, "
                            f"not {', '.join(given)}", start, code="SQL_UNSUPPORTED_CLAUSE")


@dataclass
class _Clauses:
    comment: str | None = None
    properties: dict[str, str] = field(default_factory=dict)
    partition_cols: tuple[str, ...] = ()
    cluster_by: tuple[str, ...] = ()
    cluster_auto: bool = False
    location: str | None = None
    refresh_policy: str | None = None


def _split_top_level(body: Fragment) -> list[Fragment]:
    """``body`` split at commas outside parentheses, type brackets (``STRUCT<a: INT, b: INT>``), quotes and
    comments (offsets relative to ``body``)."""
    pieces: list[Fragment] = []
    depth = angles = 0
    start = 0
    previous: Token | None = None
    for token in tokenize(body.text):
        if token.kind == PUNCT and token.value == "(":
            depth += 1
        elif token.kind == PUNCT and token.value == ")":
            depth -= 1
        elif token.kind == PUNCT and token.value == "<" and previous is not None and previous.is_word(
                "STRUCT", "ARRAY", "MAP"):
            angles += 1
        elif token.kind == PUNCT and token.value == ">" and angles:
            angles -= 1
        elif token.kind == PUNCT and token.value == "," and depth == 0 and angles == 0:
            pieces.append(_fragment(body.text, start, token.start))
            start = token.end
        previous = token
    pieces.append(_fragment(body.text, start, len(body.text)))
    return [p for p in pieces if p.text]


def _fragment(text: str, start: int, end: int) -> Fragment:
    raw = text[start:end]
    return Fragment(raw.strip(), start + (len(raw) - len(raw.lstrip())))

