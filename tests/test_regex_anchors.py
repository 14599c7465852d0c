"""The anchor words of an expression (engine/regex_anchors.py): every match holds one, so the
reader may skip an expression over a text that holds none. Checked on hand-made expressions,
then on the shipped vocabulary against every real report's words: a reading made with the
anchors is the reading made without them."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from j6doctor.engine.regex_anchors import anchors, may_match
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


def test_the_shipped_expressions_match_only_texts_that_hold_their_words():
    index = vocabulary().text.index
    texts = [t.lower() for t in _report_texts()]
    assert len(texts) > 300
    expressions = [(p[1], p[4]) for p in index.patterns] + list(index.clause_ends)
    matched = 0
    for expression, words in expressions:
        compiled = re.compile(expression, re.ASCII)
        for text in texts:
            if compiled.search(text):
                matched += 1
                assert may_match(text, words), (expression, sorted(words or ()))
    assert matched > 1000  # the check saw matches, not only misses


def test_a_reading_with_anchors_is_the_reading_without():
    index = vocabulary().text.index
    unanchored = replace(index, patterns=tuple(p[:4] + (None,) for p in index.patterns),
                         clause_ends=tuple((expression, None) for expression, _ in index.clause_ends))
    skipped = 0
    for text in _report_texts():
        with_anchors, without = read(text, index), read(text, unanchored)
        assert (with_anchors.tags, with_anchors.clauses, with_anchors.marks, with_anchors.triggers) == \
               (without.tags, without.clauses, without.marks, without.triggers)
        skipped += sum(not may_match(with_anchors.compact.text, p[4]) for p in index.patterns)
    assert skipped > 0  # the anchors did leave expressions out
