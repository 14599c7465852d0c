"""Text patterns over term classes (engine/tag_patterns.py): how a pattern is parsed, what it
refuses, and how it matches real readings made with the bundled vocabulary (the nearest-term
semantics of the module docstring, the gaps and their bounds)."""

from __future__ import annotations

import pytest

from j6doctor.engine.tag_patterns import (
    ADJACENT, CLAUSE, MAX_PATTERN_LENGTH, PART, Element, Gap, PatternError, classes_of, find, parse,
    required_classes,
)
from j6doctor.engine.text_reader import read
from j6doctor.facts import bundled


@pytest.fixture(scope="module")
def index():
    return bundled().text.index


def reading(index, text: str):
    return read(text, index)


def hits(index, pattern: str, text: str, every: bool = True) -> list[list[tuple[str, str, str]]]:
    """Each match as its terms: (class, value, the user's words)."""
    r = reading(index, text)
    out = []
    for hit in find(parse(pattern), r, every=every):
        out.append([(r.tags[t][2], r.tags[t][3], r.words(r.tags[t][0], r.tags[t][1])) for t in hit.tags])
    return out


def pairs(index, pattern: str, text: str) -> set[tuple[str, ...]]:
    """The values each match pairs, as a set."""
    return {tuple(value for _, value, _ in h) for h in hits(index, pattern, text)}


def distance(index, text: str, first: str, second: str) -> int:
    """Characters (compact form) between the first term of class `first` and the first term of
    class `second` after it."""
    r = reading(index, text)
    a = r.tags[r.by_class[first][0]]
    b = next(r.tags[t] for t in r.by_class[second] if r.tags[t][0] >= a[1])
    return b[0] - a[1]


# ---------------------------------------------------------------------------- parsing elements

def test_a_plain_element_is_captured_under_its_class():
    assert parse("{mention}").elements == (Element("mention", None, "mention"),)


def test_as_captures_under_another_name():
    assert parse("{mention as a}").elements == (Element("mention", None, "a"),)
    assert parse("{mention as a}").groups == {"a": "mention"}


def test_tilde_captures_nothing():
    pattern = parse("{~status}")
    assert pattern.elements == (Element("status", None, None),)
    assert pattern.groups == {}


def test_values_restrict_an_element():
    assert parse("{status=abnormal}").elements[0].values == ("abnormal",)
    assert parse("{~status=abnormal|normal}").elements == (Element("status", ("abnormal", "normal"), None),)
    assert parse("{version=1.2.3|v-2+x}").elements[0].values == ("1.2.3", "v-2+x")


def test_except_names_the_values_an_element_may_not_take():
    element = parse("{~mention except float|quantized_bc}").elements[0]
    assert (element.values, element.excluded, element.group) == (None, ("float", "quantized_bc"), None)
    assert parse("{mention except float as m}").elements[0] == Element("mention", None, "m", excluded=("float",))


def test_values_and_except_together_are_refused():
    with pytest.raises(PatternError, match="not both"):
        parse("{mention=board except float}")


def test_the_lexicon_turns_except_into_the_values_it_leaves():
    lexicon = bundled().text
    resolved = lexicon.resolved(parse("{~mention except float|quantized_bc} … {status}"))
    element = resolved.elements[0]
    assert element.excluded is None
    assert set(element.values) == set(lexicon.terms["mention"].value_names()) - {"float", "quantized_bc"}
    assert resolved.firsts["mention"] == frozenset(element.values)


def test_except_a_value_the_class_does_not_have_is_refused():
    with pytest.raises(PatternError, match="no such value of mention"):
        bundled().text.resolved(parse("{mention except flaot}"))


def test_except_on_a_class_whose_patterns_keep_their_words_is_refused():
    # a score is the number as written: its values are not a list to take some from
    with pytest.raises(PatternError, match="values are not all listed"):
        bundled().text.resolved(parse("{score except 0}"))
    with pytest.raises(PatternError, match="values are not all listed"):
        bundled().text.resolved(parse("{program except python}"))  # listed values and a pattern's words


def test_not_equal_names_an_earlier_capture():
    pattern = parse("{colour as a} … {colour!=a}")
    first, second = pattern.elements
    assert (first.group, first.differs_from) == ("a", None)
    assert (second.group, second.differs_from) == ("colour", "a")


