"""The Markdown report follows KNOWLEDGE.md §11."""

from __future__ import annotations

import re

import pytest

from conftest import EXAMPLES, EXAMPLE_CASES
from j6doctor.diagnosis import diagnose_file
from j6doctor.report import render_markdown

HEADINGS = ["## 结论摘要", "## 已确认事实", "## 执行过的检查", "## 关键发现", "## 下一步建议", "## 需要保留的产物",
            "## 附录：证据链"]
CASES = [p for p in EXAMPLE_CASES if p.suffix == ".yaml"]


def _report(name, rulebase):
    return render_markdown(diagnose_file(EXAMPLES / name, rulebase))


@pytest.mark.parametrize("path", CASES, ids=[p.name for p in CASES])
def test_six_sections_in_order_then_the_appendix(path, rulebase):
    text = render_markdown(diagnose_file(path, rulebase))
    headings = re.findall(r"^## .*$", text, flags=re.M)
    assert headings == HEADINGS
    assert "\n\n\n" not in text


@pytest.mark.parametrize("name,wording", [
    ("convert_j6m.yaml", "convert"), ("pre_export_lut.yaml", "pre_export / 查表转定点"),
    ("export_hbir.yaml", "export"), ("compile_x86_and_board.yaml", "compile / 部署适配"),
    ("board_integration.yaml", "板端部署接入"), ("user_side_layout.yaml", "用户侧适配"),
    ("baseline_board_only.yaml", "暂不能判断"), ("qat_training.yaml", "非一致性问题（训练侧精度）"),
    ("empty.yaml", "暂不能判断"),
])
def test_summary_names_the_stage_in_contract_wording(name, wording, rulebase):
    text = _report(name, rulebase)
    summary = text.split("## 已确认事实")[0]
    assert f"当前最可能阶段：**{wording}**" in summary


def test_undetermined_lists_fewest_inputs(rulebase):
    text = _report("gap_qat_bc_unverified.yaml", rulebase)
    summary = text.split("## 已确认事实")[0]
    assert "暂不能判断" in summary and "评测 qat.bc" in summary
    assert "不猜测根因" in summary


def test_deployment_report_marks_quantanalysis_not_applicable_and_lists_checklist(rulebase):
    text = _report("compile_x86_and_board.yaml", rulebase)
    findings = text.split("## 关键发现")[1].split("## 下一步建议")[0]
    assert "QuantAnalysis 产出物摘要：不适用" in findings
    assert "排除了板端独有因素" in findings
    checks = text.split("## 执行过的检查")[1].split("## 关键发现")[0]
    for label in ("输入预处理", "layout", "量化输入 scale", "前后处理", "padding / 对齐"):
        assert f"| {label} |" in checks


def test_next_steps_and_retain_follow_the_stage(rulebase):
    text = _report("convert_j6m.yaml", rulebase)
    steps = text.split("## 下一步建议")[1].split("## 需要保留的产物")[0]
    assert steps.startswith('\n- 最小可验证动作：QuantAnalysis(qat_bc, quantized_bc, "convert")')
    assert "level 0 → level 1 → level 2" in steps
    retain = text.split("## 需要保留的产物")[1]
    assert "qat.bc、quantized.bc、qat.export.pt" in retain and "bc_editor" in retain


def test_mistakes_are_reported_with_correct_practice(rulebase):
    text = _report("single_frame_only.yaml", rulebase)
    assert "常见误区 M01" in text and "正确做法：用数据集精度" in text


def test_facts_section(rulebase):
    text = _report("convert_j6m.yaml", rulebase)
    facts = text.split("## 已确认事实")[1].split("## 执行过的检查")[0]
    assert "quantized.bc：异常（数据集评测指标；mAP = 36.0）" in facts  # as the case wrote it (36.0), not as an int
    assert "J6M" in facts and "hbdk4-compiler 4.4.2" in facts and "稳定可复现" in facts
