"""Normalisation and compaction of text (engine/text_normalise.py): `normal` keeps the length
and maps characters one to one; `compact` squeezes whitespace (none next to CJK, none at the
ends), reads Markdown marks and web addresses as a space, and keeps the way back to the
user's text (`start_in_text`, `end_in_text`, `index_of`, `kept`)."""

from __future__ import annotations

import re

import pytest
from hypothesis import assume, given, settings, strategies as st

from j6doctor.engine.text_normalise import Compact, compact, compact_phrase, is_cjk, normal

SETTINGS = settings(derandomize=True, database=None, deadline=None, max_examples=250)


# ---------------------------------------------------------------------------- normal

@pytest.mark.parametrize("text, expected", [
    ("ＮＣＨＷ，ＯＫ", "nchw,ok"),
    ("ＡＢＣ１２３！～", "abc123!~"),
    ("a\u3000b\u00a0c\td\u2009e\u200bf", "a b c d e f"),
    ("\u201cHi\u201d \u2018x\u2019", "\"hi\" 'x'"),
    ("\u300c引用\u300d", '"引用"'),
    ("a\u2013b\u2212c", "a-b-c"),
    ("İstanbul", "istanbul"),
    ("MixedCase", "mixedcase"),
    ("量化后的 ONNX", "量化后的 onnx"),
    ("line\r\nbreak", "line \nbreak"),
])
def test_normal_maps_each_character(text, expected):
    assert normal(text) == expected
    assert len(normal(text)) == len(text)


def test_a_capital_dotted_i_keeps_the_length():
    # İ lowers to two characters; it is mapped explicitly,
    # and a text mixing it with others keeps its length
    text = "Aİ\u0130B"
    assert normal(text) == "aiib"


def test_normal_is_idempotent_on_examples():
    for text in ("ＮＣＨＷ，ＯＫ", "“x”", "a\u3000b", "İ"):
        assert normal(normal(text)) == normal(text)


# ---------------------------------------------------------------------------- compact

@pytest.mark.parametrize("text, expected", [
    ("量化后的 onnx", "量化后的onnx"),
    ("量化后的onnx", "量化后的onnx"),
    ("onnx 模型", "onnx模型"),
    ("  a   b  \n\n c ", "a b c"),
    ("a\nb", "a b"),
    ("**identical** input", "identical input"),
    ("a**b", "a b"),
    ("a * * b", "a b"),
    ("板 * b", "板b"),
    ("板。 结果", "板。结果"),                   # CJK punctuation is CJK too
    ("   ", ""),
    ("", ""),
    ("café au lait", "café au lait"),          # a space next to a letter that is not ASCII stays
    ("привет  мир", "привет мир"),
    ("a — b ア 😀 c", "a — b ア 😀 c"),
])
def test_compact_squeezes_whitespace(text, expected):
    assert compact(normal(text)).text == expected


def test_a_single_space_kept_next_to_other_letters_makes_no_segment():
    # (every segment is a place where the compact text and the text part; a kept space is none)
    assert compact(normal("café au lait, привет мир — ok")).c_starts == [0]


def test_compact_reads_a_backtick_as_a_space():
    assert compact("use `hb_mapper` now").text == "use hb_mapper now"


def test_a_backtick_is_whitespace_in_the_text_as_read():
    assert compact(normal("use `hb_mapper` now")).text == "use hb_mapper now"


def test_code_marks_next_to_chinese_leave_nothing():
    assert compact(normal("板端`bin`")).text == "板端bin"