def test_question_mark_makes_an_element_optional():
    element = parse("{producer?} … {mention}").elements[0]
    assert element.optional and element.group == "producer"
    element = parse("{producer as p?} … {mention}").elements[0]
    assert element.optional and element.group == "p"


# ---------------------------------------------------------------------------- parsing gaps

@pytest.mark.parametrize("source, gap", [
    ("{a} {b}", Gap(PART, 0)),
    ("{a}   {b}", Gap(PART, 0)),
    ("{a} ~5 {b}", Gap(PART, 5)),
    ("{a} … {b}", Gap(CLAUSE, 0)),
    ("{a} ... {b}", Gap(CLAUSE, 0)),
    ("{a}…{b}", Gap(CLAUSE, 0)),
    ("{a}...{b}", Gap(CLAUSE, 0)),
    ("{a} …30 {b}", Gap(CLAUSE, 30)),
    ("{a} ...7 {b}", Gap(CLAUSE, 7)),
    ("{a} + {b}", Gap(ADJACENT, 0)),
    ("{a}+{b}", Gap(ADJACENT, 0)),
    ("{a} +2 {b}", Gap(ADJACENT, 2)),
])
def test_gaps(source, gap):
    pattern = parse(source)
    assert [e.cls for e in pattern.elements] == ["a", "b"]
    assert pattern.variants[0][1] == (gap,)


def test_a_pattern_of_several_gaps():
    pattern = parse("{a} {b} ~5 {c} +2 {d} ...7 {e} … {f}")
    assert pattern.variants[0][1] == (Gap(PART, 0), Gap(PART, 5), Gap(ADJACENT, 2), Gap(CLAUSE, 7), Gap(CLAUSE, 0))


def test_surrounding_whitespace_is_ignored():
    assert parse("  {a} … {b}  ").variants == parse("{a} … {b}").variants


# ---------------------------------------------------------------------------- optional variants

def test_optional_elements_give_variants_most_specific_first():
    pattern = parse("{producer?} … {mention} … {status}")
    assert [[e.cls for e in v] for v, _ in pattern.variants] == [["producer", "mention", "status"],
                                                                   ["mention", "status"]]
    assert pattern.needs == (frozenset({"producer", "mention", "status"}), frozenset({"mention", "status"}))
    assert pattern.firsts == {"producer": None, "mention": None}
    assert classes_of(pattern) == {"producer", "mention", "status"}
    assert required_classes(pattern) == frozenset({"mention", "status"})


def test_firsts_keep_the_values_of_a_restricted_first_element():
    assert parse("{~status=abnormal} … {mention}").firsts == {"status": frozenset({"abnormal"})}
    assert parse("{status=abnormal?} … {status=normal as s}").firsts == {"status": frozenset({"abnormal", "normal"})}


def test_two_optional_elements_give_four_variants():
    pattern = parse("{a?} + {b?} {c}")
    assert [[e.cls for e in v] for v, _ in pattern.variants] == [["a", "b", "c"], ["a", "c"], ["b", "c"], ["c"]]


def test_a_dropped_element_merges_its_gaps_into_the_wider_kind():
    assert parse("{a} + {b?} … {c}").variants[1] == ((Element("a", None, "a"), Element("c", None, "c")),
                                                     (Gap(CLAUSE, 0),))
    assert parse("{a} + {b?} {c}").variants[1][1] == (Gap(PART, 0),)
    # an unbounded gap (the reading's default) stays unbounded
    assert parse("{a} ~5 {b?} {c}").variants[1][1] == (Gap(PART, 0),)


def test_a_dropped_last_or_first_element_drops_its_gap():
    assert parse("{a} … {b?}").variants[1][1] == ()
    assert parse("{a?} ~3 {b}").variants[1][1] == ()


def test_the_bounds_around_a_dropped_element_are_added():
    assert parse("{a} ~5 {b?} ~7 {c}").variants[1][1] == (Gap(PART, 12),)


def test_the_bounds_of_different_kinds_around_a_dropped_element_are_added():
    assert parse("{a} +2 {b?} …10 {c}").variants[1][1] == (Gap(CLAUSE, 12),)


