"""Text rules: patterns over the terms of the free-text fields of input facts.

They run before the fact rules, in Python (durable-rules cannot report where a statement
was found). Each text is read once (text_reader.py: its sentences, parts and terms); a rule's
patterns (tag_patterns.py) are matched over the terms of each sentence. A match concludes
the rule's facts, with the sentence as quote and its character span, when:

- no `unless` pattern of the rule matches in the parts of the sentence the match touches (in
  the whole sentence with `unless_in: sentence`), and
- the context triggers found in those parts admit the rule's reading (`context:`): a
  negation next to the statement ("已排除 layout 不一致") blocks an asserted statement, one
  elsewhere in the sentence ("已确认 march 一致，但板端报 Incompatible Platform") does not;
  a suspicion ("怀疑 layout 不一致") blocks it too, and is what a `context: uncertain` rule
  asks for. A trigger inside a term of the match (a phrase of a term class, such as the
  status "没有问题") belongs to the term and modifies nothing (ConText's rule for triggers
  inside a target).

A rule with `unread:` instead of `match:` fires on every sentence that holds a term of the
classes it lists whose value no other text rule's pattern captured (admitted or not; a
`{~class}` element only tests a term): what the reader could not place.
"""

from __future__ import annotations

import re

from typing import Any, NamedTuple

from j6doctor.engine.facts import Fact
from j6doctor.engine.placeholders import fill
from j6doctor.engine.rule_model import READ_ALIAS, TEXT_FILLED_FIELDS, Ref, Rule
from j6doctor.engine.tag_patterns import Hit, TagPattern, find, may_match_in, required_classes
from j6doctor.engine.text_lexicon import TextLexicon
from j6doctor.engine.text_reader import CLOSES, MAX_TEXT_READ, OPENS, Clause, Reading, read, read_cached
from j6doctor.engine.vocabulary import FieldSpec, Vocabulary

MAX_QUOTE = 160  # characters of a clause kept as the quote
_MARKUP = "`#*> "
_FENCE = re.compile(r"```[a-zA-Z]*")
MAX_ALL_MATCHES_PER_TEXT = 64  # `matches: all` concludes once per statement, up to this many


class TextMatch(NamedTuple):
    """One statement that fired a text rule."""

    rule: Rule
    fact: Fact  # the input fact whose text matched
    field: str
    start: int  # span of the clause in the text
    end: int
    quote: str
    groups: dict[str, str]  # a captured class's value (or its words, for a class of patterns)


class CompiledTextRule:
    """A text rule, with the classes each of its patterns needs. (It reads with the lexicon of
    the run's vocabulary, handed in with the readings: a cached rule base does not keep a
    second copy of the term index.)"""

    def __init__(self, rule: Rule):
        self.rule = rule
        spec = rule.text
        assert spec is not None
        # a reading lacking a class every variant of a pattern needs cannot match it
        self.needs = tuple(required_classes(p) for p in spec.match)
        self.fields_of: dict[str, tuple[str, ...]] = {}  # fact type → the fields read of it
        for type_name, field_name in spec.reads:
            self.fields_of[type_name] = (*self.fields_of.get(type_name, ()), field_name)
        # (fact type, field) → its place in the rule's list: a fact's texts are read in that
        # order where the rule reads two fields of one type
        self.read_rank = {read: at for at, read in enumerate(spec.reads)}
        self.reads_several_fields_of_a_type = any(len(names) > 1 for names in self.fields_of.values())


class Readings:
    """The reading of each text of a run, made once and shared by every text rule; and which
    terms whose value the rules' patterns captured, admitted or not (for the rules that list
    what was left unread)."""

    def __init__(self, lexicon: TextLexicon, given: dict[str, Reading] | None = None):
        self.lexicon = lexicon
        self.cache: dict[str, Reading] = dict(given or {})
        self.seen: dict[str, set[int]] = {}  # text → the terms (tag indexes) some rule's pattern took up

    def of(self, text: str) -> Reading:
        reading = self.cache.get(text)
        if reading is None:
            assert self.lexicon.index is not None
            reading = self.cache[text] = read_cached(text, self.lexicon.index)
        return reading


