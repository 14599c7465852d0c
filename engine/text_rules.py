"""Text rules: regular expressions over the free-text fields of input facts.

They run before the fact rules, in Python (durable-rules cannot report where a pattern
matched). Text is cut into clauses at sentence punctuation, clauses into parts at commas
and "but"; a clause where a `match` pattern matches concludes the rule's facts, with the
clause as quote and its character span, unless an `unless` pattern is found in a part the
match touches: a negation next to the statement ("已排除 layout 不一致", "a layout mismatch
was ruled out") blocks it, one elsewhere in the sentence ("已确认 march 一致，但板端报
Incompatible Platform") does not.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Iterator

from j6doctor.engine.compiled_patterns import freeze, thaw
from j6doctor.engine.facts import Fact
from j6doctor.engine.rule_loader import MATCH_ALIAS, PLACEHOLDER, TEXT_FILLED_FIELDS
from j6doctor.engine.rule_model import Rule

# Clause ends: CJK and ASCII sentence punctuation, line breaks, and a full stop that ends a
# sentence (followed by a space or the end; "3.1.2" and "nash-e." inside words stay whole).
_CLAUSE_END = re.compile(r"[。；;！!？?\n\r]|\.(?=\s|$)")
# Parts of a clause, for negations: commas, colons and "but".
_PART_END = re.compile(r"[，,、：:]|但是|但|却|(?<![a-z])(?:but|however|while|whereas)(?![a-z])", re.IGNORECASE)
MAX_QUOTE = 160  # characters of a clause kept as the quote
MAX_MATCHES_PER_TEXT = 1  # a rule concludes once per text: its first clause is the quote


@dataclass(frozen=True)
class TextMatch:
    """One clause that fired a text rule."""

    rule: Rule
    fact: Fact  # the input fact whose text matched
    field: str
    start: int  # span of the clause in the text
    end: int
    quote: str
    groups: dict[str, str]


@dataclass(frozen=True)
class CompiledTextRule:
    """A text rule with its patterns compiled."""

    rule: Rule
    match: tuple[re.Pattern, ...]
    unless: tuple[re.Pattern, ...]
    # the picklable compiled code of match / unless (compiled_patterns.py), made on first pickling
    frozen: list = field(default_factory=list, compare=False, repr=False)

    @classmethod
    def of(cls, rule: Rule) -> "CompiledTextRule":
        spec = rule.text
        assert spec is not None
        return cls(rule, tuple(re.compile(p, re.IGNORECASE) for p in spec.match),
                   tuple(re.compile(p, re.IGNORECASE) for p in spec.unless))

    def __reduce__(self):
        # The rule-base cache stores the compiled code, not only the source (compiled_patterns.py).
        if not self.frozen:
            self.frozen[:] = [tuple(map(freeze, self.match)), tuple(map(freeze, self.unless))]
        return (_restore, (self.rule, *self.frozen))


def _restore(rule: Rule, match: tuple, unless: tuple) -> CompiledTextRule:
    return CompiledTextRule(rule, tuple(map(thaw, match)), tuple(map(thaw, unless)), [match, unless])


def clauses(text: str) -> Iterator[tuple[int, int]]:
    """(start, end) of every non-blank clause, surrounding whitespace trimmed."""
    start = 0
    for end_match in _CLAUSE_END.finditer(text):
        yield from _trimmed(text, start, end_match.start())
        start = end_match.end()
    yield from _trimmed(text, start, len(text))


def _trimmed(text: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    if end > start:
        yield start, end


def find_matches(rule: CompiledTextRule, facts: list[Fact]) -> list[TextMatch]:
    """Every clause of the rule's text fields that fires it, in fact and text order."""
    found: list[TextMatch] = []
    reads = rule.rule.text.reads  # type: ignore[union-attr]
    for fact in facts:
        for type_name, field_name in reads:
            if fact.type != type_name:
                continue
            text = fact.fields.get(field_name)
            if not isinstance(text, str) or not text:
                continue
            key = fact.source.key if fact.source is not None and fact.source.key else f"{fact.type}.{field_name}"
            count = 0
            for start, end in clauses(text):
                clause = text[start:end]
                hit = _first_hit(rule.match, clause)
                if hit is None or _negated(rule.unless, clause, hit):
                    continue
                groups = {k: v for k, v in hit.groupdict().items() if v is not None}
                found.append(TextMatch(rule.rule, fact, key, start, end, clause[:MAX_QUOTE], groups))
                count += 1
                if count >= MAX_MATCHES_PER_TEXT:
                    break
    return found


def _negated(unless: tuple[re.Pattern, ...], clause: str, hit: re.Match) -> bool:
    """An `unless` pattern in the parts of the clause the match touches."""
    if not unless:
        return False
    bounds = [0] + [m.end() for m in _PART_END.finditer(clause)] + [len(clause) + 1]
    first = max(b for b in bounds if b <= hit.start())
    last = min(b for b in bounds if b >= hit.end())
    window = clause[first:last]
    return any(p.search(window) for p in unless)


def _first_hit(patterns: tuple[re.Pattern, ...], clause: str) -> re.Match | None:
    for pattern in patterns:
        hit = pattern.search(clause)
        if hit is not None:
            return hit
    return None


def conclusion_fields(match: TextMatch, fields: dict[str, Any], type_fields: set[str]) -> dict[str, Any]:
    """A conclusion's fields for one match: `${match.NAME}` replaced by the named group,
    quote / field / start / end filled when the type has them and the rule did not set them."""
    out: dict[str, Any] = {}
    for name, value in fields.items():
        if isinstance(value, str) and "${" in value:
            value = PLACEHOLDER.sub(lambda m: _group(match, m), value)
        out[name] = value
    filled = {"quote": match.quote, "field": match.field, "start": match.start, "end": match.end}
    for name in TEXT_FILLED_FIELDS:
        if name in type_fields and name not in out:
            out[name] = filled[name]
    return out


def _group(match: TextMatch, placeholder: re.Match) -> str:
    if placeholder.group(1) != MATCH_ALIAS:
        return placeholder.group(0)
    text = match.groups.get(placeholder.group(2), "")
    return text.lower() if placeholder.group(3) == "|lower" else text