# ---------------------------------------------------------------------------- refusals

@pytest.mark.parametrize("source", ["", "   ", None])
def test_an_empty_pattern_is_refused(source):
    with pytest.raises(PatternError, match="got an empty one"):
        parse(source)


def test_the_length_limit_is_inclusive():
    source = "{a} … {" + "b" * (MAX_PATTERN_LENGTH - 8) + "}"
    assert len(source) == MAX_PATTERN_LENGTH
    parse(source)


def test_a_pattern_over_the_length_limit_is_refused_with_its_length():
    source = "{a} … {" + "b" * (MAX_PATTERN_LENGTH - 7) + "}"
    assert len(source) == MAX_PATTERN_LENGTH + 1
    with pytest.raises(PatternError) as info:
        parse(source)
    text = str(info.value)
    assert f"at most {MAX_PATTERN_LENGTH} characters" in text
    assert f"(this one has {MAX_PATTERN_LENGTH + 1})" in text
    assert "facts/text_terms.yaml" in text


def test_a_pattern_of_two_lines_is_refused():
    with pytest.raises(PatternError, match="one line"):
        parse("{a} …\n{b}")


@pytest.mark.parametrize("source, shown, position", [
    ("mention … {status}", "mention … {status}", 1),
    ("{mention} and {status}", "and {status}", 11),
    ("{mention}{status}", "{status}", 10),
    ("{a} ~ {b}", "~ {b}", 5),
    ("{a} … ", "", 6),
    ("{1a}", "{1a}", 1),
    ("{a=}", "{a=}", 1),
    ("{a?as x}", "{a?as x}", 1),
    ("{a b}", "{a b}", 1),
])
def test_unexpected_text_is_refused_with_its_position(source, shown, position):
    with pytest.raises(PatternError) as info:
        parse(source)
    text = str(info.value)
    assert f"unexpected {shown!r} at character {position}:" in text
    assert "term classes" in text


def test_a_silent_element_cannot_be_named():
    with pytest.raises(PatternError, match=r"\{~a as b\}: a class written with ~ captures nothing"):
        parse("{~a as b}")


@pytest.mark.parametrize("source, name", [
    ("{a!=x} … {b}", "x"),
    ("{a as x} … {b!=y}", "y"),
    ("{a?} … {b!=a}", "a"),          # captured only by an optional element
    ("{b!=a} … {a}", "a"),           # captured after it
])
def test_not_equal_must_name_an_earlier_required_capture(source, name):
    with pytest.raises(PatternError, match=f"'{name}' is not captured by an element before it"):
        parse(source)


def test_a_pattern_of_optional_elements_only_is_refused():
    with pytest.raises(PatternError, match="every element is optional"):
        parse("{a?} … {b?}")


@pytest.mark.parametrize("source, name", [("{a} {a}", "a"), ("{a as x} {b as x}", "x"), ("{a} … {b as a}", "a")])
def test_a_name_captured_twice_is_refused(source, name):
    with pytest.raises(PatternError) as info:
        parse(source)
    assert f"{{{name}}} is captured twice: write {{{name} as other_name}}" in str(info.value)


def test_silent_elements_of_one_class_may_repeat():
    assert len(parse("{~a} … {~a} … {a}").elements) == 3


def test_at_most_three_optional_elements():
    assert len(parse("{a?} {b?} {c?} {e}").variants) == 8
    with pytest.raises(PatternError, match="more than 3 optional elements"):
        parse("{a?} {b?} {c?} {d?} {e}")


# ---------------------------------------------------------------------------- matching: nearest terms

def test_the_board_is_not_paired_with_what_the_pc_gave(index):
    text = "PC 上正常，bin 上板后检测不到"
    found = pairs(index, "{mention} … {status}", text)
    assert found == {("float", "normal"), ("board", "abnormal")}
    assert ("board", "normal") not in found and ("float", "abnormal") not in found


def test_a_term_in_an_aside_goes_with_the_asides_own_term(index):
    # the parenthesis names its own model before its status: the status is not the outer model's
    text = "量化后变成了9.4%（量化前的模型测试结果是正常的）"
    assert pairs(index, "{mention} … {status}", text) == {("float", "normal")}


