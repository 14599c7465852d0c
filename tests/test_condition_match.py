"""engine/condition_match.py: questions about a run's facts answered by the engine itself."""

from __future__ import annotations

import gc
import weakref

import pytest

from j6doctor.engine import condition_match
from j6doctor.engine.backends import ENGINES, available, load_backend
from j6doctor.engine.compiler import compile_rules
from j6doctor.engine.condition_match import FactMatcher, answerable
from j6doctor.engine.facts import Fact, Source
from j6doctor.engine.rule_model import Condition, Ref, Rule
from j6doctor.engine.rule_model import Test as FieldTest  # (pytest would collect a class named Test)
from j6doctor.facts import vocabulary

VOCAB = vocabulary()
ENGINES_HERE = [e for e in ENGINES if available(e)]


def _result(number: int, artifact: str, status: str) -> Fact:
    fields = VOCAB.complete("result", {"artifact": artifact, "status": status, "pos": number})
    return Fact(f"f{number}", "result", fields, source=Source("case", key=f"results.{artifact}"))


NORMAL = Condition("result", (FieldTest("status", "eq", "normal"),), alias="a")
ANOTHER_NORMAL = Condition("result", (FieldTest("status", "eq", "normal"),), alias="b")


@pytest.mark.parametrize("engine", ENGINES_HERE)
def test_two_positive_conditions_need_two_facts(engine):
    one = FactMatcher([_result(1, "qat_bc", "normal")], VOCAB, engine)
    assert one.matches([(NORMAL,), (NORMAL, ANOTHER_NORMAL)]) == [[("f1",)], []]
    two = FactMatcher([_result(1, "qat_bc", "normal"), _result(2, "hbm", "normal")], VOCAB, engine)
    assert two.matches([(NORMAL, ANOTHER_NORMAL)]) == [[("f1", "f2"), ("f2", "f1")]]


@pytest.mark.parametrize("engine", ENGINES_HERE)
def test_joins_and_negation_as_in_a_run(engine):
    facts = [_result(1, "qat_bc", "normal"), _result(2, "qat_bc", "abnormal"), _result(3, "hbm", "abnormal")]
    same_artifact = Condition("result", (FieldTest("status", "eq", "abnormal"),
                                         FieldTest("artifact", "eq", Ref("a", "artifact"))))
    no_other = Condition("result", (FieldTest("artifact", "eq", Ref("a", "artifact")),
                                    FieldTest("status", "eq", "abnormal")), negated=True)
    matcher = FactMatcher(facts, VOCAB, engine)
    assert matcher.matches([(NORMAL, same_artifact), (NORMAL, no_other)]) == [[("f1", "f2")], []]


def test_a_comparison_with_an_alias_no_condition_binds_is_left_out():
    joined = Condition("result", (FieldTest("status", "eq", "abnormal"), FieldTest("artifact", "eq", Ref("x", "artifact"))))
    guard = Condition("result", (FieldTest("artifact", "eq", Ref("x", "artifact")),), negated=True)
    assert answerable((NORMAL, joined, guard)) == (
        NORMAL, Condition("result", (FieldTest("status", "eq", "abnormal"),)))


@pytest.mark.parametrize("engine", ENGINES_HERE)
def test_a_batch_cut_short_asks_its_unmatched_questions_again(engine, monkeypatch):
    """Twelve matches of a self-join use up a budget of five before the failure, the last fact,
    is asserted: its question is asked again alone, and answered."""
    facts = [_result(n, a, "normal") for n, a in enumerate(["float", "qat_pt", "qat_bc", "hbm"], 1)]
    failure = Fact("f9", "failure", VOCAB.complete("failure", {"artifact": "hbm", "kind": "load_error", "pos": 6}))
    monkeypatch.setattr(condition_match, "QUERY_BUDGET", 5)
    matcher = FactMatcher(facts + [failure], VOCAB, engine)
    pairs, failed = matcher.matches([(NORMAL, ANOTHER_NORMAL), (Condition("failure", ()),)])
    assert 0 < len(pairs) <= 5
    assert failed == [("f9",)]


@pytest.mark.parametrize("engine", ENGINES_HERE)
def test_a_question_beyond_the_compilers_expansions_is_not_answered(engine):
    """`in` lists in a condition that joins become one durable-rules rule per combination; a
    question with more than compiler.MAX_EXPANSIONS of them is answered by neither engine
    (None: not asked), never as "no fact meets it"."""
    wide = Condition("result", (FieldTest("artifact", "in", list(VOCAB.enums["artifact"].values)),
                                FieldTest("status", "in", ["normal", "abnormal", "unknown"]),
                                FieldTest("evidence", "in", list(VOCAB.enums["evidence"].values)),
                                FieldTest("pos", "eq", Ref("a", "pos"))))
    matcher = FactMatcher([_result(1, "qat_bc", "normal"), _result(2, "hbm", "normal")], VOCAB, engine)
    assert matcher.matches([(NORMAL, wide), (NORMAL,)]) == [None, [("f1",), ("f2",)]]


@pytest.mark.skipif("clips" not in ENGINES_HERE, reason="clipspy is not installed")
def test_a_clips_program_no_longer_used_is_freed():
    """A one-off program (condition_match.py makes one per batch of questions) is freed with
    its CLIPS environments once dropped, not kept by the function its rules report through."""
    rule = Rule("q0", "", "", "<question>", None, (NORMAL,), ())
    compiled = compile_rules([rule], VOCAB, "clips")
    program = load_backend("clips").Program(compiled, VOCAB)
    alive = weakref.ref(program)
    del program
    gc.collect()
    assert alive() is None
