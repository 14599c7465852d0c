"""Artifact presence: which files are found, their kind, size and sha256; the user's files untouched."""

from __future__ import annotations

import hashlib

import pytest

from j6doctor.probes.artifacts import classify, find_artifacts


@pytest.mark.parametrize("name,kind", [
    ("qat.pt", "qat_pt"), ("model_qat.pt", "qat_pt"), ("qat.export.pt", "qat_export_pt"),
    ("qat_export.pt", "qat_export_pt"), ("qat.bc", "qat_bc"), ("quantized.bc", "quantized_bc"),
    ("model_int.bc", "quantized_bc"), ("qat_modified.bc", None), ("model.hbm", "hbm"),
    ("model_check_result.txt", "model_check_result"), ("fx_graph.txt", "fx_graph"),
    ("compare_per_layer_out.txt", "compare_per_layer_txt"), ("compare_per_layer_out.csv", "compare_per_layer_csv"),
    ("output_cls_score_Cosine_sensitive_ops.txt", "sensitivity_txt"),
    ("output_0-0_dataindex_1_sensitive_ops.pt", "sensitivity_pt"), ("sensitive_ops.txt", "sensitivity_txt"),
    ("badcase.txt", "badcase_txt"), ("badcase.pt", "badcase_pt"), ("all_badcase_info.pt", "all_badcase_info"),
    ("abnormal_layer_advisor.txt", "abnormal_layer_advisor"), ("statistic.txt", "statistic"),
    ("compile_config.yaml", "compile_config"), ("bc_editor_config.json", "bc_editor_config"),
    ("float.pt", None), ("notes.txt", None), ("README.md", None),
])
def test_classify(name, kind):
    assert classify(name) == kind


def test_scan_records_size_and_sha256(tmp_path):
    qa = tmp_path / "qa_convert"
    qa.mkdir()
    (qa / "compare_per_layer_out.csv").write_text("mod_name\n", encoding="utf-8")
    (qa / "notes.txt").write_text("ignored", encoding="utf-8")
    (tmp_path / "model.hbm").write_bytes(b"\x01\x02hbm")
    hidden = tmp_path / ".git"
    hidden.mkdir()
    (hidden / "badcase.txt").write_text("x", encoding="utf-8")
    before = {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*") if p.is_file()}
    found, problems = find_artifacts([tmp_path, tmp_path / "missing_dir"], tmp_path)
    assert [(f.display, f.kind, f.size) for f in found] == [
        ("model.hbm", "hbm", 5), ("qa_convert/compare_per_layer_out.csv", "compare_per_layer_csv", 9)]
    assert found[0].sha256 == hashlib.sha256(b"\x01\x02hbm").hexdigest()
    assert problems == [("missing_dir", "no such file or folder")]
    assert {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*") if p.is_file()} == before


def test_same_file_given_twice_is_listed_once(tmp_path):
    (tmp_path / "badcase.txt").write_text("x", encoding="utf-8")
    found, _ = find_artifacts([tmp_path, tmp_path / "badcase.txt"], tmp_path)
    assert len(found) == 1
