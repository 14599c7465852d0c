"""The words one of which every match of a regular expression holds ("(?:升级|更新)[^,]{0,6}?
固件" holds 固件; "top-?1" holds "top"): a text holding none of them cannot match, so the
expression need not be compiled nor run over it. Found once, when the vocabulary is built, and
kept with it as data (text_lexicon.py); a compiled expression would not help there, since it
pickles back to its source and is compiled again on every load.

The words come from the expression's parse tree. The standard library parses expressions
with a module it keeps private (`re._parser`, named `sre_parse` up to 3.10); it is only read
here, at build time, never changed. Where the tree holds no such words (a character class, an
optional group, a case-insensitive part), there are none and the expression always runs."""

from __future__ import annotations

import re
import sys

if sys.version_info >= (3, 11):
    from re import _constants as codes
    from re import _parser as parser
else:  # pragma: no cover - the 3.10 names of the same modules
    import sre_constants as codes
    import sre_parse as parser

_REPEATS = tuple(getattr(codes, name) for name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT")
                 if hasattr(codes, name))
_ZERO_WIDTH = (codes.ASSERT, codes.ASSERT_NOT, codes.AT)
MOST_SPELLINGS = 64  # the spellings a run of text may have ("top-?1": top1, top-1) before it is cut


def anchors(expression: str, flags: int = 0) -> frozenset[str] | None:
    """The words one of which every match of `expression` holds, or None when none are known."""
    tree = parser.parse(expression, flags)
    if tree.state.flags & re.IGNORECASE:
        return None
    return _required(tree)


def openings(expression: str, flags: int = 0) -> frozenset[str] | None:
    """The words one of which every match of `expression` starts with ("(?:demo|app)s?" starts
    with demo or app), or None when none are known: the reader tries such an expression only
    where one of them stands, instead of at every character."""
    tree = parser.parse(expression, flags)
    if tree.state.flags & re.IGNORECASE:
        return None
    words = _opening(tree)
    if words is None or "" in words:
        return None
    # a place where "ab" stands is one where "a" does
    return frozenset(w for w in words if not any(v != w and w.startswith(v) for v in words))


def _opening(items) -> frozenset[str] | None:
    """Of a sequence: the spellings of its leading items with few spellings, or where the
    first has many, the words each alternative of it starts with."""
    run = frozenset([""])
    for op, av in items:
        longer = _extended(run, _spellings(op, av))
        if longer is not None:
            run = longer
            continue
        if run == {""}:
            return _item_opening(op, av)
        break
    return run


def _item_opening(op, av) -> frozenset[str] | None:
    """The words every match of one item starts with: a group, or alternatives that each
    start with known words ("(?:obtain\\w*|got)")."""
    if op is codes.SUBPATTERN:
        return None if av[1] & re.IGNORECASE else _opening(av[3])
    if op is codes.BRANCH:
        each = [_opening(alternative) for alternative in av[1]]
        return None if any(words is None or "" in words for words in each) else _few(frozenset().union(*each))
    return None


def _extended(run: frozenset[str], spellings: frozenset[str] | None) -> frozenset[str] | None:
    """The spellings of a run of items followed by an item of these spellings, or None when
    the item has too many (or any text) to spell out."""
    if spellings is None or len(run) * len(spellings) > MOST_SPELLINGS:
        return None
    return frozenset(a + b for a in run for b in spellings)


def may_match(text: str, words: frozenset[str] | None) -> bool:
    """Whether a text could hold a match of an expression with these anchor words."""
    return words is None or any(word in text for word in words)


def _required(items) -> frozenset[str] | None:
    """Of a sequence: the words of its most telling part. A run of items with a few exact
    spellings ("换(?:成|用)" is 换成 or 换用) is one part; any other item is a part of its own."""
    choices: list[frozenset[str]] = []
    run = frozenset([""])
    for op, av in items:
        spellings = _spellings(op, av)
        longer = _extended(run, spellings)
        if longer is not None:
            run = longer
            continue
        choices.append(run)
        run = spellings or frozenset([""])
        if spellings is None:
            choices.append(_required_item(op, av) or frozenset([""]))
    choices.append(run)
    return max((_fewest(c) for c in choices if "" not in c), key=_telling, default=None)


def _fewest(words: frozenset[str]) -> frozenset[str]:
    """Without the words that hold another of them: a text holding one holds the other."""
    return frozenset(w for w in words if not any(v != w and v in w for v in words))


def _spellings(op, av) -> frozenset[str] | None:
    """Every text one item can match, where they are few and known; None otherwise."""
    if op is codes.LITERAL:
        return frozenset(chr(av))
    if op in _ZERO_WIDTH:
        return frozenset([""])  # it matches no text: a run goes on across it
    if op is codes.IN and all(member is codes.LITERAL for member, _ in av):
        return frozenset(chr(code) for _, code in av)
    if op is codes.SUBPATTERN and not av[1] & re.IGNORECASE:
        return _sequence_spellings(av[3])
    if op is codes.BRANCH:
        each = [_sequence_spellings(alternative) for alternative in av[1]]
        return None if None in each else _few(frozenset().union(*each))
    if op in _REPEATS and av[:2] == (0, 1):
        inner = _sequence_spellings(av[2])
        return None if inner is None else _few(inner | {""})
    return None


def _sequence_spellings(items) -> frozenset[str] | None:
    spellings = frozenset([""])
    for op, av in items:
        more = _spellings(op, av)
        if more is None:
            return None
        spellings = _few(frozenset(a + b for a in spellings for b in more))
        if spellings is None:
            return None
    return spellings


def _few(spellings: frozenset[str]) -> frozenset[str] | None:
    return spellings if len(spellings) <= MOST_SPELLINGS else None


def _required_item(op, av) -> frozenset[str] | None:
    """The words one of which every match of an item with many spellings holds."""
    if op is codes.SUBPATTERN:
        _, added_flags, _, inner = av
        return None if added_flags & re.IGNORECASE else _required(inner)
    if op in _REPEATS:
        least, _, inner = av
        return _required(inner) if least >= 1 else None
    if op is codes.BRANCH:
        each = [_required(alternative) for alternative in av[1]]
        return None if not all(each) else frozenset().union(*each)
    if op is getattr(codes, "ATOMIC_GROUP", None):
        return _required(av)
    return None  # a class, any character, a back reference: no word required


TELLING_LENGTH = 3  # characters from which a word is as telling as a longer one ("精度", "map")


def _telling(words: frozenset[str]) -> tuple[int, int]:
    """The longer the shortest word (up to TELLING_LENGTH) and then the fewer the words, the
    fewer texts pass, and the fewer words each text is searched for."""
    return min(TELLING_LENGTH, *map(len, words)), -len(words)
