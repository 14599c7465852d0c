"""The rest of the seed's procedure as rules: step 0 user-side checks, the fake-quant-off
diagnostic, the deployment checklist, ConsistencyStrategy and the common mistakes."""

from __future__ import annotations

import pytest

from conftest import FULL_INFO, ok
from j6doctor.report import render_markdown
from j6doctor.rules import BUNDLED_RULES_DIR

CONVERT = {"qat_bc": ok("normal"), "quantized_bc": ok("abnormal")}
EXPORT = {"qat_pt": ok("normal"), "qat_bc": ok("abnormal")}
BOARD = {"quantized_bc": ok("normal"), "hbm_x86": ok("normal"), "board": ok("abnormal")}
SCRIPTS = BUNDLED_RULES_DIR / "fixtures" / "scripts"


def steps(d):
    return [s["text"] for s in d.verdict_json["next_steps"]]


def mistakes(d):
    return [m["id"] for m in d.verdict_json["mistakes"]]


# ------------------------------------------------------------------ step 0

def test_step0_mismatch_makes_user_side_before_anything_else(diagnose):
    d = diagnose({**FULL_INFO, "results": CONVERT,
                  "user_checks": {"march": {"status": "mismatch", "note": "convert 用了 nash-e"}}})
    assert d.verdict_json["stage"] == "user_side"
    assert d.verdict_json["conclusion"][0]["reason"] == "march / 平台：step 0 检查已确认不一致（convert 用了 nash-e）"
    assert steps(d)[0].startswith("先修正已确认的不一致（march / 平台：step 0 检查")
    assert d.verdict_json["chain_stage"] == {"stage": "convert", "label": "convert"}  # shown for after the fix
    assert d.verdict_json["checklist"] == []  # not caused by deployment: no deployment checklist
    assert any("QuantAnalysis(qat_bc, quantized_bc" in s for s in steps(d))  # the convert procedure follows


def test_step0_all_ok_keeps_the_chain_stage_and_drops_the_reminder(diagnose):
    checks = {item: {"status": "ok"} for item in ("model_version", "checkpoint", "qconfig", "march")}
    d = diagnose({**FULL_INFO, "results": CONVERT, "user_checks": checks})
    assert d.verdict_json["stage"] == "convert"
    assert not any("先排除明显用户侧问题" in s for s in steps(d))
    reminded = diagnose({**FULL_INFO, "results": CONVERT})
    assert any("先排除明显用户侧问题（step 0）" in s for s in steps(reminded))


@pytest.mark.parametrize("bc_flow,float_check,finding,mistake,step", [
    ("inconsistent", None, None, [], "FakeQuantState._FLOAT"),
    ("inconsistent", "consistent", "差异来自伪量化状态", ["M04"], "set_fake_quantize(model, FakeQuantState.VALIDATION)"),
    (None, "inconsistent", "继续逐层对比", [], 'QuantAnalysis(qat_export_pt, qat_bc, "export")'),
    ("consistent", None, "bc 推理流程本身正常", [], None),
])
def test_fake_quant_off_diagnostic_outcomes(diagnose, bc_flow, float_check, finding, mistake, step):
    case = {**FULL_INFO, "results": EXPORT}
    if bc_flow:
        case["bc_flow_check"] = bc_flow
    if float_check:
        case["fake_quant_off_check"] = {"outcome": float_check, "note": "CPU 上 200 张图"}
    d = diagnose(case)
    assert d.verdict_json["stage"] == "export"
    texts = " ".join(f["text"] for f in d.verdict_json["findings"])
    if finding:
        assert finding in texts
    assert mistakes(d) == mistake
    if step:
        assert any(step in s for s in steps(d)), steps(d)


# ------------------------------------------------------------------ deployment checklist

def test_checklist_always_lists_five_items_with_notes(diagnose):
    d = diagnose({**FULL_INFO, "results": BOARD, "deployment": {"notes": "NV12", "checklist": {
        "preprocess": {"status": "ok"}, "padding": {"status": "unchecked", "note": "还没看"}}}})
    assert [(c["id"], c["status"], c["note"]) for c in d.verdict_json["checklist"]] == [
        ("preprocess", "ok", ""), ("layout", "unchecked", ""), ("input_scale", "unchecked", ""),
        ("io_nodes", "unchecked", ""), ("padding", "unchecked", "还没看")]
    text = render_markdown(d)
    assert "| padding / 对齐 | 模型输入 padding 与训练一致 | 未检查 | 还没看 |" in text
    assert any("检查 compile 配置、输入输出定义、插入节点、删除首尾节点" in s for s in steps(d))


def test_mismatch_on_compile_is_user_side_with_checklist(diagnose):
    d = diagnose({**FULL_INFO, "results": {"quantized_bc": ok("normal"), "hbm_x86": ok("abnormal")},
                  "deployment": {"checklist": {"input_scale": {"status": "mismatch", "note": "板端 scale 1/128"}}}})
    assert d.verdict_json["stage"] == "user_side"
    assert {c["id"]: c["status"] for c in d.verdict_json["checklist"]}["input_scale"] == "mismatch"
    slots = {k["slot"]: k["text"] for k in d.verdict_json["key_findings"]}
    assert slots["qa_summary"].startswith("不适用")


@pytest.mark.parametrize("extra,expected", [
    ({"tried": ["用 QuantAnalysis 比较 quantized.bc 与 hbm"]}, ["M10"]),
    ({"scripts": [str(SCRIPTS / "correct_flow.py")]}, ["M10"]),
    ({}, []),
])
def test_quant_analysis_on_deployment_is_M10(diagnose, extra, expected):
    d = diagnose({**FULL_INFO, "results": BOARD, "deployment": {"notes": "x"}, **extra})
    assert d.verdict_json["stage"] == "board" and mistakes(d) == expected


