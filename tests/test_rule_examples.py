"""Each bundled rule carries example cases; each example must fire its rule (or, with
`fires: false`, must not) and give the expected verdict fields."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import pytest

from j6doctor.rule_tests import example_options
from j6doctor.diagnosis import diagnose_data, load_rulebase
from j6doctor.verdict_schema import verdict_schema

RULEBASE = load_rulebase().with_examples()
VERDICT = jsonschema.Draft202012Validator(verdict_schema())
EXAMPLES = [(rule, index, example) for rule in RULEBASE.rules for index, example in enumerate(rule.examples)]


@pytest.mark.parametrize("rule,index,example", EXAMPLES,
                         ids=[f"{r.id}#{i + 1}" for r, i, _ in EXAMPLES])
def test_rule_example(rule, index, example):
    d = diagnose_data(example.case, RULEBASE, display=f"{rule.id}#{index + 1}", base=Path(rule.folder),
                      options=example_options(rule, index))
    assert (rule.id in d.run.fired_rules()) == example.fires, (
        f"{rule.file}:{example.line}: example {example.name!r} "
        f"{'did not fire' if example.fires else 'fired'} {rule.id}")
    VERDICT.validate(d.verdict_json)  # every verdict the examples produce has the published layout
    expect = example.expect
    if "stage" in expect:
        assert d.verdict_json["stage"] == expect["stage"]
    if "missing" in expect:
        assert d.verdict_json["missing"] == expect["missing"]
    if "mistakes" in expect:
        assert [m["id"] for m in d.verdict_json["mistakes"]] == expect["mistakes"]


def test_every_rule_has_an_example_that_fires_it():
    lacking = [r.id for r in RULEBASE.rules if not any(e.fires for e in r.examples)]
    assert lacking == []