def fields_read(rules: list[CompiledTextRule]) -> dict[str, tuple[str, ...]]:
    """Fact type → the fields some of the rules read of it (worked out when the rule base is
    compiled: CompiledRuleBase.text_fields)."""
    found: dict[str, set[str]] = {}
    for rule in rules:
        for type_name, field_names in rule.fields_of.items():
            found.setdefault(type_name, set()).update(field_names)
    return {type_name: tuple(sorted(names)) for type_name, names in found.items()}


def read_texts(fields: dict[str, tuple[str, ...]], facts: list[Fact], lexicon: TextLexicon,
               read_as: dict[str, str] | None = None) -> dict[str, Reading]:
    """The reading of every text the rules read (`fields`: fields_read of them; each text read
    once, text_reader.read_cached). A
    text in `read_as` is read as the text given there, of the same length (the caller's
    version of it with parts another reader took blanked): the rules' spans stay the text's."""
    out: dict[str, Reading] = {}
    if lexicon.index is None:
        return out
    read_as = read_as or {}
    for *_, text in texts_of(fields, facts):
        if text not in out:
            out[text] = read_cached(read_as.get(text, text), lexicon.index)
    return out


class TextInput(NamedTuple):
    """A non-empty text field some rule reads."""

    position: int          # of its fact among the run's facts
    read: tuple[str, str]  # (fact type, field)
    fact: Fact
    key: str               # the case key it was written under
    text: str


def texts_of(fields: dict[str, tuple[str, ...]], facts: list[Fact]) -> list[TextInput]:
    """The texts the rules read (`fields`: fields_read of them), in fact order, found once for
    all of them (each rule then picks its own)."""
    out: list[TextInput] = []
    for position, fact in enumerate(facts):
        for field_name in fields.get(fact.type, ()):
            text = fact.fields.get(field_name)
            if isinstance(text, str) and text.strip():
                key = fact.source.key if fact.source is not None and fact.source.key else f"{fact.type}.{field_name}"
                out.append(TextInput(position, (fact.type, field_name), fact, key, text))
    return out


def texts_read(rule: CompiledTextRule, inputs: list[TextInput]) -> list[TextInput]:
    """The texts the rule reads: by fact, then in the order the rule lists the fields."""
    rank = rule.read_rank
    found = [entry for entry in inputs if entry.read in rank]
    if rule.reads_several_fields_of_a_type and len(found) > 1:
        found.sort(key=lambda entry: (entry.position, rank[entry.read]))
    return found


def find_matches(rule: CompiledTextRule, inputs: list[TextInput], readings: Readings) -> list[TextMatch]:
    """Every statement of the rule's text fields that fires it, in fact and text order."""
    spec = rule.rule.text
    assert spec is not None
    found: list[TextMatch] = []
    field_context = readings.lexicon.context.field_context
    for _, (type_name, field_name), fact, key, text in texts_read(rule, inputs):
        reading = readings.of(text)
        if spec.unread:
            found += _unread(rule, fact, key, text, reading, readings)
            continue
        limit = MAX_ALL_MATCHES_PER_TEXT if spec.every else 1
        carried = field_context.get(f"{type_name}.{field_name}", frozenset())
        for hit, clause in _hits(rule, readings.lexicon, reading, limit, readings.seen.setdefault(text, set()),
                                 carried):
            found.append(_match(rule, fact, key, reading, clause, _groups(rule, readings.lexicon, hit, reading),
                                _quoted_from(reading, hit, clause)))
    return found


def _quote(text: str, limit: int) -> str:
    return " ".join(_FENCE.sub(" ", text)[:limit].split()).strip(_MARKUP)


