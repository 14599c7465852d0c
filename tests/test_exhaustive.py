"""Every combination of normal / abnormal / unknown over the chain's artifacts gives exactly
one stage, and removing one piece of evidence never switches a verdict to a different
stage: only to the same stage, to its coarser parent (pre_export → export, board → compile)
or toward a non-committal verdict (暂不能判断; the chain at 基线确认)."""

from __future__ import annotations

import itertools

import pytest

from conftest import FULL_INFO
from j6doctor.diagnosis import diagnose_data, load_rulebase
from j6doctor.facts import attr, enum_values

CHAIN = ("qat_pt", "qat_export_pt", "qat_bc", "quantized_bc", "hbm", "hbm_x86", "board")
STATUSES = ("normal", "abnormal", None)
BASE = {**FULL_INFO, "deployment": {"notes": "NV12"}}


def parent(stage: str) -> str | None:
    return attr("stage", stage, "parent")


def committal(stage: str) -> bool:
    return attr("stage", stage, "committal", True)


@pytest.fixture(scope="module")
def verdicts():
    rulebase = load_rulebase()
    out = {}
    for combo in itertools.product(STATUSES, repeat=len(CHAIN)):
        results = {a: {"status": s, "evidence": "dataset_eval"} for a, s in zip(CHAIN, combo) if s}
        d = diagnose_data({**BASE, "results": results}, rulebase)
        out[combo] = d.verdict_json
    return out


def test_every_combination_gives_exactly_one_stage(verdicts):
    stages = set(enum_values("stage"))
    for combo, verdict in verdicts.items():
        assert verdict["stage"] in stages
        assert not any("相互冲突的阶段" in w or "没有给出任何结论" in w for w in verdict["warnings"]), combo
        assert len({c["rule"] for c in verdict["conclusion"]}) >= 1, combo


def test_removing_evidence_never_switches_to_another_stage(verdicts):
    bad = []
    for combo, verdict in verdicts.items():
        stage = verdict["stage"]
        if not committal(stage):
            continue
        for index, status in enumerate(combo):
            if status is None:
                continue
            fewer = combo[:index] + (None,) + combo[index + 1:]
            after = verdicts[fewer]["stage"]
            if after != stage and after != parent(stage) and committal(after):
                bad.append((dict(zip(CHAIN, combo)), CHAIN[index], stage, after))
    assert bad == []


def test_all_stage_values_of_the_chain_occur(verdicts):
    seen = {v["stage"] for v in verdicts.values()}
    # 基线确认 is where the chain stops (chain_stage), the verdict then 暂不能判断
    assert seen == set(enum_values("stage")) - {"user_side", "baseline"}
    assert "baseline" in {v["chain_stage"]["stage"] for v in verdicts.values()}
