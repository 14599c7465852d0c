"""Regression tests for three audit findings on issue 9 (items 7, 9 and 10):

A. a user-side verdict puts its fix before any toolchain step (a gap's "先评测 ..." included),
   a broken reference starts with "verify the reference", and nothing is said twice;
B. every verdict lists the stages still possible and they agree with the verdict and the
   findings (a compile failure, an hb_verifier that clears compile, an empty case);
C. `suspect:` written as a sentence ("怀疑 hbdk 编译器") is understood like a bare stage name.

Real diagnoses of realistic cases on the bundled rule base; no mocks."""

from __future__ import annotations

import itertools
import json

import pytest

from conftest import EXAMPLES, FULL_INFO, ok, write_case
from j6doctor.diagnosis import diagnose_file
from j6doctor.report import render_markdown
from j6doctor.rules import BUNDLED_RULES_DIR

VERIFIER_CONSISTENT = str(BUNDLED_RULES_DIR / "fixtures" / "tools" / "verifier_consistent")


def stages(d):
    return [c["stage"] for c in d.verdict_json["candidates"]]


def step_texts(d):
    return [s["text"] for s in d.verdict_json["next_steps"]]


def summary(d):
    return render_markdown(d).split("## 已确认事实")[0]


# ---------------------------------------------------------------------------- A. order of the next steps

# (free_text_only_mismatch: the x86 simulation is normal, so the chain is at the board, no gap;
# broken_reference: quantized.bc is a gap, kept for after the fix)
@pytest.mark.parametrize("name, chain, gap", [("free_text_only_mismatch.yaml", "board", False),
                                              ("broken_reference.yaml", "baseline", True)])
def test_user_side_examples_start_with_the_fix_not_the_toolchain_step(rulebase, name, chain, gap):
    d = diagnose_file(EXAMPLES / name, rulebase)
    assert d.verdict_json["stage"] == "user_side"
    assert d.verdict_json["chain_stage"]["stage"] == chain  # the chain's stage stays, for after the fix
    texts = step_texts(d)
    assert not texts[0].startswith("先评测"), texts[0]
    assert texts[0].startswith(("先修正", "先验证参考")), texts[0]
    evaluate = [i for i, t in enumerate(texts) if t.startswith("先评测 quantized.bc")]
    assert bool(evaluate) == gap and all(i > 0 for i in evaluate)  # a gap is kept, after the fix
    assert d.verdict_json["candidates"][0]["stage"] == "user_side"


def test_confirmed_checklist_mismatches_with_an_unverified_quantized_bc(diagnose):
    # an S100 ticket: misplaced boxes on the board, the board app ignores the buffer stride and
    # feeds the wrong colour format; quantized.bc was never evaluated
    d = diagnose({"symptom": "板端结果错位", "platform": "RDK S100",
                  "versions": {"OE": "3.0.31", "UCP": "3.7.4", "DNN": "3.7.4", "HBRT": "4.3.2"},
                  "results": {"hbm": {"status": "abnormal", "evidence": "multi_frame_visual"}},
                  "deployment": {"checklist": {"padding": {"status": "Mismatch", "note": "buffer stride 板端程序忽略了"},
                                               "preprocess": "mismatch"}}})
    assert d.verdict_json["stage"] == "user_side"
    steps = d.verdict_json["next_steps"]
    fixes = [s for s in steps if s["text"].startswith("先修正已确认的不一致")]
    assert len(fixes) == 2 and steps[:2] == fixes  # both fixes first, one per item
    assert "buffer stride" in " ".join(s["text"] for s in fixes)
    assert any(s["text"].startswith("先评测 quantized.bc") for s in steps[2:])
    # (S100 is a QAT chain: qat.bc is not verified either, so export stays possible)
    assert stages(d)[0] == "user_side" and set(stages(d)[1:]) == {"convert", "compile", "board", "export"}


