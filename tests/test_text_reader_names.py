"""File paths, web addresses and sentence ends in a reading (engine/text_reader.py) with the
bundled vocabulary: the words of a path are names, not statements, but for the file's own
name; two words joined by one slash are no path; a web address leaves no term and costs one
character; a colon ending its line and a blank line end a sentence."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from j6doctor.engine.tag_patterns import find, parse
from j6doctor.engine.text_reader import read
from j6doctor.facts import bundled

SETTINGS = settings(derandomize=True, database=None, deadline=None, max_examples=150)
INDEX = bundled().text.index


def tags(text: str) -> list[tuple[str, str, str]]:
    """(class, value, the user's words) of every tag."""
    r = read(text, INDEX)
    return [(cls, value, r.words(s, e)) for s, e, cls, value in r.tags]


def words_tagged(text: str) -> set[str]:
    return {w for _, _, w in tags(text)}


def matches(pattern: str, text: str) -> int:
    return len(list(find(parse(pattern), read(text, INDEX), every=True)))


def clauses(text: str) -> list[str]:
    r = read(text, INDEX)
    return [r.words(c.start, c.end) for c in r.clauses]


# ---------------------------------------------------------------------------- paths

def test_a_division_is_no_path():
    # "/255" after a word is the application dividing, not a path from the root
    assert ("normalizing", "found", "/255") in tags("板端 python 里我又/255 了一次")
    assert ("normalizing", "found", "/255") not in tags("模型在 /app/255/model.bin")


def test_the_words_alone_are_terms():
    # (the premise of the tests below: each of these words is a term on its own)
    for word in ("onnx", "board", "yolov5s.onnx", "x3"):
        assert tags(f"see {word} here"), word


@pytest.mark.parametrize("text, file_name", [
    ("rknn-toolkit2/examples/onnx/yolov5/test.py 里跑出来结果不对", "test.py"),
    ("see examples/board/onnx/test.py here", "test.py"),
    ("代码在 examples/board/onnx/test.py 里", "test.py"),
    ("代码在 /opt/board/onnx/test.py 里", "test.py"),
    ("run ./board/onnx/run.sh now", "run.sh"),
    ("in ~/board/onnx/model.bin", "model.bin"),
    ("(examples/board/onnx/a.py)", "a.py"),
])
def test_the_words_of_a_path_are_no_terms_but_the_file_name(text, file_name):
    r = read(text, INDEX)
    compact = r.compact.text
    path_start = compact.index("/") - 1
    while path_start >= 0 and (compact[path_start].isascii() and (compact[path_start].isalnum() or compact[path_start] in "._-~/")):
        path_start -= 1
    last_segment = compact.index(file_name)
    inside = [t for t in r.tags if path_start < t[0] < last_segment]
    assert inside == [], [(t, compact[t[0]:t[1]]) for t in inside]
    assert not {"onnx", "board", "examples"} & {r.words(t[0], t[1]).lower() for t in r.tags if t[0] < last_segment}


def test_the_file_name_of_a_path_keeps_its_terms():
    text = "examples/onnx/yolov5/yolov5s.onnx"
    r = read(text, INDEX)
    found = [(cls, value, r.words(s, e)) for s, e, cls, value in r.tags]
    assert ("mention", "onnx_model", "yolov5s.onnx") in found
    assert all(s >= text.index("yolov5s.onnx") for s, *_ in r.tags)
    # and what follows the path is read as usual
    after = tags(text + " 上板结果不对")
    assert ("status", "abnormal", "不对") in after
    assert ("mention", "board", "yolov5s.onnx 上板") in after


def test_the_program_named_by_a_path_is_its_file():
    assert ("program", "test.py", "test.py") in tags("rknn-toolkit2/examples/onnx/yolov5/test.py 里跑出来结果不对")


def test_a_path_from_a_root_of_two_segments_is_a_path():
    found = words_tagged("/board/onnx")
    assert "board" not in found and "onnx" in found


def test_a_root_path_of_one_segment_is_its_file_name():
    assert "board" in words_tagged("./board 目录")


@pytest.mark.parametrize("text, words", [
    ("X3/X5 都试过", {"X3", "X5"}),
    ("onnx/board", {"onnx", "board"}),
    ("onnx/board 对比", {"onnx", "board"}),
    ("fp16/int8 推理", {"fp16", "int8 推理"}),
])
def test_two_words_joined_by_one_slash_are_no_path(text, words):
    assert words <= words_tagged(text)


def test_the_same_words_in_a_longer_path_are_no_terms_but_the_last():
    assert words_tagged("a/b/fp16/int8 推理") == {"int8 推理", "推理"}
    assert "X3" not in words_tagged("X3/X5/S100 都试过")


def test_two_platforms_joined_by_one_slash_are_both_named():
    found = [(cls, value) for cls, value, _ in tags("X3/X5 都试过")]
    assert ("platform", "X3") in found and ("platform", "X5") in found


SEGMENTS = st.sampled_from(["board", "onnx", "bin", "hbm", "x3", "x5", "wrong", "examples", "yolov5", "model",
                            "int8", "rknn-toolkit2", "test.py", "model.onnx", "v1.2"])


@SETTINGS
@given(st.lists(SEGMENTS, min_size=3, max_size=6), st.sampled_from(["see {} here", "代码在 {} 里", "{}", "({})"]))
def test_no_term_starts_before_the_last_segment_of_a_path(segments, frame):
    path = "/".join(segments)
    text = frame.format(path)
    r = read(text, INDEX)
    start = r.compact.text.index(path)
    last = start + len(path) - len(segments[-1])
    for tag in r.tags:
        assert not (start <= tag[0] < last), (text, tag, r.compact.text[tag[0]:tag[1]])


@SETTINGS
@given(st.lists(SEGMENTS, min_size=1, max_size=3), st.sampled_from(["/", "./", "../", "~/"]))
def test_no_term_starts_before_the_last_segment_of_a_rooted_path(segments, root):
    path = root + "/".join(segments)
    text = f"in {path} now"
    r = read(text, INDEX)
    start = r.compact.text.index(path)
    last = start + len(path) - len(segments[-1])
    for tag in r.tags:
        assert not (start <= tag[0] < last), (text, tag)


# ---------------------------------------------------------------------------- web addresses

@pytest.mark.parametrize("address", [
    "https://github.com/org/onnx/board/issues/3",
    "http://example.com/board?model=onnx&x=wrong",
    "www.board.com/onnx/wrong.html",
    "HTTPS://GITHUB.COM/ORG/BOARD",
])
def test_a_web_address_leaves_no_term(address):
    assert tags(address) == []
    assert tags(f"see {address}") == []
    assert tags(f"参见 {address} 。") == []


@pytest.mark.parametrize("address", ["https://github.com/org/repo/blob/main/examples/onnx/yolov5/test.py",
                                     "www.example.com/board"])
@pytest.mark.parametrize("around", [("the board {} wrong", "the board wrong"), ("板端 {} 不对", "板端不对"),
                                    ("板端{}不对", "板端不对")])
def test_a_web_address_does_not_part_the_words_around_it(address, around):
    with_address, without = around
    text = with_address.format(address)
    assert [(c, v) for c, v, _ in tags(text)] == [(c, v) for c, v, _ in tags(without)]
    r, plain = read(text, INDEX), read(without, INDEX)
    assert r.compact.text == plain.compact.text
    assert [t[:2] for t in r.tags] == [t[:2] for t in plain.tags]
    assert matches("{mention} + {status}", text) == matches("{mention} + {status}", without) == 1


def test_the_words_after_an_address_keep_their_place_in_the_users_text():
    text = "see https://example.com/onnx then the board is wrong"
    r = read(text, INDEX)
    [status] = [t for t in r.tags if t[2] == "status"]
    start, end = r.span_in_text(status[0], status[1])
    assert text[start:end] == "wrong"


# ---------------------------------------------------------------------------- sentence ends

def test_a_colon_ending_its_line_ends_the_sentence():
    text = "现象如下：\n- 板端没有检测框"
    assert clauses(text) == ["现象如下：", "- 板端没有检测框"]
    r = read(text, INDEX)
    second = r.clauses[1]
    assert all(second.start <= t[0] for t in r.tags)
    assert matches("{mention} … {status}", text) == 1


@pytest.mark.parametrize("text", ["the results are as follows:\nthe board output is wrong",
                                  "the results are as follows:  \n the board output is wrong",
                                  "I got this:\r\nthe board output is wrong"])
def test_an_english_colon_ending_its_line_ends_the_sentence(text):
    assert len(clauses(text)) == 2
    assert clauses(text)[0].rstrip().endswith(":")


def test_a_line_break_without_the_colon_is_a_soft_wrap():
    assert clauses("the results are as follows\nthe board output is wrong") == [
        "the results are as follows\nthe board output is wrong"]


def test_a_colon_within_a_line_ends_no_sentence():
    text = "the board result: wrong"
    assert clauses(text) == [text]
    assert matches("{mention} … {status}", text) == 1


def test_a_colon_ending_the_line_parts_a_statement():
    assert matches("{mention} … {status}", "the board output:\nwrong") == 0
    assert matches("{mention} … {status}", "the board output\nwrong") == 1


@pytest.mark.parametrize("blank", ["\n\n", "\n \n", "\n\t\n", "\n\n\n"])
def test_a_blank_line_ends_the_sentence(blank):
    text = f"the board output{blank}is wrong"
    assert clauses(text) == ["the board output", "is wrong"]
    assert matches("{mention} … {status}", text) == 0


def test_a_single_line_break_between_latin_words_is_a_soft_wrap():
    text = "the board output\nis wrong"
    assert clauses(text) == [text]
    assert matches("{mention} … {status}", text) == 1


def test_a_blank_line_ends_a_chinese_sentence_too():
    assert clauses("板端结果\n\n不对") == ["板端结果", "不对"]
    assert matches("{mention} … {status}", "板端结果\n\n不对") == 0


def test_sentences_are_in_order_and_do_not_overlap():
    text = "现象如下：\n- 板端没有检测框\n\nPC 上正常。 the board: wrong\nok"
    r = read(text, INDEX)
    spans = [(c.start, c.end) for c in r.clauses]
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))
    assert all(s < e for s, e in spans)
    assert len(spans) >= 4
