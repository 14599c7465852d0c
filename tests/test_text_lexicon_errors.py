"""The refusals of the text lexicon (engine/text_lexicon.py) as a vocabulary is loaded: each
malformed term class (or text context) raises VocabularyError naming the origin, the class
and the key that is wrong. The data are minimal vocabularies built here; the bundled one is
loaded once to show that it passes the same checks."""

from __future__ import annotations

import copy

import pytest

from j6doctor.engine.errors import VocabularyError
from j6doctor.engine.text_lexicon import MAX_EXPRESSION, lexicon_from_data
from j6doctor.engine.text_phrases import MAX_VARIANTS
from j6doctor.engine.text_reader import read
from j6doctor.engine.vocabulary import Vocabulary
from j6doctor.facts import VOCABULARY_FILE, _bundled_data, _bundled_files

ORIGIN = "pack/vocabulary.yaml"
BASE = {
    "types": {},
    "enum_attributes": {"words": "list", "note": "str"},
    "enums": {"colour": {"values": {"red": {"aliases": ["crimson", "RDK X5"], "words": ["rot", "rouge"]},
                                    "blue": {"note": "a note, not words"}}}},
}


def load(terms: dict, context: dict | None = None) -> Vocabulary:
    data = copy.deepcopy(BASE)
    data["text_terms"] = terms
    if context is not None:
        data["text_context"] = context
    return Vocabulary.from_data(data, origin=ORIGIN)


def refused(terms: dict, context: dict | None = None) -> str:
    with pytest.raises(VocabularyError) as info:
        load(terms, context)
    return str(info.value)


# ---------------------------------------------------------------------------- accepted

def test_a_minimal_class_loads_and_reads():
    vocab = load({"colour_word": {"enum": "colour", "values": {"red": ["红色", "red"]}}})
    term = vocab.text.terms["colour_word"]
    assert term.values == (("red", ("红色", "red")),)
    r = read("the red one, 红色", vocab.text.index)
    assert [(t[2], t[3]) for t in r.tags] == [("colour_word", "red"), ("colour_word", "red")]


def test_spellings_take_the_enums_values_and_aliases_as_phrases():
    vocab = load({"c": {"enum": "colour", "spellings": True}})
    values = dict(vocab.text.terms["c"].values)
    assert set(values) == {"red", "blue"}
    r = read("rdk-x5 and crimson and rdkx5 and blue", vocab.text.index)
    assert [t[3] for t in r.tags] == ["red", "red", "red", "blue"]


def test_phrases_from_take_each_values_attribute():
    vocab = load({"c": {"enum": "colour", "phrases_from": "words"}})
    assert vocab.text.terms["c"].values == (("red", ("rot", "rouge")),)


def test_one_phrase_may_stand_in_two_classes_and_twice_for_one_value():
    vocab = load({"c": {"values": {"a": ["foo", "foo"]}}, "d": {"values": {"b": ["foo"]}}})
    r = read("foo", vocab.text.index)
    assert sorted((t[2], t[3]) for t in r.tags) == [("c", "a"), ("d", "b")]


def test_an_expression_at_the_length_limit_is_accepted():
    load({"c": {"patterns": ["a" * MAX_EXPRESSION]}, "w": {"values": {"x": ["x"]}}})


def test_a_phrase_at_the_expansion_limit_is_accepted():
    load({"c": {"values": {"a": ["(a|b)" * 9]}}})


def test_the_bundled_vocabulary_passes_the_checks():
    vocab = Vocabulary.from_data(_bundled_data(_bundled_files()), origin=VOCABULARY_FILE)
    assert "known_message" in vocab.text.terms and "mention" in vocab.text.terms


def test_a_lexicon_of_patterns_only_reads_text():
    lexicon = lexicon_from_data(None, {"c": {"patterns": ["foo"]}}, {}, "t")
    r = read("foo", lexicon.index)
    assert [(t[2], t[3]) for t in r.tags] == [("c", "foo")]


# ---------------------------------------------------------------------------- term classes

def test_a_class_that_is_not_a_mapping():
    assert refused({"c": ["x"]}) == f"{ORIGIN}: text_terms.c: expected a mapping"


def test_text_terms_that_are_not_a_mapping():
    assert refused(["c"]) == f"{ORIGIN}: text_terms: expected a mapping"