def test_a_term_named_only_in_an_aside_still_goes_with_the_outer_term(index):
    text = "板端 camera（NV12，结果不对）"
    assert pairs(index, "{mention} … {status}", text) == {("board", "abnormal")}


def test_a_statement_begun_in_an_aside_ends_in_it(index):
    # the FP32 model named in the parenthesis is not what degraded after it
    text = "The conversion went well (as shown by the FP32 TFLite score), but the int8 version degraded a lot"
    assert pairs(index, "{mention} … {status=abnormal}", text) == {("quantized_bc", "abnormal")}


def test_a_value_restricted_first_element_starts_at_that_value_only(index):
    text = "PC 上正常，bin 上板后检测不到"
    assert hits(index, "{mention=board} … {status}", text) == [
        [("mention", "board", "bin 上板后"), ("status", "abnormal", "检测不到")]]
    assert hits(index, "{mention=float} … {status=abnormal}", text) == [
        [("mention", "float", "PC 上"), ("status", "abnormal", "检测不到")]]


def test_the_previous_term_is_the_last_of_its_kind_before_the_next(index):
    # "编译用的 hbdk 旧": 旧 is paired with hbdk, not with 编译 (both are toolchain words)
    found = hits(index, "{toolchain_word} … {old_word}", "编译用的 hbdk 旧")
    assert found
    assert all(h[0][2] == "hbdk" and h[1][2] == "旧" for h in found)


def test_the_status_belongs_to_the_nearest_model(index):
    # hb_verifier names the x86 simulation; 板端结果 is what is wrong
    found = pairs(index, "{mention} … {status}", "hb_verifier 显示板端结果不对")
    assert found == {("board", "abnormal")}


def test_every_false_gives_only_the_first_match(index):
    text = "PC 上正常，bin 上板后检测不到"
    assert len(hits(index, "{mention} … {status}", text, every=False)) == 1
    assert hits(index, "{mention} … {status}", text, every=False)[0][0][1] == "float"


def test_captures_name_the_groups_and_skip_silent_elements(index):
    r = reading(index, "PC 上正常，bin 上板后检测不到")
    [hit] = list(find(parse("{mention=board as where} … {~status}"), r, every=True))
    assert [name for name, _ in hit.captures] == ["where"]
    assert r.tags[dict(hit.captures)["where"]][3] == "board"
    assert len(hit.tags) == 2
    start, end = hit.span(r)
    assert r.words(start, end) == "bin 上板后检测不到"


def test_except_leaves_the_other_values(index):
    pattern = bundled().text.resolved(parse("{mention except float} … {status}"))
    r = reading(index, "PC 上正常，bin 上板后检测不到")
    found = {tuple(r.tags[t][3] for t in hit.tags) for hit in find(pattern, r, every=True)}
    assert found == {("board", "abnormal")}


def test_not_equal_needs_another_value(index):
    assert pairs(index, "{colour as a} … {colour!=a}", "训练用 RGB，板端喂 BGR") == {("rgb", "bgr")}
    assert pairs(index, "{colour as a} … {colour!=a}", "训练用 RGB，板端喂 RGB") == set()
    assert pairs(index, "{colour as a} … {colour}", "训练用 RGB，板端喂 RGB") == {("rgb", "rgb")}


def test_an_optional_element_is_taken_when_present(index):
    pattern = "{producer?} … {mention} … {status}"
    with_producer = hits(index, pattern, "hb_verifier 显示板端结果不对")
    assert [("producer", "vendor_tool", "hb_verifier"), ("mention", "board", "板端结果"),
            ("status", "abnormal", "不对")] in with_producer
    assert hits(index, pattern, "板端结果不对") == [[("mention", "board", "板端结果"), ("status", "abnormal", "不对")]]


def test_a_class_missing_from_the_sentence_matches_nothing(index):
    assert hits(index, "{mention} … {status}", "板端跑了一下") == []
    assert hits(index, "{mention} … {no_such_class}", "板端结果不对") == []


# ---------------------------------------------------------------------------- matching: gaps

