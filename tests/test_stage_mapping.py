"""Every row of the phenomenon → stage table (KNOWLEDGE.md §2), the implied rows, and gaps."""

from __future__ import annotations

import pytest

from conftest import FULL_INFO, ok

# Each row of the table is checked from its own cells in tests/test_decision_tables.py
# (test_each_stage_table_row_concludes_its_stage_from_its_own_cells); here: how rows combine.


def test_earliest_abnormal_wins(diagnose):
    d = diagnose({**FULL_INFO, "results": {
        "qat_pt": ok("normal"), "qat_export_pt": ok("normal"), "qat_bc": ok("abnormal"),
        "quantized_bc": ok("abnormal"), "hbm_x86": ok("abnormal"), "board": ok("abnormal")}})
    assert d.verdict_json["stage"] == "export"


@pytest.mark.parametrize("results,evaluate", [
    ({"qat_export_pt": ok("abnormal")}, "qat_pt"),
    ({"qat_bc": ok("abnormal")}, "qat_pt"),
    ({"qat_pt": ok("normal"), "quantized_bc": ok("abnormal")}, "qat_bc"),
    ({"qat_pt": ok("normal"), "qat_export_pt": ok("normal"), "quantized_bc": ok("abnormal")}, "qat_bc"),
    ({"hbm": ok("abnormal")}, "quantized_bc"),
    ({"qat_bc": ok("normal"), "hbm_x86": ok("abnormal")}, "quantized_bc"),
])
def test_gap_gives_undetermined_and_artifact_to_evaluate(diagnose, results, evaluate):
    d = diagnose({**FULL_INFO, "results": results})
    assert d.verdict_json["stage"] == "undetermined"
    assert [e["artifact"] for e in d.verdict_json["evaluate_next"]] == [evaluate]
    assert "stage_results" in d.verdict_json["missing"]
    # (基线确认 opens with its own first step: verify quantized.bc)
    assert d.verdict_json["next_steps"][0]["text"].startswith("先评测") or \
        d.verdict_json["chain_stage"]["stage"] == "baseline"


@pytest.mark.parametrize("results", [
    {"qat_pt": ok("normal"), "qat_bc": ok("abnormal"), "quantized_bc": ok("normal")},
    {"qat_export_pt": ok("abnormal"), "qat_bc": ok("normal")},
    {"qat_pt": ok("abnormal"), "board": ok("normal")},
    {"quantized_bc": ok("normal"), "hbm_x86": ok("abnormal"), "board": ok("normal")},
    {"quantized_bc": ok("normal"), "hbm": ok("normal"), "hbm_x86": ok("abnormal"), "board": ok("abnormal")},
    {"quantized_bc": ok("normal"), "hbm": ok("abnormal"), "hbm_x86": ok("normal"), "board": ok("normal")},
])
def test_contradictory_results_are_undetermined_with_warning(diagnose, results):
    d = diagnose({**FULL_INFO, "results": results})
    assert d.verdict_json["stage"] == "undetermined"
    assert any("矛盾" in w for w in d.verdict_json["warnings"])
    assert "stage_results" in d.verdict_json["missing"]


def test_all_normal_is_undetermined(diagnose):
    d = diagnose({**FULL_INFO, "results": {"qat_pt": ok("normal"), "qat_bc": ok("normal"),
                                           "quantized_bc": ok("normal")}})
    assert d.verdict_json["stage"] == "undetermined"
    assert d.verdict_json["warnings"] == []


def test_float_abnormal_blames_the_reference_not_a_toolchain_stage(diagnose):
    # float wrong while qat.bc is fine: the reference pipeline is what is wrong
    d = diagnose({**FULL_INFO, "results": {"float": ok("abnormal"), "qat_bc": ok("normal"),
                                           "quantized_bc": ok("abnormal")}})
    assert d.verdict_json["stage"] == "user_side"
    assert d.verdict_json["chain_stage"]["stage"] == "convert"  # still shown, for after the fix
    assert "参考流程" in d.verdict_json["conclusion"][0]["reason"]
    # float wrong and nothing shows the pipeline is: verify the reference first
    alone = diagnose({**FULL_INFO, "results": {"float": ok("abnormal"), "board": ok("abnormal")}})
    assert alone.verdict_json["stage"] == "undetermined"
    assert alone.verdict_json["next_steps"][0]["text"].startswith("先验证参考")
    assert alone.verdict_json["candidates"][0]["stage"] == "user_side"


def test_user_side_from_confirmed_checklist_mismatch(diagnose):
    d = diagnose({**FULL_INFO, "results": {"quantized_bc": ok("normal"), "board": ok("abnormal")},
                  "deployment": {"checklist": {"padding": {"status": "mismatch", "note": "板端 pad 到 640"}}}})
    assert d.verdict_json["stage"] == "user_side"
    assert "padding" in d.verdict_json["next_steps"][0]["text"] or "pad" in d.verdict_json["next_steps"][0]["text"]
    assert [c["id"] for c in d.verdict_json["checklist"]] == ["preprocess", "layout", "input_scale", "io_nodes", "padding"]
    assert {c["id"]: c["status"] for c in d.verdict_json["checklist"]}["padding"] == "mismatch"


