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
from collections import OrderedDict, defaultdict
from bisect import bisect_left, bisect_right, insort
from functools import lru_cache
from typing import Any, Iterable, Iterator, NamedTuple, TYPE_CHECKING

from j6doctor.engine.regex_anchors import may_match
from j6doctor.engine.tag_patterns import ADJACENT, PART, Gap
from j6doctor.engine.text_normalise import Compact, compact, normal

if TYPE_CHECKING:
    from j6doctor.engine.text_lexicon import Carry, TermIndex

# Text rules read the first MAX_TEXT_READ characters of a text: a real post is a few thousand;
# the case reader notes the cut (probes/case_file.py).
MAX_TEXT_READ = 64 * 1024
PART_END = "_part_end"  # the lexicon's class of the words that end a part ("但是", "but")
TRIGGER = "_trigger"    # the lexicon's class of the context triggers; a tag's value is its category
# where a trigger counts: anywhere in the parts of a statement, only at the start of a part
# ("Is the layout wrong"), or also for the part before when it is a part of its own
# ("output stride 读错 — 已排除")
ANYWHERE, OPENS, CLOSES = "", "opens", "closes"


class Clause(NamedTuple):
    start: int  # compact span
    end: int


class Reading:
    """The terms of one text, its sentences and the parts of each sentence."""

    __slots__ = ("text", "compact", "tags", "by_class", "class_starts", "clauses",
                 "clause_starts", "tag_clause", "clause_classes", "class_clauses", "marks", "mark_starts", "mark_ends",
                 "breaks",
                 "triggers", "trigger_starts", "windows", "glue", "glue_words", "aside", "aside_ends", "derived",
                 "carried_terms")

    def __init__(self, text: str, form: Compact, tags: list[tuple], clauses: list[Clause],
                 marks: list[tuple[int, int]], triggers: list[tuple], windows: dict[str, int], glue: str,
                 breaks: str, glue_words: re.Pattern | None = None, carried: frozenset[int] = frozenset()):
        self.text = text
        self.compact = form
        self.tags = tags
        self.carried_terms = carried  # the indexes of the terms carried from the sentence before (`carry`)
        # the parenthesis each tag stands in (-1: none): a statement is read either outside
        # every aside ("板上 conf ~0.003（host FP32 为 0.978），0 检出") or within one
        self.aside, self.aside_ends = _asides(form.text, tags)
        self.clauses = clauses
        self.clause_starts = [c.start for c in clauses]
        # one pass over the tags (sorted by start): the tags of each class, the sentence of
        # each tag, the classes of each sentence
        by_class: dict[str, list[int]] = {}
        class_starts: dict[str, list[int]] = {}
        tag_clause: list[int] = [0] * len(tags)
        clause_classes: list[set[str]] = [set() for _ in clauses]
        ends = [c.end for c in clauses]
        last = len(ends) - 1
        at = 0
        for index, (start, _, cls, _) in enumerate(tags):
            members = by_class.get(cls)
            if members is None:
                members = by_class[cls] = []
                class_starts[cls] = []
            members.append(index)
            class_starts[cls].append(start)
            while at < last and start >= ends[at]:
                at += 1
            tag_clause[index] = at
            clause_classes[at].add(cls)
        self.by_class, self.class_starts = by_class, class_starts
        self.tag_clause, self.clause_classes = tag_clause, clause_classes
        self.class_clauses: dict[str, set[int]] = {}  # the sentences holding each class, when first asked
        self.derived: dict = {}  # what is worked out from the reading once, when first asked (text_rules.py, probes)
        self.marks = marks                  # (start, end) of every part-ending mark, sorted
        self.mark_starts = [m[0] for m in marks]
        self.mark_ends = [m[1] for m in marks]
        # where a same-part gap of a pattern stops: the marks of the characters it does not cross
        self.breaks = [m[0] for m in marks if m[1] > m[0] and form.text[m[0]] in breaks]
        self.triggers = triggers            # (start, end, category, where it counts), sorted
        self.trigger_starts = [t[0] for t in triggers]
        self.windows = windows
        self.glue = glue
        self.glue_words = glue_words

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

    def in_clause(self, cls: str, clause: int) -> list[int]:
        """Indexes of the class's tags lying within sentence `clause` (`tags_in` its span)."""
        return self.by_sentence(cls).get(clause, [])

    def by_sentence(self, cls: str) -> dict[int, list[int]]:
        """sentence → indexes of the class's tags lying within it, from one pass over the
        class's tags, made when the class is first asked."""
        key = ("by sentence", cls)
        per = self.derived.get(key)
        if per is None:
            per = self.derived[key] = {}
            for index in self.by_class.get(cls, ()):
                at = self.tag_clause[index]
                tag, sentence = self.tags[index], self.clauses[at]
                if sentence.start <= tag[0] and tag[1] <= sentence.end:
                    per.setdefault(at, []).append(index)
        return per

    def first_of(self, cls: str, position: int, hi: int, aside: int = -1,
                 values: tuple[str, ...] | None = None) -> int | None:
        """The class's first tag (of one of `values`, when given) starting at or after
        `position` and ending by `hi`: the first in the same aside as `aside`, else the first
        within an aside there (a format named only in an aside: "camera (NV12, ...)")."""
        members, starts = self._of_values(cls, values)
        if not starts:
            return None
        inner = None
        for at in range(bisect_left(starts, position), len(starts)):
            index = members[at]
            tag = self.tags[index]
            if tag[0] >= hi:
                break
            if self.aside[index] == aside:
                return index if tag[1] <= hi else None
            if inner is None and tag[1] <= hi:
                inner = index
        return inner

    def _of_values(self, cls: str, values: tuple[str, ...] | None) -> tuple[list[int], list[int]]:
        """The class's tags (of one of `values`, when given) and their starts, the subset made
        once per reading: looking for one value must not walk every other one of the class
        after it (a long text of "不同" read for "一致")."""
        if values is None:
            return self.by_class.get(cls, []), self.class_starts.get(cls, [])
        key = ("of values", cls, values)
        found = self.derived.get(key)
        if found is None:
            members = [i for i in self.by_class.get(cls, ()) if self.tags[i][3] in values]
            found = self.derived[key] = (members, [self.tags[i][0] for i in members])
        return found

    def last_before(self, index: int, limit: int, values: tuple[str, ...] | None = None) -> int:
        """The last tag of the class and aside of tag `index` (of one of `values`, when
        given), from it on, that ends by `limit`."""
        tag = self.tags[index]
        members, aside = self.by_class[tag[2]], self.aside[index]
        last = index
        # the class's tags that follow it (they do not overlap: their starts tell their order)
        for position in range(bisect_right(self.class_starts[tag[2]], tag[0]), len(members)):
            following = members[position]
            if self.aside[following] != aside:
                continue
            if self.tags[following][1] > limit:
                break
            if values is None or self.tags[following][3] in values:
                last = following
        return last

    def clauses_holding(self, classes: frozenset[str]) -> set[int]:
        """The sentences that hold a term of every class of `classes`."""
        sets = sorted((self._clauses_of(cls) for cls in classes), key=len)
        return set.intersection(*sets) if sets else set()

    def _clauses_of(self, cls: str) -> set[int]:
        """The sentences holding a term of the class (a text rule asks of some classes only)."""
        held = self.class_clauses.get(cls)
        if held is None:
            held = self.class_clauses[cls] = {self.tag_clause[index] for index in self.by_class.get(cls, ())}
        return held

    # ------------------------------------------------------------------ places
    def gap_ok(self, end: int, start: int, gap: Gap) -> bool:
        """Whether a term ending at `end` and the next starting at `start` are as near as `gap` says."""
        limit = gap.limit or self.windows[gap.kind]
        if gap.kind == ADJACENT:
            return self._glued(end, start, limit)
        if start - end > limit:
            return False
        if gap.kind == PART:
            at = bisect_left(self.breaks, end)
            return at == len(self.breaks) or self.breaks[at] >= start
        return True

    def _glued(self, end: int, start: int, limit: int) -> bool:
        """Side by side: at most `limit` glue characters between, not counting glue words
        ("the board and the x86 simulator": "and", then the x86 simulator)."""
        between = self.compact.text[end:start]
        # (a few short words at most: a longer stretch is no glue, and is not searched)
        if len(between) > limit and self.glue_words is not None and len(between) <= 4 * limit + 8:
            between = self.glue_words.sub("", between)
        return len(between) <= limit and all(c in self.glue for c in between)

    def clause_of(self, position: int) -> Clause:
        return self.clauses[self.clause_index(position)]

    def clause_index(self, position: int) -> int:
        return max(bisect_right(self.clause_starts, position) - 1, 0)

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

    def part_after(self, hi: int, clause: Clause) -> tuple[int, int] | None:
        """The part of `clause` that follows the part ending at `hi` (None: it ends the sentence)."""
        at = bisect_left(self.mark_starts, hi)
        if at == len(self.marks) or self.mark_starts[at] >= clause.end:
            return None
        lo = self.mark_ends[at]
        following = at + 1
        end = min(clause.end, self.mark_starts[following]) if following < len(self.marks) else clause.end
        return lo, end

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
    # hits by class, each (start, -end, rank, value): sorted as they are, the leftmost come
    # first, then the longest, then the phrases before the patterns, in the order written
    hits: dict[str, list[tuple]] = defaultdict(list)
    marks = _part_marks(form, compiled(index.part_chars))
    places = _literal_hits(form.text, index, hits, marks)
    for rank, (cls, expression, value, extend, words, falls) in enumerate(index.patterns, start=1):
        found = hits.setdefault(cls, [])
        if rank - 1 in index.opened:  # (tried only where one of its opening words stands)
            starts = places.get(rank - 1)
            if not starts:
                continue
            pattern = compiled(expression)
            matches = _matches_at(pattern, form.text, starts)
        elif may_match(form.text, words):
            pattern = compiled(expression)
            matches = pattern.finditer(form.text)
        else:
            continue
        _pattern_hits(form.text, pattern, _falling(matches) if falls else matches, value, extend, found, rank)
    clauses = _clauses(normalised, form, index.clause_ends)
    ends = _sentence_end_at(clauses, len(form.text))
    triggers = [(s, e, category, where) for s, e, (category, where) in _leftmost_longest(hits.pop(TRIGGER, []), ends)
                if category not in index.pseudo]
    tags: list[tuple] = []
    for cls, found in hits.items():
        # a class's `ignore` phrases leave no tag
        kept = [(s, e, cls, value) for s, e, value in _leftmost_longest(found, ends) if value is not None]
        merge = index.merges.get(cls)
        # (a term runs to the end of its sentence at most, but a merge may join two sentences' terms)
        tags.extend(_within_clauses(_merged(kept, merge, form, text), clauses) if merge else kept)
    tags.sort()
    marks.sort()
    names = _names(form.text)
    if names:
        tags, triggers, marks = _outside_names(tags, names), _outside_names(triggers, names), _outside_names(marks, names)
    carried: frozenset[int] = frozenset()
    if index.carry and len(clauses) > 1:
        tags, carried = _carried(tags, clauses, index.carry, form, normalised,
                                 [m[0] for m in marks], [t[0] for t in triggers])  # (sorted, as the Reading keeps them)
    return Reading(text, form, tags, clauses, marks, triggers, index.windows, index.glue, index.gap_breaks,
                   _glue_words(index.glue_words), carried)


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
    """For each tag, the start of the parenthesis it stands in (-1: none), and where each such
    parenthesis ends. A parenthesis is an aside when it closes within MAX_ASIDE characters,
    holds no other, and is more than one term: "step3 (frozen_graph.pb)" names the model."""
    out = [-1] * len(tags)
    spans = []
    opened = -1
    for found in _PARENTHESES.finditer(text):
        at = found.start()
        if found.group() == "(":
            opened = at
        elif opened >= 0:
            if at - opened <= MAX_ASIDE:
                spans.append((opened, at + 1))
            opened = -1
    if not spans:
        return out, {}
    starts = [t[0] for t in tags]
    kept = {}
    for start, end in spans:
        inside = range(bisect_right(starts, start), bisect_left(starts, end))
        if _one_term(text, start, end, [tags[i] for i in inside]):
            continue
        kept[start] = end
        for index in inside:
            if tags[index][1] < end:
                out[index] = start
    return out, kept


