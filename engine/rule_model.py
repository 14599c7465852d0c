"""The rule language: what a YAML rule means, as plain records.

A rule file:

    title: ...            # what table of the specification this file encodes
    seed: ...             # default seed section of its rules
    rules:
      - id: map.convert
        title: qat.bc 正常、quantized.bc 异常 → convert
        seed: ...         # optional, overrides the file's
        priority: 0       # optional, lower fires first
        when:             # all conditions must hold
          - confirmed: {artifact: qat_bc, status: normal}
          - first_abnormal: {artifact: quantized_bc}
            as: a         # optional alias, for refs in later conditions and in `then`
          - not:          # no fact matches
              conflict: {}
        then:             # facts to derive
          - chain_stage: {stage: convert, next_step: "... ${a.artifact} ..."}
        examples:         # cases that must fire the rule (or not: `fires: false`)
          - name: ...
            case: {...}
            expect: {...}

Field tests: a scalar means equality; otherwise one operator of
eq ne lt le gt ge in not_in, whose operand is a literal or `{ref: alias.field}`; and
`contains: word` (case-insensitive substring of a text field; letters, digits, '_' and spaces).

A *text rule* reads free text instead of matching facts: `read:` names text fields of input
facts (`symptom.text`; default: every prose field the text context lists), `match:` lists
patterns over term classes (`{mention} … {status}`, engine/tag_patterns.py), `unless:` lists
patterns that, found in the parts of the sentence the match touches, block it. Each sentence
that matches concludes `then:`; fields named quote, field, start and end are filled with the
sentence, its fact's source key and its span, and `${match.NAME}` in a conclusion's text is
the value of the class captured as NAME (`${match.NAME|lower}`). `unread:` (instead of
`match:`) lists classes: the rule fires on each sentence holding one that no rule matched.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, NamedTuple

OPERATORS = ("eq", "ne", "lt", "le", "gt", "ge", "in", "not_in", "contains")

# `${alias.field}` in a conclusion's text; `${alias.field|label}` shows an enum value's label,
# `${alias.field|lower}` the text in lower case, `|<attribute>` an enum value's attribute
# (`${m.artifact|chain}`); a field that is one placeholder alone takes the value as it is typed.
PLACEHOLDER = re.compile(r"\$\{([a-z][a-z0-9_]*)\.([A-Za-z_][A-Za-z0-9_]*)(\|[a-z_]+)?\}")
# The alias a text rule's conclusions use for the match: ${match.NAME} is a captured class.
MATCH_ALIAS = "match"
# ... and ${read.FIELD} (or {ref: read.FIELD}) a field of the fact whose text it read.
READ_ALIAS = "read"
# Fields of a text rule's conclusion the engine fills from the match, when the type has them.
TEXT_FILLED_FIELDS = ("quote", "field", "start", "end")


@dataclass(frozen=True)
class Ref:
    """`alias.field`: a field of the fact another condition bound to `alias`."""

    alias: str
    field: str

    def __str__(self) -> str:
        return f"{self.alias}.{self.field}"


class Test(NamedTuple):
    """One comparison of a condition: `field op value`."""

    field: str
    op: str
    value: Any  # literal, list of literals (in / not_in) or Ref

    @property
    def is_join(self) -> bool:
        return isinstance(self.value, Ref)

    def admits(self, value: Any) -> bool:
        """Whether a field holding the literal `value` passes this literal test, for reasoning
        about rules where no fact exists yet (which rules can conclude a wanted value:
        explain.producers_of, lint). Facts are matched by the engine (condition_match.py);
        tests/test_explain_properties.py checks this reading against it. As there: null is an
        empty field, ordering holds between numbers only, `contains` on text only."""
        operand = self.value
        if self.op in ("eq", "ne"):
            return (value == operand) == (self.op == "eq")
        if self.op in ("in", "not_in"):
            return (value in operand) == (self.op == "in")
        if self.op == "contains":
            return isinstance(value, str) and str(operand).lower() in value.lower()
        if not (_is_number(value) and _is_number(operand)):
            return False
        return {"lt": value < operand, "le": value <= operand, "gt": value > operand, "ge": value >= operand}[self.op]


class Condition(NamedTuple):
    """One `when:` line: a fact of `type` passing every test (or none, when negated)."""

    type: str
    tests: tuple[Test, ...]
    negated: bool = False
    alias: str | None = None
    line: int | None = None

    def describe(self) -> str:
        inner = ", ".join(_describe_test(t) for t in self.tests)
        return f"{self.type}{{{inner}}}"

    def in_words(self) -> str:
        """The condition as written: `not ` before a negated one."""
        return ("not " if self.negated else "") + self.describe()


class Conclusion(NamedTuple):
    """One `then:` entry: the fact a firing derives."""

    type: str
    fields: dict[str, Any]  # literal, Ref, or str with ${alias.field} placeholders
    line: int | None = None


@dataclass(frozen=True)
class TextSpec:
    """What a text rule reads and matches."""

    reads: tuple[tuple[str, str], ...]  # (fact type, text field)
    match: tuple[Any, ...]  # TagPattern (engine/tag_patterns.py)
    unless: tuple[Any, ...] = ()
    context: str = ""  # the reading it takes (facts/text_context.yaml `contexts`; "" = the default)
    groups: dict[str, str] = field(default_factory=dict)  # name a term class is captured under -> the class
    every: bool = False  # `matches: all`: every statement of a text, not only the first
    unread: tuple[str, ...] = ()  # `unread:` classes: fires on the sentences no other text rule matched
    unless_in_sentence: bool = False  # `unless_in: sentence`: unless patterns are looked for in the whole sentence

    @property
    def sources(self) -> tuple[str, ...]:
        """The match patterns as written."""
        return tuple(p.source for p in self.match)


@dataclass
class Example:
    """A case a rule's tests run: it must fire the rule (fires) or be blocked by a guard."""

    name: str
    case: dict[str, Any]
    fires: bool = True
    expect: dict[str, Any] = field(default_factory=dict)
    line: int | None = None
    facts: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # input facts beside the case


