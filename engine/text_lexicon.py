"""What the text rules read with, as data: the context triggers and the term classes, and the
index built from them once (an Aho-Corasick automaton of every phrase, the few patterns).

Generic: the words live in the vocabulary files (facts/text_context.yaml, facts/text_terms.yaml);
this module checks their shape and builds the index that text_reader.py reads with.

- *Context* (the ConText algorithm): how text is cut into clauses and parts, the trigger
  categories (negation, suspicion, hypothesis ...), as phrases (text_phrases.py) and as
  patterns over term classes (tag_patterns.py), and the readings a text rule may ask for
  (`context: asserted` fires on a statement no trigger modifies; `uncertain` on one a
  suspicion or question modifies; ...).
- *Term classes*: named lists of phrases, each phrase standing for a value (often a value of an
  enum: the phrases that name the board in prose); a class may take its phrases from an enum's
  spellings, add a few short regular expressions for what is no list of words (a version, a
  file name), and merge neighbouring terms (`merge:`). A text rule's pattern names classes
  (`{mention} … {status}`) and gets back the values.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

from j6doctor.engine.errors import VocabularyError
from j6doctor.engine.tag_patterns import PatternError, TagPattern, parse, with_values
from j6doctor.engine.text_reader import ANYWHERE, CLOSES, OPENS, PART_END, TRIGGER

MAX_EXPRESSION = 200  # characters of one regular expression of the vocabulary (clause ends, patterns)
_SEPARATORS = ("", " ", "-", "_", ".")
_SPLIT = re.compile(r"[\s_\-.]+")


class ContextReading(NamedTuple):
    """A reading a text rule may ask for: the trigger categories that block it, and the
    categories of which one must be present (empty: none needed)."""

    name: str
    meaning: str
    blocked_by: tuple[str, ...]
    needs: tuple[str, ...] = ()

    def admits(self, present: set[str]) -> bool:
        if any(c in present for c in self.blocked_by):
            return False
        return not self.needs or any(c in present for c in self.needs)


class Category(NamedTuple):
    """A trigger category: its phrases (those in `opens_part` count only at the start of a part;
    those in `closes_part` also modify the part before them when they are a part of their own:
    "output stride 读错 — 已排除"), its statements (patterns over term classes), and whether it
    is a pseudo-trigger (a phrase that holds a trigger but is none: found only to hide the
    shorter one)."""

    name: str
    meaning: str
    phrases: tuple[str, ...] = ()
    opens_part: tuple[str, ...] = ()
    closes_part: tuple[str, ...] = ()
    statements: tuple[TagPattern, ...] = ()
    pseudo: bool = False


class Carry(NamedTuple):
    """A term a sentence takes from the sentence right before (text context `carry`): one of
    class `cls`, into a sentence whose first term of an `into` class comes after a term of a
    `led_by` class and before any of `cls` or `not_after`, from a sentence holding one of `cls`
    and none of `from_without`."""

    cls: str
    into: frozenset[str]
    led_by: frozenset[str]
    not_after: frozenset[str]
    from_without: frozenset[str]

    @property
    def classes(self) -> frozenset[str]:
        """Every class it looks at."""
        return frozenset({self.cls}) | self.into | self.led_by | self.not_after | self.from_without


@dataclass(frozen=True)
class TextContext:
    clause_ends: tuple[str, ...] = (r"\n",)
    part_marks: str = ""
    gap_breaks: str = ""
    part_phrases: tuple[str, ...] = ()
    windows: tuple[tuple[str, int], ...] = (("part", 40), ("clause", 80), ("adjacent", 3))
    glue: str = " "
    glue_words: tuple[str, ...] = ()  # words that may also stand between side-by-side terms ("A and the B")
    # the term a sentence that opens with a result takes from the sentence right before
    # (`carry`); None: none is carried
    carry: "Carry | None" = None
    categories: tuple[Category, ...] = ()
    readings: dict[str, ContextReading] = field(default_factory=dict)
    default: str = ""  # the reading a rule without `context:` takes (the first declared)
    prose: tuple[str, ...] = ()  # the <type>.<field> texts a text rule reads unless it says otherwise
    # <type>.<field> → trigger categories every statement of that field carries (what a user
    # writes under "suspected" is a suspicion however it is worded)
    field_context: dict[str, frozenset[str]] = field(default_factory=dict)
    # the term class that names what a statement is about: a trigger after a statement with
    # another such term between them speaks of that one ("" : none)
    subject: str = ""

    @property
    def statements(self) -> tuple[tuple[str, TagPattern], ...]:
        return tuple((c.name, s) for c in self.categories if not c.pseudo for s in c.statements)


class TermPattern(NamedTuple):
    """A short regular expression for terms no list holds. The term is its group `value` if it
    has one ("stride:(?P<value>16)" is the 16), else the whole match; the tag's value is
    `value` if set, else the term's words. A term must start and end at word boundaries, as a
    phrase does; with `extend`, it is widened to the whole name it stands in instead ("\\.onnx"
    finds yolov8n.onnx, "flush" finds hb_mem_flush_buf). With `falls`, a match is a term only
    where the number in its group `after` is lower than the one in its group `before` ("从
    0.41 变成了 0.32": which way a change went is in its numbers, not its words)."""

    regex: str
    value: str | None = None
    extend: bool = False
    falls: bool = False


class TermClass(NamedTuple):
    """Phrases standing for values; patterns for the rest; how neighbouring terms merge."""

    name: str
    meaning: str
    enum: str | None
    values: tuple[tuple[str, tuple[str, ...]], ...]  # (value, its phrases)
    default: str = ""  # the value of the class when an optional element took no part in a match
    patterns: tuple[TermPattern, ...] = ()
    merge_gap: int = 0
    merge_rank: tuple[str, ...] = ()
    merge_between: str = ""
    merge_places: tuple[str, ...] = ()  # values that merge (a term merges only with one of these)
    ignore: tuple[str, ...] = ()  # phrases that hold a term of the class but are none ("好像" is no "好")
    merge_after_wins: tuple[str, ...] = ()  # places that win over the term right before them, whatever its rank

    def value_names(self) -> tuple[str, ...]:
        return tuple(v for v, _ in self.values)


class TermIndex(NamedTuple):
    """What a reading is made with: built once from the lexicon (and kept with it in the
    vocabulary cache)."""

    automaton: Any                                  # ahocorasick.Automaton of ints: key → index in `found`
    # (length, must start a word, entries (class, value, must end a word), the indexes in
    # `patterns` of those it opens); an opening word that is no phrase has no entries
    found: tuple[tuple[int, bool, tuple, tuple[int, ...]], ...]
    # Expressions are kept as their source and the words one of which each match holds
    # (regex_anchors.py): the reader compiles one only for a text that holds such a word.
    patterns: tuple[tuple[str, str, str | None, bool, frozenset[str] | None], ...]  # class, expression, value, extend, anchors
    merges: dict[str, tuple[int, dict[str, int], frozenset[str], frozenset[str], frozenset[str]]]
    pseudo: frozenset[str]
    part_chars: str   # an expression: one of the characters that end a part
    gap_breaks: str  # the marks a same-part gap of a pattern does not cross
    clause_ends: tuple[tuple[str, frozenset[str] | None], ...]  # expression, anchors
    windows: dict[str, int]
    glue: str
    # The patterns each match of which starts with one of a few words (regex_anchors.openings):
    # the automaton finds those words, the only places where such a pattern is tried.
    opened: frozenset[int] = frozenset()             # the indexes in `patterns` of those with opening words
    glue_words: tuple[str, ...] = ()                 # the context's glue_words
    carry: "Carry | None" = None                     # the context's carry


@dataclass(frozen=True)
class TextLexicon:
    context: TextContext = field(default_factory=TextContext)
    terms: dict[str, TermClass] = field(default_factory=dict)
    # built from the two above when the vocabulary is loaded, and kept with it in the cache
    index: TermIndex | None = field(default=None, compare=False, repr=False)

    def classes(self) -> set[str]:
        return set(self.terms)

    def resolved(self, pattern: TagPattern) -> TagPattern:
        """The pattern checked against the lexicon (PatternError for a class or value it does not
        have), with every `except` element turned into the values it leaves."""
        values_of: dict = {}
        for elements, _ in pattern.variants:
            for element in elements:
                term = self.terms.get(element.cls)
                if term is None:
                    known = ", ".join(sorted(self.terms)) or "none"
                    raise PatternError(f"unknown term class {{{element.cls}}} (term classes: {known}; "
                                       "facts/text_terms.yaml)")
                unknown = [v for v in element.values or () if v not in term.value_names()]
                if unknown and not term.patterns:
                    raise PatternError(f"{{{element.cls}={unknown[0]}}}: no such value of {element.cls} "
                                       f"(values: {', '.join(term.value_names())})")
                if element.excluded is not None:
                    values_of[element] = _values_but(term, element.excluded)
        return with_values(pattern, values_of) if values_of else pattern


def _values_but(term: "TermClass", excluded: tuple[str, ...]) -> tuple[str, ...]:
    """Every value of a class but `excluded`: the class's values must be all it can take (a
    pattern of the class that keeps the matched words as the value would add others)."""
    names = term.value_names()
    if any(p.value is None or p.value not in names for p in term.patterns):
        raise PatternError(f"{{{term.name} except ...}}: a pattern of {term.name} keeps the words it matched as "
                           "the value, so its values are not all listed; name the values it may take (=)")
    unknown = [v for v in excluded if v not in names]
    if unknown:
        raise PatternError(f"{{{term.name} except {unknown[0]}}}: no such value of {term.name} "
                           f"(values: {', '.join(names)})")
    return tuple(v for v in names if v not in excluded)


# ---------------------------------------------------------------------------- the index

def build_index(lexicon: TextLexicon, origin: str = "") -> TermIndex:
    import ahocorasick

    from j6doctor.engine.regex_anchors import anchors
    from j6doctor.engine.text_phrases import PhraseError, expand

    entries: dict[str, list[tuple]] = {}
    sentence_ends = [re.compile(p, re.ASCII) for p in lexicon.context.clause_ends]

    def add(phrase: str, cls: str, value: Any, where: str) -> None:
        try:
            literals = expand(phrase)
        except PhraseError as exc:
            raise VocabularyError(f"{origin + ': ' if origin else ''}{where}: {exc}") from None
        for literal in literals:
            # a term never runs over the end of a sentence: such a phrase could never be found
            if any(end.search(literal.key) for end in sentence_ends):
                raise VocabularyError(f"{origin + ': ' if origin else ''}{where}: the phrase {phrase!r} holds the end "
                                      f"of a sentence ({literal.key!r}); keep the words before it")
            entries.setdefault(literal.key, []).append((cls, value, literal.word_start, literal.word_end))

    context = lexicon.context
    for phrase in context.part_phrases:
        add(phrase, PART_END, None, "text_context.part_ends")
    for category in context.categories:
        for phrase in category.phrases:
            add(phrase, TRIGGER, (category.name, ANYWHERE), f"text_context.categories.{category.name}")
        for phrase in category.opens_part:
            add(phrase, TRIGGER, (category.name, OPENS), f"text_context.categories.{category.name}.opens_part")
        for phrase in category.closes_part:
            add(phrase, TRIGGER, (category.name, CLOSES), f"text_context.categories.{category.name}.closes_part")
    for term in lexicon.terms.values():
        for value, phrases in term.values:
            for phrase in phrases:
                add(phrase, term.name, value, f"text_terms.{term.name}.values.{value}")
        for phrase in term.ignore:
            add(phrase, term.name, None, f"text_terms.{term.name}.ignore")
    patterns = tuple((t.name, p.regex, p.value, p.extend, anchors(p.regex), p.falls)
                     for t in lexicon.terms.values() for p in t.patterns)
    opened = _opening_words(patterns)
    # The automaton holds numbers (it loads from the cache several times faster than one of
    # objects); each number is the index of what its phrase stands for in `found`. It holds
    # the patterns' opening words too: one pass over a text finds both.
    automaton = ahocorasick.Automaton(ahocorasick.STORE_INTS)
    found_at: dict[tuple, int] = {}
    for key, found in entries.items():
        _check_one_value(key, found, origin)
        # (length, must start a word, entries (class, value, must end a word), patterns opened): one phrase, one start
        what = (len(key), found[0][2], tuple(dict.fromkeys((c, v, e) for c, v, _, e in found)),
                tuple(opened.get(key, ())))
        automaton.add_word(key, found_at.setdefault(what, len(found_at)))
    for word, ats in opened.items():
        if word not in entries:
            automaton.add_word(word, found_at.setdefault((len(word), False, (), tuple(ats)), len(found_at)))
    if len(automaton):
        automaton.make_automaton()
    merges = {t.name: (t.merge_gap, {v: i for i, v in enumerate(t.merge_rank)}, frozenset(t.merge_between),
                       frozenset(t.merge_places or t.value_names()), frozenset(t.merge_after_wins))
              for t in lexicon.terms.values() if t.merge_gap}
    return TermIndex(automaton, tuple(found_at), patterns, merges,
                     frozenset(c.name for c in context.categories if c.pseudo),
                     "[" + re.escape(context.part_marks or "\n") + "]",
                     context.gap_breaks or context.part_marks,
                     tuple((p, anchors(p)) for p in context.clause_ends),
                     dict(context.windows), context.glue,
                     frozenset(at for ats in opened.values() for at in ats), context.glue_words, context.carry)


def _opening_words(patterns: tuple[tuple, ...]) -> dict[str, list[int]]:
    """The words each match of most patterns starts with (regex_anchors.openings): each
    word → the indexes in `patterns` of those it opens."""
    from j6doctor.engine.regex_anchors import openings

    opened: dict[str, list[int]] = {}
    for at, (_, expression, *_) in enumerate(patterns):
        for word in openings(expression, re.ASCII) or ():
            opened.setdefault(word, []).append(at)
    return opened


def _check_one_value(key: str, found: list[tuple], origin: str = "") -> None:
    """A phrase stands for one value of a class: listed under two, the reading would be a coin toss."""
    by_class: dict[str, Any] = {}
    for cls, value, *_ in found:
        if cls in by_class and by_class[cls] != value and cls != TRIGGER:
            listed = [repr(v) if v is not None else "ignore" for v in (by_class[cls], value)]
            raise VocabularyError(f"{origin + ': ' if origin else ''}text_terms.{cls}: the phrase {key!r} is listed "
                                  f"under both {listed[0]} and {listed[1]}; a phrase stands for one value")
        by_class[cls] = value


# ---------------------------------------------------------------------------- loading

def lexicon_from_data(context: Any, terms: Any, enums: dict[str, Any], origin: str) -> TextLexicon:
    """The lexicon of the vocabulary's `text_context` and `text_terms`; `enums` are the
    vocabulary's (vocabulary.EnumSpec: values, attributes, spellings)."""
    term_classes = _terms(terms, enums, origin)
    lexicon = TextLexicon(_context(context, term_classes, origin) if context is not None else TextContext(),
                          term_classes)
    categories = []
    for category in lexicon.context.categories:
        statements = []
        for statement in category.statements:
            try:
                statements.append(lexicon.resolved(statement))
            except PatternError as exc:
                raise VocabularyError(f"{origin}: text_context.categories.{category.name}.statements: "
                                      f"{statement.source!r}: {exc}") from None
        categories.append(category._replace(statements=tuple(statements)))
    lexicon = replace(lexicon, context=replace(lexicon.context, categories=tuple(categories)))
    return replace(lexicon, index=build_index(lexicon, origin))


def _expression(pattern: Any, where: str) -> str:
    if not isinstance(pattern, str) or not pattern:
        raise VocabularyError(f"{where}: expected a regular expression, got {pattern!r}")
    if len(pattern) > MAX_EXPRESSION:
        raise VocabularyError(f"{where}: {pattern[:40]!r}… has {len(pattern)} characters; an expression of the "
                              f"vocabulary is at most {MAX_EXPRESSION}: split it, or list the words as phrases")
    try:
        re.compile(pattern, re.ASCII)
    except re.error as exc:
        raise VocabularyError(f"{where}: not a valid regular expression: {exc}") from None
    return pattern


def _phrases(raw: Any, where: str) -> tuple[str, ...]:
    from j6doctor.engine.text_phrases import PhraseError, expand  # (building a vocabulary only)

    if raw is None:
        return ()
    if not isinstance(raw, list) or not all(isinstance(p, str) and p.strip() for p in raw):
        raise VocabularyError(f"{where}: expected a list of phrases (literal words)")
    for phrase in raw:
        try:
            expand(phrase)
        except PhraseError as exc:
            raise VocabularyError(f"{where}: {exc}") from None
    return tuple(raw)


def _context(raw: Any, terms: dict[str, TermClass], origin: str) -> TextContext:
    where = f"{origin}: text_context"
    if not isinstance(raw, dict):
        raise VocabularyError(f"{where}: expected a mapping with clause_ends, part_ends, categories, contexts")
    clause_ends = raw.get("clause_ends")
    if not isinstance(clause_ends, list) or not clause_ends:
        raise VocabularyError(f"{where}.clause_ends: expected a list of regular expressions")
    ends = tuple(_expression(p, f"{where}.clause_ends") for p in clause_ends)
    parts = _mapping(raw.get("part_ends"), f"{where}.part_ends")
    marks = parts.get("marks", "")
    breaks = parts.get("pattern_gaps_stop_at", "")
    if not isinstance(marks, str) or not isinstance(breaks, str):
        raise VocabularyError(f"{where}.part_ends: marks and pattern_gaps_stop_at are characters, as one text")
    if set(breaks) - set(marks):
        raise VocabularyError(f"{where}.part_ends.pattern_gaps_stop_at: {sorted(set(breaks) - set(marks))[0]!r} "
                              "is no part-ending mark (marks)")
    windows = _mapping(raw.get("windows"), f"{where}.windows")
    bad = [k for k, v in windows.items() if k not in ("part", "clause", "adjacent") or not isinstance(v, int) or v < 0]
    if bad:
        raise VocabularyError(f"{where}.windows.{bad[0]}: expected part, clause, adjacent: a number of characters")
    categories = tuple(_category(str(name), spec, f"{where}.categories.{name}")
                       for name, spec in _mapping(raw.get("categories"), f"{where}.categories").items())
    names = {c.name for c in categories if not c.pseudo}
    readings: dict[str, ContextReading] = {}
    for name, spec in _mapping(raw.get("contexts"), f"{where}.contexts").items():
        spec = _mapping(spec, f"{where}.contexts.{name}")
        blocked = tuple(spec.get("blocked_by") or ())
        needs = tuple(spec.get("needs") or ())
        unknown = [c for c in blocked + needs if c not in names]
        if unknown:
            raise VocabularyError(f"{where}.contexts.{name}: no trigger category {unknown[0]!r}; "
                                  f"categories: {', '.join(sorted(names))}")
        readings[str(name)] = ContextReading(str(name), str(spec.get("meaning", "")), blocked, needs)
    if not readings:
        raise VocabularyError(f"{where}.contexts: declares no reading")
    defaults = dict(TextContext().windows)
    defaults.update(windows)
    prose = raw.get("prose") or []
    if not isinstance(prose, list) or not all(isinstance(p, str) and "." in p for p in prose):
        raise VocabularyError(f"{where}.prose: expected a list of <input type>.<text field>")
    return TextContext(ends, marks, breaks, _phrases(parts.get("phrases"), f"{where}.part_ends.phrases"),
                       tuple(sorted(defaults.items())), str(raw.get("glue", " ")), _glue_words(raw, where),
                       _carry(raw.get("carry"), terms, where), categories, readings, next(iter(readings)), tuple(prose),
                       _field_context(raw.get("field_context"), names, where),
                       _subject(raw.get("subject"), terms, where))


def _subject(raw: Any, terms: dict[str, TermClass], where: str) -> str:
    """`subject: <term class>` (or none)."""
    if raw is None:
        return ""
    if not isinstance(raw, str) or raw not in terms:
        raise VocabularyError(f"{where}.subject: expected a term class of the text terms, got {raw!r}")
    return raw


def _glue_words(raw: dict, where: str) -> tuple[str, ...]:
    """`glue_words: [the, a, ...]`: lower-case words of letters only."""
    words = raw.get("glue_words") or []
    if not isinstance(words, list) or not all(isinstance(w, str) and re.fullmatch(r"[a-z]+", w) for w in words):
        raise VocabularyError(f"{where}.glue_words: expected a list of lower-case words (letters only)")
    return tuple(words)


_CARRY_KEYS = ("class", "into", "led_by", "not_after", "from_without")


def _carry(raw: Any, terms: dict[str, TermClass], where: str) -> Carry | None:
    """`carry: {class: C, into: [...], led_by: [...], not_after: [...], from_without: [...]}`,
    each a term class or a list of them."""
    if raw is None:
        return None
    spec = _mapping(raw, f"{where}.carry")
    lists = [spec.get(k) for k in _CARRY_KEYS[1:]]
    if (set(spec) != set(_CARRY_KEYS) or not isinstance(spec["class"], str)
            or not all(isinstance(v, list) and all(isinstance(c, str) for c in v) for v in lists)):
        raise VocabularyError(f"{where}.carry: expected " + ", ".join(
            f"{k}: {'<term class>' if k == 'class' else '[term classes]'}" for k in _CARRY_KEYS))
    unknown = [c for c in [spec["class"], *(c for v in lists for c in v)] if c not in terms]
    if unknown:
        raise VocabularyError(f"{where}.carry: no term class {unknown[0]!r} in the text terms")
    return Carry(spec["class"], *(frozenset(v) for v in lists))


def _field_context(raw: Any, names: set[str], where: str) -> dict[str, frozenset[str]]:
    """`field_context: {<type>.<field>: [category, ...]}`, checked."""
    out = {}
    for key, value in _mapping(raw or {}, f"{where}.field_context").items():
        cats = [value] if isinstance(value, str) else value
        if "." not in str(key) or not isinstance(cats, list) or not all(isinstance(c, str) for c in cats):
            raise VocabularyError(f"{where}.field_context.{key}: expected <input type>.<text field>: "
                                  "a list of trigger categories")
        unknown = [c for c in cats if c not in names]
        if unknown:
            raise VocabularyError(f"{where}.field_context.{key}: no trigger category {unknown[0]!r}; "
                                  f"categories: {', '.join(sorted(names))}")
        out[str(key)] = frozenset(cats)
    return out


def _category(name: str, raw: Any, where: str) -> Category:
    spec = _mapping(raw, where)
    unknown = sorted(set(spec) - {"meaning", "phrases", "opens_part", "closes_part", "statements", "pseudo"})
    if unknown:
        raise VocabularyError(f"{where}.{unknown[0]}: unknown key; a category has meaning, phrases, opens_part, "
                              "closes_part, statements, pseudo")
    statements = []
    for source in spec.get("statements") or []:
        try:
            statements.append(parse(source))
        except PatternError as exc:
            raise VocabularyError(f"{where}.statements: {source!r}: {exc}") from None
    category = Category(name, str(spec.get("meaning", "")), _phrases(spec.get("phrases"), f"{where}.phrases"),
                        _phrases(spec.get("opens_part"), f"{where}.opens_part"),
                        _phrases(spec.get("closes_part"), f"{where}.closes_part"), tuple(statements),
                        spec.get("pseudo") is True)
    if not (category.phrases or category.opens_part or category.closes_part or category.statements):
        raise VocabularyError(f"{where}: lists no phrases or statements")
    return category


_TERM_KEYS = {"meaning", "enum", "values", "default", "spellings", "phrases_from", "patterns", "merge", "ignore"}


def _terms(raw: Any, enums: dict[str, Any], origin: str) -> dict[str, TermClass]:
    out: dict[str, TermClass] = {}
    for name, spec in _mapping(raw, f"{origin}: text_terms").items():
        where = f"{origin}: text_terms.{name}"
        spec = _mapping(spec, where)
        unknown = sorted(set(spec) - _TERM_KEYS)
        if unknown:
            raise VocabularyError(f"{where}.{unknown[0]}: unknown key; a term class has {', '.join(sorted(_TERM_KEYS))}")
        enum = spec.get("enum")
        allowed = None
        if enum is not None:
            if enum not in enums:
                raise VocabularyError(f"{where}.enum: no enum {enum!r}")
            allowed = enums[enum].values
        values = _values(spec, allowed, enums.get(enum), where)
        patterns = tuple(_term_pattern(p, f"{where}.patterns") for p in spec.get("patterns") or [])
        if not values and not patterns:
            raise VocabularyError(f"{where}: lists no values and no patterns")
        default = spec.get("default", "")
        if default and allowed is not None and default not in allowed:
            raise VocabularyError(f"{where}.default: not a value of enum {enum}")
        merge = _mapping(spec.get("merge"), f"{where}.merge")
        unknown = sorted(set(merge) - {"gap", "between", "places", "rank", "after_wins"})
        if unknown:
            raise VocabularyError(f"{where}.merge.{unknown[0]}: unknown key; "
                                  "merge has gap, between, places, rank, after_wins")
        rank = tuple(str(v) for v in merge.get("rank") or ())
        places = tuple(str(v) for v in merge.get("places") or ())
        after_wins = tuple(str(v) for v in merge.get("after_wins") or ())
        stray = [v for v in rank + places + after_wins if v not in {v for v, _ in values}]
        if stray:
            raise VocabularyError(f"{where}.merge: {stray[0]!r} is not a value of the class")
        if places and not set(after_wins) <= set(places):
            raise VocabularyError(f"{where}.merge.after_wins: {sorted(set(after_wins) - set(places))[0]!r} "
                                  "is not one of the places")
        out[str(name)] = TermClass(str(name), str(spec.get("meaning", "")), enum, values, str(default or ""),
                                   patterns, int(merge.get("gap", 0) or 0), rank, str(merge.get("between", "")),
                                   places, _phrases(spec.get("ignore"), f"{where}.ignore"), after_wins)
    return out


def _values(spec: dict, allowed: Any, enum: Any, where: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    values: dict[str, tuple[str, ...]] = {}
    for value, phrases in _mapping(spec.get("values"), f"{where}.values").items():
        value = str(value)
        if allowed is not None and value not in allowed:
            raise VocabularyError(f"{where}.values.{value}: not a value of enum {spec.get('enum')} ({', '.join(allowed)})")
        values[value] = _phrases(phrases, f"{where}.values.{value}")
        if not values[value]:
            raise VocabularyError(f"{where}.values.{value}: expected a list of phrases")
    if spec.get("spellings") is True:
        if enum is None:
            raise VocabularyError(f"{where}.spellings: takes the phrases of an enum's spellings; name the enum")
        for value in enum.values:
            spelled = tuple(_spelled(s) for s in enum.spellings(value) if _spelled(s))
            values[value] = values.get(value, ()) + spelled
    attribute = spec.get("phrases_from")
    if attribute is not None:
        if enum is None:
            raise VocabularyError(f"{where}.phrases_from: takes each value's phrases from an attribute of the enum; "
                                  "name the enum")
        for value in enum.values:
            listed = enum.attr(value, str(attribute))
            if listed is not None:
                values[value] = values.get(value, ()) + _phrases(listed, f"{where}: {enum.name}.{value}.{attribute}")
    return tuple(values.items())


def _spelled(spelling: str) -> str:
    """A spelling as one phrase: its parts joined by any of the separators people write
    ("RDK X5" is also rdkx5, rdk-x5, rdk_x5)."""
    parts = [_escaped(p) for p in _SPLIT.split(str(spelling).strip()) if p]
    if len(parts) > 4:
        return " ".join(parts)
    return ("(" + "|".join(_SEPARATORS) + ")").join(parts)


def _escaped(words: str) -> str:
    """Words as a phrase that stands for exactly them."""
    return "".join("\\" + c if c in "()|*" else c for c in words)


def _term_pattern(raw: Any, where: str) -> TermPattern:
    if isinstance(raw, str):
        return TermPattern(_expression(raw, where))
    spec = _mapping(raw, where)
    unknown = sorted(set(spec) - {"regex", "value", "extend", "falls"})
    if unknown:
        raise VocabularyError(f"{where}.{unknown[0]}: unknown key; a pattern has regex, value, extend, falls")
    value = spec.get("value")
    regex = _expression(spec.get("regex"), f"{where}.regex")
    falls = spec.get("falls") is True
    if falls and not {"before", "after"} <= set(re.compile(regex, re.ASCII).groupindex):
        raise VocabularyError(f"{where}.falls: the regex names no groups `before` and `after` (the two numbers "
                              f"compared): (?P<before>...) ... (?P<after>...)")
    return TermPattern(regex, None if value is None else str(value), spec.get("extend") is True, falls)


def _mapping(value: Any, where: str) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise VocabularyError(f"{where}: expected a mapping")
    return value