@pytest.mark.parametrize("key", ["valuez", "phrases", "enums", "pattern"])
def test_an_unknown_key_is_named_with_the_known_ones(key):
    text = refused({"c": {"values": {"a": ["x"]}, key: 1}})
    assert text.startswith(f"{ORIGIN}: text_terms.c.{key}: unknown key; a term class has ")
    for known in ("default", "enum", "ignore", "meaning", "merge", "patterns", "phrases_from", "spellings", "values"):
        assert known in text


@pytest.mark.parametrize("spec", [{"meaning": "m"}, {"values": {}}, {"patterns": []},
                                  {"enum": "colour", "phrases_from": "nothing"}])
def test_a_class_with_no_values_and_no_patterns(spec):
    assert refused({"c": spec}) == f"{ORIGIN}: text_terms.c: lists no values and no patterns"


def test_an_unknown_enum():
    assert refused({"c": {"enum": "nope", "values": {"a": ["x"]}}}) == f"{ORIGIN}: text_terms.c.enum: no enum 'nope'"


def test_a_value_not_of_the_enum_names_the_enums_values():
    text = refused({"c": {"enum": "colour", "values": {"green": ["x"]}}})
    assert text == f"{ORIGIN}: text_terms.c.values.green: not a value of enum colour (red, blue)"


@pytest.mark.parametrize("phrases", [[], None])
def test_a_value_without_phrases(phrases):
    text = refused({"c": {"values": {"a": phrases}}})
    assert text == f"{ORIGIN}: text_terms.c.values.a: expected a list of phrases"


@pytest.mark.parametrize("phrases", ["x", ["x", 3], ["x", "  "], {"x": 1}])
def test_phrases_that_are_no_list_of_words(phrases):
    text = refused({"c": {"values": {"a": phrases}}})
    assert text == f"{ORIGIN}: text_terms.c.values.a: expected a list of phrases (literal words)"


def test_spellings_without_an_enum():
    text = refused({"c": {"spellings": True}})
    assert text == f"{ORIGIN}: text_terms.c.spellings: takes the phrases of an enum's spellings; name the enum"


def test_phrases_from_without_an_enum():
    text = refused({"c": {"phrases_from": "words"}})
    assert text.startswith(f"{ORIGIN}: text_terms.c.phrases_from: takes each value's phrases from an attribute")
    assert "name the enum" in text


def test_phrases_from_an_attribute_that_holds_no_list_names_the_value_and_attribute():
    text = refused({"c": {"enum": "colour", "phrases_from": "note"}})
    assert text == f"{ORIGIN}: text_terms.c: colour.blue.note: expected a list of phrases (literal words)"


def test_phrases_from_an_attribute_with_a_bad_phrase():
    data = copy.deepcopy(BASE)
    data["enums"]["colour"]["values"]["red"]["words"] = ["ok", "(broken"]
    data["text_terms"] = {"c": {"enum": "colour", "phrases_from": "words"}}
    with pytest.raises(VocabularyError) as info:
        Vocabulary.from_data(data, origin=ORIGIN)
    assert str(info.value) == f"{ORIGIN}: text_terms.c: colour.red.words: '(broken': a group '(' is not closed"


def test_a_phrase_that_expands_beyond_the_limit_names_the_class_and_value():
    phrase = "(a|b)" * 10
    text = refused({"c": {"values": {"a": [phrase]}}})
    assert text == f"{ORIGIN}: text_terms.c.values.a: {phrase!r}: stands for more than {MAX_VARIANTS} phrases; split it"


@pytest.mark.parametrize("phrase, message", [
    ("(x", "a group '(' is not closed"),
    ("a*b", "'*' may only end the phrase"),
    ("(|)", "stands for no words"),
])
def test_a_malformed_phrase_names_the_class_and_value(phrase, message):
    text = refused({"c": {"values": {"v": ["fine", phrase]}}})
    assert text.startswith(f"{ORIGIN}: text_terms.c.values.v: {phrase!r}: ")
    assert message in text


def test_a_malformed_ignore_phrase_names_the_key():
    text = refused({"c": {"values": {"v": ["x"]}, "ignore": ["(y"]}})
    assert text.startswith(f"{ORIGIN}: text_terms.c.ignore: '(y': ")


def test_a_default_not_of_the_enum():
    text = refused({"c": {"enum": "colour", "values": {"red": ["x"]}, "default": "green"}})
    assert text == f"{ORIGIN}: text_terms.c.default: not a value of enum colour"


# ---------------------------------------------------------------------------- patterns

