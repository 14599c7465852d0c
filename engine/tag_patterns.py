"""Text patterns: term classes in the order a statement names them, matched over the terms a
reading found (text_reader.py), never over characters.

    {mention} … {status}                  a model, then (later in the sentence) what it gave
    {setting_name} + {setting_value}      a key and its value, side by side ("input_layout_rt: NHWC")
    {~status=abnormal}                    one value of a class, not captured
    {producer?} … {mention} … {status}    an optional element
    {mention as a} …30 {relation}         captured under another name; at most 30 characters apart

An element is `{class}` (captured under the class's name), `{class as name}`, `{~class}` (not
captured), with `=v1|v2` for some values only, ` except v1|v2` for every value but these (the
lexicon turns it into the values it leaves: TextLexicon.resolved), `!=name` for a value other
than the one an earlier element captured as `name` ("{colour as a} … {colour!=a}": two
different colour formats) and `?` for an optional one. Between two
elements: ` ` the next one follows in the same part of the sentence (none of the marks the
text context's `part_ends.pattern_gaps_stop_at` names between: a comma, a colon), ` … ` (or ` ... `)
anywhere later in the same sentence, ` + ` right after it (only
spaces, quotes, ':' or '=' between); `~N` (same part), `…N` and `+N` bound the distance to N
characters (the defaults are the text context's `windows`).

Each element is the *nearest* one: the term it matches is the first of its kind (its class,
and its values when it names some) after the previous element, and the previous element's
term is the last of its kind before it. In "PC 上正常，bin 上板后检测不到" the board is not
paired with 正常; in "编译用的 hbdk 旧", 旧 is paired with hbdk.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from itertools import product
from typing import Iterable, Iterator, NamedTuple, TYPE_CHECKING

if TYPE_CHECKING:
    from j6doctor.engine.text_reader import Reading

PART, CLAUSE, ADJACENT = "part", "clause", "adjacent"
MAX_PATTERN_LENGTH = 120  # characters: a pattern is one line of a rule file
_ELEMENT = re.compile(r"\{(~?)([A-Za-z_]\w*)(?:=([\w.+-]+(?:\|[\w.+-]+)*))?(?:!=([A-Za-z_]\w*))?"
                      r"(?:\s+except\s+([\w.+-]+(?:\|[\w.+-]+)*))?(?:\s+as\s+([A-Za-z_]\w*))?(\??)\}")
_GAP = re.compile(r"\s*(?:(…|\.\.\.)(\d*)|(\+)(\d*)|~(\d+))\s*|\s+")
MAX_OPTIONAL = 3


class PatternError(ValueError):
    """A text pattern that is not term classes joined by gaps."""


class Element(NamedTuple):
    cls: str
    values: tuple[str, ...] | None  # only these values of the class (None: any)
    group: str | None               # the name it is captured under (None: not captured)
    optional: bool = False
    differs_from: str | None = None  # a value other than the one captured under this name
    excluded: tuple[str, ...] | None = None  # every value but these (resolved into `values` by the lexicon)


class Gap(NamedTuple):
    kind: str        # PART, CLAUSE or ADJACENT
    limit: int       # most characters between the two elements (0: the reading's default)


@dataclass(frozen=True)
class TagPattern:
    """A parsed pattern: its source, and its variants (optional elements in or out), the most
    specific first. A variant is (elements, gaps), len(gaps) == len(elements) - 1; `needs` are
    the classes of each variant (a sentence lacking one cannot match it)."""

    source: str
    variants: tuple[tuple[tuple[Element, ...], tuple[Gap, ...]], ...]
    needs: tuple[frozenset[str], ...] = ()
    firsts: dict[str, frozenset[str] | None] = field(default_factory=dict, compare=False)  # class -> values (None: any) a match can start with

    @property
    def elements(self) -> tuple[Element, ...]:
        return self.variants[0][0]

    @property
    def groups(self) -> dict[str, str]:
        """Captured name → class, over every element."""
        return {e.group: e.cls for e in self.elements if e.group}


def parse(source: str) -> TagPattern:
    """Parse a pattern; raise PatternError saying what is wrong and what is expected."""
    if not isinstance(source, str) or not source.strip():
        raise PatternError("expected a text pattern such as '{mention} … {status}', got an empty one")
    if len(source) > MAX_PATTERN_LENGTH or "\n" in source:
        raise PatternError(f"a text pattern is one line of at most {MAX_PATTERN_LENGTH} characters "
                           f"(this one has {len(source)}): name the words as a term class in facts/text_terms.yaml "
                           "and write the class")
    elements, gaps = _elements_and_gaps(source.strip())
    _check_elements(elements)
    variants = tuple(_variants(elements, gaps))
    return TagPattern(source, variants, tuple(frozenset(e.cls for e in v) for v, _ in variants), _firsts(variants))


def _elements_and_gaps(text: str) -> tuple[list[Element], list[Gap]]:
    """The pattern's elements and the gaps between them, in order."""
    elements: list[Element] = []
    gaps: list[Gap] = []
    index = 0
    while True:
        found = _ELEMENT.match(text, index)
        if found is None:
            raise PatternError(_unexpected(text, index))
        elements.append(_element(found, elements))
        index = found.end()
        if index == len(text):
            return elements, gaps
        gap = _GAP.match(text, index)
        if gap is None or gap.end() == index:
            raise PatternError(_unexpected(text, index))
        gaps.append(_gap(gap))
        index = gap.end()