def _quoted_from(reading: Reading, hit: Hit, clause: Clause) -> int:
    """Where the quote of a match starts: its sentence, or the one before when the match took
    a term carried from there (text context `carry`)."""
    if reading.carried_terms.isdisjoint(hit.tags):
        return clause.start
    return reading.clauses[reading.tag_clause[hit.tags[0]] - 1].start


def _hits(rule: CompiledTextRule, lexicon: TextLexicon, reading: Reading, limit: int,
          seen: set[int], carried: frozenset[str] = frozenset()) -> list[tuple[Hit, Clause]]:
    """The first `limit` admitted matches in the reading, in text order (matches are admitted
    in text order until `limit` are). The terms every match captures, admitted or not (a
    negation, a hypothesis), go into `seen`: their values were read. `carried`: the trigger
    categories the text's field gives every statement in it (text context `field_context`)."""
    spec = rule.rule.text
    assert spec is not None
    held = reading.by_class.keys()
    patterns = [pattern for pattern, needs in zip(spec.match, rule.needs) if needs <= held]
    if not patterns:  # (most rules, on most texts)
        return []
    candidates: dict[tuple[int, ...], Hit] = {}
    context = lexicon.context
    wanted = context.readings.get(spec.context or context.default)
    # a reading that needs a trigger (a suspicion, a question) looks only where one can be
    where = (_with_triggers(lexicon, reading, wanted.needs)
             if wanted is not None and wanted.needs and not carried & set(wanted.needs) else None)
    if limit == 1 and not spec.groups:
        # (a rule that concludes once and captures no term: each pattern's matches come in text
        # order, so the first admitted one of each pattern, the earliest of them, is the one the
        # rule concludes from; the rest need not be found. Without `unless` and context, that is
        # each pattern's first match)
        firsts = [first for first in (_first_admitted(rule, lexicon, reading, pattern, where, carried)
                                      for pattern in patterns) if first]
        return [min(firsts, key=lambda found: (found[0].span(reading), found[0].tags))] if firsts else []
    for pattern in patterns:
        for hit in find(pattern, reading, every=True, clauses=where):
            candidates.setdefault(hit.tags, hit)
    for hit in candidates.values():
        seen.update(tag for _, tag in hit.captures)
    out: list[tuple[Hit, Clause]] = []
    for hit in sorted(candidates.values(), key=lambda h: (h.span(reading), h.tags)):
        clause = reading.clauses[reading.tag_clause[hit.tags[0]]]
        if _admitted(rule, lexicon, reading, hit, clause, *hit.span(reading), carried=carried):
            out.append((hit, clause))
            if len(out) >= limit:
                break
    return out


def _first_admitted(rule: CompiledTextRule, lexicon: TextLexicon, reading: Reading, pattern, where: set[int] | None,
                    carried: frozenset[str]) -> tuple[Hit, Clause] | None:
    """The first match of `pattern` in text order that the rule's `unless` and context admit."""
    for hit in find(pattern, reading, every=True, clauses=where):
        clause = reading.clauses[reading.tag_clause[hit.tags[0]]]
        if _admitted(rule, lexicon, reading, hit, clause, *hit.span(reading), carried=carried):
            return hit, clause
    return None