_PARENTHESES = re.compile(r"[()]")

# A file path of three segments or more, or one that starts at a root: the words inside are
# names, not statements ("examples/onnx/yolov5/test.py" says nothing about an ONNX model),
# but for the file's own name. Two words joined by one slash ("int8/int16", "X3/X5") are no
# path. (A web address is read as a space: text_normalise.py.)
_PATH_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.@%+~-/")
_ROOTS = ("/", "./", "../", "~/")


def _names(text: str) -> list[tuple[int, int, int]]:
    """Paths: (start, end, where the last segment starts). Looked for around each slash."""
    out: list[tuple[int, int, int]] = []
    at = text.find("/")
    last = len(text)
    while at >= 0:
        start = at
        while start > 0 and text[start - 1] in _PATH_CHARS:
            start -= 1
        end = at
        while end < last and text[end] in _PATH_CHARS:
            end += 1
        token = text[start:end]
        segments = [part for part in token.split("/") if part]
        # (a division is no path: "又/255")
        if segments and (len(segments) >= 3 or token.startswith(_ROOTS)) and any(c.isalpha() for c in token):
            out.append((start, end, start + token.rstrip("/").rfind("/") + 1))
        at = text.find("/", end)
    return out


def _outside_names(spans: list[tuple], names: list[tuple[int, int, int]]) -> list[tuple]:
    """The spans (sorted by start) not within a name, but for those in a path's last
    segment (a file name: "model/yolov5s.onnx" still names an ONNX file)."""
    # (a post names few paths and holds many spans: each path looks up its spans by bisection)
    starts = [span[0] for span in spans]
    inside = {at for start, end, last in names
              for at in range(bisect_left(starts, start), bisect_left(starts, last)) if spans[at][1] <= end}
    return [span for at, span in enumerate(spans) if at not in inside] if inside else spans


