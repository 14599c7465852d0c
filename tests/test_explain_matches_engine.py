"""`explain --why-not` judges a rule's conditions with its own small matcher
(engine/explain.py), not with the engine. The two must agree, or the explanation would say
a rule's conditions hold while the engine did not fire it (or the reverse). Checked on
every rule against the run of every example of every bundled rule (each example's facts
exercise many rules besides its own)."""

from __future__ import annotations

from pathlib import Path

from j6doctor.rule_tests import example_options
from j6doctor.diagnose import diagnose_data
from j6doctor.engine.explain import MAX_DEPTH, check_rule


def _example_runs(rulebase):
    for rule in rulebase.rules:
        for index, example in enumerate(rule.examples):
            d = diagnose_data(example.case, rulebase, display=f"{rule.id}#{index + 1}", options=example_options(rule, index),
                              base=Path(rule.folder) if rule.folder else None)
            yield f"{rule.id}#{index + 1}", d.run


def test_explain_and_the_engine_agree_on_every_rule_and_example(rulebase):
    input_types = {name for name, t in rulebase.vocab.types.items() if t.origin == "input"}
    fact_rules = [r for r in rulebase.rules if r.text is None]  # text rules: explain reads the firings
    pairs, disagree = 0, []
    for name, run in _example_runs(rulebase):
        fired = run.fired_rules()
        for rule in fact_rules:
            # depth MAX_DEPTH: the rule's own conditions only, no producers of unmet ones
            check = check_rule(rule, run, rulebase.rules, input_types, {}, MAX_DEPTH, {rule.id})
            holds = all(c.satisfied for c in check.conditions)
            pairs += 1
            if holds != (rule.id in fired):
                failed = [c.condition for c in check.conditions if not c.satisfied]
                disagree.append(f"{rule.id} on {name}: explain says {'holds' if holds else 'fails'} "
                                f"{failed}, the engine {'fired' if rule.id in fired else 'did not fire'}")
    assert pairs > 10_000
    assert not disagree, f"{len(disagree)} of {pairs} disagree:\n" + "\n".join(disagree[:20])
