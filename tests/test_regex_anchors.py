"""The anchor words of an expression (engine/regex_anchors.py): every match holds one, so the
reader may skip an expression over a text that holds none. Checked on hand-made expressions,
then on the shipped vocabulary against every real report's words: a reading made with the
anchors is the reading made without them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from j6doctor.engine.regex_anchors import anchors, codes, may_match, parser  # (the parser's names for this Python)
from j6doctor.engine.text_normalise import normal
from j6doctor.engine.text_reader import read
from j6doctor.facts import vocabulary

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("expression, words", [
    ("quantiz\\w*[_ ]eval", {"quantiz"}),                       # a literal run
    ("(?:升级|更新|刷)[^,]{0,6}?固件", {"固件"}),                    # the longer shortest word
    ("(?:换成|换用)[^,]{0,6}?(?:runtime|hbrt)", {"runtime", "hbrt"}),
    ("(?:换成|换用)\\d(?:更|刷)", {"换成", "换用"}),
    ("top-?1", {"top1", "top-1"}),                               # each spelling of a run
    ("换(?<![转切交]换)了?", {"换"}),          # a look-behind matches no text; 换了 holds 换
    ("(?:仅|仅仅)掉", {"仅掉"}),               # 仅仅掉 holds 仅掉
    ("(?:ab|bcd)+x", {"ab", "bcd"}),                             # a group repeated at least once
    ("(?<!before )quantized", {"quantized"}),                    # a look-behind holds no word of the match
    ("(?:during|at|by)(?P<value> epoch)", {"during epoch", "at epoch", "by epoch"}),
    ("(?:at|by)[xy]", {"atx", "aty", "byx", "byy"}),
    ("(?:a|b|c|d|e|f|g|h)(?:a|b|c|d|e|f|g|h)(?:a|b|c|d|e|f|g|h)z",
     {c + "z" for c in "abcdefgh"}),  # 8 × 8 × 8 spellings are too many: the run is cut
])
def test_the_words_every_match_holds(expression, words):
    assert anchors(expression) == frozenset(words)


@pytest.mark.parametrize("expression", [
    "[\u4e00-\u9fff]+",           # a class
    "(?:map)?\\d+%?",              # an optional group
    "(?:map|)\\s\\d",              # an empty alternative
    "(?i)accuracy",               # case-insensitive: the text's case is not the word's
    "(?i:acc)\\d",
    ".{3}",
])
def test_no_words_where_a_match_may_hold_none(expression):
    assert anchors(expression) is None
    assert may_match("anything", anchors(expression))


def test_a_text_without_the_words_cannot_match():
    words = anchors("(?:掉|下降)了?\\s?\\d+个点")
    assert not may_match("精度正常", words)
    assert may_match("精度掉了 3个点", words)


def _report_texts() -> list[str]:
    texts = []
    for folder in ("benchmarks/real_reports", "benchmarks/real_reports_heldout"):
        for path in sorted((ROOT / folder).glob("*.yaml")):
            report = yaml.safe_load(path.read_text(encoding="utf-8"))
            texts.append(str(report["words"]))
    return texts


def _shipped() -> list[tuple[str, frozenset[str] | None, bool]]:
    """(expression, anchor words, runs over the compact text: else over the normalised one)."""
    index = vocabulary().text.index
    return [(p[1], p[4], True) for p in index.patterns] + [(e, w, False) for e, w in index.clause_ends]


def test_the_shipped_expressions_match_only_texts_that_hold_their_words():
    index = vocabulary().text.index
    reports = _report_texts()
    assert len(reports) > 300
    # the texts each kind of expression runs over in text_reader.read
    forms = {True: [read(t, index).compact.text for t in reports], False: [normal(t) for t in reports]}
    matched = 0
    for expression, words, on_compact in _shipped():
        compiled = re.compile(expression, re.ASCII)
        for text in forms[on_compact]:
            if compiled.search(text):
                matched += 1
                assert may_match(text, words), (expression, sorted(words or ()))
    assert matched > 1000  # the check saw matches, not only misses


_CATEGORY_SAMPLES = {"DIGIT": "7", "NOT_DIGIT": "a", "SPACE": " ", "NOT_SPACE": "a", "WORD": "a", "NOT_WORD": " "}


def _sample(items, rng) -> str:
    """A text the parsed expression is likely to match (look-arounds are not honoured)."""
    out = []
    for op, av in items:
        if op is codes.LITERAL:
            out.append(chr(av))
        elif op is codes.NOT_LITERAL:
            out.append("x" if av != ord("x") else "y")
        elif op is codes.ANY:
            out.append(rng.choice("ab 1"))
        elif op is codes.IN:
            out.append(_member(av, rng))
        elif op is codes.SUBPATTERN:
            out.append(_sample(av[3], rng))
        elif op is codes.BRANCH:
            out.append(_sample(rng.choice(av[1]), rng))
        elif op in (codes.MAX_REPEAT, codes.MIN_REPEAT) or op is getattr(codes, "POSSESSIVE_REPEAT", None):
            least, most, inner = av
            out.extend(_sample(inner, rng) for _ in range(rng.randint(least, min(most, least + 2))))
        elif op is getattr(codes, "ATOMIC_GROUP", None):
            out.append(_sample(av, rng))
    return "".join(out)


def _member(members, rng) -> str:
    """A character of a class: one it names, else one a negated class lets through."""
    if members and members[0][0] is codes.NEGATE:
        return rng.choice("xq")
    op, av = rng.choice(members)
    if op is codes.LITERAL:
        return chr(av)
    if op is codes.RANGE:
        return chr(rng.randint(*av))
    return _CATEGORY_SAMPLES.get(str(av).replace("CATEGORY_", ""), "a")


@settings(derandomize=True, database=None, deadline=None, max_examples=3000)
@given(st.data())
def test_no_text_sampled_from_an_expression_matches_without_its_words(data):
    expression, words, _ = data.draw(st.sampled_from(_shipped()))
    rng = data.draw(st.randoms(use_true_random=False))
    text = rng.choice(["", "x ", "中"]) + _sample(parser.parse(expression, re.ASCII), rng) + rng.choice(["", " a", "。"])
    if re.search(expression, text, re.ASCII):
        assert may_match(text, words), (expression, text)


def test_a_reading_with_anchors_is_the_reading_without():
    index = vocabulary().text.index
    unanchored = index._replace(patterns=tuple(p[:4] + (None,) + p[5:] for p in index.patterns),
                                 clause_ends=tuple((expression, None) for expression, _ in index.clause_ends))
    skipped = 0
    for text in _report_texts():
        with_anchors, without = read(text, index), read(text, unanchored)
        assert (with_anchors.tags, with_anchors.clauses, with_anchors.marks, with_anchors.triggers) == \
               (without.tags, without.clauses, without.marks, without.triggers)
        skipped += sum(not may_match(with_anchors.compact.text, p[4]) for p in index.patterns)
    assert skipped > 0  # the anchors did leave expressions out