def _one_term(text: str, start: int, end: int, inside: list[tuple]) -> bool:
    """Whether one tag spans the whole of the parenthesis [start, end) (spaces aside)."""
    lo, hi = start + 1, end - 1
    while lo < hi and text[lo] == " ":
        lo += 1
    while hi > lo and text[hi - 1] == " ":
        hi -= 1
    return any(t[0] == lo and t[1] == hi for t in inside)


@lru_cache(maxsize=8)
def _glue_words(words: tuple[str, ...]) -> re.Pattern | None:
    """One expression for the glue words, each a whole word."""
    return re.compile(r"(?<![a-z])(?:" + "|".join(words) + r")(?![a-z])") if words else None


@lru_cache(maxsize=None)
def compiled(expression: str) -> re.Pattern:
    """An expression of the term index, compiled once per process (the index keeps sources).
    ASCII: \\w and \\b are Latin words ("结果rknn_demo异常" holds the name rknn_demo)."""
    return re.compile(expression, re.ASCII)


def _part_marks(form: Compact, chars: re.Pattern) -> list[tuple[int, int]]:
    """The part-ending characters (none is whitespace: all stand in the compact text)."""
    return [found.span() for found in chars.finditer(form.text)]


def _literal_hits(text: str, index: Any, hits: defaultdict[str, list[tuple]],
                  marks: list[tuple[int, int]]) -> dict[int, list[int]]:
    """Every term of the automaton found in `text`, where its word ends sit right; and where
    each pattern with opening words may match: the starts of those words, in order."""
    places: defaultdict[int, list[int]] = defaultdict(list)
    if not index.found:  # a lexicon of patterns alone, none with opening words: no automaton was made
        return places
    last = len(text)
    word = _WORD_CHARS
    found_at = index.found
    for end, at in index.automaton.iter(text):
        length, word_start, entries, opens = found_at[at]
        start = end - length + 1
        for pattern in opens:  # (wherever the word stands: a pattern says where its words end)
            places[pattern].append(start)
        if word_start and start > 0 and text[start - 1] in word:
            continue
        after = end + 1
        after_word = None  # (looked at only for an entry that must end a word)
        for cls, value, word_end in entries:
            if word_end:
                if after_word is None:
                    after_word = after < last and text[after] in word
                if after_word:
                    continue
            if cls == PART_END:
                marks.append((start, after))
            else:
                hits[cls].append((start, -after, 0, value))
    for starts in places.values():
        starts.sort()  # (found in the order they end)
    return places


