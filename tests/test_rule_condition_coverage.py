"""Condition coverage of the bundled rules (`j6doctor rules test --coverage`): every `not:`
guard and every `when:` line should have an example of its rule in which it alone keeps
the rule from firing (every other condition holds, this one does not). The whole bundle is
checked, rules/54_measure_classes.yaml and rules/55_artifact_readings.yaml included."""

from __future__ import annotations

import pytest

from j6doctor.rule_tests import run_rule_tests

# Conditions that can never decide alone: the other conditions of the rule (or the way the
# facts they read are made) already imply them. (rule id, condition in words) → why.
NEVER_ALONE = {
    ("words.reported", "not said_run_again{field=s.field, start=s.start, status=s.status, place≠s.mention}"):
        "text.result_at_run concludes said_run_again together with the place's own said_result, "
        "which the guard lets through: words.reported always fires for that sentence",
    ("failure.first", "not failed{pos<f.pos}"):
        "an earliest failure always exists: whenever a failure is there, the one with the "
        "smallest pos has none before it",
    ("chain.first_abnormal", "not confirmed{status=abnormal, pos<a.pos}"):
        "an earliest confirmed-abnormal artifact always exists (smallest pos)",
    ("reference.shown_wrong_downstream", "not confirmed{status=normal, pos<n.pos}"):
        "an earliest confirmed-normal artifact always exists (smallest pos)",
    ("open.nothing_abnormal", "not conflict{}"):
        "every rule concluding conflict (rules/20_conflicts.yaml) needs a confirmed abnormal "
        "result, which the rule's guard `not confirmed{status=abnormal}` already excludes",
    ("evidence.small_drop", "result{status=abnormal}"):
        "the probe makes metric_drop only for an abnormal result of the case (app/evidence.py)",
    ("map.convert.ptq", "short_chain{}"):
        "chain.short_ptq concludes short_chain from flow=ptq, a condition of the same row",
    ("score.reference", "means{mention=s.mention}"):
        "every mention has a meaning: a fixed one from words.named_with_a_score, a flow-dependent one "
        "from the words_by_flow table, which covers every flow",
    ("score.drop", "means{mention=s.mention}"):
        "every mention has a meaning (see score.reference)",
    ("score.fell", "not score_drop{mention=s.mention, field=s.field, times≤6, share≤0.4, times_max≥10}"):
        "the guard holds only beside a drop of ten times the tolerance or more, which fires the rule "
        "itself: its effect shows in the rule's example 'float 0.431 / qat.pt 0.412 / ... quantized.bc 0.356' "
        "(stage convert, qat.pt not abnormal)",
    ("score.slight_beside_said_trouble", "means{mention=s.mention}"):
        "every mention has a meaning (see score.reference)",
    ("score.ordinary", "means{mention=s.mention}"):
        "every mention has a meaning (see score.reference)",
    ("score.drop_called_normal", "means{mention=s.mention}"):
        "every mention has a meaning (see score.reference)",
    ("score.carried", "score_drop{mention=s.reference, field=s.field}"):
        "score_fell{mention=s.reference, field=s.field}, a condition of the same rule, is only ever "
        "concluded from that score_drop (score.fell): it binds the drop for the conclusion's words",
    ("score.within", "means{mention=s.mention}"):
        "every mention has a meaning (see score.reference)",
    ("score.carried_far", "means{mention=s.mention}"):
        "every mention has a meaning (see score.reference)",
    ("score.drop_slight_deployed", "means{mention=s.mention}"):
        "every mention has a meaning (see score.reference)",
    ("score.slight_beside_large", "means{mention=s.mention}"):
        "every mention has a meaning (see score.reference)",
    ("score.carried", "means{mention=s.mention}"):
        "every mention has a meaning (see score.reference)",
    ("map.convert.ptq_from_float", "short_chain{}"):
        "chain.short_ptq concludes short_chain from flow=ptq, a condition of the same row",
    ("gate.ptq_input_parameters", "chain_stage{}"):
        "every run has a chain_stage: the mapping table (with its gap and no-abnormal rows), "
        "conflict.undetermined and the failure rules cover every case",
    ("tools.first_node_collapse", "layer_cosines{}"):
        "first_node_collapsed is concluded only from a layer_cosines fact of the same path "
        "(rules/54_measure_classes.yaml)",
    ("mistake.M02", "first_abnormal{artifact∈[hbm, hbm_x86, board]}"):
        "stage baseline comes only from the table row map.baseline, whose first cell is "
        "[hbm, hbm_x86, board]",
    ("mistake.M02_suspect", "first_abnormal{artifact∈[hbm, hbm_x86, board]}"):
        "stage baseline comes only from map.baseline (see mistake.M02)",
    ("measure.error_origin", "compare_break{path=s.path, row=s.row}"):
        "every rule concluding sudden_break (the measure.sudden_* rules) copies path and row "
        "from the compare_break it judged",
    ("measure.error_origin", "not sudden_break{path=s.path, row<s.row}"):
        "a first sudden break of a table always exists (smallest row): whenever sudden breaks "
        "are there, the rule fires for that one",
    ("measure.node_origin", "cosine_break{path=s.path, index=s.index}"):
        "node_sudden is concluded only by measure.node_sudden*, which copy path and index "
        "from the cosine_break they judged",
    ("measure.node_origin", "not node_sudden{path=s.path, index<s.index}"):
        "a first sudden node of a table always exists (smallest index): the rule fires for it",
    ("tools.first_drop", "layer_cosines{path=o.path}"):
        "a cosine_break (and so a node_origin) comes only with the layer_cosines of the same "
        "table (probes/conversion_log.add_cosine_facts, probes/hb_verifier.add_facts)",
    ("reading.gradual", "compare_summary{path=g.path}"):
        "compare_shape is concluded only from a compare_summary of the same path "
        "(measure.shape_* in rules/54_measure_classes.yaml)",
    ("reading.compare_summary", "compare_summary{}"):
        "compare_shape is concluded only from a compare_summary (measure.shape_*), so a "
        "compare_shape never comes without one",
    ("reading.compare_summary", "compare_shape{path=s.path}"):
        "the measure.shape_* rules give every compare_summary the probe makes a shape: "
        "metric_rows 0 → no_metrics; an origin → single_drop; else degraded_rows > 0 → gradual, "
        "degraded_rows 0 → healthy (the counts are never negative)",
    ("reading.sensitivity_summary", "sensitivity_summary{}"):
        "sensitivity_shape is concluded only from a sensitivity_summary of the same path "
        "(directly or through sensitivity_quiet, rules/54_measure_classes.yaml)",
    ("reading.sensitivity_summary", "sensitivity_shape{path=t.path}"):
        "rules/54 gives every sensitivity_summary the probe makes a shape: top_distance 0 → quiet "
        "→ flat; otherwise next_share and third_share are numbers (probes/sensitivity.py: None "
        "only when the top distance is 0) and dominant, accumulation or flat holds",
    ("reading.sensitivity_accumulation", "sensitivity_summary{}"):
        "sensitivity_shape is concluded only from a sensitivity_summary of the same path "
        "(see reading.sensitivity_summary)",
    **{(f"words.{row}", "flow{flow=qat}"):
       "a ptq flow always has a short chain (chain.short_ptq), which the row's `not short_chain` already excludes"
       for row in ("onnx_qat", "exported_qat")},
    ("words.reported", "means{mention=s.mention}"):
        "every mention said has a meaning: a word that names one artifact gets it from words.named_*, "
        "a word that depends on the flow from the words_by_flow table (a row for each flow, or one "
        "for a short chain and one for qat without it)",
    ("words.compared", "means{mention=c.a}"): "every mention has a meaning in every run (see words.reported)",
    ("words.compared", "means{mention=c.b}"): "every mention has a meaning in every run (see words.reported)",
    ("verdict.decisive", "not decisive{order<d.order}"):
        "a decisive fact of the smallest order always exists: whenever decisive facts are there, "
        "the rule fires for that one",
}

