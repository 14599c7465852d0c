"""One reading of a text: normalised once, cut into sentences (clauses) and parts once, and
every term of the term lists found once (text_lexicon.py says which terms there are).

A *tag* is one term found: (start, end, class, value), with start and end in the compact
form of the text (text_normalise.py); `span_in_text` gives them back in the user's text.
Within one class, overlapping terms keep the leftmost, then the longest ("不正常" hides
"正常"); the context triggers and their pseudo-triggers are one class in this sense ("不可能"
hides "可能"). Where a class says so (`merge:`), neighbouring terms of it with only the
class's joining words between are one term, valued by the class's ranking ("bin 在板子上"
is the board).

Everything a text rule asks (tag_patterns.py: the first term of a class after a place, the
gap between two terms; text_rules.py: the parts around a match, the triggers in them) is
answered from the tags, never by searching the characters again.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from j6doctor.engine.tag_patterns import ADJACENT, PART, Gap
from j6doctor.engine.text_normalise import Compact, compact, normal

if TYPE_CHECKING:
    from j6doctor.engine.text_lexicon import TermIndex

# Text rules read the first MAX_TEXT_READ characters of a text: a real post is a few thousand;
# the case reader notes the cut (probes/case_file.py).
MAX_TEXT_READ = 64 * 1024
PART_END = "_part_end"  # the lexicon's class of the words that end a part ("但是", "but")
TRIGGER = "_trigger"    # the lexicon's class of the context triggers; a tag's value is its category


@dataclass(frozen=True)
class Clause:
    start: int  # compact span
    end: int


class Reading:
    """The terms of one text, its sentences and the parts of each sentence."""

    __slots__ = ("text", "compact", "tags", "by_class", "class_starts", "class_position", "clauses",
                 "clause_starts", "marks", "mark_starts", "mark_ends", "breaks", "triggers", "trigger_starts",
                 "windows", "glue", "aside", "aside_ends")

    def __init__(self, text: str, form: Compact, tags: list[tuple], clauses: list[Clause],
                 marks: list[tuple[int, int]], triggers: list[tuple], windows: dict[str, int], glue: str,
                 breaks: str):
        self.text = text
        self.compact = form
        self.tags = tags
        # the parenthesis each tag stands in (-1: none): a statement is read either outside
        # every aside ("板上 conf ~0.003（host FP32 为 0.978），0 检出") or within one
        self.aside, self.aside_ends = _asides(form.text, tags)
        self.by_class: dict[str, list[int]] = {}
        self.class_position: list[int] = [0] * len(tags)
        for index, tag in enumerate(tags):
            members = self.by_class.setdefault(tag[2], [])
            self.class_position[index] = len(members)
            members.append(index)
        self.class_starts = {cls: [tags[i][0] for i in members] for cls, members in self.by_class.items()}
        self.clauses = clauses
        self.clause_starts = [c.start for c in clauses]
        self.marks = marks                  # (start, end) of every part-ending mark, sorted
        self.mark_starts = [m[0] for m in marks]
        self.mark_ends = [m[1] for m in marks]
        # where a same-part gap of a pattern stops: the marks of the characters it does not cross
        self.breaks = [m[0] for m in marks if m[1] > m[0] and form.text[m[0]] in breaks]
        self.triggers = triggers            # (start, end, category, opens_part), sorted
        self.trigger_starts = [t[0] for t in triggers]
        self.windows = windows
        self.glue = glue

    # ------------------------------------------------------------------ terms
    def tags_in(self, cls: str, lo: int, hi: int) -> list[int]:
        """Indexes of the class's tags lying within [lo, hi)."""
        starts = self.class_starts.get(cls)
        if not starts:
            return []
        members = self.by_class[cls]
        out = []
        for position in range(bisect_left(starts, lo), len(starts)):
            tag = self.tags[members[position]]
            if tag[0] >= hi:
                break
            if tag[1] <= hi:
                out.append(members[position])
        return out

    def first_of(self, cls: str, position: int, hi: int, aside: int = -1,
                 values: tuple[str, ...] | None = None) -> int | None:
        """The class's first tag (of one of `values`, when given) starting at or after
        `position` and ending by `hi`: the first in the same aside as `aside`, else the first
        within an aside there (a format named only in an aside: "camera (NV12, ...)")."""
        starts = self.class_starts.get(cls)
        if not starts:
            return None
        members = self.by_class[cls]
        inner = None
        for at in range(bisect_left(starts, position), len(starts)):
            index = members[at]
            tag = self.tags[index]
            if tag[0] >= hi:
                break
            if values is not None and tag[3] not in values:
                continue
            if self.aside[index] == aside:
                return index if tag[1] <= hi else None
            if inner is None and tag[1] <= hi:
                inner = index
        return inner

    def next_in_class(self, index: int) -> int | None:
        """The tag of the same class and aside that follows tag `index`."""
        members = self.by_class[self.tags[index][2]]
        for position in range(self.class_position[index] + 1, len(members)):
            if self.aside[members[position]] == self.aside[index]:
                return members[position]
        return None

    def last_before(self, index: int, limit: int, values: tuple[str, ...] | None = None) -> int:
        """The last tag of the class and aside of tag `index` (of one of `values`, when
        given), from it on, that ends by `limit`."""
        last = index
        following = self.next_in_class(index)
        while following is not None and self.tags[following][1] <= limit:
            if values is None or self.tags[following][3] in values:
                last = following
            following = self.next_in_class(following)
        return last

    def classes_in(self, lo: int, hi: int) -> set[str]:
        return {cls for cls in self.by_class if self.tags_in(cls, lo, hi)}

    # ------------------------------------------------------------------ places
    def gap_ok(self, end: int, start: int, gap: Gap) -> bool:
        """Whether a term ending at `end` and the next starting at `start` are as near as `gap` says."""
        distance = start - end
        if distance > (gap.limit or self.windows[gap.kind]):
            return False
        if gap.kind == ADJACENT:
            return all(c in self.glue for c in self.compact.text[end:start])
        if gap.kind == PART:
            at = bisect_left(self.breaks, end)
            return at == len(self.breaks) or self.breaks[at] >= start
        return True

    def clause_of(self, position: int) -> Clause:
        return self.clauses[max(bisect_right(self.clause_starts, position) - 1, 0)]

    def parts_around(self, start: int, end: int, clause: Clause, aside: int = -1) -> tuple[int, int]:
        """The span of the parts of `clause` that [start, end) touches; for a statement in an
        aside, the parts around the aside (it stands in them)."""
        if aside >= 0:
            start, end = aside, self.aside_ends[aside]
        before = bisect_right(self.mark_ends, start) - 1
        lo = max(clause.start, self.mark_ends[before]) if before >= 0 else clause.start
        after = bisect_left(self.mark_starts, end)
        hi = min(clause.end, self.mark_starts[after]) if after < len(self.marks) else clause.end
        text = self.compact.text
        if lo > clause.start and hi < clause.end and text[lo - 1] == "(" and text[hi] == ")":
            return self.parts_around(lo - 1, hi + 1, clause)  # "(wrong)" stands in the part around it
        return lo, hi

    def triggers_in(self, lo: int, hi: int) -> list[tuple]:
        at = bisect_left(self.trigger_starts, lo)
        out = []
        while at < len(self.triggers) and self.triggers[at][0] < hi:
            if self.triggers[at][1] <= hi:
                out.append(self.triggers[at])
            at += 1
        return out

    def opens(self, position: int, lo: int) -> bool:
        """Whether only spaces stand between `lo` (a part's start) and `position`."""
        return not self.compact.text[lo:position].strip()

    # ------------------------------------------------------------------ the user's text
    def span_in_text(self, start: int, end: int) -> tuple[int, int]:
        return self.compact.start_in_text(start), self.compact.end_in_text(end)

    def words(self, start: int, end: int) -> str:
        """The user's own words of a compact span."""
        a, b = self.span_in_text(start, end)
        return self.text[a:b]


