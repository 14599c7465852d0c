"""The phrase shorthand of the term lists (engine/text_phrases.py): what a written phrase
expands to, how its Latin ends must sit, and the refusals of malformed phrases.

The matching half of the word-end flags is checked through a real reading made with a small
lexicon built from data (engine/text_lexicon.py), never by inspecting the automaton."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from j6doctor.engine.text_lexicon import lexicon_from_data
from j6doctor.engine.text_normalise import compact_phrase
from j6doctor.engine.text_phrases import MAX_VARIANTS, Literal, PhraseError, expand
from j6doctor.engine.text_reader import read

SETTINGS = settings(derandomize=True, database=None, deadline=None, max_examples=200)


def keys(phrase: str) -> list[str]:
    return [literal.key for literal in expand(phrase)]


# ---------------------------------------------------------------------------- literal phrases

def test_a_chinese_phrase_is_one_literal_with_no_word_ends():
    assert expand("板端") == [Literal("板端", word_start=False, word_end=False)]


def test_a_latin_phrase_must_start_and_end_a_word():
    assert expand("bin") == [Literal("bin", word_start=True, word_end=True)]


@pytest.mark.parametrize("phrase, key", [
    ("  Hello   World ", "hello world"),      # case, space runs and ends
    ("ＮＣＨＷ", "nchw"),                      # full-width forms
    ("量化后的 onnx", "量化后的onnx"),          # no space next to Chinese
    ("量化后的onnx", "量化后的onnx"),
    ("“quoted”", '"quoted"'),                 # curly quotes
])
def test_a_phrase_is_looked_up_in_its_normalised_compact_form(phrase, key):
    assert keys(phrase) == [key]
    assert compact_phrase(phrase) == key


@pytest.mark.parametrize("phrase, start, end", [
    ("onnx模型", True, False),
    ("模型onnx", False, True),
    ("_x", True, True),          # '_' joins words
    ("x_", True, True),
    ("-6000014", False, True),   # a sign is no word character; the last digit is
    ("nchw.", True, False),
    ("(model)", True, True),     # a group of one alternative: the parentheses are shorthand
    ("\\(model\\)", False, False),  # escaped, they are the characters
    ("3d", True, True),          # digits are word characters
])
def test_word_flags_follow_the_phrases_first_and_last_character(phrase, start, end):
    [literal] = expand(phrase)
    assert (literal.word_start, literal.word_end) == (start, end)


# ---------------------------------------------------------------------------- variants

def test_alternatives_expand_in_the_order_written():
    assert keys("(没有|没|未)发现") == ["没有发现", "没发现", "未发现"]


def test_an_empty_alternative_makes_the_group_optional():
    assert keys("layout(s|)") == ["layouts", "layout"]
    assert keys("(量化|)模型") == ["量化模型", "模型"]


def test_several_groups_give_every_combination_first_group_slowest():
    assert keys("(a|b) (c|d)") == ["a c", "a d", "b c", "b d"]


def test_groups_nest():
    assert keys("((a|b)c|d)e") == ["ace", "bce", "de"]


def test_duplicates_are_dropped_keeping_the_first():
    assert keys("(a|a)b") == ["ab"]
    # different spellings that normalise to the same key are one literal
    assert keys("(ONNX|onnx|ｏｎｎｘ)") == ["onnx"]
    assert keys("(x |x)y") == ["x y", "xy"]


def test_expansions_that_compact_to_nothing_are_dropped():
    assert keys("(|)x") == ["x"]
    assert keys("(a|)(b|)") == ["ab", "a", "b"]


def test_every_literal_of_a_group_gets_its_own_word_flags():
    assert expand("(板端|board)") == [Literal("板端", False, False), Literal("board", True, True)]


# ---------------------------------------------------------------------------- stems

def test_a_trailing_star_makes_a_stem_whose_end_is_free():
    assert expand("degrad*") == [Literal("degrad", word_start=True, word_end=False)]


def test_a_star_may_end_each_alternative_of_a_final_group():
    assert expand("(not match*|differ*)") == [Literal("not match", True, False), Literal("differ", True, False)]


def test_only_the_alternatives_with_a_star_are_stems():
    assert expand("(match*|same)") == [Literal("match", True, False), Literal("same", True, True)]


def test_a_star_after_a_group_makes_every_alternative_a_stem():
    assert expand("(quantiz|calibrat)*") == [Literal("quantiz", True, False), Literal("calibrat", True, False)]


def test_a_star_ending_an_alternative_followed_by_more_words_is_refused():
    # a word that goes on cannot be followed by more words: the phrase is looked up literally
    with pytest.raises(PhraseError, match="may only end the phrase"):
        expand("(degrad*|worse) result")


# ---------------------------------------------------------------------------- escapes

def test_escaped_bar_and_parentheses_are_the_characters():
    assert keys("x\\|y") == ["x|y"]
    assert keys("a\\(b\\)") == ["a(b)"]
    assert keys("\\(a\\|b\\)") == ["(a|b)"]


def test_an_escaped_parenthesis_opens_no_group():
    with pytest.raises(PhraseError, match=r"'\|' outside a group"):
        expand("\\(a|b\\)")


def test_an_escaped_star_is_the_character_not_a_stem():
    # the character '*' is Markdown emphasis, read as a space by the normalisation, so the
    # phrase stands for what the text "a*b" compacts to; and "x\\*" is no stem
    assert keys("a\\*b") == ["a b"] == [compact_phrase("a*b")]
    assert expand("x\\*") == [Literal("x", word_start=True, word_end=True)]
    assert expand("x*") == [Literal("x", word_start=True, word_end=False)]


def test_an_escaped_star_in_the_middle_is_no_error():
    assert keys("5\\*5") == ["5 5"]


# ---------------------------------------------------------------------------- refusals

@pytest.mark.parametrize("phrase", ["", "   ", "\n", None, 3])
def test_an_empty_phrase_is_refused(phrase):
    with pytest.raises(PhraseError, match="expected a phrase"):
        expand(phrase)


@pytest.mark.parametrize("phrase, message", [
    ("(a|b", "a group '(' is not closed"),
    ("((a|b)", "a group '(' is not closed"),
    ("x(y", "a group '(' is not closed"),
    ("a)b", "')' outside a group"),
    ("(a|b))", "')' outside a group"),
    ("a|b", "'|' outside a group"),
])
def test_unbalanced_groups_are_refused_naming_the_phrase(phrase, message):
    with pytest.raises(PhraseError) as info:
        expand(phrase)
    assert message in str(info.value)
    assert repr(phrase) in str(info.value)


@pytest.mark.parametrize("phrase", ["a*b", "de*grad", "**", "x*y*", "(a*b|c)", "*x"])
def test_a_star_in_the_middle_is_refused_with_the_escape_named(phrase):
    with pytest.raises(PhraseError) as info:
        expand(phrase)
    text = str(info.value)
    assert repr(phrase) in text
    assert "'*' may only end the phrase" in text
    assert "\\*" in text


@pytest.mark.parametrize("phrase", ["(|)", "( | )", "\\*", "(|( |))"])
def test_a_phrase_that_stands_for_no_words_is_refused(phrase):
    with pytest.raises(PhraseError, match="stands for no words"):
        expand(phrase)


def test_the_limit_on_expansions_is_inclusive():
    assert MAX_VARIANTS == 512
    nine = "(a|b)" * 9  # 2**9 == 512 literal phrases
    assert len(expand(nine)) == 512


def test_too_many_expansions_are_refused_with_the_limit_named():
    ten = "(a|b)" * 10  # 1024
    with pytest.raises(PhraseError) as info:
        expand(ten)
    assert f"more than {MAX_VARIANTS} phrases" in str(info.value)
    assert "split it" in str(info.value)
    assert repr(ten) in str(info.value)


def test_one_wide_group_over_the_limit_is_refused():
    wide = "(" + "|".join(f"w{i}" for i in range(MAX_VARIANTS + 1)) + ")"
    with pytest.raises(PhraseError, match="more than 512"):
        expand(wide)


def test_nested_groups_over_the_limit_are_refused():
    with pytest.raises(PhraseError, match="more than 512"):
        expand("(" + "(a|b)" * 10 + "|c)")


def test_phrase_error_is_a_value_error():
    assert issubclass(PhraseError, ValueError)


# ---------------------------------------------------------------------------- properties

WORDS = st.text(alphabet="abcxyz板端模型 _-", min_size=1, max_size=6)


@SETTINGS
@given(st.lists(WORDS, min_size=1, max_size=6))
def test_a_group_expands_to_its_alternatives_compacted_deduplicated_in_order(words):
    expected = list(dict.fromkeys(k for k in (compact_phrase(w) for w in words) if k))
    phrase = "(" + "|".join(words) + ")"
    if not expected:
        with pytest.raises(PhraseError):
            expand(phrase)
        return
    literals = expand(phrase)
    assert [l.key for l in literals] == expected
    for literal in literals:
        assert literal.key == compact_phrase(literal.key)  # keys are in their looked-up form
        assert literal.word_start == (literal.key[0].isascii() and (literal.key[0].isalnum() or literal.key[0] == "_"))
        assert literal.word_end == (literal.key[-1].isascii() and (literal.key[-1].isalnum() or literal.key[-1] == "_"))


@SETTINGS
@given(st.lists(st.lists(st.sampled_from(["a", "b", "c", ""]), min_size=1, max_size=3), min_size=1, max_size=4))
def test_the_number_of_literals_is_at_most_the_product_of_the_alternatives(groups):
    phrase = "x" + "".join("(" + "|".join(g) + ")" for g in groups)
    literals = expand(phrase)
    bound = 1
    for g in groups:
        bound *= len(g)
    assert 1 <= len(literals) <= bound
    assert len({l.key for l in literals}) == len(literals)
    assert all(l.key.startswith("x") for l in literals)


# ---------------------------------------------------------------------------- in a reading

@pytest.fixture(scope="module")
def lexicon():
    terms = {
        "word": {"values": {
            "if": ["if"],
            "bin": ["bin"],
            "degrade": ["degrad*"],
            "differs": ["(not match*|differ*)"],
            "board": ["板端"],
            "code": ["-6000014"],
        }},
    }
    return lexicon_from_data(None, terms, {}, "test_text_phrases")


def values(lexicon, text: str) -> list[tuple[str, str]]:
    r = read(text, lexicon.index)
    return [(r.words(s, e), v) for s, e, _, v in r.tags]


@pytest.mark.parametrize("text", ["iffy", "elif", "abnormal_bin_x", "binary", "cabin", "bin_x", "x_bin", "bin2"])
def test_a_latin_phrase_is_not_found_inside_a_longer_word(lexicon, text):
    assert values(lexicon, text) == []


def test_if_is_not_found_in_different(lexicon):
    # ("differ*" is: a stem)
    assert values(lexicon, "different") == [("differ", "differs")]


@pytest.mark.parametrize("text, found", [
    ("if so", [("if", "if")]),
    ("the bin file", [("bin", "bin")]),
    ("板端bin", [("板端", "board"), ("bin", "bin")]),       # Chinese next to it is no word character
    ("bin上板", [("bin", "bin")]),
    ("(bin)", [("bin", "bin")]),
    ("BIN", [("BIN", "bin")]),
])
def test_a_latin_phrase_is_found_as_a_whole_word(lexicon, text, found):
    assert values(lexicon, text) == found


@pytest.mark.parametrize("text, words", [
    ("it degraded a lot", "degrad"),
    ("degradation", "degrad"),
    ("outputs differ", "differ"),
    ("they differ", "differ"),
    ("does not matching", "not match"),
])
def test_a_stem_is_found_where_the_word_goes_on(lexicon, text, words):
    found = values(lexicon, text)
    assert len(found) == 1 and found[0][0] == words


@pytest.mark.parametrize("text", ["undegraded", "indifferent"])
def test_a_stem_still_starts_a_word(lexicon, text):
    assert values(lexicon, text) == []


@pytest.mark.parametrize("text, found", [
    ("code -6000014", [("-6000014", "code")]),
    ("code -60000140", []),
    ("code 6000014", []),
    ("code -6000014_x", []),
])
def test_a_number_ending_a_phrase_must_end_there(lexicon, text, found):
    assert values(lexicon, text) == found
