"""The shortcuts a cold start takes must give the answers of the slow paths they replace:
text rules restored from the rule-base cache against the loaded ones (their patterns compiled
only when a text is read), pre-encoded durable-rules definitions against encoding them at
registration."""

from __future__ import annotations

import pickle

import pytest

from conftest import HAS_DURABLE
from j6doctor.engine import engine_json, text_rules
from j6doctor.engine.compiler import compile_rules
from j6doctor.engine.text_rules import CompiledTextRule
from j6doctor.diagnose import load_rulebase


# ---------------------------------------------------------------------------- patterns
def _text_rules():
    rb = load_rulebase()
    rules = [r for r in rb.rules if r.text is not None]
    assert rules, "the bundled rules have text rules"
    return [CompiledTextRule(r, rb.vocab.text) for r in rules]


def test_text_rules_restored_from_a_pickle_match_like_the_loaded_ones():
    compiled = _text_rules()
    restored = pickle.loads(pickle.dumps(compiled))
    sample = "quantized.bc 的 layout 不一致，march 也不同"
    for a, b in zip(compiled, restored):
        assert a.rule.text == b.rule.text and a.lexicon == b.lexicon
        assert [p.search(sample) and p.search(sample).span() for p in a.match] == \
               [p.search(sample) and p.search(sample).span() for p in b.match]


def test_a_case_without_text_compiles_no_text_pattern(monkeypatch, diagnose):
    monkeypatch.setenv("J6DOCTOR_ENGINE_PROCESS", "inline")  # the run in this process, where the cache is seen
    text_rules._compiled.cache_clear()
    diagnose({"platform": "J6M", "results": {"qat_bc": "normal", "quantized_bc": "abnormal"}})
    assert text_rules._compiled.cache_info().currsize == 0
    d = diagnose({"symptom": "板端喂 NHWC，模型要 NCHW"})
    assert text_rules._compiled.cache_info().currsize > 0 and d.verdict_json["stage"] == "user_side"


# ---------------------------------------------------------------------------- durable definitions
@pytest.mark.skipif(not HAS_DURABLE, reason="durable-rules is not installed here")
def test_pre_encoded_definitions_are_the_definitions():
    rb = load_rulebase()
    compiled = compile_rules(rb.rules, rb.vocab, "durable")
    from j6doctor.engine.durable_backend import _encoded_definition

    for part in compiled.partitions():
        for crule in part.rules:
            assert crule.encoded == engine_json.dumps(crule.definition)
        definition = _encoded_definition(part)
        plain = part.definition()
        for body in (*definition.values(), *plain.values()):
            body.pop("run")
        assert engine_json.dumps(definition) == engine_json.dumps(plain)