def test_an_expression_over_the_length_limit():
    regex = "a" * (MAX_EXPRESSION + 1)
    text = refused({"c": {"patterns": [regex]}})
    assert text.startswith(f"{ORIGIN}: text_terms.c.patterns: ")
    assert f"has {MAX_EXPRESSION + 1} characters; an expression of the vocabulary is at most {MAX_EXPRESSION}" in text


def test_an_expression_over_the_length_limit_in_a_mapping():
    text = refused({"c": {"patterns": [{"regex": "b" * (MAX_EXPRESSION + 5), "value": "v"}]}})
    assert text.startswith(f"{ORIGIN}: text_terms.c.patterns.regex: ")
    assert f"has {MAX_EXPRESSION + 5} characters" in text


def test_an_invalid_expression():
    text = refused({"c": {"patterns": ["("]}})
    assert text.startswith(f"{ORIGIN}: text_terms.c.patterns: not a valid regular expression: ")


@pytest.mark.parametrize("regex", ["", None, 5])
def test_an_empty_expression(regex):
    text = refused({"c": {"patterns": [{"regex": regex}]}})
    assert text == f"{ORIGIN}: text_terms.c.patterns.regex: expected a regular expression, got {regex!r}"


def test_an_unknown_key_of_a_pattern():
    text = refused({"c": {"patterns": [{"regex": "a", "valu": "x"}]}})
    assert text == f"{ORIGIN}: text_terms.c.patterns.valu: unknown key; a pattern has regex, value, extend, falls"


def test_a_falling_pattern_names_its_two_numbers():
    text = refused({"c": {"patterns": [{"regex": r"from \d+ to \d+", "value": "x", "falls": True}]}})
    assert text.startswith(f"{ORIGIN}: text_terms.c.patterns.falls: the regex names no groups `before` and `after`")


def test_a_falling_pattern_is_a_term_only_where_the_second_number_is_lower():
    vocab = load({"c": {"patterns": [{"regex": r"from (?P<before>\d+(?:\.\d+)?) to (?P<after>\d+(?:\.\d+)?)",
                                      "value": "fell", "falls": True}]}})
    assert [t[3] for t in read("map went from 0.41 to 0.12", vocab.text.index).tags] == ["fell"]
    assert read("map went from 0.12 to 0.41", vocab.text.index).tags == []
    assert read("map went from 0.41 to 0.41", vocab.text.index).tags == []


# ---------------------------------------------------------------------------- merge

def test_an_unknown_key_of_merge():
    text = refused({"c": {"values": {"a": ["x"]}, "merge": {"gap": 1, "foo": 2}}})
    assert text == f"{ORIGIN}: text_terms.c.merge.foo: unknown key; merge has gap, between, places, rank, after_wins"


@pytest.mark.parametrize("merge", [{"gap": 1, "rank": ["zz"]}, {"gap": 1, "places": ["a", "zz"]},
                                   {"gap": 1, "after_wins": ["zz"]}])
def test_a_merge_value_not_of_the_class(merge):
    text = refused({"c": {"values": {"a": ["x"]}, "merge": merge}})
    assert text == f"{ORIGIN}: text_terms.c.merge: 'zz' is not a value of the class"


def test_a_value_that_wins_after_must_be_a_place():
    text = refused({"c": {"values": {"a": ["x"], "b": ["y"]}, "merge": {"gap": 1, "places": ["a"], "after_wins": ["b"]}}})
    assert text == f"{ORIGIN}: text_terms.c.merge.after_wins: 'b' is not one of the places"


def test_merge_that_is_not_a_mapping():
    assert refused({"c": {"values": {"a": ["x"]}, "merge": [1]}}) == f"{ORIGIN}: text_terms.c.merge: expected a mapping"


# ---------------------------------------------------------------------------- one phrase, one value

@pytest.mark.parametrize("values, key", [
    ({"a": ["foo"], "b": ["FOO"]}, "foo"),                # the same after normalisation
    ({"a": ["(foo|bar)"], "b": ["bar"]}, "bar"),          # one expansion in common
    ({"a": ["量化 模型"], "b": ["量化模型"]}, "量化模型"),   # the same compact form
    ({"a": ["degrad*"], "b": ["degrad"]}, "degrad"),      # a stem and a word: one key
])
def test_a_phrase_listed_under_two_values_of_one_class(values, key):
    text = refused({"c": {"values": values}})
    assert f"text_terms.c: the phrase {key!r} is listed under both 'a' and 'b'; a phrase stands for one value" in text


