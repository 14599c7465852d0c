"""The shortcuts a cold start takes must give the answers of the slow paths they replace:
the compiled yes/no case check (engine/schema_check.py) against jsonschema, text rules
restored from the rule-base cache against the loaded ones (their patterns compiled only when
a text is read), pre-encoded durable-rules definitions against encoding them at registration."""

from __future__ import annotations

import copy
import pickle

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import EXAMPLE_CASES, HAS_DURABLE
from j6doctor.engine import engine_json, text_rules
from j6doctor.engine.compiler import compile_rules
from j6doctor.engine.schema_check import fast_check
from j6doctor.engine.text_rules import CompiledTextRule
from j6doctor.diagnose import load_rulebase
from j6doctor.probes.case_file import case_schema, read_case

SCHEMA = case_schema()
SLOW = jsonschema.Draft202012Validator(SCHEMA)
FAST = fast_check(SCHEMA, "case")


def _agree(document) -> None:
    slow_valid = not any(True for _ in SLOW.iter_errors(document))
    fast_valid = FAST(copy.deepcopy(document))
    # the fast check may only say "valid" when jsonschema does; here they agree outright
    assert fast_valid == slow_valid, (fast_valid, slow_valid, document)


def _examples() -> list[dict]:
    docs = []
    for path in (p for p in EXAMPLE_CASES if p.suffix == ".yaml"):
        docs.append(read_case(path).data)  # as validated: after the reader's normalisation
    return docs


def test_bundled_cases_are_valid_by_both():
    docs = _examples()
    assert len(docs) >= 10
    for doc in docs:
        _agree(doc)
        assert FAST(doc), doc


def test_typical_mistakes_are_invalid_by_both():
    base = next(d for d in _examples() if "results" in d and "qat_bc" in d["results"])
    mistakes = []
    for mutate in (
        lambda d: d["results"]["qat_bc"].update(status="fine"),          # not an allowed value
        lambda d: d["results"]["qat_bc"].update(value="41"),            # text where a number goes
        lambda d: d["results"]["qat_bc"].update(frames=0),               # below the minimum
        lambda d: d["results"]["qat_bc"].update(unknown_key=1),          # no such key
        lambda d: d["results"].update(qat_bc={"evidence": "dataset_eval"}),  # status required
        lambda d: d.update(flow="float"),                                # enum
        lambda d: d.update(versions={"hbdk4-compiler": [4, 4]}),         # a list as version
        lambda d: d.update(symptom=3),                                   # number as text
        lambda d: d["results"]["qat_bc"].update(value=True),             # bool is no number
    ):
        doc = copy.deepcopy(base)
        mutate(doc)
        mistakes.append(doc)
    for doc in mistakes:
        _agree(doc)
        assert not FAST(doc), doc


_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-3, 10**6), st.floats(allow_nan=False, allow_infinity=False),
                     st.text(max_size=8), st.sampled_from(["normal", "abnormal", "unknown", "dataset_eval", "qat", "ptq",
                                                          "J6M", "badcase", "compile_error", "mismatch", "match"]))


def _value(schema: dict, depth: int):
    """Documents near the schema: its own keys with values of the right or a wrong kind."""
    props = schema.get("properties")
    if props and depth < 4:
        keys = st.sampled_from(sorted(props) + ["extra_key"])
        return st.dictionaries(keys, st.deferred(lambda: st.one_of(_SCALARS, *(
            _value(p, depth + 1) for p in props.values() if isinstance(p, dict) and p.get("properties")))),
            max_size=6).flatmap(lambda d: st.fixed_dictionaries({
                k: (_value(props[k], depth + 1) if k in props and props[k].get("properties") else st.just(v))
                for k, v in d.items()}))
    return _SCALARS


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(_value(SCHEMA, 0))
def test_generated_documents_get_the_same_answer(document):
    _agree(document)


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