def read(text: str, index: "TermIndex") -> Reading:
    """Read `text` (its first MAX_TEXT_READ characters) with a lexicon's term index."""
    text = text[:MAX_TEXT_READ]
    normalised = normal(text)
    form = compact(normalised)
    hits: dict[str, list[tuple]] = {}
    marks = _part_marks(normalised, form, index.part_chars)
    _literal_hits(form.text, index, hits, marks)
    for cls, pattern, value in index.patterns:
        found = hits.setdefault(cls, [])
        for m in pattern.finditer(form.text):
            if m.end() > m.start():
                words = m.group("value") if "value" in pattern.groupindex else m.group(0)
                found.append((m.start(), m.end(), cls, value if value is not None else words))
    triggers = [(s, e, category, opener) for s, e, _, (category, opener) in _leftmost_longest(hits.pop(TRIGGER, []))
                if category not in index.pseudo]
    tags: list[tuple] = []
    for cls, found in hits.items():
        kept = [t for t in _leftmost_longest(found) if t[3] is not None]  # a class's `ignore` phrases leave no tag
        merge = index.merges.get(cls)
        tags.extend(_merged(kept, merge, form.text) if merge else kept)
    tags.sort(key=lambda t: (t[0], -t[1], t[2]))
    marks.sort()
    clauses = _clauses(normalised, form, index.clause_ends)
    return Reading(text, form, tags, clauses, marks, triggers, index.windows, index.glue, index.gap_breaks)


_RECENT: "OrderedDict[tuple[int, str], tuple[Any, Reading]]" = OrderedDict()
RECENT_READINGS = 32  # texts whose reading a process keeps (a case has a handful; triage reads many cases)


def read_cached(text: str, index: "TermIndex") -> Reading:
    """`read`, remembered for the last RECENT_READINGS texts of this process: the probes that
    look for platforms and versions and the text rules share one reading of each text."""
    key = (id(index), text)
    hit = _RECENT.get(key)
    if hit is not None and hit[0] is index:
        _RECENT.move_to_end(key)
        return hit[1]
    reading = read(text, index)
    _RECENT[key] = (index, reading)
    while len(_RECENT) > RECENT_READINGS:
        _RECENT.popitem(last=False)
    return reading


