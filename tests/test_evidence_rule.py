"""The evidence rule: single-frame differences alone never confirm a stage (mistake M01)."""

from __future__ import annotations

import pytest

from conftest import FULL_INFO, ok


def test_single_frame_alone_never_confirms_a_stage(diagnose):
    d = diagnose({**FULL_INFO, "results": {"qat_pt": ok("normal"), "qat_bc": ok("abnormal", "single_frame")}})
    assert d.verdict_json["stage"] == "undetermined"
    assert [m["id"] for m in d.verdict_json["mistakes"]] == ["M01"]
    assert "单帧" in d.verdict_json["mistakes"][0]["details"][0]


@pytest.mark.parametrize("evidence", ["dataset_eval", "badcase", "multi_frame_visual"])
def test_stable_evidence_confirms(diagnose, evidence):
    d = diagnose({**FULL_INFO, "results": {"qat_pt": ok("normal"), "qat_bc": ok("abnormal", evidence)}})
    assert d.verdict_json["stage"] == "export"
    assert d.verdict_json["mistakes"] == []


def test_single_frame_normal_does_not_verify_the_predecessor(diagnose):
    d = diagnose({**FULL_INFO, "results": {"qat_bc": ok("normal", "single_frame"),
                                           "quantized_bc": ok("abnormal")}})
    assert d.verdict_json["stage"] == "undetermined"
    assert [e["artifact"] for e in d.verdict_json["evaluate_next"]] == ["qat_bc"]


def test_single_frame_does_not_hide_a_confirmed_stage(diagnose):
    d = diagnose({**FULL_INFO, "results": {"qat_bc": ok("normal"), "quantized_bc": ok("abnormal"),
                                           "board": ok("abnormal", "single_frame")}})
    assert d.verdict_json["stage"] == "convert"
    assert "M01" in [m["id"] for m in d.verdict_json["mistakes"]]


def test_unspecified_evidence_counts_but_is_reported(diagnose):
    d = diagnose({**FULL_INFO, "results": {"qat_bc": {"status": "normal"}, "quantized_bc": {"status": "abnormal"}}})
    assert d.verdict_json["stage"] == "convert"
    texts = [f["text"] for f in d.verdict_json["findings"] if f["topic"] == "evidence"]
    assert len(texts) == 2 and all("未说明证据类型" in t for t in texts)
