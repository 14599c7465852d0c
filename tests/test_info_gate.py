"""The info gate (KNOWLEDGE.md §1): `missing` lists what would change the next judgement, in contract order."""

from __future__ import annotations

import pytest

from conftest import FULL_INFO, ok

CONVERT = {"qat_bc": ok("normal"), "quantized_bc": ok("abnormal")}
BOARD = {"quantized_bc": ok("normal"), "hbm_x86": ok("normal"), "board": ok("abnormal")}
# Seen on a few frames, not on a dataset: a dataset evaluation would itself satisfy the
# badcase item (its wording is "badcase 或可复现实验数据集").
CONVERT_VISUAL = {"qat_bc": ok("normal", "multi_frame_visual"), "quantized_bc": ok("abnormal", "multi_frame_visual")}
BOARD_VISUAL = {k: ok(v["status"], "multi_frame_visual") for k, v in BOARD.items()}


def test_empty_case_lists_stage_results_badcase_platform_versions(diagnose):
    d = diagnose({})
    assert d.verdict_json["stage"] == "undetermined"
    assert d.verdict_json["missing"] == ["stage_results", "badcase", "platform", "versions"]


def test_full_information_leaves_nothing_missing(diagnose):
    assert diagnose({**FULL_INFO, "results": CONVERT}).verdict_json["missing"] == []


@pytest.mark.parametrize("drop,item", [
    ("platform", "platform"), ("versions", "versions"), ("badcase", "badcase"),
])
def test_each_required_item(diagnose, drop, item):
    case = {k: v for k, v in FULL_INFO.items() if k != drop}
    d = diagnose({**case, "results": CONVERT_VISUAL})
    assert d.verdict_json["missing"] == [item]


def test_badcase_not_reproducible_is_missing(diagnose):
    d = diagnose({**FULL_INFO, "badcase": {"reproducible": False}, "results": CONVERT_VISUAL})
    assert d.verdict_json["missing"] == ["badcase"]


def test_dataset_evaluation_satisfies_the_badcase_item(diagnose):
    d = diagnose({**FULL_INFO, "badcase": {"reproducible": False}, "results": CONVERT})
    assert d.verdict_json["missing"] == []


def test_one_missing_package_is_named(diagnose):
    d = diagnose({**FULL_INFO, "versions": {"horizon-plugin-pytorch": "3.1.2", "horizon-plugin-profiler": "3.1.2"},
                  "results": CONVERT})
    assert d.verdict_json["missing"] == ["versions"]
    assert d.verdict_json["missing_detail"][0]["details"] == ["缺 hbdk4-compiler"]


def test_profiler_version_is_not_needed_for_deployment_stages(diagnose):
    d = diagnose({**FULL_INFO, "versions": {"horizon-plugin-pytorch": "3.1.2", "hbdk4-compiler": "4.4.2"},
                  "deployment": {"notes": "NV12"}, "results": BOARD})
    assert d.verdict_json["stage"] == "board"
    assert d.verdict_json["missing"] == []


def test_symptom_missing_when_results_describe_nothing(diagnose):
    case = {k: v for k, v in FULL_INFO.items() if k != "symptom"}
    d = diagnose({**case, "results": {"qat_bc": {"status": "normal"}, "quantized_bc": {"status": "abnormal"}}})
    assert d.verdict_json["missing"] == ["symptom"]
    described = diagnose({**case, "results": {"qat_bc": ok("normal"), "quantized_bc": ok("abnormal")}})
    assert described.verdict_json["missing"] == []


@pytest.mark.parametrize("results", [BOARD, {"quantized_bc": ok("normal"), "hbm_x86": ok("abnormal")}])
def test_deploy_adaptation_required_for_compile_and_board(diagnose, results):
    d = diagnose({**FULL_INFO, "results": results})
    assert d.verdict_json["missing"] == ["deploy_adaptation"]
    noted = diagnose({**FULL_INFO, "results": results, "deployment": {"notes": "NV12 输入"}})
    assert noted.verdict_json["missing"] == []
    checked = diagnose({**FULL_INFO, "results": results,
                        "deployment": {"checklist": {"preprocess": {"status": "ok"}}}})
    assert checked.verdict_json["missing"] == []


def test_deploy_adaptation_not_asked_before_deployment(diagnose):
    assert "deploy_adaptation" not in diagnose({**FULL_INFO, "results": CONVERT}).verdict_json["missing"]


def test_missing_follows_contract_order(diagnose):
    d = diagnose({"results": BOARD_VISUAL})
    assert d.verdict_json["missing"] == ["badcase", "platform", "versions", "deploy_adaptation"]


def test_qat_training_needs_no_gate_item(diagnose):
    assert diagnose({"results": {"qat_pt": ok("abnormal")}}).verdict_json["missing"] == []