def test_a_same_part_gap_stops_at_a_comma(index):
    text = "板端跑了一下，结果不对"
    assert hits(index, "{mention} {status}", text) == []
    assert hits(index, "{mention} ~30 {status}", text) == []
    assert pairs(index, "{mention} … {status}", text) == {("board", "abnormal")}


def test_a_same_part_gap_crosses_a_dash(index):
    # "std≈1.04 — coherent but wrong" is one statement (text_context.yaml: only commas stop it)
    assert pairs(index, "{mention} {status}", "板端跑 — 结果不对") == {("board", "abnormal")}


def test_a_same_part_gap_stops_only_at_the_marks_the_text_context_names(index):
    # text_context.yaml: pattern_gaps_stop_at is ",:" — "but" ends a part for the context,
    # not for a pattern's same-part gap ("the board output but wrong" is one statement)
    assert hits(index, "{mention} {status}", "the board output but wrong") != []
    assert hits(index, "{mention} {status}", "the board, wrong") == []
    assert hits(index, "{mention} {status}", "the board: wrong") == []


def test_a_sentence_gap_does_not_cross_a_sentence_end(index):
    # (a sentence opening with a measure and its result takes the model carried from the one
    # before: the match is then the carried term's, in the second sentence, below)
    assert hits(index, "{mention} … {status}", "板端跑了。不对") == []
    assert hits(index, "{mention} … {status}", "the board runs. wrong, it is") == []
    [(carried, status)] = hits(index, "{mention} … {status}", "板端跑了。结果不对")
    assert carried == ("mention", "board", "") and status[2] == "不对"


def test_same_part_bound(index):
    text = "the board zzz zzz wrong"
    gap = distance(index, text, "mention", "status")
    assert gap == 9
    assert pairs(index, f"{{mention}} ~{gap} {{status}}", text) == {("board", "abnormal")}
    assert pairs(index, f"{{mention}} ~{gap - 1} {{status}}", text) == set()


def test_sentence_bound(index):
    text = "板端跑了一下，结果不对"
    gap = distance(index, text, "mention", "status")
    assert pairs(index, f"{{mention}} …{gap} {{status}}", text) == {("board", "abnormal")}
    assert pairs(index, f"{{mention}} ...{gap - 1} {{status}}", text) == set()


def test_default_windows_of_the_bundled_context(index):
    assert bundled().text.index.windows == {"part": 40, "clause": 80, "adjacent": 3}

    def apart(n: int) -> str:  # the board and wrong, n characters apart
        return "the board " + "z" * (n - 2) + " wrong"

    for n in (40, 41, 80, 81):
        assert distance(index, apart(n), "mention", "status") == n
    assert pairs(index, "{mention} {status}", apart(40)) == {("board", "abnormal")}
    assert pairs(index, "{mention} {status}", apart(41)) == set()
    assert pairs(index, "{mention} … {status}", apart(41)) == {("board", "abnormal")}
    assert pairs(index, "{mention} … {status}", apart(80)) == {("board", "abnormal")}
    assert pairs(index, "{mention} … {status}", apart(81)) == set()
    # a bound of the pattern replaces the default window
    assert pairs(index, "{mention} ~50 {status}", apart(41)) == {("board", "abnormal")}
    assert pairs(index, "{mention} …90 {status}", apart(81)) == {("board", "abnormal")}


@pytest.mark.parametrize("text", ["input_layout_rt: NHWC", "input_layout_rt NHWC", "input_layout_rt=NHWC",
                                  "input_layout_rt :NHWC"])
def test_adjacent_elements_with_only_glue_between(index, text):
    assert pairs(index, "{setting_name} + {setting_value}", text) == {("input_layout_rt", "nhwc")}


def test_adjacent_elements_with_words_between_do_not_match(index):
    text = "input_layout_rt 设置为 NHWC"
    assert hits(index, "{setting_name} + {setting_value}", text) == []
    assert hits(index, "{setting_name} +9 {setting_value}", text) == []
    assert pairs(index, "{setting_name} {setting_value}", text) == {("input_layout_rt", "nhwc")}