MAX_ASIDE = 80  # characters of a parenthesis read as an aside


def _asides(text: str, tags: list[tuple]) -> tuple[list[int], dict[int, int]]:
    """For each tag, the start of the parenthesis it stands in (-1: none). A parenthesis is an
    aside when it closes within MAX_ASIDE characters, holds no other, and is more than one
    term: "step3 (frozen_graph.pb)" names the model, it is no aside."""
    spans = []
    opened = -1
    for at, char in enumerate(text):
        if char == "(":
            opened = at
        elif char == ")" and opened >= 0:
            if at - opened <= MAX_ASIDE:
                spans.append((opened, at + 1))
            opened = -1
    if not spans:
        return [-1] * len(tags), {}
    named = {(t[0], t[1]) for t in tags}
    spans = [(s, e) for s, e in spans if not _one_term(text, s, e, named)]
    starts = [s for s, _ in spans]
    out = []
    for tag in tags:
        at = bisect_right(starts, tag[0]) - 1
        out.append(spans[at][0] if at >= 0 and tag[0] > spans[at][0] and tag[1] < spans[at][1] else -1)
    return out, dict(spans)


def _one_term(text: str, start: int, end: int, named: set[tuple[int, int]]) -> bool:
    lo, hi = start + 1, end - 1
    while lo < hi and text[lo] == " ":
        lo += 1
    while hi > lo and text[hi - 1] == " ":
        hi -= 1
    return (lo, hi) in named


def _part_marks(normalised: str, form: Compact, chars: str) -> list[tuple[int, int]]:
    """The part-ending characters, found in the normalised text (a line break is one, and the
    compact form drops it), as compact spans: empty where the character was dropped."""
    if not chars:
        return []
    marks = []
    for found in re.finditer("[" + re.escape(chars) + "]", normalised):
        at = form.index_of(found.start())
        kept = at < len(form.origin) and form.origin[at] == found.start()
        marks.append((at, at + 1 if kept else at))
    return marks


def _literal_hits(text: str, index: Any, hits: dict[str, list[tuple]], marks: list[tuple[int, int]]) -> None:
    """Every term of the automaton found in `text`, where its word ends sit right."""
    last = len(text)
    for end, (length, entries) in index.automaton.iter(text):
        start = end - length + 1
        after = end + 1
        before_word = start > 0 and _word_char(text[start - 1])
        after_word = after < last and _word_char(text[after])
        for cls, value, word_start, word_end in entries:
            if (word_start and before_word) or (word_end and after_word):
                continue
            if cls == PART_END:
                marks.append((start, after))
            else:
                hits.setdefault(cls, []).append((start, after, cls, value))


def _word_char(char: str) -> bool:
    return char.isascii() and (char.isalnum() or char == "_")


def _leftmost_longest(found: list[tuple]) -> list[tuple]:
    found.sort(key=lambda t: (t[0], -t[1]))
    kept: list[tuple] = []
    edge = -1
    for tag in found:
        if tag[0] >= edge:
            kept.append(tag)
            edge = tag[1]
    return kept


def _merged(tags: list[tuple], merge: tuple, text: str) -> list[tuple]:
    """Neighbouring tags of one class, at most `gap` characters apart with only joining
    characters between, one of them a place: one tag over both, valued by the ranking (a
    lower rank wins)."""
    gap, rank, joiners, places = merge
    out: list[tuple] = []
    for tag in tags:
        if (out and 0 <= tag[0] - out[-1][1] <= gap and (tag[3] in places or out[-1][3] in places)
                and all(c in joiners for c in text[out[-1][1]:tag[0]])):
            prev = out[-1]
            value = prev[3] if rank.get(prev[3], len(rank)) <= rank.get(tag[3], len(rank)) else tag[3]
            out[-1] = (prev[0], tag[1], prev[2], value)
        else:
            out.append(tag)
    return out


def _clauses(normalised: str, form: Compact, clause_ends: tuple[re.Pattern, ...]) -> list[Clause]:
    """Sentences in compact coordinates, cut where a clause-end expression matches the
    normalised text (it needs the line breaks that the compact form drops)."""
    cuts = sorted({m.span() for pattern in clause_ends for m in pattern.finditer(normalised)})
    out: list[Clause] = []
    start = 0
    for cut_start, cut_end in cuts:
        if cut_start >= start:
            _add_clause(out, form, start, cut_start)
        start = max(start, cut_end)
    _add_clause(out, form, start, len(normalised))
    if not out:
        out.append(Clause(0, 0))
    return out


def _add_clause(out: list[Clause], form: Compact, start: int, end: int) -> None:
    lo, hi = form.index_of(start), form.index_of(end)
    while lo < hi and form.text[lo] == " ":
        lo += 1
    while hi > lo and form.text[hi - 1] == " ":
        hi -= 1
    if hi > lo:
        out.append(Clause(lo, hi))


__all__ = ["Clause", "MAX_TEXT_READ", "PART", "PART_END", "Reading", "TRIGGER", "read", "read_cached"]