# ------------------------------------------------------------------ ConsistencyStrategy

@pytest.mark.parametrize("platform,results,expected", [
    ("J6M", CONVERT, True), ("nash-e", CONVERT, True), ("J6P", CONVERT, False), ("J6H", CONVERT, False),
    ("J6M", {"qat_pt": ok("normal"), "qat_export_pt": ok("abnormal")}, False),
    ("J6M", EXPORT, False),
])
def test_strategy_only_for_convert_on_j6em(diagnose, platform, results, expected):
    d = diagnose({**FULL_INFO, "platform": platform, "results": results})
    assert any("ConsistencyStrategy" in s and "level 0 → level 1 → level 2" in s for s in steps(d)) == expected


def test_strategy_for_deployment_deviation_on_j6em(diagnose):
    d = diagnose({**FULL_INFO, "results": BOARD, "deployment": {"notes": "x"}})
    assert any("部署侧排查清单全部排除后" in s for s in steps(d))


@pytest.mark.parametrize("levels,retrained,expected_step,expected_mistakes", [
    ([0], None, "评估 level 1", []),
    ([0, 1], True, "评估 level 2", []),
    ([0, 1, 2], True, "策略已用尽", []),
    ([2], True, None, ["M07"]),
    ([0, 1], False, "评估 level 2", ["M11"]),
])
def test_strategy_progression_and_mistakes(diagnose, levels, retrained, expected_step, expected_mistakes):
    strategy = {"levels": levels}
    if retrained is not None:
        strategy["retrained"] = retrained
    d = diagnose({**FULL_INFO, "results": CONVERT, "consistency_strategy": strategy})
    if expected_step:
        assert any(expected_step in s for s in steps(d)), steps(d)
    assert mistakes(d) == expected_mistakes


def test_strategy_on_pre_export_is_M08(diagnose):
    d = diagnose({**FULL_INFO, "results": {"qat_pt": ok("normal"), "qat_export_pt": ok("abnormal")},
                  "consistency_strategy": {"levels": [0]}})
    assert d.verdict_json["stage"] == "pre_export" and mistakes(d) == ["M08"]
    assert any("ConsistencyStrategy）对 pre_export 查表转定点问题没有直接帮助" in s for s in steps(d))


@pytest.mark.parametrize("case,warning", [
    ({"versions": {"hbdk4-compiler": "4.4.1", "horizon-plugin-pytorch": "3.1.2", "horizon-plugin-profiler": "3.1.2"}},
     "hbdk4-compiler 4.4.1 低于 ConsistencyStrategy 的前提 4.4.2"),
    ({"consistency_strategy": {"levels": [0], "set_before_prepare": False}}, "必须在 prepare 之前设置"),
    ({"platform": "J6P", "consistency_strategy": {"levels": [0]}}, "只在 J6E / J6M 上作为首选"),
])
def test_strategy_guards(diagnose, case, warning):
    d = diagnose({**FULL_INFO, "results": CONVERT, **case})
    assert any(warning in w for w in d.verdict_json["warnings"]), d.verdict_json["warnings"]


def test_versions_at_the_prerequisite_raise_nothing(diagnose):
    d = diagnose({**FULL_INFO, "results": CONVERT})  # hbdk4 4.4.2, plugin 3.1.2
    assert d.verdict_json["warnings"] == []
    assert not any(f["topic"] == "consistency_strategy" for f in d.verdict_json["findings"])


def test_split_run_when_input_formats_differ(diagnose):
    d = diagnose({**FULL_INFO, "results": CONVERT, "input_formats_differ": True})
    assert any("run(run_baseline_model=True, run_analysis_model=False)" in s for s in steps(d))


# ------------------------------------------------------------------ every mistake id is reachable

MISTAKE_CASES = {
    "M01": {"results": {"qat_pt": ok("normal"), "qat_bc": ok("abnormal", "single_frame")}},
    "M02": {"results": {"board": ok("abnormal")}, "tried": ["换了 hbdk 版本重新编译 hbm"]},
    "M03": {"results": EXPORT, "scripts": [str(SCRIPTS / "export_compare_qat_pt.py")]},
    "M04": {"results": EXPORT, "scripts": [str(SCRIPTS / "float_state_export.py")]},
    "M05": {"results": CONVERT, "input_formats_differ": True, "scripts": [str(SCRIPTS / "single_run_convert.py")]},
    "M06": {"results": CONVERT, "artifacts": [str(BUNDLED_RULES_DIR / "fixtures" / "worst_downstream")]},
    "M07": {"results": CONVERT, "consistency_strategy": {"levels": [2], "retrained": True}},
    "M08": {"results": {"qat_pt": ok("normal"), "qat_export_pt": ok("abnormal")},
            "consistency_strategy": {"levels": [0]}},
    "M09": {"results": CONVERT, "scripts": [str(SCRIPTS / "compare_only.py")]},
    "M10": {"results": BOARD, "tried": ["QuantAnalysis 对比 hbm"]},
    "M11": {"results": CONVERT, "consistency_strategy": {"levels": [1], "retrained": False}},
}


@pytest.mark.parametrize("code", sorted(MISTAKE_CASES))
def test_every_mistake_is_reported_with_correct_practice(diagnose, code):
    d = diagnose({**FULL_INFO, **MISTAKE_CASES[code]})
    entry = next(m for m in d.verdict_json["mistakes"] if m["id"] == code)
    assert entry["instead"] and entry["details"]
    assert f"常见误区 {code}：" in render_markdown(d)