def _matches_at(pattern: re.Pattern, text: str, starts: list[int]) -> Iterator[re.Match]:
    """The matches `pattern.finditer(text)` gives, for a pattern every match of which starts
    at one of `starts` (and so is never empty): tried only there."""
    after = 0
    for start in starts:
        if start >= after:
            found = pattern.match(text, start)
            if found is not None:
                yield found
                after = found.end()


_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_.-")


def _pattern_hits(text: str, pattern: re.Pattern, matches: Iterable[re.Match], value: str | None, extend: bool,
                  found: list, rank: int) -> None:
    """The matches of one pattern: at word boundaries, or widened to the name they stand in."""
    last = len(text)
    named = "value" in pattern.groupindex
    for m in matches:
        start, end = m.span("value") if named else m.span()  # a group `value` is the term
        if end == start:
            continue
        if extend:
            while start > 0 and text[start - 1] in _NAME_CHARS:
                start -= 1
            while end < last and text[end] in _NAME_CHARS:
                end += 1
            while end > start + 1 and text[end - 1] in ".-":  # a name ends before a full stop
                end -= 1
        elif (start > 0 and _word_char(text[start]) and _word_char(text[start - 1])) or \
                (end < last and _word_char(text[end - 1]) and _word_char(text[end])):
            continue
        found.append((start, -end, rank, value if value is not None else text[start:end]))