def test_a_broken_reference_is_verified_first_and_said_once(rulebase):
    d = diagnose_file(EXAMPLES / "broken_reference.yaml", rulebase)
    first = d.verdict_json["next_steps"][0]["text"]
    assert first.startswith("先验证参考") and "同一份预处理后的张量" in first
    reasons = [c["reason"] for c in d.verdict_json["conclusion"]]
    assert len(reasons) == 1 and reasons[0].startswith("参考（float）流程")
    fixes = [t for t in step_texts(d) if "参考流程" in t and t.startswith("先")]
    assert len(fixes) == 1
    assert len(step_texts(d)) == len(set(step_texts(d)))
    assert len([f for f in d.run.by_type("user_mismatch") if f["item"] == "reference"]) == 1
    text = summary(d)
    assert text.count("- 依据：") == 1


def test_a_reference_shown_wrong_by_several_models_is_one_reason(diagnose):
    d = diagnose({**FULL_INFO, "results": {"float": ok("abnormal"), "qat_pt": ok("normal"),
                                           "quantized_bc": ok("normal")}})
    assert d.verdict_json["stage"] == "user_side"
    (reason,) = [c["reason"] for c in d.verdict_json["conclusion"]]
    assert "qat.pt 正常" in reason
    assert d.verdict_json["next_steps"][0]["text"].startswith("先验证参考")


def test_an_unverified_reference_still_starts_with_verify_the_reference(diagnose):
    d = diagnose({**FULL_INFO, "results": {"float": ok("abnormal"), "board": ok("abnormal")}})
    assert d.verdict_json["stage"] == "undetermined"
    assert d.verdict_json["next_steps"][0]["text"].startswith("先验证参考")
    assert stages(d)[0] == "user_side"


def test_a_fix_comes_before_a_gap_on_the_chain_too(diagnose):
    # qat.pt fine, quantized.bc dropped, qat.bc never evaluated, and a confirmed checkpoint mix-up
    d = diagnose({**FULL_INFO, "results": {"qat_pt": ok("normal"), "quantized_bc": ok("abnormal")},
                  "user_checks": {"checkpoint": {"status": "mismatch", "note": "quantized.bc 来自 epoch 24"}}})
    assert d.verdict_json["stage"] == "user_side"
    texts = step_texts(d)
    assert texts[0].startswith("先修正已确认的不一致") and "epoch 24" in texts[0]
    assert texts[1].startswith("先评测 qat.bc")
    assert stages(d) == ["user_side", "export", "convert"]


# ---------------------------------------------------------------------------- B. candidates

COMPILE_ERROR = """\
symptom: "compile 报错"
platform: J6M
versions: {horizon-plugin-pytorch: "3.1.2", horizon-plugin-profiler: "3.1.2", hbdk4-compiler: "4.4.2"}
results:
  quantized_bc: {status: normal, evidence: dataset_eval}
  hbm: {failure: compile_error, message: "unsupported op: GridSample"}
"""


