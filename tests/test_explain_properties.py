"""Property tests: explanations agree with the engine, on both engines (issue 25, item 2).

1. Generated packs: a few rules over two input fact types (result, failure) and the facts
   earlier rules derive, with positive and `not:` conditions, literal tests (eq, ne, in,
   not_in, lt, gt, null) and comparisons with earlier conditions' facts; each rule derives
   a fact type of its own, which later rules may require or forbid. Generated cases: a few
   results and failures, duplicates included. The pack goes through the rule loader and
   compiler, the case through the engine; then, for every rule, `explain --why-not`'s
   reading (engine/explain.py: met / not met per condition) says all its conditions hold
   exactly when the run fired it, the facts it names for each condition include those the
   run's firings matched, and the two engines explain alike.
2. The static reading of a literal test (rule_model.Test.admits, which tells which rules can
   conclude a wanted value) agrees with the engine on facts holding that value.

J6DOCTOR_FUZZ_EXAMPLES=500 runs a longer, random (not derandomized) hunt.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import yaml
from hypothesis import HealthCheck, event, given, note, settings
from hypothesis import strategies as st
from hypothesis.configuration import set_hypothesis_home_dir

from j6doctor.engine.backends import ENGINES, available, load_backend
from j6doctor.engine.compiler import compile_rules
from j6doctor.engine.condition_match import FactMatcher
from j6doctor.engine.explain import MAX_FACTS_SHOWN, Explainer
from j6doctor.engine.facts import Fact, Source
from j6doctor.engine.rule_loader import load_rule_dirs
from j6doctor.engine.rule_model import Condition
from j6doctor.engine.rule_model import Test as FieldTest  # (pytest would collect a class named Test)
from j6doctor.engine.runtime import run
from j6doctor.facts import vocabulary

VOCAB = vocabulary()
ENGINES_HERE = [e for e in ENGINES if available(e)]
INPUT_TYPES = {n for n, t in VOCAB.types.items() if t.origin == "input"}

_EXAMPLES = os.environ.get("J6DOCTOR_FUZZ_EXAMPLES")
if not os.environ.get("HYPOTHESIS_STORAGE_DIRECTORY"):
    set_hypothesis_home_dir(Path(tempfile.gettempdir()) / "j6doctor-hypothesis")


def _settings(examples: int) -> settings:
    return settings(max_examples=int(_EXAMPLES) if _EXAMPLES else examples, deadline=None, database=None,
                    derandomize=not _EXAMPLES,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


# ------------------------------------------------------------------ generated packs and cases

ARTIFACTS = ["qat_bc", "quantized_bc", "hbm"]
LITERALS = {"artifact": ARTIFACTS, "status": ["normal", "abnormal"], "kind": ["compile_error", "load_error"],
            "value": [0.5, 0.9, 1], "pos": [1, 2, 3]}
ORDERED = ("value", "pos")
NULLABLE = ("value",)  # fields a fact may leave empty
# The fields a generated condition tests, per fact type; rule n derives DERIVED[n].
TESTED = {"result": ("artifact", "status", "value", "pos"), "failure": ("artifact", "kind", "pos"),
          "unconfirmed": ("artifact", "status"), "first_abnormal": ("artifact", "pos"),
          "points_at": ("artifact",), "inferred_result": ("artifact", "status")}
DERIVED = ["unconfirmed", "first_abnormal", "points_at", "inferred_result"]


@st.composite
def field_test(draw, type_name: str, name: str, earlier: dict[str, str]):
    """A test of one field: a literal one, or a comparison with an earlier condition's fact."""
    joinable = [a for a, t in earlier.items() if name in TESTED[t]]
    if joinable and draw(st.booleans()):
        ref = {"ref": f"{draw(st.sampled_from(joinable))}.{name}"}
        ops = ["eq", "ne"] + (["lt", "gt"] if name in ORDERED else [])
        op = draw(st.sampled_from(ops))
        return ref if op == "eq" else {op: ref}
    values = LITERALS[name]
    ops = ["eq", "ne", "in", "not_in"] + (["lt", "gt"] if name in ORDERED else [])
    ops += ["null", "not_null"] if name in NULLABLE else []
    op = draw(st.sampled_from(ops))
    if op in ("in", "not_in"):
        return {op: draw(st.lists(st.sampled_from(values), min_size=1, max_size=2, unique=True))}
    if op in ("null", "not_null"):
        return None if op == "null" else {"ne": None}
    value = draw(st.sampled_from(values))
    return value if op == "eq" else {op: value}


@st.composite
def condition(draw, type_names: list[str], earlier: dict[str, str], alias: str):
    type_name = draw(st.sampled_from(type_names))
    names = draw(st.lists(st.sampled_from(TESTED[type_name]), max_size=2, unique=True))
    tests = {name: draw(field_test(type_name, name, earlier)) for name in names}
    if draw(st.integers(0, 9)) < 3:
        return {"not": {type_name: tests}}, None
    return {type_name: tests, "as": alias}, type_name


def _conclusion(number: int, earlier: dict[str, str], status: str) -> dict:
    """Rule `number`'s derived fact: the artifact (and position, status) of its first positive
    condition's fact where it has one, so that one rule derives several facts."""
    first = next(iter(earlier), None)
    fields: dict = {"artifact": {"ref": f"{first}.artifact"} if first else "hbm"}
    type_name = DERIVED[number]
    if type_name in ("unconfirmed", "inferred_result"):
        fields["status"] = {"ref": f"{first}.status"} if first and "status" in TESTED[earlier[first]] else status
    if type_name == "first_abnormal":
        fields["pos"] = {"ref": f"{first}.pos"} if first and "pos" in TESTED[earlier[first]] else 1
    if type_name == "points_at":
        fields["check"] = "c"
    if type_name == "inferred_result":
        fields["how"] = "h"
    return {type_name: fields}