def _falling(matches: Iterable[re.Match]) -> Iterator[re.Match]:
    """The matches whose group `after` holds a lower number than their group `before`."""
    for m in matches:
        try:
            if float(m.group("after")) < float(m.group("before")):
                yield m
        except (TypeError, ValueError):  # a group that took part in no match, or holds no number
            continue


def _word_char(char: str) -> bool:
    return char in _WORD_CHARS


_WORD_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


def _leftmost_longest(found: list[tuple], ends: list[int]) -> list[tuple[int, int, Any]]:
    """(start, end, value) of the hits (start, -end, rank, value) that overlap no earlier,
    longer or better-ranked one; a hit that runs past the end of its sentence (`ends`: the
    end of the sentence of each character, _sentence_end_at) is none ("the board\n\noutput
    is wrong" holds no "board output")."""
    found.sort()
    kept: list[tuple[int, int, Any]] = []
    edge = -1
    for start, negative_end, _, value in found:
        if start < edge:
            continue
        if -negative_end <= ends[start] or -negative_end <= start + 1:
            edge = -negative_end
            kept.append((start, edge, value))
    return kept


def _sentence_end_at(clauses: list[Clause], length: int) -> list[int]:
    """For each character of a compact text (and its end), the end of the first sentence
    ending after it, or of the last one: what every hit is checked against, looked up by its
    start instead of bisected."""
    out: list[int] = []
    for clause in clauses:
        out.extend([clause.end] * (clause.end - len(out)))
    out.extend([clauses[-1].end] * (length + 1 - len(out)))
    return out


# the gap between two columns of a table pasted as text: a tab, or two spaces or more
COLUMN_GAP = re.compile(r"[ \t]*\t[ \t]*| {2,}")
# what parts a model from where it ran: a column's gap, a line break ("... compared to onnx\nBoard program")
_APART = re.compile(COLUMN_GAP.pattern + r"|\n")
# (one that holds no score: "quantized.bc (76.1%) 板端 60.2%" keeps the two apart)
_ASIDE_INSIDE = 60  # characters inside an aside a merge looks past
_ASIDE = re.compile(r" ?\((?![^()]*(?:\d\.\d|%))[^()]{1," + str(_ASIDE_INSIDE) + r"}\) ?")


