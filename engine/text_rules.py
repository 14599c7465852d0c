"""Text rules: regular expressions over the free-text fields of input facts.

They run before the fact rules, in Python (durable-rules cannot report where a pattern
matched). Text is cut into clauses (sentences) and clauses into parts, as the vocabulary's
text context says (facts/text_context.yaml). A clause where a `match` pattern matches
concludes the rule's facts, with the clause as quote and its character span, when:

- no `unless` pattern of the rule is found in the parts the match touches, and
- the context triggers found in those parts admit the rule's reading (`context:`): a
  negation next to the statement ("已排除 layout 不一致") blocks an asserted statement, one
  elsewhere in the sentence ("已确认 march 一致，但板端报 Incompatible Platform") does not;
  a suspicion ("怀疑 layout 不一致") blocks it too, and is what a `context: uncertain` rule
  asks for. A trigger inside a term of the match (a phrase of a term class, such as the
  status "没有问题") belongs to the term and modifies nothing (ConText's rule for triggers
  inside a target).

Patterns are compiled on first use: a run whose case has no text compiles none.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Iterator

from j6doctor.engine.facts import Fact
from j6doctor.engine.placeholders import fill
from j6doctor.engine.rule_loader import READ_ALIAS, TEXT_FILLED_FIELDS
from j6doctor.engine.rule_model import Ref, Rule
from j6doctor.engine.text_lexicon import TextLexicon
from j6doctor.engine.vocabulary import FieldSpec, Vocabulary

MAX_QUOTE = 160  # characters of a clause kept as the quote
MAX_MATCHES_PER_TEXT = 1  # a rule concludes once per text (its first clause is the quote)...
MAX_ALL_MATCHES_PER_TEXT = 64  # ... or, with `matches: all`, once per statement, up to this many
# Text rules read the first MAX_TEXT_READ characters of a text: a real post is a few thousand;
# scanning megabytes of pasted output with every rule would take minutes (the case reader
# notes the cut, probes/case_file.py).
MAX_TEXT_READ = 64 * 1024


@lru_cache(maxsize=None)
def _compiled(pattern: str) -> re.Pattern:
    return re.compile(pattern, re.IGNORECASE)


@dataclass(frozen=True)
class TextMatch:
    """One statement that fired a text rule."""

    rule: Rule
    fact: Fact  # the input fact whose text matched
    field: str
    start: int  # span of the clause in the text
    end: int
    quote: str
    groups: dict[str, str]  # named groups: a term class's value, or the words matched


class CompiledTextRule:
    """A text rule with what it reads with; its patterns are compiled when first needed."""

    def __init__(self, rule: Rule, lexicon: TextLexicon):
        self.rule = rule
        self.lexicon = lexicon

    @property
    def match(self) -> tuple[re.Pattern, ...]:
        return tuple(_compiled(p) for p in self.rule.text.match)  # type: ignore[union-attr]

    @property
    def unless(self) -> tuple[re.Pattern, ...]:
        return tuple(_compiled(p) for p in self.rule.text.unless)  # type: ignore[union-attr]


def clauses(text: str, lexicon: TextLexicon) -> Iterator[tuple[int, int]]:
    """(start, end) of every non-blank clause, surrounding whitespace trimmed."""
    start = 0
    for end_match in _compiled(lexicon.context.clause_ends).finditer(text):
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
    """Every statement of the rule's text fields that fires it, in fact and text order."""
    found: list[TextMatch] = []
    spec = rule.rule.text
    assert spec is not None
    limit = MAX_ALL_MATCHES_PER_TEXT if spec.every else MAX_MATCHES_PER_TEXT
    for fact in facts:
        for type_name, field_name in spec.reads:
            if fact.type != type_name:
                continue
            text = fact.fields.get(field_name)
            if not isinstance(text, str) or not text:
                continue
            text = text[:MAX_TEXT_READ]
            key = fact.source.key if fact.source is not None and fact.source.key else f"{fact.type}.{field_name}"
            count = 0
            for start, end in clauses(text, rule.lexicon):
                clause = text[start:end]
                for hit in _hits(rule, clause, spec.every):
                    if not _admitted(rule, clause, hit):
                        continue
                    quote = " ".join(clause[:MAX_QUOTE].split())  # a wrapped line is one sentence
                    found.append(TextMatch(rule.rule, fact, key, start, end, quote, _groups(rule, hit)))
                    count += 1
                    if count >= limit:
                        break
                if count >= limit:
                    break
    return found