def _element(found: re.Match, before: list[Element]) -> Element:
    silent, cls, values, differs, excluded, alias, optional = found.groups()
    if silent and alias:
        raise PatternError(f"{found.group(0)}: a class written with ~ captures nothing; drop ~ or 'as'")
    if differs and not any(e.group == differs and not e.optional for e in before):
        raise PatternError(f"{found.group(0)}: {differs!r} is not captured by an element before it")
    if values and excluded:
        raise PatternError(f"{found.group(0)}: name the values it may take (=) or those it may not (except), not both")
    group = None if silent else (alias or cls)
    return Element(cls, tuple(values.split("|")) if values else None, group, bool(optional), differs,
                   tuple(excluded.split("|")) if excluded else None)


def with_values(pattern: TagPattern, values_of: dict[Element, tuple[str, ...]]) -> TagPattern:
    """The pattern with each element of `values_of` taking those values (and no longer
    `except` ones)."""
    def resolved(element: Element) -> Element:
        if element not in values_of:
            return element
        return element._replace(values=values_of[element], excluded=None)

    variants = tuple((tuple(resolved(e) for e in elements), gaps) for elements, gaps in pattern.variants)
    return TagPattern(pattern.source, variants, pattern.needs, _firsts(variants))


def _check_elements(elements: list[Element]) -> None:
    names = [e.group for e in elements if e.group]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise PatternError(f"{{{twice[0]}}} is captured twice: write {{{twice[0]} as other_name}}")
    if all(e.optional for e in elements):
        raise PatternError("every element is optional: a pattern needs one that must be there")
    if sum(e.optional for e in elements) > MAX_OPTIONAL:
        raise PatternError(f"more than {MAX_OPTIONAL} optional elements: write several patterns")


def _firsts(variants) -> dict[str, frozenset[str] | None]:
    """class → the values (None: any) a match can start with, over the variants."""
    firsts: dict[str, frozenset[str] | None] = {}
    for first in (v[0] for v, _ in variants):
        known = firsts.get(first.cls, frozenset())
        firsts[first.cls] = None if first.values is None or (first.cls in firsts and known is None) \
            else known | frozenset(first.values)
    return firsts


def _gap(found: re.Match) -> Gap:
    dots, dot_limit, plus, plus_limit, part_limit = found.groups()
    if dots:
        return Gap(CLAUSE, int(dot_limit) if dot_limit else 0)
    if plus:
        return Gap(ADJACENT, int(plus_limit) if plus_limit else 0)
    return Gap(PART, int(part_limit) if part_limit else 0)


def _unexpected(text: str, index: int) -> str:
    shown = text[index:index + 20]
    return (f"unexpected {shown!r} at character {index + 1}: a text pattern is term classes ({{class}}, "
            "{~class=value}, {~class except value}, {class as name}, {class?}) joined by ' ' or ' ~N ' (same part), ' … ' or ' …N ' "
            "(same sentence) or ' + ' (side by side); words belong in a term class of facts/text_terms.yaml")