def _merged(tags: list[tuple], merge: tuple, form: Compact, text_read: str) -> list[tuple]:
    """Neighbouring tags of one class, at most `gap` characters apart with only joining
    characters between, one of them a place: one tag over both, valued by the ranking (a
    lower rank wins), or by the second when it is a place that wins after a term. Not across
    a column's gap or a line break in the text read ("float    qat.bc" heads two columns; the
    normalised text has the text's length, a tab made a space)."""
    _, rank, _, _, after_wins = merge
    out: list[tuple] = []
    for tag in tags:
        if out and _joins(out[-1], tag, merge, form, text_read):
            prev = out[-1]
            first_wins = rank.get(prev[3], len(rank)) <= rank.get(tag[3], len(rank)) and tag[3] not in after_wins
            value = prev[3] if first_wins else tag[3]
            out[-1] = (prev[0], tag[1], prev[2], value)
        else:
            out.append(tag)
    return out


def _joins(prev: tuple, tag: tuple, merge: tuple, form: Compact, text_read: str) -> bool:
    """Whether `tag` merges with the tag before it (_merged): one of them a place, only joining
    characters between (an aside before where it ran does not part them: "QuantizationSimModel
    (8/8, 500 calib images) on PC"), at most `gap` of them, and no column gap or line break."""
    gap, _, joiners, places, _ = merge
    # (the cheap tests first: this runs for every term of a merging class)
    if not 0 <= tag[0] - prev[1] <= gap + _ASIDE_INSIDE + 4 or (tag[3] not in places and prev[3] not in places):
        return False
    between = form.text[prev[1]:tag[0]]
    if tag[3] in places:
        between = _ASIDE.sub("", between, count=1)
    return len(between) <= gap and all(c in joiners for c in between) \
        and not _APART.search(text_read, form.end_in_text(prev[1]), form.start_in_text(tag[0]))


def _carried(tags: list[tuple], clauses: list[Clause], carry: "Carry", form: Compact, normalised: str,
             marks: list[int], triggers: list[int]) -> tuple[list[tuple], frozenset[int]]:
    """The tags (sorted) with an empty term of the carried class at the start of each sentence
    that opens with a result (text context `carry`), valued as the last such term of the
    sentence right before, and the indexes of those terms: in "我用 PTQ 量化了模型。它的精度从
    76% 掉到了 40%。" the drop is the quantized model's. Not from a sentence that states a
    result, negates, doubts, supposes or asks (a context trigger, a closing question mark), nor
    into one that names a model in the part of its result ("The accuracy dropped to 40% on the
    board": `marks` are the starts of the part-ending marks)."""
    last, opens, states = _sentence_openings(tags, clauses, carry, marks)
    added = [(clauses[b].start, clauses[b].start, carry.cls, last[b - 1]) for b in range(1, len(clauses))
             if opens[b] and last[b - 1] is not None and not states[b - 1]
             and not _plain(clauses[b - 1], triggers, form.text)
             and _runs_on(normalised, form.end_in_text(clauses[b - 1].end), form.start_in_text(clauses[b].start))]
    if not added:
        return tags, frozenset()
    out = list(tags)
    for term in added:
        insort(out, term)
    return out, frozenset(bisect_left(out, term) for term in added)


def _plain(clause: Clause, triggers: list[int], text: str) -> bool:
    """Whether a sentence is not a plain statement: it holds a context trigger (a negation, a
    doubt, a supposition) or ends in a question mark."""
    return (bisect_left(triggers, clause.start) < bisect_left(triggers, clause.end)
            or text[clause.end - 1:clause.end] in ("?", "？"))


