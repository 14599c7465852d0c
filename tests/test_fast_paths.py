"""The shortcuts a cold start takes must give the answers of the slow paths they replace:
text rules and the term index restored from the caches against the loaded ones (a text read
only when a text rule reads it), pre-encoded durable-rules definitions against encoding them
at registration."""

from __future__ import annotations

import pickle

import pytest

from conftest import HAS_DURABLE
from j6doctor.engine import engine_json, text_reader
from j6doctor.engine.compiler import compile_rules
from j6doctor.engine.tag_patterns import find
from j6doctor.engine.text_reader import read
from j6doctor.engine.text_rules import CompiledTextRule
from j6doctor.diagnosis import load_rulebase


# ---------------------------------------------------------------------------- text rules
def _text_rules():
    rb = load_rulebase()
    rules = [r for r in rb.rules if r.text is not None]
    assert rules, "the bundled rules have text rules"
    return [CompiledTextRule(r) for r in rules], rb.vocab.text


SAMPLE = "quantized.bc 的 layout 不一致，march 也不同；板端喂 NHWC，模型要 NCHW"


def _hits(rule, reading):
    return [(h.tags, h.captures) for p in rule.rule.text.match for h in find(p, reading, every=True)]


def test_text_rules_and_the_term_index_restored_from_a_pickle_read_like_the_loaded_ones():
    compiled, lexicon = _text_rules()
    restored, lexicon_again = pickle.loads(pickle.dumps((compiled, lexicon)))
    assert lexicon_again == lexicon
    fresh, again = read(SAMPLE, lexicon.index), read(SAMPLE, lexicon_again.index)
    assert fresh.tags == again.tags and fresh.triggers == again.triggers and fresh.clauses == again.clauses
    assert len(fresh.tags) > 10
    matched = 0
    for a, b in zip(compiled, restored):
        assert a.rule.text == b.rule.text
        assert _hits(a, fresh) == _hits(b, again)
        matched += bool(_hits(a, fresh))
    assert matched >= 3  # layout, march, colour and layout practice ...


def test_a_case_without_text_reads_no_text(monkeypatch, diagnose):
    monkeypatch.setenv("J6DOCTOR_ENGINE_PROCESS", "inline")  # the run in this process, where the cache is seen
    text_reader._RECENT.clear()
    diagnose({"platform": "J6M", "results": {"qat_bc": "normal", "quantized_bc": "abnormal"}})
    assert not text_reader._RECENT
    d = diagnose({"symptom": "板端喂 NHWC，模型要 NCHW"})
    assert [text for _, text in text_reader._RECENT] == ["板端喂 NHWC，模型要 NCHW"]
    assert d.verdict_json["stage"] == "user_side"


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