def _variants(elements: list[Element], gaps: list[Gap]):
    """Every choice of optional elements present (all present first), gaps merged around a
    dropped one (the wider kind, the bounds added)."""
    optional = [i for i, e in enumerate(elements) if e.optional]
    out = []
    for keep in product((True, False), repeat=len(optional)):
        dropped = {i for i, k in zip(optional, keep) if not k}
        kept_elements: list[Element] = []
        kept_gaps: list[Gap] = []
        pending: Gap | None = None
        for i, element in enumerate(elements):
            if i in dropped:
                if kept_elements:  # the gap before it joins the one after (added when the next is kept)
                    pending = _wider(pending, gaps[i - 1])
                continue
            if kept_elements:
                gap = gaps[i - 1]
                kept_gaps.append(_wider(pending, gap) if pending else gap)
            pending = None
            kept_elements.append(element)
        if kept_elements:
            out.append((tuple(kept_elements), tuple(kept_gaps)))
    return out


_ORDER = {ADJACENT: 0, PART: 1, CLAUSE: 2}


def _wider(*gaps: Gap | None) -> Gap:
    present = [g for g in gaps if g is not None]
    kind = max((g.kind for g in present), key=_ORDER.__getitem__)
    limits = [g.limit for g in present]
    return Gap(kind, 0 if 0 in limits else sum(limits))


# ---------------------------------------------------------------------------- matching

class Hit(NamedTuple):
    """One match of a pattern: the terms matched (reading tag indexes), in order."""

    tags: tuple[int, ...]
    captures: tuple[tuple[str, int], ...]  # (group, tag index)

    def span(self, reading: "Reading") -> tuple[int, int]:
        return reading.tags[self.tags[0]][0], reading.tags[self.tags[-1]][1]


def find(pattern: TagPattern, reading: "Reading", every: bool, lo: int | None = None,
         hi: int | None = None, clauses: set[int] | None = None) -> Iterator[Hit]:
    """Matches of `pattern` in text order: within the compact span [lo, hi) when given, else
    each within its own sentence (only the sentences holding every class a variant names are
    looked at; of those, only `clauses` when given). For each start term, the first variant
    that matches (the one with the optional elements first); only the first match unless
    `every`."""
    tags = reading.tags
    firsts = pattern.firsts
    if lo is not None and hi is not None:
        if not _may_hold(pattern, reading, lo, hi):
            return
        spans: Iterable[tuple[int, list[int], set[str] | None]] = [
            (hi, sorted(t for cls in firsts for t in reading.tags_in(cls, lo, hi) if _first(tags[t], firsts)), None)]
    else:
        spans = _sentence_starts(pattern, reading, clauses)
    for bound, starts, classes in spans:
        for start in starts:
            if tags[start][1] > bound:
                continue
            for (elements, gaps), needs in zip(pattern.variants, pattern.needs):
                if classes is not None and not needs <= classes:
                    continue
                hit = _match_from(reading, start, elements, gaps, bound)
                if hit is not None:
                    yield hit
                    if not every:
                        return
                    break


def _sentence_starts(pattern: TagPattern, reading: "Reading",
                     clauses: set[int] | None) -> Iterator[tuple[int, list[int], set[str]]]:
    """(end, the tags a match may start with, classes) of each sentence holding every class
    of a variant (of `clauses` only, when given), in text order."""
    held = set().union(*(reading.clauses_holding(needs) for needs in pattern.needs))
    if clauses is not None:
        held &= clauses
    tags = reading.tags
    # each starting class's tags by sentence, looked up once for every sentence
    per_class = [(reading.by_sentence(cls), values) for cls, values in pattern.firsts.items()]
    several = len(per_class) > 1
    for c in sorted(held):
        starts = [t for per, values in per_class for t in per.get(c, ()) if values is None or tags[t][3] in values]
        yield reading.clauses[c].end, sorted(starts) if several else starts, reading.clause_classes[c]