def _sentence_openings(tags: list[tuple], clauses: list[Clause], carry: "Carry",
                       marks: list[int]) -> tuple[list[Any], list[bool], list[bool]]:
    """For each sentence: the value of its last term of the carried class; whether it opens
    with a result (its first `into` term after a `led_by` one, before any term of the class or
    of `not_after`, and that one, if any, in a later part); whether it holds a `from_without`
    term."""
    count = len(clauses)
    ends = [c.end for c in clauses]
    never = float("inf")
    last: list[Any] = [None] * count
    first_into, first_led, first_name = [never] * count, [never] * count, [never] * count
    states = [False] * count
    looked_at = carry.classes
    # (the tags come in order of their start: the first of a kind in a sentence is the first seen)
    for start, _, cls, value in [t for t in tags if t[2] in looked_at]:
        at = bisect_right(ends, start, 0, count - 1)
        if cls == carry.cls:
            last[at] = value
        if first_name[at] == never and (cls == carry.cls or cls in carry.not_after):
            first_name[at] = start
        if first_into[at] == never and cls in carry.into:
            first_into[at] = start
        if first_led[at] == never and cls in carry.led_by:
            first_led[at] = start
        if cls in carry.from_without:
            states[at] = True
    opens = [first_led[at] <= first_into[at] < first_name[at]
             and (first_name[at] == never or _mark_between(marks, first_into[at], first_name[at]))
             for at in range(count)]
    return last, opens, states


def _mark_between(marks: list[int], start: float, end: float) -> bool:
    return bisect_right(marks, start) < bisect_left(marks, end)


def _runs_on(normalised: str, end: int, start: int) -> bool:
    """Whether the sentence at `start` goes on from the one ending at `end`: only sentence marks
    and spaces between, a line break only after such a mark or a colon (a wrapped paragraph,
    "测试 INT8 的准确率：\n准确率为 76.7%"), and it is no list item or heading of its own (nor
    after a code block, a table or a blank line)."""
    gap = normalised[end:start]
    if not set(gap) <= _BETWEEN or _ITEM.match(normalised, start):
        return False
    breaks = gap.count("\n")
    return breaks == 0 or (breaks == 1 and (normalised[end - 1:end] + gap[:gap.index("\n")]).rstrip(" \t")[-1:] in _MARKS)


_MARKS = ".。!?:"
_BETWEEN = frozenset(_MARKS + " \t\n")
# a list item, heading, quote or table row of its own ("**bold**" and "0.31 mAP" are none)
_ITEM = re.compile(r"[ \t]*(?:[-*•+][ \t]|[#>|]|\d+[.)、](?!\d))")


def _within_clauses(tags: list[tuple], clauses: list[Clause]) -> list[tuple]:
    """The tags (sorted) that end in the sentence they start in: a phrase read across a
    blank line ("the board\n\noutput is wrong") is no term."""
    out = []
    at = 0
    for tag in tags:
        while at + 1 < len(clauses) and tag[0] >= clauses[at].end:
            at += 1
        if tag[1] <= clauses[at].end or tag[0] >= clauses[at].end:
            out.append(tag)
    return out


def _clauses(normalised: str, form: Compact, clause_ends: tuple[tuple[str, Any], ...]) -> list[Clause]:
    """Sentences in compact coordinates, cut where a clause-end expression matches the
    normalised text (it needs the line breaks that the compact form drops); where it has a
    group `cut`, that group is the cut."""
    patterns = [compiled(expression) for expression, words in clause_ends if may_match(normalised, words)]
    cuts = sorted({m.span("cut") if "cut" in pattern.groupindex and m.start("cut") >= 0 else m.span()
                   for pattern in patterns for m in pattern.finditer(normalised)})
    spans: list[int] = []  # start, end of each sentence in the normalised text, in turn
    start = 0
    for cut_start, cut_end in cuts:
        if cut_start >= start:
            spans += (start, cut_start)
        start = max(start, cut_end)
    spans += (start, len(normalised))
    return _trimmed(form, [form.index_of(bound) for bound in spans]) or [Clause(0, 0)]


def _trimmed(form: Compact, bounds: list[int]) -> list[Clause]:
    """The sentences of compact spans (start, end in turn) with the spaces at either end cut,
    but for those that hold nothing else."""
    text = form.text
    out = []
    for at in range(0, len(bounds), 2):
        lo, hi = bounds[at], bounds[at + 1]
        while lo < hi and text[lo] == " ":
            lo += 1
        while hi > lo and text[hi - 1] == " ":
            hi -= 1
        if hi > lo:
            out.append(Clause(lo, hi))
    return out


__all__ = ["ANYWHERE", "CLOSES", "COLUMN_GAP", "Clause", "MAX_TEXT_READ", "OPENS", "PART", "PART_END", "Reading", "TRIGGER", "read",
           "read_cached"]