@pytest.mark.parametrize("text, expected", [
    ("see https://x.com/a/b?c=1 then", "see then"),
    ("see http://x.com then", "see then"),
    ("see www.foo.org/x ok", "see ok"),
    ("see HTTPS://X.COM/A ok", "see ok"),
    ("模型 https://a.b/c 板端", "模型板端"),
    ("模型https://a.b/c板端", "模型板端"),
    ("https://a.b/c board", "board"),
    ("board https://a.b/c", "board"),
    ("board https://a.b/c\n\nwrong", "board wrong"),
    ("a  https://x  b", "a b"),
    ("(see https://a.com/x) ok", "(see ) ok"),
])
def test_a_web_address_reads_as_a_space(text, expected):
    assert compact(normal(text)).text == expected


@pytest.mark.parametrize("text", ["x https://a https://b y", "x https://a\nhttps://b y", "x www.a www.b y"])
def test_two_addresses_in_a_row_read_as_one_space(text):
    assert compact(normal(text)).text == "x y"


@pytest.mark.parametrize("text, expected", [("0 https://a https://b", "0"), ("https://a https://b 0", "0")])
def test_two_addresses_at_an_end_leave_no_space(text, expected):
    assert compact(normal(text)).text == expected


# ---------------------------------------------------------------------------- index maps

def test_index_maps_around_a_dropped_space():
    text = "量化后的 onnx"
    c = compact(normal(text))
    assert c.text == "量化后的onnx"
    assert c.length == len(text)
    assert [c.start_in_text(i) for i in range(len(c.text))] == [0, 1, 2, 3, 5, 6, 7, 8]
    assert c.start_in_text(len(c.text)) == len(text)        # past the end: the text's end
    assert c.end_in_text(0) == 0
    assert c.end_in_text(4) == 4                             # after 的
    assert c.end_in_text(5) == 6                             # after o
    assert c.end_in_text(len(c.text)) == len(text)
    assert c.index_of(4) == 4                                # the dropped space: the next kept one
    assert c.index_of(5) == 4
    assert [c.kept(j) for j in range(len(text))] == [True] * 4 + [False] + [True] * 4


def test_index_maps_around_squeezed_runs():
    text = "  a   b  \n\n c "
    c = compact(normal(text))
    assert c.text == "a b c"
    assert [c.start_in_text(i) for i in range(len(c.text))] == [2, 3, 6, 7, 12]
    assert [j for j in range(len(text)) if c.kept(j)] == [2, 3, 6, 7, 12]
    assert c.index_of(0) == 0       # the leading spaces: a
    assert c.index_of(4) == 2       # inside the run "   ": the next kept character, b
    assert c.index_of(10) == 4      # inside the blank line: c
    assert c.index_of(13) == 5      # the trailing space: past the end
    assert c.end_in_text(5) == 13




def test_the_users_words_come_back_through_the_maps():
    text = "板端 **NHWC** 输入，see https://x.com/a then ＯＫ"
    c = compact(normal(text))
    assert c.text == "板端nhwc输入,see then ok"
    at = c.text.index("nhwc")
    assert text[c.start_in_text(at):c.end_in_text(at + 4)] == "NHWC"
    at = c.text.index("then")
    assert text[c.start_in_text(at):c.end_in_text(at + 4)] == "then"
    at = c.text.index("ok")
    assert text[c.start_in_text(at):c.end_in_text(at + 2)] == "ＯＫ"


def test_compact_phrase_is_compact_of_normal():
    for phrase in ("  Hello  World ", "量化后的 ONNX", "**x**", "ＮＣＨＷ"):
        assert compact_phrase(phrase) == compact(normal(phrase)).text


@pytest.mark.parametrize("char, cjk", [("中", True), ("。", True), ("、", True), ("\u3400", True),
                                       ("\u9fff", True), ("a", False), ("，", False), ("ア", False), (" ", False)])
def test_is_cjk(char, cjk):
    assert is_cjk(char) is cjk


# ---------------------------------------------------------------------------- properties