def _admitted(rule: CompiledTextRule, lexicon: TextLexicon, reading: Reading, hit: Hit, clause: Clause,
              start: int, end: int, carried: frozenset[str] = frozenset()) -> bool:
    """No `unless` pattern in the parts the match touches, and the context triggers found
    there (outside the match's terms), with those the text's field carries, admit the rule's
    reading."""
    spec = rule.rule.text
    assert spec is not None
    lo, hi = reading.parts_around(start, end, clause, reading.aside[hit.tags[0]])
    where = (clause.start, clause.end) if spec.unless_in_sentence else (lo, hi)
    # (the parts lie in the match's sentence: an `unless` naming a class it lacks is not looked for)
    classes = reading.clause_classes[reading.tag_clause[hit.tags[0]]]
    for pattern in spec.unless:
        if may_match_in(pattern, classes) and _found_in(pattern, reading, *where):
            return False
    context = lexicon.context
    wanted = context.readings.get(spec.context or context.default)
    if wanted is None or not (wanted.blocked_by or wanted.needs):
        return True
    terms = [reading.tags[t][:2] for t in hit.tags]
    present = set(carried)
    for t_start, t_end, category, counts in reading.triggers_in(lo, hi):
        if _inside((t_start, t_end), terms) or _of_another_subject(context.subject, reading, end, t_start):
            continue
        if counts == OPENS and not reading.opens(t_start, reading.parts_around(t_start, t_end, clause)[0]):
            continue
        present.add(category)
    present |= _closing(reading, hi, clause)
    for category, span in _statement_triggers(lexicon, reading, reading.tag_clause[hit.tags[0]]):
        if category not in present and lo <= span[0] and span[1] <= hi and not _inside(span, terms) \
                and not _of_another_subject(context.subject, reading, end, span[0]):
            present.add(category)
    return wanted.admits(present)


def _of_another_subject(subject: str, reading: Reading, end: int, trigger_start: int) -> bool:
    """Whether a trigger after a match (`end`: where the match ends) has a term of the
    `subject` class between them: it speaks of that term ("hbm 仿真掉了 8 个点 qat.pt 没问题")."""
    return bool(subject) and trigger_start >= end and bool(reading.tags_in(subject, end, trigger_start))


def _closing(reading: Reading, hi: int, clause: Clause) -> set[str]:
    """The categories of a closing trigger that is the whole part after the one ending at `hi`
    ("output stride 读错 — 已排除": the stride reading is denied)."""
    after = reading.part_after(hi, clause)
    if after is None:
        return set()
    lo, end = after
    return {category for t_start, t_end, category, counts in reading.triggers_in(lo, end)
            if counts == CLOSES and reading.opens(t_start, lo) and reading.opens(end, t_end)}


def _with_triggers(lexicon: TextLexicon, reading: Reading, categories: tuple[str, ...]) -> set[int]:
    """The sentences that may hold a trigger of one of `categories`: a phrase of one, or the
    classes one of their statements names (kept with the reading)."""
    key = ("with triggers", categories)
    found = reading.derived.get(key)
    if found is None:
        found = {reading.clause_index(t[0]) for t in reading.triggers if t[2] in categories}
        for category, statement in lexicon.context.statements:
            if category in categories:
                for needs in statement.needs:
                    found |= reading.clauses_holding(needs)
        reading.derived[key] = found
    return found


def _found_in(pattern: TagPattern, reading: Reading, lo: int, hi: int) -> bool:
    """Whether `pattern` matches within [lo, hi): worked out once per reading (the same
    `unless` of the same parts is asked by every match there, and by other rules)."""
    key = (pattern.source, lo, hi)
    found = reading.derived.get(key)
    if found is None:
        found = reading.derived[key] = next(find(pattern, reading, every=False, lo=lo, hi=hi), None) is not None
    return found


def _statement_triggers(lexicon: TextLexicon, reading: Reading, clause: int) -> list[tuple[str, tuple[int, int]]]:
    """The context triggers written as statements ("不是 … 的问题") in a sentence: (category,
    span) of each, found once per sentence and kept with the reading."""
    key = ("statements", clause)
    found = reading.derived.get(key)
    if found is None:
        start, end = reading.clauses[clause].start, reading.clauses[clause].end
        classes = reading.clause_classes[clause]  # (most statements name a class the sentence lacks)
        found = reading.derived[key] = [(category, hit.span(reading)) for category, statement in
                                        lexicon.context.statements if may_match_in(statement, classes)
                                        for hit in find(statement, reading, every=True, lo=start, hi=end)]
    return found