class _ExamplesNotLoaded:
    """What a rule from the rule-base cache holds instead of its examples: a diagnosis never
    reads them, so they are kept in an entry of their own (RuleBase.with_examples). Using it
    as a list is an error, never an empty list."""

    def _fail(self, *_args: Any) -> Any:
        raise RuntimeError("the rule's examples are not loaded: call RuleBase.with_examples() first")

    __len__ = __iter__ = __getitem__ = __bool__ = _fail

    def __reduce__(self) -> str:
        return "EXAMPLES_NOT_LOADED"  # pickled by name: one sentinel per process

    def __repr__(self) -> str:
        return "EXAMPLES_NOT_LOADED"


EXAMPLES_NOT_LOADED = _ExamplesNotLoaded()


@dataclass
class Rule:
    """One rule as written in its YAML file."""

    id: str
    title: str
    seed: str
    file: str
    line: int | None
    when: tuple[Condition, ...]
    then: tuple[Conclusion, ...]
    priority: int = 0
    knowledge: str = ""
    examples: list[Example] = field(default_factory=list)
    overrides: str | None = None  # file of the rule this one replaced (rule packs)
    file_title: str = ""  # title of the rule file: the table it encodes
    folder: str = ""  # folder of the rule file: relative paths in its examples refer to it
    text: TextSpec | None = None  # set for text rules (they have no `when`)
    table: str = ""  # the decision table whose row this rule is

    @property
    def positive(self) -> tuple[Condition, ...]:
        return tuple(c for c in self.when if not c.negated)

    @property
    def negative(self) -> tuple[Condition, ...]:
        return tuple(c for c in self.when if c.negated)

    def consumes(self) -> set[str]:
        if self.text is not None:
            return {type_name for type_name, _ in self.text.reads}
        return {c.type for c in self.positive}

    def negates(self) -> set[str]:
        return {c.type for c in self.negative}

    def produces(self) -> set[str]:
        return {c.type for c in self.then}

    def referenced(self) -> dict[str, set[str]]:
        """alias -> its fields that other conditions of the rule compare with."""
        out: dict[str, set[str]] = {}
        for cond in self.when:
            for test in cond.tests:
                if test.is_join:
                    out.setdefault(test.value.alias, set()).add(test.value.field)
        return out


@dataclass
class RuleFile:
    """One rule file: its title, seed section and rules."""

    path: str
    title: str
    seed: str
    rules: list[Rule]


def _describe_test(test: Test) -> str:
    symbol = {"eq": "=", "ne": "≠", "lt": "<", "le": "≤", "gt": ">", "ge": "≥",
              "in": "∈", "not_in": "∉", "contains": " contains "}[test.op]
    value = test.value
    if isinstance(value, list):
        value = "[" + ", ".join(str(v) for v in value) + "]"
    return f"{test.field}{symbol}{value}"


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
