"""The opening words of an expression (engine/regex_anchors.py, `openings`): every match starts
with one, so the reader tries the expression only where one stands (text_reader._matches_at).
Checked on hand-made expressions, then on the shipped vocabulary: the matches tried at the
opening words are those of `finditer`, and a reading made with them is the reading made
without them."""

from __future__ import annotations

import re
from collections import defaultdict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from j6doctor.engine.regex_anchors import openings, parser
from j6doctor.engine.text_reader import _literal_hits, _matches_at, read
from j6doctor.facts import vocabulary
from test_regex_anchors import _report_texts, _sample


@pytest.mark.parametrize("expression, words", [
    ("(?:demo|app)s?", {"demo", "app"}),
    ("(?<!before )i (?:have )?quantized", {"i quantized", "i have quantized"}),  # a look-behind opens nothing
    ("(?:obtain\\w*|got)x", {"obtain", "got"}),          # alternatives that each open with a word
    ("fp16[^x]{0,4}int8|int8[^x]?fp16", {"fp16", "int8"}),
    ("(?:map)?x", {"x", "mapx"}),
    ("top-?1", {"top1", "top-1"}),
    ("ab*c", {"a"}),                                       # the words before the first repeat
    ("(?:ab|a)\\d", {"a"}),                                # where "ab" stands, "a" does
])
def test_the_words_every_match_starts_with(expression, words):
    assert openings(expression) == frozenset(words)


@pytest.mark.parametrize("expression", [
    "\\d+%",                 # a class
    "(?:map|)\\s",           # an empty alternative
    "(?:ab|bcd)+x",          # a repeated group
    "(?i)accuracy",          # case-insensitive
    "(?=ab)",                # no text at all
    "(?:obtain\\w*|\\d)x",   # an alternative without a word
])
def test_no_opening_words_where_a_match_may_start_anywhere(expression):
    assert openings(expression) is None


def _tried_at_openings(pattern: re.Pattern, text: str) -> list[tuple[int, int]]:
    starts = _starts(openings(pattern.pattern, re.ASCII), text)
    return [m.span() for m in _matches_at(pattern, text, starts)]


def _starts(words: frozenset[str], text: str) -> list[int]:
    """Every place where one of `words` starts (found by other means than the automaton)."""
    return [m.start() for m in re.finditer("(?=" + "|".join(map(re.escape, words)) + ")", text)]


def _opened_expressions() -> list[str]:
    index = vocabulary().text.index
    return [index.patterns[at][1] for at in sorted(index.opened)]


def test_the_shipped_expressions_tried_at_their_openings_match_as_everywhere():
    index = vocabulary().text.index
    texts = [read(t, index).compact.text for t in _report_texts()]
    expressions = _opened_expressions()
    assert len(expressions) > len(index.patterns) // 2
    matched = 0
    for expression in expressions:
        pattern = re.compile(expression, re.ASCII)
        for text in texts:
            everywhere = [m.span() for m in pattern.finditer(text)]
            assert _tried_at_openings(pattern, text) == everywhere, expression
            matched += len(everywhere)
    assert matched > 500


@settings(derandomize=True, database=None, deadline=None, max_examples=2000)
@given(st.data())
def test_a_text_sampled_from_an_expression_matches_as_everywhere(data):
    expression = data.draw(st.sampled_from(_opened_expressions()))
    rng = data.draw(st.randoms(use_true_random=False))
    sample = _sample(parser.parse(expression, re.ASCII), rng)
    text = rng.choice(["", "x ", "中"]) + sample + rng.choice(["", " ", "。"]) + sample
    pattern = re.compile(expression, re.ASCII)
    assert _tried_at_openings(pattern, text) == [m.span() for m in pattern.finditer(text)], (expression, text)


def test_the_automaton_finds_every_opening_word():
    index = vocabulary().text.index
    for text in [read(t, index).compact.text for t in _report_texts()[:100]]:
        places = _literal_hits(text, index, defaultdict(list), [])
        for at in index.opened:
            assert places.get(at, []) == _starts(openings(index.patterns[at][1], re.ASCII), text)


def test_a_reading_with_openings_is_the_reading_without():
    index = vocabulary().text.index
    everywhere = index._replace(opened=frozenset())
    for text in _report_texts():
        with_openings, without = read(text, index), read(text, everywhere)
        assert (with_openings.tags, with_openings.clauses, with_openings.marks, with_openings.triggers) == \
               (without.tags, without.clauses, without.marks, without.triggers)