CJK = "量化后的模型板端结果不对。、"
ALPHABET = ("abcXYZ019_.:/-" + " \n\t" + CJK + "ＡＮｃ１，：\u3000\u00a0" + "*`" + "“”‘’" + "é—жア😀")
FRAGMENTS = ["https://github.com/a/onnx", "http://x.cn/b?c=1&d=2", "www.example.com/board", " https://a.b ",
             "**bold**", "`code`", "  ", "\n\n", " 板 ", "HTTP://X.Y", "www.", "http:/"]
TEXTS = st.lists(st.one_of(st.text(alphabet=ALPHABET, max_size=5), st.sampled_from(FRAGMENTS)),
                 max_size=14).map("".join)

_SPACED = re.compile(r"[\n*`]")
_URL = re.compile(r"(?:https?://|www\.)[A-Za-z0-9_.~:/?#@!$&*+=%-]+")


def _addresses(normalised: str) -> tuple[str, set[int]]:
    """The text as compaction sees it (line breaks and marks as spaces), and the indexes of its
    web addresses."""
    spaced = _SPACED.sub(" ", normalised)
    inside = {i for m in _URL.finditer(spaced) for i in range(*m.span())}
    return spaced, inside


@SETTINGS
@given(TEXTS)
def test_normal_preserves_length(text):
    assert len(normal(text)) == len(text)
    assert normal(normal(text)) == normal(text)


@SETTINGS
@given(TEXTS)
def test_every_compact_character_maps_back_to_its_own_character(text):
    n = normal(text)
    spaced, addresses = _addresses(n)
    c = compact(n)
    assert c.length == len(n)
    previous = -1
    for i, char in enumerate(c.text):
        j = c.start_in_text(i)
        assert previous < j < len(n)  # strictly increasing, within the text
        previous = j
        if n[j] != char:
            # only a space stands for something else: a line break, a Markdown mark or an address
            assert char == " ", (i, j, char, n[j])
            assert n[j] in "\n*`" or j in addresses, (i, j, n[j])
        assert c.end_in_text(i + 1) == j + 1
        assert c.index_of(j) == i
        assert c.kept(j)
    assert sum(c.kept(j) for j in range(len(n))) == len(c.text)
    assert c.start_in_text(len(c.text)) == len(n)


@SETTINGS
@given(TEXTS)
def test_compact_leaves_single_spaces_between_latin_words_only(text):
    n = normal(text)
    spaced, _ = _addresses(n)
    out = compact(n).text
    assert "  " not in out
    assert not out.startswith(" ") and not out.endswith(" ")
    for i, char in enumerate(out):
        if char == " ":
            assert not is_cjk(out[i - 1]) and not is_cjk(out[i + 1]), (out, i)
    assert "\n" not in out and "*" not in out


@SETTINGS
@given(TEXTS)
def test_compact_keeps_no_web_address(text):
    n = normal(text)
    out = compact(n).text
    assert not _URL.search(out), out


@SETTINGS
@given(TEXTS)
def test_compaction_is_idempotent(text):
    n = normal(text)
    spaced, _ = _addresses(n)
    once = compact(n).text
    again = compact(once)
    assert again.text == once
    assert [again.start_in_text(i) for i in range(len(once))] == list(range(len(once)))
    assert compact(normal(once)).text == once


@SETTINGS
@given(TEXTS)
def test_compact_drops_only_whitespace_markup_and_addresses(text):
    n = normal(text)
    spaced, addresses = _addresses(n)
    c = compact(n)
    kept = {c.start_in_text(i) for i in range(len(c.text))}
    for j, char in enumerate(spaced):
        if j not in kept:
            assert char == " " or j in addresses, (j, char)


@SETTINGS
@given(st.text(alphabet="ab 板\n", max_size=12), st.text(alphabet="ab 板\n", max_size=12))
def test_cjk_and_latin_runs_compact_the_same_with_or_without_spaces(left, right):
    # "量化后的 onnx" and "量化后的onnx" are the same words
    with_space = compact(normal(left + "模型 onnx" + right)).text
    without = compact(normal(left + "模型onnx" + right)).text
    assert with_space == without