def _may_hold(pattern: TagPattern, reading: "Reading", lo: int, hi: int) -> bool:
    """Whether the span [lo, hi) may hold a match: false when it lies in one sentence that
    lacks a class of every variant (the parts of a sentence, asked again and again by the
    `unless` patterns and the statements of the context, mostly do)."""
    at = reading.clause_index(lo)
    clause = reading.clauses[at]
    if not (clause.start <= lo and hi <= clause.end):
        return True
    return may_match_in(pattern, reading.clause_classes[at])


def may_match_in(pattern: TagPattern, classes: set[str]) -> bool:
    """Whether a sentence holding terms of `classes` may hold a match (of some variant)."""
    return any(needs <= classes for needs in pattern.needs)


def _match_from(reading: "Reading", start: int, elements, gaps, hi: int) -> Hit | None:
    tags = reading.tags
    if tags[start][2] != elements[0].cls or not _admits(tags[start], elements[0]):
        return None
    chosen = [start]
    aside = opened = reading.aside[start]
    for position, (element, gap) in enumerate(zip(elements[1:], gaps), start=1):
        nxt = reading.first_of(element.cls, tags[chosen[-1]][1], hi, aside, element.values)
        if nxt is None or (opened >= 0 and reading.aside[nxt] != opened):
            return None  # (a statement begun in an aside ends in it: "(as shown by the FP32 model), but ...")
        if reading.aside[nxt] != aside and _named_in_aside(reading, nxt, elements[position - 1]):
            return None  # the aside says it of a term of its own ("…（量化前的模型是正常的）")
        # the previous term is the last of its kind before this one ("编译用的 hbdk 旧": hbdk)
        last = reading.last_before(chosen[-1], tags[nxt][0], elements[position - 1].values)
        if last != chosen[-1]:
            if not _differs(elements, chosen, position - 1, last, tags):
                return None
            if position > 1 and not reading.gap_ok(tags[chosen[-2]][1], tags[last][0], gaps[position - 2]):
                return None
            chosen[-1] = last
        if not reading.gap_ok(tags[chosen[-1]][1], tags[nxt][0], gap) or not _differs(elements, chosen, position, nxt, tags):
            return None
        chosen.append(nxt)
        aside = reading.aside[nxt]
    captures = tuple((e.group, t) for e, t in zip(elements, chosen) if e.group)
    return Hit(tuple(chosen), captures)


def _named_in_aside(reading: "Reading", index: int, previous: Element) -> bool:
    """Whether the aside that tag `index` stands in holds, before it, a term the previous
    element would take: then the term belongs to the aside's own statement."""
    opened = reading.aside[index]
    if opened < 0:
        return False
    return any(_admits(reading.tags[t], previous)
               for t in reading.tags_in(previous.cls, opened, reading.tags[index][0]))


def _differs(elements, chosen: list[int], position: int, candidate: int, tags: list[tuple]) -> bool:
    """Whether `candidate`, for the element at `position`, has a value other than the one its
    `!=name` names (true when it names none)."""
    name = elements[position].differs_from
    if name is None:
        return True
    earlier = next(t for e, t in zip(elements[:position], chosen) if e.group == name)
    return tags[earlier][3] != tags[candidate][3]


def _first(tag: tuple, firsts: dict[str, frozenset[str] | None]) -> bool:
    """Whether a tag can start a match: of a class (and a value) some variant starts with."""
    cls = tag[2]
    if cls not in firsts:
        return False
    values = firsts[cls]
    return values is None or tag[3] in values


def _admits(tag: tuple, element: Element) -> bool:
    return element.values is None or tag[3] in element.values


def classes_of(pattern: TagPattern) -> set[str]:
    return {e.cls for variant in pattern.variants for e in variant[0]}


def required_classes(pattern: TagPattern) -> frozenset[str]:
    """Classes every variant needs (a reading without one of them cannot match)."""
    sets = [frozenset(e.cls for e in elements) for elements, _ in pattern.variants]
    return frozenset.intersection(*sets)


__all__ = ["ADJACENT", "CLAUSE", "PART", "Element", "Gap", "Hit", "PatternError", "TagPattern", "classes_of",
           "find", "may_match_in", "parse", "required_classes"]