def _hits(rule: CompiledTextRule, clause: str, every: bool) -> list[re.Match]:
    """The first pattern's first match in the clause, or (`matches: all`) every match of
    every pattern, in text order."""
    if not every:
        for pattern in rule.match:
            hit = pattern.search(clause)
            if hit is not None:
                return [hit]
        return []
    hits = [hit for pattern in rule.match for hit in pattern.finditer(clause)]
    return sorted(hits, key=lambda h: (h.start(), h.end()))


def _admitted(rule: CompiledTextRule, clause: str, hit: re.Match) -> bool:
    """No `unless` pattern in the parts the match touches, and the context triggers found
    there (outside the match's terms) admit the rule's reading."""
    parts = _compiled(rule.lexicon.context.part_ends)
    bounds = [0] + [m.end() for m in parts.finditer(clause)] + [len(clause) + 1]
    first = max(b for b in bounds if b <= hit.start())
    last = min(b for b in bounds if b >= hit.end())
    window = clause[first:last]
    if any(p.search(window) for p in rule.unless):
        return False
    spec = rule.rule.text
    context = rule.lexicon.context
    reading = context.readings.get(spec.context or context.default)  # type: ignore[union-attr]
    if reading is None or not (reading.blocked_by or reading.needs):
        return True
    terms = [(hit.start(g) - first, hit.end(g) - first) for g in spec.groups  # type: ignore[union-attr]
             if g in hit.re.groupindex and hit.start(g) >= 0]
    present = {name for name, pattern in context.categories
               if any(not _inside(t.span(), terms) for t in _compiled(pattern).finditer(window))}
    return reading.admits(present)


def _inside(span: tuple[int, int], terms: list[tuple[int, int]]) -> bool:
    return any(start <= span[0] and span[1] <= end for start, end in terms)


def _groups(rule: CompiledTextRule, hit: re.Match) -> dict[str, str]:
    """Each named group's words; a term class's value instead (its default when the group is
    in another pattern of the rule or took no part)."""
    classes = rule.rule.text.groups  # type: ignore[union-attr]
    out = {name: rule.lexicon.terms[term].default for name, term in classes.items()}
    for name, words in hit.groupdict().items():
        if name in classes:
            out[name] = rule.lexicon.value_of(hit, name, classes[name])
        elif words is not None and not name.startswith("_t_"):
            out[name] = words
    return out


def conclusion_fields(match: TextMatch, fields: dict[str, Any], specs: dict[str, FieldSpec],
                      vocab: Vocabulary) -> dict[str, Any]:
    """A conclusion's fields for one match: `${match.NAME}` is the named group (a term class's
    value, or the words), `${read.FIELD}` / `{ref: read.FIELD}` a field of the fact whose text
    matched; quote / field / start / end are filled when the type has them and the rule did not
    set them."""
    classes = match.rule.text.groups  # type: ignore[union-attr]
    read_types = vocab.types[match.fact.type].fields

    def lookup(alias: str, name: str):
        if alias == READ_ALIAS:
            return match.fact[name], vocab.enums.get(read_types[name].enum or "")
        term = vocab.text.terms.get(classes.get(name, ""))
        return match.groups.get(name, ""), vocab.enums.get(term.enum or "") if term else None

    out: dict[str, Any] = {}
    for name, value in fields.items():
        if isinstance(value, Ref):
            out[name] = match.fact[value.field]
        else:
            out[name] = fill(value, lookup, specs[name].type != "str")
    filled = {"quote": match.quote, "field": match.field, "start": match.start, "end": match.end}
    for name in TEXT_FILLED_FIELDS:
        if name in specs and name not in out:
            out[name] = filled[name]
    return out
