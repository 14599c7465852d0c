"""The bundled example cases (examples/cases/) give the stage their comment promises."""

from __future__ import annotations

import pytest

from conftest import EXAMPLES, EXAMPLE_CASES
from j6doctor.diagnosis import diagnose_file

EXPECTED = {
    "convert_j6m.yaml": ("convert", []),
    "convert_j6m.json": ("convert", []),
    "export_qat_bc_abnormal.yaml": ("export", []),
    "pre_export_lut.yaml": ("pre_export", []),
    "export_hbir.yaml": ("export", []),
    "compile_x86_and_board.yaml": ("compile", []),
    "board_integration.yaml": ("board", []),
    "user_side_layout.yaml": ("user_side", []),
    "baseline_board_only.yaml": ("undetermined", ["stage_results", "versions", "deploy_adaptation"]),
    "qat_training.yaml": ("qat_training", []),
    "single_frame_only.yaml": ("undetermined", ["stage_results", "badcase", "versions"]),
    "contradictory.yaml": ("undetermined", ["stage_results"]),
    "gap_qat_bc_unverified.yaml": ("undetermined", ["stage_results"]),
    "empty.yaml": ("undetermined", ["stage_results", "badcase", "platform", "versions"]),
    # real-world reports (issue 9)
    "ptq_x5_quantized_drop.yaml": ("convert", []),
    "s100_board_runtime_versions.yaml": ("board", []),
    "board_load_error.yaml": ("user_side", []),
    "free_text_only_mismatch.yaml": ("user_side", ["badcase"]),  # x86 normal, board abnormal: no gap
    "broken_reference.yaml": ("user_side", ["stage_results", "badcase", "deploy_adaptation"]),
    "board_vendor_reproduced.yaml": ("compile", []),
    # the evaluation loop (issue 31): two recorded next steps name the stage (tests/test_api.py)
    "record_loop.yaml": ("undetermined", ["stage_results"]),
}


def test_every_bundled_case_is_listed():
    assert sorted(p.name for p in EXAMPLE_CASES) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_bundled_case(name, rulebase):
    stage, missing = EXPECTED[name]
    d = diagnose_file(EXAMPLES / name, rulebase)
    assert (d.verdict_json["stage"], d.verdict_json["missing"]) == (stage, missing)