def test_confirmed_checklist_mismatch_is_never_dropped(diagnose):
    # a confirmed mismatch wins whatever the chain says; the chain's stage stays for after the fix
    d = diagnose({**FULL_INFO, "results": {"qat_bc": ok("normal"), "quantized_bc": ok("abnormal")},
                  "deployment": {"checklist": {"layout": {"status": "mismatch"}}}})
    assert d.verdict_json["stage"] == "user_side"
    assert d.verdict_json["chain_stage"]["stage"] == "convert"
    assert {c["id"]: c["status"] for c in d.verdict_json["checklist"]}["layout"] == "mismatch"
    assert [c["stage"] for c in d.verdict_json["candidates"]] == ["user_side", "convert"]
    for results in ({"board": ok("abnormal")}, {}):  # baseline and undetermined chains too
        other = diagnose({**FULL_INFO, "results": results,
                          "deployment": {"checklist": {"padding": {"status": "mismatch", "note": "stride"}}}})
        assert other.verdict_json["stage"] == "user_side"
        assert {c["id"]: c["status"] for c in other.verdict_json["checklist"]}["padding"] == "mismatch"


@pytest.mark.parametrize("stage", ["compile", "board"])
def test_deployment_verdicts_list_all_five_checklist_items(diagnose, stage):
    results = {"quantized_bc": ok("normal"), "hbm_x86": ok("abnormal" if stage == "compile" else "normal"),
               "board": ok("abnormal")}
    d = diagnose({**FULL_INFO, "results": results})
    assert d.verdict_json["stage"] == stage
    assert [(c["id"], c["status"]) for c in d.verdict_json["checklist"]] == [
        (i, "unchecked") for i in ("preprocess", "layout", "input_scale", "io_nodes", "padding")]


def test_x86_vs_board_inference_is_stated(diagnose):
    both = diagnose({**FULL_INFO, "results": {"quantized_bc": ok("normal"), "hbm_x86": ok("abnormal"),
                                              "board": ok("abnormal")}})
    texts = " ".join(f["text"] for f in both.verdict_json["findings"])
    assert "排除了板端独有因素" in texts
    board = diagnose({**FULL_INFO, "results": {"quantized_bc": ok("normal"), "hbm_x86": ok("normal"),
                                               "board": ok("abnormal")}})
    assert "板端部署接入" in " ".join(f["text"] for f in board.verdict_json["findings"])


def test_every_contract_stage_is_reachable(diagnose):
    cases = {
        "pre_export": {"qat_pt": ok("normal"), "qat_export_pt": ok("abnormal")},
        "export": {"qat_pt": ok("normal"), "qat_bc": ok("abnormal")},
        "convert": {"qat_bc": ok("normal"), "quantized_bc": ok("abnormal")},
        "compile": {"quantized_bc": ok("normal"), "hbm_x86": ok("abnormal")},
        "board": {"quantized_bc": ok("normal"), "hbm_x86": ok("normal"), "board": ok("abnormal")},
        "qat_training": {"qat_pt": ok("abnormal")},
        "undetermined": {},
    }
    for stage, results in cases.items():
        assert diagnose({**FULL_INFO, "results": results}).verdict_json["stage"] == stage
    # 基线确认 is where the chain stops when the board goes wrong before quantized.bc is
    # verified; the verdict then names no stage yet (the real reports' expert labels)
    pending = diagnose({**FULL_INFO, "results": {"board": ok("abnormal")}}).verdict_json
    assert (pending["stage"], pending["chain_stage"]["stage"]) == ("undetermined", "baseline")
    user = diagnose({**FULL_INFO, "results": cases["board"],
                     "deployment": {"checklist": {"layout": {"status": "mismatch"}}}})
    assert user.verdict_json["stage"] == "user_side"


def test_export_asks_for_qat_export_pt_first_and_keeps_pre_export_open(diagnose):
    """Table row 1: qat.pt normal, qat.bc abnormal → export, but first check whether
    qat.export.pt is already abnormal (pre_export / LUT-to-fixed-point)."""
    d = diagnose({**FULL_INFO, "results": {"qat_pt": ok("normal"), "qat_bc": ok("abnormal")}})
    verdict = d.verdict_json
    assert verdict["stage"] == "export"
    assert [c["stage"] for c in verdict["candidates"]] == ["export", "pre_export"]
    assert [e["artifact"] for e in verdict["evaluate_next"]] == ["qat_export_pt"]
    known = diagnose({**FULL_INFO, "results": {"qat_pt": ok("normal"), "qat_export_pt": ok("normal"),
                                                "qat_bc": ok("abnormal")}}).verdict_json
    assert [c["stage"] for c in known["candidates"]] == ["export"] and known["evaluate_next"] == []