@pytest.mark.parametrize("text, found", [
    ("the board and the x86 simulator give different outputs", {("board", "hbm_x86")}),
    ("quantized.bc and the hbm give different outputs", {("quantized_bc", "hbm")}),
    # a glue word only where a word stands alone: "then" is no "the"
    ("the board and then x86 simulation", set()),
    # and only a few: a clause between is no glue
    ("the board and the output of the x86 simulator", set()),
])
def test_glue_words_stand_between_side_by_side_terms(index, text, found):
    assert {(m[0][1], m[2][1]) for m in hits(index, "{mention as a} ~12 {~compared_with} + {mention as b}", text)} == found


# ---------------------------------------------------------------------------- carried terms

@pytest.mark.parametrize("text, found", [
    # a sentence that opens with a measure and its result takes the model named just before
    ("I quantized my model with PTQ. Its accuracy dropped from 76% to 40%.", {("quantized_bc", "abnormal")}),
    ("After quantization I evaluated the model on COCO val. The mAP is only 0.12", {("quantized_bc", "abnormal")}),
    ("我用PTQ量化了模型。它的精度从76%掉到了40%。", {("quantized_bc", "abnormal")}),
    # ... across a line wrapped after the sentence's mark, or after a colon that introduces it
    ("在PC上测试量化后的模型的准确率：\n准确率为 12%，太低了", {("quantized_bc", "abnormal")}),
    # not when the sentence before stated a result of its own
    ("The quantized model is wrong on the board. The mAP is only 0.12", {("quantized_bc", "abnormal")}),
    # not when another name stands before the result ("the engine", "新格式的模型")
    ("I quantized my model with PTQ. The accuracy of the engine is bad.", set()),
    ("我用PTQ量化了模型。然而，新格式的模型在测试集上精度下降严重", set()),
    # not without a measure opening it, nor when it names its model before the result
    ("I quantized my model with PTQ. Something is wrong with the test method.", set()),
    # not across a blank line, a list item, or a code block
    ("I quantized my model with PTQ.\n\nThe accuracy is bad.", set()),
    ("1、量化了模型\n2、精度很差", set()),
    ("python quantize.py --model quantized_model.onnx\n```\nThe accuracy is bad.", set()),
])
def test_a_sentence_opening_with_a_result_takes_the_model_named_just_before(index, text, found):
    assert pairs(index, "{mention} … {status}", text) == found


def test_the_carried_term_is_empty_at_the_start_of_its_sentence(index):
    r = reading(index, "I quantized my model with PTQ. Its accuracy dropped from 76% to 40%.")
    (carried,) = r.carried_terms
    start, end, cls, value = r.tags[carried]
    assert (start, end, cls, value) == (r.clauses[1].start, r.clauses[1].start, "mention", "quantized_bc")
    assert r.tag_clause[carried] == 1


def test_adjacent_bound(index):
    text = 'input_layout_rt = "NHWC"'
    assert distance(index, text, "setting_name", "setting_value") == 4
    assert hits(index, "{setting_name} + {setting_value}", text) == []      # default: 3
    assert hits(index, "{setting_name} +3 {setting_value}", text) == []
    assert pairs(index, "{setting_name} +4 {setting_value}", text) == {("input_layout_rt", "nhwc")}


def test_a_web_address_between_terms_costs_one_character(index):
    text = "the board https://github.com/org/repo/issues/12345/comments wrong"
    assert distance(index, text, "mention", "status") == 1
    assert pairs(index, "{mention} ~1 {status}", text) == {("board", "abnormal")}


@pytest.mark.parametrize("text, words", [
    ("with the official demo code I don't get high accuracy either", "don't get high accuracy"),
    ("I couldn’t get correct results", "couldn’t get correct results"),
    ("we haven't got good accuracy", "haven't got good accuracy"),
    ("it cannot achieve the expected accuracy", "cannot achieve the expected accuracy"),
    ("we do not see correct outputs", "not see correct outputs"),
])
def test_a_denied_good_outcome_is_read_whole_from_its_denial(index, text, words):
    # the denial's words are spelled out in the vocabulary, so the pattern is tried only where
    # one stands; every spelling of it still reads as one bad outcome
    r = reading(index, text)
    found = [(r.tags[t][3], r.words(r.tags[t][0], r.tags[t][1])) for t in r.by_class.get("control_outcome", [])]
    assert found == [("abnormal", words)]