def _inside(span: tuple[int, int], terms: list[tuple[int, int]]) -> bool:
    return any(start <= span[0] and span[1] <= end for start, end in terms)


def _groups(rule: CompiledTextRule, lexicon: TextLexicon, hit: Hit, reading: Reading) -> dict[str, str]:
    """Each captured class's value (its default when its element took no part); for a class of
    patterns, the words."""
    classes = rule.rule.text.groups  # type: ignore[union-attr]
    terms = lexicon.terms
    out = {name: terms[cls].default for name, cls in classes.items()}
    for name, index in hit.captures:
        out[name] = str(reading.tags[index][3])
    return out


def _match(rule: CompiledTextRule, fact: Fact, key: str, reading: Reading, clause: Clause,
           groups: dict[str, str], quoted_from: int | None = None) -> TextMatch:
    start, end = reading.span_in_text(clause.start, clause.end)
    # a wrapped line is one sentence; Markdown's fences and marks are not the user's words
    quote = _quote(reading.text[start:end], MAX_QUOTE)
    if quoted_from is not None and quoted_from < clause.start:
        # the sentence a term was carried from as well, cut where both do not fit so that the
        # statement itself stays whole
        first = reading.compact.start_in_text(quoted_from)
        both = _quote(reading.text[first:end], MAX_QUOTE + 1)
        if len(both) <= MAX_QUOTE:
            quote = both
        else:
            room = max(MAX_QUOTE - len(quote) - 2, 20)
            quote = _quote(reading.text[first:start], room).rstrip() + "… " + quote
    return TextMatch(rule.rule, fact, key, start, end, quote, groups)


def _unread(rule: CompiledTextRule, fact: Fact, key: str, text: str, reading: Reading,
            readings: Readings) -> list[TextMatch]:
    """The sentences holding a term of the rule's classes that no other text rule's pattern
    took up; each class's values left there, joined, under the class's name."""
    wanted = [unread_class(item) for item in rule.rule.text.unread]  # type: ignore[union-attr]
    seen = readings.seen.get(text, set())
    # the terms left, by sentence: one pass over each class's terms, not a search per sentence
    left: dict[int, dict[str, list[int]]] = {}
    for cls, only in wanted:
        for at, members in reading.by_sentence(cls).items():
            clause = reading.clauses[at]
            for t in members:
                # in the context the rule reads (a question, a negation, a hypothesis is no result)
                if t not in seen and (only is None or str(reading.tags[t][3]) in only) and \
                        _admitted(rule, readings.lexicon, reading, Hit((t,), ()), clause, *reading.tags[t][:2]):
                    left.setdefault(at, {}).setdefault(cls, []).append(t)
    out = []
    for at in sorted(left):
        terms = left[at]
        groups = {cls: ",".join(dict.fromkeys(str(reading.tags[t][3]) for t in terms.get(cls, ())))
                  for cls, _ in wanted}
        out.append(_match(rule, fact, key, reading, reading.clauses[at], groups))
        if len(out) >= MAX_ALL_MATCHES_PER_TEXT:
            break
    return out


def unread_class(item: str) -> tuple[str, frozenset[str] | None]:
    """An `unread:` entry: a term class, or `class=v1|v2` for some of its values."""
    cls, _, values = item.partition("=")
    return cls, frozenset(values.split("|")) if values else None


def conclusion_fields(match: TextMatch, fields: dict[str, Any], specs: dict[str, FieldSpec],
                      vocab: Vocabulary) -> dict[str, Any]:
    """A conclusion's fields for one match: `${match.NAME}` is a captured class's value (or its
    words), `${read.FIELD}` / `{ref: read.FIELD}` a field of the fact whose text matched;
    quote / field / start / end are filled when the type has them and the rule did not set them."""
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


__all__ = ["CompiledTextRule", "MAX_TEXT_READ", "Readings", "TagPattern", "TextMatch", "conclusion_fields",
           "fields_read", "find_matches", "read", "read_texts", "texts_of"]
