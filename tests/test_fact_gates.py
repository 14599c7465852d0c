"""engine/fact_gates.py: a stratum asserts only the facts its conditions could match, and a
run derives and fires exactly what it would with every fact asserted."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import yaml

from j6doctor.diagnosis import diagnose_data, load_rulebase
from j6doctor.engine.backends import ENGINES, available
from j6doctor.engine.fact_gates import gates_of, passes
from j6doctor.engine.rule_model import Condition, Ref
from j6doctor.engine.rule_model import Test as FieldTest  # (pytest would collect a class named Test)

ROOT = Path(__file__).resolve().parent.parent
ENGINES_HERE = [e for e in ENGINES if available(e)]


def _condition(type_name: str, *tests: tuple, negated: bool = False) -> Condition:
    return Condition(type_name, tuple(FieldTest(*t) for t in tests), negated=negated)


def test_the_gate_is_the_field_every_condition_tests_with_the_values_any_admits():
    gates = gates_of([
        _condition("text_fact", ("topic", "eq", "ptq_flow"), ("kind", "eq", "stated")),
        _condition("text_fact", ("topic", "in", ["qat_flow", "ptq_flow"])),
        _condition("confirmed", ("artifact", "eq", "board"), ("status", "eq", "abnormal")),
        _condition("confirmed", ("status", "in", ["abnormal"]), ("artifact", "eq", Ref("a", "artifact"))),
    ])
    assert gates["text_fact"] == ("topic", frozenset({"ptq_flow", "qat_flow"}))
    # (artifact is joined in the second condition: status is the field both test with literals)
    assert gates["confirmed"] == ("status", frozenset({"abnormal"}))
    assert passes(gates, "text_fact", {"topic": "qat_flow", "kind": "hint"})
    assert not passes(gates, "text_fact", {"topic": "deployment_named", "kind": "stated"})
    assert not passes(gates, "confirmed", {"artifact": "board", "status": "normal"})


def test_a_type_with_a_condition_that_tests_no_literal_has_no_gate():
    gates = gates_of([_condition("said_result", ("status", "eq", "normal")), _condition("said_result"),
                      _condition("flow", ("how", "contains", "PTQ"))])
    assert gates == {"flow": None, "said_result": None}
    assert passes(gates, "said_result", {"status": "abnormal"})
    assert passes(gates, "flow", {"flow": "qat", "how": "默认"})
    assert passes(gates, "no_such_type", {})  # a type no condition names is no business of the gates


def test_an_empty_field_passes_where_a_condition_asks_for_an_empty_field():
    gates = gates_of([_condition("result", ("evidence", "eq", None)), _condition("result", ("evidence", "in", ["visual"]))])
    assert passes(gates, "result", {"status": "normal"})
    assert passes(gates, "result", {"evidence": "visual"})
    assert not passes(gates, "result", {"evidence": "dataset_eval"})


def test_every_stratum_of_the_bundled_rule_base_has_gates_for_what_it_consumes_and_negates():
    compiled = load_rulebase().compiled
    assert len(compiled.gates) == len(compiled.strata)
    for (positive, negated), partitions in zip(compiled.gates, compiled.strata):
        assert set(positive) == set().union(*(p.consumes for p in partitions))
        assert set(negated) == set().union(*(p.negates for p in partitions))
    # each gate is a field of its type; some strata take only the text facts of the topics they name
    vocab = load_rulebase().vocab
    for positive, negated in compiled.gates:
        for type_name, gate in [*positive.items(), *negated.items()]:
            assert gate is None or gate[0] in vocab.types[type_name].fields, (type_name, gate)
    assert any((positive.get("text_fact") or ("",))[0] == "topic" for positive, _ in compiled.gates)


def _cases() -> list[tuple[str, dict, Path]]:
    out = []
    for path in sorted((ROOT / "examples" / "cases").glob("*.yaml")):
        out.append((path.name, yaml.safe_load(path.read_text(encoding="utf-8")), path.parent))
    for path in sorted((ROOT / "benchmarks" / "real_reports").glob("*.yaml"))[:40]:
        report = yaml.safe_load(path.read_text(encoding="utf-8"))
        out.append((path.name + " words", {"symptom": report["words"]}, path.parent))
    return out


def _trace(diagnosis) -> tuple:
    facts = [(f.id, f.type, sorted((k, repr(v)) for k, v in f.fields.items()),
              f.derivation.rule if f.derivation else None) for f in diagnosis.run.facts]
    firings = [(x.rule, x.premises, x.derived, x.stratum) for x in diagnosis.run.firings]
    return facts, firings


@pytest.mark.parametrize("engine", ENGINES_HERE)
def test_a_run_with_gates_derives_and_fires_what_a_run_without_them_does(engine, monkeypatch):
    """Every bundled example and forty real reports (the reporter's words), in this process on
    the engine itself: the same facts, ids, derivations and firings, in the same order."""
    monkeypatch.setenv("J6DOCTOR_ENGINE_PROCESS", "inline")
    rulebase = load_rulebase(engine=engine)
    gated = rulebase.compiled
    assert any(g is not None for positive, negated in gated.gates for g in [*positive.values(), *negated.values()])
    ungated = dataclasses.replace(gated, gates=[])
    compared = 0
    for name, case, base in _cases():
        monkeypatch.setattr(rulebase, "compiled", gated)
        with_gates = _trace(diagnose_data(case, rulebase, display=name, base=base))
        monkeypatch.setattr(rulebase, "compiled", ungated)
        without = _trace(diagnose_data(case, rulebase, display=name, base=base))
        assert with_gates == without, name
        compared += 1
    assert compared >= 45
