"""Artifact discovery: files identified by content (names are a hint), their size and
sha256, hidden folders scanned, bounds reported; the user's files untouched."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

from j6doctor.probes import artifacts
from j6doctor.probes.artifacts import find_artifacts, identify

FORMATS = Path(__file__).parent / "fixtures" / "formats"
ZIP = b"PK\x03\x04" + b"\x00" * 20  # a torch.save zip archive starts like this


@pytest.mark.parametrize("name,head,kind", [
    ("qat.pt", ZIP, "qat_pt"), ("model_qat.pt", ZIP, "qat_pt"), ("qat.export.pt", ZIP, "qat_export_pt"),
    ("qat_export.pt", ZIP, "qat_export_pt"), ("qat.bc", b"ML\xefR", "qat_bc"),
    ("quantized.bc", b"ML\xefR", "quantized_bc"), ("model_int.bc", b"ML\xefR", "quantized_bc"),
    ("qat_modified.bc", b"ML\xefR", "edited_bc"), ("model.hbm", b"\x01\x02", "hbm"),
    ("output_0-0_dataindex_1_sensitive_ops.pt", ZIP, "sensitivity_pt"), ("badcase.pt", ZIP, "badcase_pt"),
    ("all_badcase_info.pt", ZIP, "all_badcase_info"), ("compile_config.yaml", b"march: nash-m\n", "compile_config"),
    ("float.pt", ZIP, None), ("notes.txt", b"nothing here\n", None), ("README.md", b"# readme\n", None),
])
def test_identify_by_name_when_the_content_has_no_signature(name, head, kind):
    assert identify(name, head)[0] == kind


@pytest.mark.parametrize("fixture,kind", [
    ("prepare/model_check_result.txt", "model_check_result"),
    ("prepare/fx_graph.txt", "fx_graph"),
    ("horizon_quant_analysis/compare_per_layer_out.txt", "compare_per_layer_txt"),
    ("horizon_quant_analysis/compare_per_layer_out.csv", "compare_per_layer_csv"),
    ("horizon_quant_analysis/output_bbox_pred_L1_sensitive_ops.txt", "sensitivity_txt"),
    ("horizon_quant_analysis/badcase.txt", "badcase_txt"),
    ("horizon_quant_analysis/abnormal_layer_advisor.txt", "abnormal_layer_advisor"),
    ("horizon_quant_analysis/analysis_model/statistic.txt", "statistic"),
    ("variants/model_check_result.old_embedded_graph.txt", "model_check_result"),
])
def test_identify_by_content_under_any_name(fixture, kind):
    head = (FORMATS / fixture).read_bytes()[:artifacts.HEAD_BYTES]
    assert identify(Path(fixture).name, head) == (kind, "content")
    assert identify("pasted_from_ticket_42.txt", head) == (kind, "content")  # renamed: still found
    assert identify("stuff.log", head.replace(b"\n", b"\r\n")) == (kind, "content")  # CRLF


def test_content_wins_over_a_misleading_name():
    head = (FORMATS / "horizon_quant_analysis" / "badcase.txt").read_bytes()
    assert identify("model_check_result.txt", head) == ("badcase_txt", "content")


def test_scan_records_size_sha256_and_how_each_file_was_identified(tmp_path):
    qa = tmp_path / "qa_convert"
    qa.mkdir()
    shutil.copy(FORMATS / "horizon_quant_analysis" / "compare_per_layer_out.csv", qa / "convert_layers.csv")
    (qa / "notes.txt").write_text("ignored", encoding="utf-8")
    (tmp_path / "model.hbm").write_bytes(b"\x01\x02hbm")
    git = tmp_path / ".git"
    git.mkdir()
    (git / "badcase.txt").write_text("x", encoding="utf-8")
    before = {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*") if p.is_file()}
    found, problems, summaries = find_artifacts([tmp_path, tmp_path / "missing_dir"], tmp_path)
    assert [(f.display, f.kind, f.by) for f in found] == [
        ("model.hbm", "hbm", "name"), ("qa_convert/convert_layers.csv", "compare_per_layer_csv", "content")]
    assert found[0].size == 5 and found[0].sha256 == hashlib.sha256(b"\x01\x02hbm").hexdigest()
    assert problems == [("missing_dir", "no such file or folder")]
    (summary,) = summaries
    assert (summary.files, summary.recognised, summary.unrecognised) == (3, 2, ["qa_convert/notes.txt"])
    assert {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*") if p.is_file()} == before


def test_hidden_folders_are_scanned(tmp_path):
    checks = tmp_path / ".model_check_results"
    checks.mkdir()
    shutil.copy(FORMATS / "prepare" / "model_check_result.txt", checks / "model_check_result_261101_0942_31337.txt")
    found, _, _ = find_artifacts([tmp_path], tmp_path)
    assert [(f.display, f.kind) for f in found] == [
        (".model_check_results/model_check_result_261101_0942_31337.txt", "model_check_result")]


def test_same_file_given_twice_is_listed_once(tmp_path):
    shutil.copy(FORMATS / "horizon_quant_analysis" / "badcase.txt", tmp_path / "badcase.txt")
    found, _, _ = find_artifacts([tmp_path, tmp_path / "badcase.txt"], tmp_path)
    assert len(found) == 1


def test_scan_bounds_are_reported(tmp_path, monkeypatch):
    for i in range(5):
        (tmp_path / f"n{i}.txt").write_text("x", encoding="utf-8")
    deep = tmp_path.joinpath(*[f"d{i}" for i in range(artifacts.MAX_DEPTH + 2)])
    deep.mkdir(parents=True)
    (deep / "badcase.txt").write_text("x", encoding="utf-8")
    _, problems, _ = find_artifacts([tmp_path], tmp_path)
    assert problems == [(".", f"folders deeper than {artifacts.MAX_DEPTH} levels were not scanned")]
    monkeypatch.setattr(artifacts, "MAX_FILES", 3)
    _, problems, summaries = find_artifacts([tmp_path], tmp_path)
    assert problems == [(".", "more than 3 files; the rest were not scanned")]
    assert summaries[0].files == 3
    # after a folder used up the limit: a file listed by name is still read, a further
    # folder is named as not scanned (and why), not given the first folder's message
    other = tmp_path / "d0"
    script = tmp_path / "ok.py"
    script.write_text("import torch\n", encoding="utf-8")
    found, problems, summaries = find_artifacts([tmp_path, script, other], tmp_path)
    assert problems[0] == (".", "more than 3 files; the rest were not scanned")
    assert problems[1][0] == "d0" and problems[1][1].startswith("not scanned: the folders listed before it used up")
    assert len(problems) == 2 and "ok.py" in [f.display for f in found]


def test_a_folder_with_nothing_recognised_says_so(diagnose, tmp_path):
    (tmp_path / "notes.txt").write_text("meeting notes", encoding="utf-8")
    (tmp_path / "data.csv").write_text("a,b\n1,2\n", encoding="utf-8")
    d = diagnose({"artifacts": [str(tmp_path)]})
    (warning,) = [w for w in d.verdict_json["warnings"] if "没有识别出任何产物" in w]
    assert "看了 2 个文件" in warning and "notes.txt" in warning and "model_check_result.txt" in warning


# ---------------------------------------------------------------- the real formats (REAL_FORMATS.md)

REAL = FORMATS / "real"
KIND_OF_FOLDER = {"hb_verifier": "hb_verifier", "conversion_log": "conversion_log", "quant_info": "quant_info",
                  "hb_model_info": "hb_model_info", "hrt_model_info": "hrt_model_info",
                  "plugin_log": "plugin_log", "model_check": "model_check_result"}
# Deliberately broken fixtures a user should still get a read error for are recognised;
# these are not a file of their format at all.
NOT_RECOGNISED = {"plugin_log/garbled/binary.log": None, "plugin_log/garbled/other_package.log": None,
                  "plugin_log/garbled/truncated_first_line.log": None,
                  "plugin_log/garbled/not_a_log.txt": "model_check_result"}  # model-check text without log prefixes
REAL_FIXTURES = sorted(p for p in REAL.rglob("*") if p.is_file())


def _expected(path: Path) -> str | None:
    relative = path.relative_to(REAL).as_posix()
    if relative in NOT_RECOGNISED:
        return NOT_RECOGNISED[relative]
    return KIND_OF_FOLDER[relative.split("/", 1)[0]]


@pytest.mark.parametrize("path", REAL_FIXTURES, ids=lambda p: p.relative_to(REAL).as_posix())
@pytest.mark.parametrize("variant", ["as saved", "renamed", "renamed, CRLF"])
def test_every_real_fixture_is_identified_as_its_format_by_content(path, variant):
    """Both directions at once: each fixture is its own kind and no other kind's."""
    content = path.read_bytes()
    if variant.endswith("CRLF"):
        content = content.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
    name = path.name if variant == "as saved" else "pasted_from_ticket.txt"
    kind, by = identify(name, content[:artifacts.HEAD_BYTES])
    assert kind == _expected(path)
    assert by == ("content" if kind else "")


@pytest.mark.parametrize("path", sorted(p for folder in ("horizon_quant_analysis", "prepare", "variants")
                                        for p in (FORMATS / folder).rglob("*") if p.is_file()),
                         ids=lambda p: p.name)
def test_older_fixtures_are_no_real_format(path):
    assert identify(path.name, path.read_bytes()[:artifacts.HEAD_BYTES])[0] not in set(KIND_OF_FOLDER.values()) - {
        "model_check_result"}
