"""Data-quality rule files (``expectations/<dataset or group>.yml``) and rule sets.

A rule file::

    dataset: orders_clean            # optional, defaults to the file name
    description: Orders after cleansing
    include: [common_ids]            # optional: other rule files (groups) merged in first
    defaults: {action: warn, severity: medium, tags: [silver]}
    rules:
      - name: valid_order_id
        constraint: order_id IS NOT NULL
        action: drop                 # warn | drop | fail
        description: every order has an id
        severity: high               # info | low | medium | high | critical
        tags: [completeness]

YAML and Python rules are the same objects: a :class:`Rule` becomes the framework's
:class:`~framework.declarations.Expectation` (``rule.to_expectation()``), and a :class:`RuleSet` gives the dicts
that ``dlt.expect_all*`` take. Loading reports every mistake of a file at once, each with file and line, as a
:class:`~framework.errors.RuleFileError`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import yaml

from framework.declarations import UNKNOWN_LOCATION, Expectation, ExpectationAction, SourceLocation
from framework.errors import PipelineError, Problem, RuleFileError
from framework.quality import sqlcheck

if TYPE_CHECKING:
    from pyspark.sql import Column, SparkSession
    from pyspark.sql.types import StructType

ACTIONS: tuple[ExpectationAction, ...] = ("warn", "drop", "fail")
SEVERITIES = ("info", "low", "medium", "high", "critical")
RULE_FILE_SUFFIXES = (".yml", ".yaml")
_FILE_KEYS = {"dataset", "description", "include", "defaults", "rules"}
_RULE_KEYS = {"name", "constraint", "action", "description", "severity", "tags"}
_DEFAULT_KEYS = {"action", "severity", "tags"}


@dataclass(frozen=True)
class Rule:
    """A named data-quality rule: a SQL boolean constraint plus what to do with rows that fail it.

    Attributes:
        name: unique within a dataset; the expectation name in the event log.
        constraint: SQL boolean expression (or a ``pyspark.sql.Column``). NULL counts as failure.
        action: ``warn`` (keep and count), ``drop`` (remove and count) or ``fail`` (stop the flow).
        description: what the rule protects, for reports and Data Docs.
        severity: ``info``, ``low``, ``medium``, ``high`` or ``critical`` (reporting only).
        tags: free-form labels (``completeness``, ``validity``, ...), for selecting rules and for reports.
        location: the file and line of the rule's definition.
    """

    name: str
    constraint: Any
    action: ExpectationAction = "warn"
    description: str = ""
    severity: str = "medium"
    tags: tuple[str, ...] = ()
    location: SourceLocation = UNKNOWN_LOCATION
    constraint_line: int | None = field(default=None, compare=False, repr=False)

    @property
    def constraint_sql(self) -> str:
        """The constraint as SQL text."""
        return self.constraint if isinstance(self.constraint, str) else str(self.constraint)

    def to_expectation(self) -> Expectation:
        """The framework expectation this rule declares (same name, constraint, action and location)."""
        return Expectation(self.name, self.constraint, self.action, self.location)

    def column(self) -> Column:
        """The constraint as a Spark ``Column`` (a pure function of the row)."""
        from pyspark.sql import Column
        from pyspark.sql import functions as F

        if isinstance(self.constraint, Column):
            return self.constraint
        return F.expr(self.constraint)

    @classmethod
    def from_expectation(cls, expectation: Expectation, **extra: Any) -> Rule:
        """Wrap a framework :class:`Expectation` (e.g. one declared with ``dlt.expect``) as a rule."""
        return cls(
            expectation.name,
            expectation.constraint,
            expectation.action,
            location=expectation.location,
            **extra,
        )


@dataclass(frozen=True)
class RuleSet:
    """The rules of one dataset (or group), in file order. Iterable; ``len()`` is the number of rules."""

    name: str
    rules: tuple[Rule, ...] = ()
    description: str = ""
    source: str | None = None

    def __iter__(self) -> Iterator[Rule]:
        return iter(self.rules)

    def __len__(self) -> int:
        return len(self.rules)

    def __getitem__(self, name: str) -> Rule:
        for rule in self.rules:
            if rule.name == name:
                return rule
        raise KeyError(f"rule set '{self.name}' has no rule '{name}'; it has {self.names}")

    @property
    def names(self) -> list[str]:
        """Rule names in order."""
        return [r.name for r in self.rules]

    def constraints(self, action: ExpectationAction) -> dict[str, Any]:
        """``{name: constraint}`` of the rules with ``action``: the argument of ``dlt.expect_all*``."""
        return {r.name: r.constraint for r in self.rules if r.action == action}

    @property
    def warn(self) -> dict[str, Any]:
        """The dict for ``dlt.expect_all``."""
        return self.constraints("warn")

    @property
    def drop(self) -> dict[str, Any]:
        """The dict for ``dlt.expect_all_or_drop``."""
        return self.constraints("drop")

    @property
    def fail(self) -> dict[str, Any]:
        """The dict for ``dlt.expect_all_or_fail``."""
        return self.constraints("fail")

    def expectations(self) -> tuple[Expectation, ...]:
        """Every rule as a framework :class:`Expectation`."""
        return tuple(r.to_expectation() for r in self.rules)

    def select(
        self,
        *,
        actions: Iterable[str] | None = None,
        tags: Iterable[str] | None = None,
        min_severity: str | None = None,
    ) -> RuleSet:
        """A rule set with only the rules matching every given filter (any of ``actions``, any of ``tags``)."""
        wanted_actions = set(actions) if actions is not None else None
        wanted_tags = set(tags) if tags is not None else None
        floor = SEVERITIES.index(min_severity) if min_severity else 0
        kept = tuple(
            r
            for r in self.rules
            if (wanted_actions is None or r.action in wanted_actions)
            and (wanted_tags is None or wanted_tags & set(r.tags))
            and (r.severity not in SEVERITIES or SEVERITIES.index(r.severity) >= floor)
        )
        return replace(self, rules=kept)

    def with_action(self, action: ExpectationAction) -> RuleSet:
        """The same rules, all with ``action`` (e.g. turn a rule set into warnings for a dry run)."""
        return replace(self, rules=tuple(replace(r, action=action) for r in self.rules))

    def __add__(self, other: RuleSet) -> RuleSet:
        problems = _duplicate_problems(self.rules + other.rules)
        if problems:
            raise RuleFileError(f"{self.name} + {other.name}", problems)
        return replace(self, rules=self.rules + other.rules)


def rules_from_dict(name: str, constraints: Mapping[str, Any], action: ExpectationAction = "warn") -> RuleSet:
    """Build a rule set from a ``{name: constraint}`` dict, as written for ``dlt.expect_all*``."""
    return RuleSet(name, tuple(Rule(n, c, action) for n, c in constraints.items()))


# ---------------------------------------------------------------------------------------------- finding files


def search_paths() -> list[Path]:
    """Folders searched for rule files, in order: ``$MEDALLION_EXPECTATIONS`` (``os.pathsep``-separated),
    ``<project root>/expectations`` (``framework.settings.project_root()``), ``./expectations``."""
    from framework.settings import project_root

    paths = [Path(p) for p in os.environ.get("MEDALLION_EXPECTATIONS", "").split(os.pathsep) if p]
    paths += [project_root() / "expectations", Path.cwd() / "expectations"]
    unique: list[Path] = []
    for p in paths:
        if p not in unique:
            unique.append(p)
    return unique


def find_rule_file(name_or_path: str | os.PathLike[str], *, relative_to: Path | None = None) -> Path:
    """Resolve a rule set name (``orders_clean``) or a path to an existing rule file.

    Raises:
        RuleFileError: ``RULE_FILE_NOT_FOUND`` with the folders searched.
    """
    text = os.fspath(name_or_path)
    candidate = Path(text)
    if candidate.suffix in RULE_FILE_SUFFIXES or candidate.is_absolute() or os.sep in text:
        tries = (
            [candidate] if candidate.is_absolute() else [(relative_to or Path.cwd()) / candidate, candidate]
        )
        tries += [d / candidate.name for d in search_paths()] if not candidate.is_absolute() else []
    else:
        folders = ([relative_to] if relative_to else []) + search_paths()
        tries = [d / f"{text}{suffix}" for d in folders for suffix in RULE_FILE_SUFFIXES]
    for path in tries:
        if path.is_file():
            return path
    searched = ", ".join(sorted({str(p.parent) for p in tries}))
    raise RuleFileError(
        text,
        [
            Problem(
                "RULE_FILE_NOT_FOUND",
                f"no rule file for '{text}' (looked for {text}.yml / .yaml in {searched}); create "
                f"expectations/{candidate.stem}.yml or set MEDALLION_EXPECTATIONS",
            )
        ],
    )


# ---------------------------------------------------------------------------------------------- loading


def load_rules(name_or_path: str | os.PathLike[str], *, check_sql: bool = True) -> RuleSet:
    """Load and validate a rule file; every mistake is reported at once.

    Args:
        name_or_path: a rule set name found in the ``expectations/`` folders (see :func:`search_paths`), or a
            path to a ``.yml`` file.
        check_sql: check constraints with Spark's parser when a SparkContext is already running (never
            starts one); a lexical check always runs. Use :func:`validate_rules` for a full check.

    Returns:
        The rules, in file order, with included groups first.

    Raises:
        RuleFileError: with one :class:`~framework.errors.Problem` (code, message, file, line) per mistake.
    """
    path = find_rule_file(name_or_path)
    problems: list[Problem] = []
    ruleset = _load_file(path, problems, stack=())
    problems += _duplicate_problems(ruleset.rules)
    problems += _sql_problems(ruleset.rules, launch=False if check_sql else None)
    if problems:
        raise RuleFileError(str(path), _sorted(problems))
    return ruleset


def parse_rules(text: str, *, source: str = "<string>", name: str | None = None) -> RuleSet:
    """Parse rule-file YAML from a string (no includes resolved relative to a folder, no SQL parser)."""
    problems: list[Problem] = []
    ruleset = _parse_text(text, source, name or Path(source).stem, problems, stack=(), base=None)
    problems += _duplicate_problems(ruleset.rules)
    problems += _sql_problems(ruleset.rules, launch=None)
    if problems:
        raise RuleFileError(source, _sorted(problems))
    return ruleset


def validate_rules(
    rules: RuleSet | str | os.PathLike[str],
    *,
    schema: StructType | None = None,
    spark: SparkSession | None = None,
) -> RuleSet:
    """Fully validate rules: structure, Spark's SQL parser, and (given ``schema``) columns and types.

    The parser check works without a SparkSession (a bare parser JVM is launched if needed). The schema check
    needs a session: ``spark``, the active one, or a new local one.

    Raises:
        RuleFileError: every problem found, with file and line.
    """
    if isinstance(rules, RuleSet):
        ruleset = rules
        problems = _duplicate_problems(ruleset.rules)
    else:
        path = find_rule_file(rules)
        problems = []
        ruleset = _load_file(path, problems, stack=())
        problems += _duplicate_problems(ruleset.rules)
    problems += _sql_problems(ruleset.rules, launch=True)
    if schema is not None and not any(p.code == "CONSTRAINT_SYNTAX" for p in problems):
        problems += check_against_schema(ruleset, schema, spark=spark, raise_on_error=False)
    if problems:
        raise RuleFileError(ruleset.source or ruleset.name, _sorted(problems))
    return ruleset


def check_against_schema(
    ruleset: RuleSet, schema: StructType, *, spark: SparkSession | None = None, raise_on_error: bool = True
) -> list[Problem]:
    """Resolve every string constraint against a dataset schema (analysis only, no Spark job).

    Finds unknown columns (with Spark's "did you mean"), unknown functions, type errors and non-boolean
    constraints. Call it at validate time, when the dataset's schema is known.

    Args:
        ruleset: the rules to check.
        schema: the schema of the DataFrame the rules are applied to.
        spark: the session to analyse with (default: the active one).
        raise_on_error: raise :class:`RuleFileError` when problems are found (else return them).

    Returns:
        The problems (empty when every rule resolves).
    """
    if spark is None:
        from pyspark.sql import SparkSession

        spark = SparkSession.getActiveSession()
        if spark is None:
            raise PipelineError("validate_rules analyses the rules with Spark: pass spark= (a SparkSession), "
                                "or start one first", code="NO_SPARK_SESSION")
    problems: list[Problem] = []
    for rule in ruleset.rules:
        if not isinstance(rule.constraint, str):
            continue
        found = sqlcheck.analysis_problem(spark, rule.constraint, schema)
        if found is not None:
            code, message = found
            problems.append(
                _rule_problem(
                    rule, code, f"rule '{rule.name}': {message} in `{rule.constraint}`", constraint=True
                )
            )
    if problems and raise_on_error:
        raise RuleFileError(ruleset.source or ruleset.name, problems)
    return problems


# ---------------------------------------------------------------------------------------------- internals


def _load_file(path: Path, problems: list[Problem], stack: tuple[Path, ...]) -> RuleSet:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        problems.append(Problem("RULE_FILE_UNREADABLE", f"cannot read the rule file: {error}", str(path)))
        return RuleSet(path.stem, source=str(path))
    return _parse_text(text, str(path), path.stem, problems, (*stack, path.resolve()), base=path.parent)


def _parse_text(
    text: str,
    source: str,
    default_name: str,
    problems: list[Problem],
    stack: tuple[Path, ...],
    base: Path | None,
) -> RuleSet:
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None) or getattr(error, "context_mark", None)
        reason = getattr(error, "problem", None) or str(error)
        problems.append(
            Problem(
                "YAML_SYNTAX",
                f"the file is not valid YAML: {reason}",
                source,
                mark.line + 1 if mark is not None else None,
            )
        )
        return RuleSet(default_name, source=source)
    if root is None:
        problems.append(Problem("EMPTY_RULE_FILE", "the rule file is empty; add a `rules:` list", source, 1))
        return RuleSet(default_name, source=source)
    if not isinstance(root, yaml.MappingNode):
        problems.append(
            Problem("NOT_A_MAPPING", "a rule file is a mapping with a `rules:` list", source, _line(root))
        )
        return RuleSet(default_name, source=source)
    top = _mapping(root, source, problems, allowed=_FILE_KEYS, what="rule file")
    name = _scalar_text(top.get("dataset"), source, problems, "dataset") or default_name
    description = _scalar_text(top.get("description"), source, problems, "description") or ""
    defaults = _defaults(top.get("defaults"), source, problems)

    rules: list[Rule] = []
    for group in _includes(top.get("include"), source, problems):
        rules += _included(group, source, problems, stack, base)
    rules_node = top.get("rules")
    if rules_node is None:
        problems.append(Problem("MISSING_FIELD", "the rule file has no `rules:` list", source, _line(root)))
    elif not isinstance(rules_node, yaml.SequenceNode):
        problems.append(
            Problem(
                "NOT_A_LIST", "`rules:` must be a list of rules (`- name: ...`)", source, _line(rules_node)
            )
        )
    else:
        for item in rules_node.value:
            rule = _rule(item, source, problems, defaults)
            if rule is not None:
                rules.append(rule)
    return RuleSet(name, tuple(rules), description, source)


def _rule(node: yaml.Node, source: str, problems: list[Problem], defaults: dict[str, Any]) -> Rule | None:
    line = _line(node)
    if not isinstance(node, yaml.MappingNode):
        problems.append(
            Problem(
                "INVALID_RULE", "each rule is a mapping with `name`, `constraint` and `action`", source, line
            )
        )
        return None
    fields = _mapping(node, source, problems, allowed=_RULE_KEYS, what="rule")
    name = _scalar_text(fields.get("name"), source, problems, "name")
    constraint = _scalar_text(fields.get("constraint"), source, problems, "constraint")
    label = f"rule '{name}'" if name else "a rule"
    if not name:
        if "name" not in fields:
            problems.append(Problem("MISSING_FIELD", f"{label} has no `name`", source, line))
        name = None
    if constraint is None and "constraint" not in fields:
        problems.append(
            Problem("MISSING_FIELD", f"{label} has no `constraint` (a SQL boolean expression)", source, line)
        )
    action = _scalar_text(fields.get("action"), source, problems, "action") or defaults.get("action", "warn")
    if action not in ACTIONS:
        problems.append(
            Problem(
                "UNKNOWN_ACTION",
                f"{label}: unknown action '{action}'; use one of {', '.join(ACTIONS)}",
                source,
                _line(fields.get("action"), line),
            )
        )
        action = "warn"
    severity = _scalar_text(fields.get("severity"), source, problems, "severity") or defaults.get(
        "severity", "medium"
    )
    if severity not in SEVERITIES:
        problems.append(
            Problem(
                "UNKNOWN_SEVERITY",
                f"{label}: unknown severity '{severity}'; use one of {', '.join(SEVERITIES)}",
                source,
                _line(fields.get("severity"), line),
            )
        )
    tags = tuple(defaults.get("tags", ())) + _tags(fields.get("tags"), source, problems, label)
    description = _scalar_text(fields.get("description"), source, problems, "description") or ""
    if not name or constraint is None:
        return None
    constraint_node = fields.get("constraint")
    return Rule(
        name,
        constraint,
        cast(ExpectationAction, action),
        description,
        severity,
        tuple(dict.fromkeys(tags)),
        SourceLocation(source, line or 0),
        constraint_line=_line(constraint_node, line),
    )


def _defaults(node: yaml.Node | None, source: str, problems: list[Problem]) -> dict[str, Any]:
    if node is None:
        return {}
    if not isinstance(node, yaml.MappingNode):
        problems.append(
            Problem(
                "INVALID_DEFAULTS", "`defaults:` is a mapping (action, severity, tags)", source, _line(node)
            )
        )
        return {}
    fields = _mapping(node, source, problems, allowed=_DEFAULT_KEYS, what="defaults")
    out: dict[str, Any] = {}
    for key in ("action", "severity"):
        value = _scalar_text(fields.get(key), source, problems, key)
        if value is not None:
            out[key] = value
    if "tags" in fields:
        out["tags"] = _tags(fields["tags"], source, problems, "defaults")
    return out


def _includes(node: yaml.Node | None, source: str, problems: list[Problem]) -> list[tuple[str, int]]:
    if node is None:
        return []
    items = node.value if isinstance(node, yaml.SequenceNode) else [node]
    out = []
    for item in items:
        if isinstance(item, yaml.ScalarNode) and str(item.value).strip():
            out.append((str(item.value).strip(), _line(item) or 0))
        else:
            problems.append(
                Problem("INVALID_INCLUDE", "`include:` lists rule file names", source, _line(item))
            )
    return out


def _included(
    group: tuple[str, int], source: str, problems: list[Problem], stack: tuple[Path, ...], base: Path | None
) -> list[Rule]:
    name, line = group
    try:
        path = find_rule_file(name, relative_to=base)
    except RuleFileError:
        problems.append(Problem("INCLUDE_NOT_FOUND", f"included rule file '{name}' not found", source, line))
        return []
    if path.resolve() in stack:
        chain = " -> ".join(p.name for p in (*stack, path))
        problems.append(Problem("INCLUDE_CYCLE", f"rule files include each other: {chain}", source, line))
        return []
    return list(_load_file(path, problems, stack).rules)


def _mapping(
    node: yaml.MappingNode, source: str, problems: list[Problem], *, allowed: set[str], what: str
) -> dict[str, yaml.Node]:
    out: dict[str, yaml.Node] = {}
    for key_node, value_node in node.value:
        key = str(key_node.value)
        if key in out:
            problems.append(
                Problem("DUPLICATE_KEY", f"`{key}` appears twice in this {what}", source, _line(key_node))
            )
        elif key not in allowed:
            problems.append(
                Problem(
                    "UNKNOWN_FIELD",
                    f"unknown {what} field `{key}`; allowed: {', '.join(sorted(allowed))}",
                    source,
                    _line(key_node),
                )
            )
        out[key] = value_node
    return out


def _scalar_text(node: yaml.Node | None, source: str, problems: list[Problem], key: str) -> str | None:
    if node is None:
        return None
    if not isinstance(node, yaml.ScalarNode):
        problems.append(
            Problem(
                "INVALID_VALUE", f"`{key}` must be a single value, not a list or mapping", source, _line(node)
            )
        )
        return None
    if node.tag == "tag:yaml.org,2002:null":
        return None
    return str(node.value)


def _tags(node: yaml.Node | None, source: str, problems: list[Problem], label: str) -> tuple[str, ...]:
    if node is None:
        return ()
    if isinstance(node, yaml.ScalarNode):
        return (str(node.value),) if node.value else ()
    if isinstance(node, yaml.SequenceNode) and all(isinstance(i, yaml.ScalarNode) for i in node.value):
        return tuple(str(i.value) for i in node.value)
    problems.append(Problem("INVALID_TAGS", f"{label}: `tags` is a list of words", source, _line(node)))
    return ()


def _duplicate_problems(rules: Iterable[Rule]) -> list[Problem]:
    seen: dict[str, Rule] = {}
    problems = []
    for rule in rules:
        first = seen.get(rule.name.lower())
        if first is not None:
            problems.append(
                _rule_problem(
                    rule,
                    "DUPLICATE_RULE",
                    f"rule '{rule.name}' is defined twice (first "
                    f"at {first.location}); names must be unique per dataset",
                )
            )
        else:
            seen[rule.name.lower()] = rule
    return problems


def _sql_problems(rules: Iterable[Rule], *, launch: bool | None) -> list[Problem]:
    """``launch=None``: lexical only; ``False``: Spark's parser if a SparkContext runs; ``True``: always."""
    problems = []
    for rule in rules:
        if not isinstance(rule.constraint, str):
            continue
        if launch is None:
            found = "; ".join(sqlcheck.lexical_problems(rule.constraint)) or None
        else:
            found = sqlcheck.parse_problem(rule.constraint, launch=launch)
        if found:
            problems.append(
                _rule_problem(
                    rule,
                    "CONSTRAINT_SYNTAX",
                    f"rule '{rule.name}': the constraint `{rule.constraint}` does not parse: {found}",
                    constraint=True,
                )
            )
    return problems


def _rule_problem(rule: Rule, code: str, message: str, *, constraint: bool = False) -> Problem:
    line = rule.constraint_line if constraint and rule.constraint_line else rule.location.line
    file = rule.location.file if rule.location is not UNKNOWN_LOCATION else None
    return Problem(code, message, file, line or None)


def _line(node: yaml.Node | None, default: int | None = None) -> int | None:
    if node is None:
        return default
    return int(node.start_mark.line) + 1


def _sorted(problems: list[Problem]) -> list[Problem]:
    return sorted(problems, key=lambda p: (p.file or "", p.line or 0))