@st.composite
def pack(draw) -> dict:
    rules = []
    for number in range(draw(st.integers(1, len(DERIVED)))):
        earlier: dict[str, str] = {}
        when = []
        for index in range(draw(st.integers(1, 3))):
            cond, bound = draw(condition(["result", "failure"] + DERIVED[:number], earlier, f"a{index}"))
            when.append(cond)
            if bound:
                earlier[f"a{index}"] = bound
        rules.append({"id": f"prop.r{number}", "title": f"r{number}", "when": when,
                      "then": [_conclusion(number, earlier, draw(st.sampled_from(LITERALS["status"])))]})
    return {"seed": "prop", "rules": rules}


def _input_fact(draw, type_name: str) -> dict:
    fields = {"artifact": draw(st.sampled_from(ARTIFACTS)), "pos": draw(st.sampled_from(LITERALS["pos"]))}
    if type_name == "result":
        fields["status"] = draw(st.sampled_from(LITERALS["status"]))
        fields["value"] = draw(st.sampled_from([None] + LITERALS["value"]))
    else:
        fields["kind"] = draw(st.sampled_from(LITERALS["kind"]))
    return VOCAB.complete(type_name, fields)


@st.composite
def case(draw) -> list[Fact]:
    kinds = ["result"] * draw(st.integers(0, 4)) + ["failure"] * draw(st.integers(0, 2))
    return [Fact(f"f{n + 1}", type_name, _input_fact(draw, type_name), source=Source("case", key=f"#{n + 1}"))
            for n, type_name in enumerate(kinds)]


def _load(data: dict):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "pack.yaml"
        path.write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False), encoding="utf-8")
        rules, errors = load_rule_dirs([Path(folder)], VOCAB)
    assert not errors, "\n".join(e.render() for e in errors)
    return rules


def _explained(rules, facts, engine: str):
    """The run of the facts on `engine` (on a program of its own: not kept for the process)
    and explain's check of every rule on it."""
    compiled = compile_rules(rules, VOCAB, engine)
    result = run(compiled, VOCAB, facts, program=load_backend(engine).Program(compiled, VOCAB))
    explainer = Explainer(result, rules, FactMatcher(result.facts, VOCAB, engine), INPUT_TYPES)
    return result, [explainer.check(rule) for rule in rules]


# ------------------------------------------------------------------ 1. explain agrees with the run

@_settings(60)
@given(pack(), case())
def test_explain_says_met_exactly_when_the_engine_fired(data, facts):
    note(yaml.safe_dump(data, allow_unicode=True, sort_keys=False))
    note(repr([(f.id, f.type, f.fields) for f in facts]))
    rules = _load(data)
    explained = {}
    for engine in ENGINES_HERE:
        result, checks = _explained(rules, facts, engine)
        fired = result.fired_rules()
        for rule, check in zip(rules, checks):
            met = [c.satisfied and not c.unknown for c in check.conditions]
            assert all(met) == (rule.id in fired), (engine, rule.id, [c.as_dict() for c in check.conditions])
            assert check.fired == (rule.id in fired)
            event(f"{engine}: a rule {'fired' if check.fired else 'did not fire'}")
            if not check.fired and sum(met) == len(met) - 1:
                event(f"{engine}: a rule missed by one condition")
            positives = [c for c in check.conditions if not c.negated]
            for firing in (f for f in result.firings if f.rule == rule.id):
                for cond, premise in zip(positives, firing.premises):
                    assert premise in cond.facts or len(cond.facts) == MAX_FACTS_SHOWN, (engine, rule.id, firing)
        explained[engine] = [c.as_dict() for c in checks]
    assert len({repr(v) for v in explained.values()}) == 1, explained


# ------------------------------------------------------------------ 2. static reading of a test

TEST_FIELDS = {"artifact": ARTIFACTS, "status": LITERALS["status"], "value": [0, 0.5, 1, 1.0, 2, -1.5],
               "metric": ["", "mAP", "top1 acc", "Top1"]}


@st.composite
def literal_test(draw) -> FieldTest:
    name = draw(st.sampled_from(sorted(TEST_FIELDS)))
    values = TEST_FIELDS[name]
    ops = ["eq", "ne", "in", "not_in"] + (["lt", "le", "gt", "ge"] if name == "value" else [])
    ops += ["contains"] if name == "metric" else []
    op = draw(st.sampled_from(ops))
    if op in ("in", "not_in"):
        pool = values + ([None] if name == "value" else [])
        return FieldTest(name, op, draw(st.lists(st.sampled_from(pool), min_size=1, max_size=3, unique=True)))
    if op == "contains":
        return FieldTest(name, op, draw(st.sampled_from(["top1", "map", "acc"])))
    pool = values + ([None] if name == "value" and op in ("eq", "ne") else [])
    return FieldTest(name, op, draw(st.sampled_from(pool)))


@_settings(80)
@given(literal_test(), st.sampled_from(TEST_FIELDS["value"] + [None]), st.sampled_from(TEST_FIELDS["metric"]))
def test_the_static_reading_of_a_test_is_the_engines(test, value, metric):
    fact = Fact("f1", "result", VOCAB.complete("result", {"artifact": "hbm", "status": "normal", "pos": 1,
                                                          "value": value, "metric": metric}))
    for engine in ENGINES_HERE:
        (holds,) = FactMatcher([fact], VOCAB, engine).holds([(Condition("result", (test,)),)])
        assert holds == test.admits(fact.fields[test.field]), (engine, test, fact.fields[test.field])