# Conditions that can never decide alone, as a share of all the conditions of the bundle
# (4.1 % when written): a rule base whose conditions mostly cannot be tested is a smell.
MAX_NEVER_ALONE_PERCENT = 5


@pytest.fixture(scope="module")
def coverage(rulebase):
    _, coverage = run_rule_tests(rulebase)
    return coverage


def _undecided(coverage, negated_only: bool) -> dict[tuple[str, str], str]:
    return {(c.rule, words): f"{c.file}:{line}" for c in coverage for line, words in c.undecided
            if not negated_only or words.startswith("not ")}


def test_every_not_guard_is_decided_by_an_example(coverage):
    missing = {key: where for key, where in _undecided(coverage, negated_only=True).items()
               if key not in NEVER_ALONE}
    assert not missing, "not: guards no example decides (add a fires: false example where only it blocks):\n" + \
        "\n".join(f"  {where}: {rule}: {words}" for (rule, words), where in sorted(missing.items()))


def test_conditions_listed_as_never_alone_are_still_there_and_undecided(coverage):
    conditions = {(c.rule, words) for c in coverage for _, words in c.conditions}
    undecided = _undecided(coverage, negated_only=False)
    for key, why in NEVER_ALONE.items():
        assert key in conditions, f"{key}: no such condition any more; remove it from NEVER_ALONE"
        assert key in undecided, f"{key}: an example decides it now; remove it from NEVER_ALONE ({why})"


def test_every_condition_is_decided_or_listed_as_never_alone(coverage):
    """Every condition of the bundle is decided by an example of its rule, or can never decide
    alone and says why in NEVER_ALONE; the list stays a small share of the conditions."""
    total = sum(len(c.conditions) for c in coverage)
    others = sorted(f"  {where}: {rule}: {words}" for (rule, words), where
                    in _undecided(coverage, negated_only=False).items() if (rule, words) not in NEVER_ALONE)
    assert not others, "conditions no example decides (add a fires: false example where only it fails):\n" + \
        "\n".join(others)
    assert len(NEVER_ALONE) <= MAX_NEVER_ALONE_PERCENT / 100 * total, (len(NEVER_ALONE), total)
