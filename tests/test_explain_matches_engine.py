"""`explain --why-not` asks the engine which of a rule's conditions hold (engine/explain.py
through engine/condition_match.py). On the bundled rule base, over the runs of the examples
of every eighth bundled rule (each example's facts exercise many rules besides its own;
every example would take ten minutes), a rule's conditions are all met exactly when the run
fired it: the final facts of a run answer for every stratum, as compiler.stratify orders
them. tests/test_explain_properties.py checks the same on generated packs, on both engines."""

from __future__ import annotations

from pathlib import Path

from j6doctor.rule_tests import example_options
from j6doctor.diagnosis import diagnose_data
from j6doctor.engine.explain import Explainer


EVERY = 8


def _example_runs(rulebase):
    for rule in rulebase.with_examples().rules[::EVERY]:  # (a diagnosis's rule base leaves the examples out)
        for index, example in enumerate(rule.examples):
            d = diagnose_data(example.case, rulebase, display=f"{rule.id}#{index + 1}", options=example_options(rule, index),
                              base=Path(rule.folder) if rule.folder else None)
            yield f"{rule.id}#{index + 1}", d.run


def test_explain_and_the_engine_agree_on_every_rule_and_example(rulebase):
    fact_rules = [r for r in rulebase.rules if r.text is None]  # text rules: explain reads the firings
    pairs, disagree = 0, []
    for name, run in _example_runs(rulebase):
        fired = run.fired_rules()
        outcomes = Explainer.of(run, rulebase).outcomes([(rule, {}) for rule in fact_rules])
        for rule, conditions in zip(fact_rules, outcomes):
            holds = all(c.state == "met" for c in conditions)
            pairs += 1
            if holds != (rule.id in fired):
                states = [f"{c.in_words()}: {o.state}" for c, o in zip(rule.when, conditions)]
                disagree.append(f"{rule.id} on {name}: explain says {states}, "
                                f"the engine {'fired' if rule.id in fired else 'did not fire'} it")
    assert pairs > 10_000
    assert not disagree, f"{len(disagree)} of {pairs} disagree:\n" + "\n".join(disagree[:20])