def test_a_phrase_both_listed_and_ignored():
    text = refused({"c": {"values": {"a": ["foo"]}, "ignore": ["foo"]}})
    assert "text_terms.c: the phrase 'foo' is listed under both" in text


# ---------------------------------------------------------------------------- the text context

CONTEXT = {
    "clause_ends": ["[.]"],
    "part_ends": {"marks": ",:", "pattern_gaps_stop_at": ","},
    "categories": {"negated": {"phrases": ["not"]}},
    "contexts": {"asserted": {"blocked_by": ["negated"]}},
}
TERMS = {"c": {"values": {"a": ["foo"]}}}


def context(**changes) -> dict:
    out = copy.deepcopy(CONTEXT)
    out.update(changes)
    return out


def test_a_minimal_context_loads():
    vocab = load(TERMS, context())
    assert vocab.text.context.default == "asserted"
    assert vocab.text.context.gap_breaks == ","


@pytest.mark.parametrize("raw, message", [
    ([], "text_context: expected a mapping with clause_ends, part_ends, categories, contexts"),
    (context(clause_ends=[]), "text_context.clause_ends: expected a list of regular expressions"),
    (context(clause_ends=["x" * (MAX_EXPRESSION + 1)]), f"is at most {MAX_EXPRESSION}"),
    (context(part_ends={"marks": ",", "pattern_gaps_stop_at": ";"}),
     "text_context.part_ends.pattern_gaps_stop_at: ';' is no part-ending mark (marks)"),
    (context(windows={"sentence": 3}), "text_context.windows.sentence: expected part, clause, adjacent"),
    (context(windows={"part": -1}), "text_context.windows.part: expected part, clause, adjacent"),
    (context(glue_words="the"), "text_context.glue_words: expected a list of lower-case words (letters only)"),
    (context(glue_words=["the", "a b"]), "text_context.glue_words: expected a list of lower-case words (letters only)"),
    (context(carry={"class": "c", "into": ["c"]}),
     "text_context.carry: expected class: <term class>, into: [term classes], led_by: [term classes]"),
    (context(carry={"class": "c", "into": "c", "led_by": [], "not_after": [], "from_without": []}),
     "text_context.carry: expected class: <term class>, into: [term classes]"),
    (context(carry={"class": "c", "into": ["nope"], "led_by": [], "not_after": [], "from_without": []}),
     "text_context.carry: no term class 'nope' in the text terms"),
    (context(categories={"negated": {"phrases": ["not"], "phrase": ["x"]}}),
     "text_context.categories.negated.phrase: unknown key; a category has"),
    (context(categories={"negated": {"meaning": "m"}}), "text_context.categories.negated: lists no phrases or statements"),
    (context(contexts={"asserted": {"blocked_by": ["doubt"]}}),
     "text_context.contexts.asserted: no trigger category 'doubt'; categories: negated"),
    (context(contexts={}), "text_context.contexts: declares no reading"),
    (context(categories={"negated": {"statements": ["{c} and {c}"]}}),
     "text_context.categories.negated.statements: '{c} and {c}': unexpected"),
    (context(categories={"negated": {"statements": ["{nope} … {c}"]}}),
     "text_context.categories.negated.statements: '{nope} … {c}': unknown term class {nope}"),
    (context(categories={"negated": {"statements": ["{c=zz} … {c as d}"]}}),
     "text_context.categories.negated.statements: '{c=zz} … {c as d}': {c=zz}: no such value of c"),
    (context(prose=["no_dot"]), "text_context.prose: expected a list of <input type>.<text field>"),
    (context(field_context={"suspect": ["negated"]}),
     "text_context.field_context.suspect: expected <input type>.<text field>: a list of trigger categories"),
    (context(field_context={"suspect.text": [3]}),
     "text_context.field_context.suspect.text: expected <input type>.<text field>: a list of trigger categories"),
    (context(field_context={"suspect.text": ["doubt"]}),
     "text_context.field_context.suspect.text: no trigger category 'doubt'; categories: negated"),
    (context(field_context=["suspect.text"]), "text_context.field_context: expected a mapping"),
    (context(subject="nope"), "text_context.subject: expected a term class of the text terms, got 'nope'"),
    (context(subject=["c"]), "text_context.subject: expected a term class of the text terms, got ['c']"),
])
def test_context_refusals_name_the_key(raw, message):
    text = refused(TERMS, raw)
    assert text.startswith(f"{ORIGIN}: text_context")
    assert message in text
