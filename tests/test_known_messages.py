"""The table of the tools' known messages (facts/known_messages.yaml, enum `known_message`) as
the text reader reads it (term class `known_message` of facts/text_terms.yaml takes its
phrases from the values' `phrases`): each phrase, written in a sentence, is found with its
value; a numeric code is matched as a whole number; and the table's entries are complete."""

from __future__ import annotations

import re
from urllib.parse import urlparse

import pytest

from j6doctor.engine.text_phrases import expand
from j6doctor.engine.text_reader import read
from j6doctor.facts import bundled

VOCAB = bundled()
MESSAGES = VOCAB.enums["known_message"]
VALUES = MESSAGES.values
CODE = re.compile(r"-\d+")


def phrases(value: str) -> list[str]:
    return list(MESSAGES.attr(value, "phrases") or [])


def codes() -> dict[str, str]:
    """Every numeric code of the table → its value."""
    out = {}
    for value in VALUES:
        for phrase in phrases(value):
            if CODE.fullmatch(phrase):
                out[phrase] = value
    return out


def found(text: str) -> list[tuple[str, str]]:
    """(value, the user's words) of each known_message tag of a reading of `text`."""
    r = read(text, VOCAB.text.index)
    return [(r.tags[t][3], r.words(r.tags[t][0], r.tags[t][1])) for t in r.by_class.get("known_message", [])]


def test_the_table_is_not_empty_and_the_class_reads_it():
    assert len(VALUES) >= 40
    term = VOCAB.text.terms["known_message"]
    assert term.enum == "known_message"
    assert {v for v, _ in term.values} == set(VALUES)
    for value, listed in term.values:
        assert listed == tuple(phrases(value))


@pytest.mark.parametrize("value", VALUES)
def test_every_phrase_is_found_in_a_sentence_with_its_value(value):
    assert phrases(value), value
    for phrase in phrases(value):
        for literal in expand(phrase):
            words = literal.key
            for text in (f"板端报错：{words} 之后退出",
                         f"The tool printed {words} and then stopped.",
                         f"日志里有一行\n{words}\n然后就没有输出了",
                         words):
                assert found(text) == [(value, words)], (value, text)


@pytest.mark.parametrize("value", VALUES)
def test_a_message_printed_in_upper_case_is_found(value):
    for phrase in phrases(value):
        if not phrase.isascii():
            continue
        printed = phrase.upper()
        assert found(f"error: {printed} (see log)") == [(value, printed)], printed


@pytest.mark.parametrize("value", VALUES)
def test_phrases_are_the_printed_words_in_lower_case(value):
    for phrase in phrases(value):
        assert isinstance(phrase, str) and phrase.strip()
        assert phrase == phrase.lower(), phrase


# ---------------------------------------------------------------------------- numeric codes

def test_the_table_has_numeric_codes():
    assert "-6000014" in codes() and "-600001" in codes()


@pytest.mark.parametrize("code", sorted(codes()))
def test_a_code_is_found_alone_and_in_punctuation(code):
    value = codes()[code]
    for text in (code, f"返回值 {code}", f"status={code},", f"({code})", f"错误码{code}。", f"ret: {code}."):
        assert found(text) == [(value, code)], text


@pytest.mark.parametrize("code", sorted(codes()))
def test_a_code_is_not_found_inside_a_longer_number(code):
    table = codes()
    for digit in "0123456789":
        longer = code + digit
        expected = [(table[longer], longer)] if longer in table else []
        assert found(f"returned {longer} here") == expected, longer


@pytest.mark.parametrize("code", sorted(codes()))
def test_a_code_is_not_found_without_its_minus(code):
    assert found(f"returned {code[1:]} here") == []
    assert found(f"returned {code[1:]}") == []


@pytest.mark.parametrize("code", sorted(codes()))
def test_a_code_is_not_found_as_the_start_of_a_word(code):
    assert found(f"returned {code}_x") == []
    assert found(f"returned {code}abc") == []


def test_the_documented_example_of_a_whole_number():
    # the yaml header: -600001 is not found in -6000010 (which is a code of its own)
    assert codes()["-600001"] == "load.model_number_exceed"
    assert found("-6000010") == [(codes()["-6000010"], "-6000010")]
    assert found("-6000014") == [("load.incompatible_model", "-6000014")]
    assert found("-60000140") == []


def test_codes_that_are_prefixes_of_other_codes_are_told_apart():
    table = codes()
    prefixed = [(short, long) for short in table for long in table if long != short and long.startswith(short)]
    assert prefixed  # the table has such pairs (-600001 / -6000010 ...)
    for short, long in prefixed:
        assert found(f"code {long}") == [(table[long], long)]
        assert found(f"code {short}") == [(table[short], short)]


def test_a_full_width_code_is_found():
    assert found("返回－６００００１４") == [("load.incompatible_model", "－６００００１４")]


# ---------------------------------------------------------------------------- the entries

@pytest.mark.parametrize("value", VALUES)
def test_a_value_with_a_kind_points_at_an_artifact(value):
    if MESSAGES.attr(value, "kind") is not None:
        assert MESSAGES.attr(value, "at"), f"{value}: has kind but no at"


@pytest.mark.parametrize("value", VALUES)
def test_kind_item_hint_and_at_are_values_of_their_enums(value):
    for key, enum in (("kind", "failure_kind"), ("item", "mismatch_item"), ("hint", "mismatch_item")):
        given = MESSAGES.attr(value, key)
        if given is not None:
            assert given in VOCAB.enums[enum].values, (value, key, given)


@pytest.mark.parametrize("value", VALUES)
def test_every_source_is_an_https_address(value):
    source = MESSAGES.attr(value, "source")
    assert isinstance(source, str), value
    parsed = urlparse(source)
    assert parsed.scheme == "https" and parsed.netloc and " " not in source, source


@pytest.mark.parametrize("value", VALUES)
def test_check_and_label_are_not_empty(value):
    for key in ("check", "label"):
        text = MESSAGES.attr(value, key)
        assert isinstance(text, str) and text.strip(), (value, key)


def test_values_are_dotted_names():
    for value in VALUES:
        assert re.fullmatch(r"[a-z0-9_]+\.[a-z0-9_]+", value), value