def test_a_compile_failure_lists_compile_with_its_check(tmp_path, rulebase, cli):
    d = diagnose_file(write_case(tmp_path, COMPILE_ERROR), rulebase)
    assert d.verdict_json["stage"] == "compile"
    # (the toolchain's support first, then the exported model and the conversion configuration)
    candidate, user_side = d.verdict_json["candidates"]
    assert candidate["stage"] == "compile" and "编译日志" in candidate["check"] and candidate["why"]
    assert user_side["stage"] == "user_side" and "转换配置" in user_side["check"]
    assert "尚无已确认的异常" not in render_markdown(d)
    proc = cli("diagnose", "case.yaml", "--format", "json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert [c["stage"] for c in json.loads(proc.stdout)["candidates"]] == ["compile", "user_side"]


VERIFIER_CLEARS = {
    "symptom": "hbm 在 x86 仿真上精度掉了",
    "platform": "J6M",
    "versions": {"horizon-plugin-pytorch": "3.1.2", "horizon-plugin-profiler": "3.1.2", "hbdk4-compiler": "4.4.2"},
    "results": {"quantized_bc": ok("normal"), "hbm": ok("abnormal")},
}


def test_a_consistent_hb_verifier_clears_compile_and_the_verdict_agrees(diagnose):
    d = diagnose({**VERIFIER_CLEARS, "artifacts": [VERIFIER_CONSISTENT]})
    assert d.verdict_json["stage"] == "board"
    assert [c["rule"] for c in d.verdict_json["conclusion"]] == ["verdict.from_chain"]
    assert "map.board.hbm" in d.run.fired_rules()
    assert stages(d) == ["board"]  # compile is cleared: not a candidate
    findings = " ".join(f["text"] for f in d.verdict_json["findings"])
    assert "compile 已排除" in findings and "编译已排除" in findings
    assert {c["id"] for c in d.verdict_json["checklist"]} >= {"preprocess", "layout", "padding"}


def test_without_the_verifier_compile_and_board_stay_open(diagnose):
    d = diagnose(VERIFIER_CLEARS)
    assert d.verdict_json["stage"] == "compile"
    assert stages(d) == ["compile", "board"]


def test_a_cleared_integration_with_an_abnormal_hbm_points_at_the_toolchain(diagnose):
    d = diagnose({**FULL_INFO, "results": {"quantized_bc": ok("normal"), "hbm_x86": ok("normal"),
                                           "hbm": ok("abnormal", "badcase")},
                  "controls": [{"variant": "model zoo 的 resnet50 .hbm", "stage": "board", "status": "normal"}]})
    assert d.verdict_json["stage"] == "compile"
    assert stages(d) == ["compile"]


def test_an_empty_case_lists_every_stage_with_the_check_that_splits_them(rulebase):
    d = diagnose_file(EXAMPLES / "empty.yaml", rulebase)
    assert d.verdict_json["stage"] == "undetermined"
    assert stages(d) == ["qat_training", "pre_export", "export", "convert", "compile", "board", "user_side"]
    assert all(c["check"] and c["why"] for c in d.verdict_json["candidates"])
    convert = next(c for c in d.verdict_json["candidates"] if c["stage"] == "convert")
    assert "quantized.bc" in convert["check"] and "一分为二" in convert["check"]
    text = summary(d)
    assert "尚无已确认的异常" not in text and "convert（`convert`）" in text


def test_an_empty_ptq_case_has_no_qat_export_stages(diagnose):
    d = diagnose({"flow": "ptq", "platform": "RDK X5", "versions": {"OE": "1.2.8"}})
    assert stages(d) == ["qat_training", "convert", "compile", "board", "user_side"]


@pytest.mark.parametrize("results,expected", [
    ({"qat_pt": ok("normal")}, ["pre_export", "export", "convert", "compile", "board", "user_side"]),
    ({"qat_pt": ok("normal"), "qat_bc": ok("normal"), "quantized_bc": ok("normal")},
     ["compile", "board", "user_side"]),
    ({"quantized_bc": ok("normal"), "hbm_x86": ok("normal")}, ["board", "user_side"]),
])
def test_normal_results_clear_their_stage_and_every_earlier_one(diagnose, results, expected):
    d = diagnose({**FULL_INFO, "results": results})
    assert d.verdict_json["stage"] == "undetermined"
    assert stages(d) == expected


def test_everything_normal_says_why_no_toolchain_stage_is_left(diagnose):
    d = diagnose({**FULL_INFO, "results": {"quantized_bc": ok("normal"), "hbm_x86": ok("normal"),
                                           "board": ok("normal")}})
    assert d.verdict_json["stage"] == "undetermined"
    assert stages(d) == ["user_side"]
    assert any("没有仍可能的工具链阶段" in f["text"] for f in d.verdict_json["findings"])
    assert d.verdict_json["warnings"] == []


DEPLOY_SIDE = ("quantized_bc", "hbm", "hbm_x86", "board")


@pytest.mark.parametrize("combo", list(itertools.product(("normal", "abnormal", None), repeat=len(DEPLOY_SIDE))))
def test_every_deploy_side_verdict_has_candidates_that_agree_with_it(diagnose, combo):
    results = {"qat_pt": ok("normal"), "qat_bc": ok("normal")}
    results.update({a: ok(s) for a, s in zip(DEPLOY_SIDE, combo) if s})
    d = diagnose({**FULL_INFO, "deployment": {"notes": "NV12"}, "results": results})
    listed = stages(d)
    assert listed, results
    assert len(listed) == len(set(listed))
    assert all(c["check"] for c in d.verdict_json["candidates"])
    if d.verdict_json["stage"] != "undetermined":
        assert d.verdict_json["stage"] in listed, (results, d.verdict_json["stage"], listed)
    if d.verdict_json["stage"] == "board":
        assert "compile" not in listed  # a verdict of board means compile was cleared


# ---------------------------------------------------------------------------- C. suspect in the user's words

@pytest.mark.parametrize("suspect,stage", [
    ("怀疑 hbdk 编译器", "compile"),
    ("hbdk", "compile"),
    ("compiler", "compile"),
    ("I suspect the hbdk4 compiler", "compile"),
    ("怀疑是板端的问题", "board"),
    ("probably the board runtime (UCP)", "board"),
    ("怀疑编译或板端", "compile"),  # board refines compile: one attribution
    ("怀疑查表转定点", "pre_export"),  # the longer spelling wins over 定点
    ("怀疑 convert 或 compile", ""),  # two unrelated stages: not guessed
])
def test_suspect_text_is_mapped_to_a_stage(diagnose, suspect, stage):
    d = diagnose({**FULL_INFO, "suspect": suspect, "results": {"board": ok("abnormal")}})
    (fact,) = [f for f in d.facts if f.type == "suspect"]
    assert fact["stage"] == stage and fact["text"] == suspect


def test_the_contracts_own_suspect_example_gives_m02(tmp_path, rulebase):
    case = write_case(tmp_path, """\
symptom: "板端精度掉"
versions: {horizon-plugin-pytorch: "3.1.2", horizon-plugin-profiler: "3.1.2", hbdk4-compiler: "4.4.2"}
results:
  board: {status: abnormal, evidence: dataset_eval}
suspect: "怀疑 hbdk 编译器"
""")
    d = diagnose_file(case, rulebase)
    assert (d.verdict_json["stage"], d.verdict_json["chain_stage"]["stage"]) == ("undetermined", "baseline")
    (m02,) = d.verdict_json["mistakes"]
    assert m02["id"] == "M02" and "怀疑 hbdk 编译器" in m02["details"][0]
    assert "怀疑 怀疑" not in m02["details"][0]


@pytest.mark.parametrize("suspect", [["怀疑是板端的问题"], "I suspect the compiler", "Probably the toolchain"])
def test_ordinary_phrasings_of_a_deployment_suspicion_give_m02(diagnose, suspect):
    d = diagnose({**FULL_INFO, "suspect": suspect, "results": {"board": ok("abnormal")}})
    assert [m["id"] for m in d.verdict_json["mistakes"]] == ["M02"], suspect


@pytest.mark.parametrize("extra", [
    {"suspect": "怀疑定点化掉点"},  # not a compile / board attribution
    {"suspect": "怀疑 hbdk 编译器", "results": {"quantized_bc": ok("normal"), "board": ok("abnormal")}},  # verified
])
def test_m02_stays_away_when_the_suspicion_is_not_premature(diagnose, extra):
    d = diagnose({**FULL_INFO, "results": {"board": ok("abnormal")}, **extra})
    assert d.verdict_json["mistakes"] == []
