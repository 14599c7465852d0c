"""Real artifact files (issue 10): a folder holding a model check, a conversion log, a
model-info dump and an hb_verifier table under any file names yields their versions,
march, input parameters, first-divergence nodes and consistency results as facts with
file and line sources, and the gate stops asking for what they answer."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import write_case
from j6doctor.diagnosis import diagnose_file
from j6doctor.report import render_html, render_markdown

REAL = Path(__file__).parent / "fixtures" / "formats" / "real"


def _project(tmp_path: Path) -> Path:
    """A user's project folder: the files renamed as people rename them, one in a hidden folder."""
    project = tmp_path / "ticket_4711"
    (project / ".model_check_results").mkdir(parents=True)
    (project / "logs").mkdir()
    shutil.copy(REAL / "model_check" / ".model_check_results" / "model_check_result_261101_0942_31337.txt",
                project / ".model_check_results" / "model_check_result_261101_0942_31337.txt")
    shutil.copy(REAL / "model_check" / ".model_check_results" / "model_check_result_261030_1715_30211.txt",
                project / ".model_check_results" / "model_check_result_261030_1715_30211.txt")
    shutil.copy(REAL / "conversion_log" / "hb_compile.interleaved.crlf.log", project / "logs" / "convert_output.txt")
    shutil.copy(REAL / "hrt_model_info" / "rgb_single_input.txt", project / "board_dump.txt")
    shutil.copy(REAL / "hb_verifier" / "verifier_run.log", project / "logs" / "verify.out")
    return project


@pytest.fixture
def project_diagnosis(tmp_path, rulebase):
    project = _project(tmp_path)
    case = write_case(project, "results: {quantized_bc: {status: normal, evidence: dataset_eval}, "
                               "board: {status: abnormal, evidence: dataset_eval}}\n"
                               "symptom: 板端 mAP 掉了 4 个点\nbadcase: {reproducible: true}\n"
                               "artifacts: [.]\n")
    return diagnose_file(case, rulebase)


def test_every_file_is_recognised_by_content_under_its_new_name(project_diagnosis):
    kinds = {(a["path"], a["kind"]) for a in project_diagnosis.verdict_json["artifacts"]}
    assert kinds == {
        (".model_check_results/model_check_result_261030_1715_30211.txt", "model_check_result"),
        (".model_check_results/model_check_result_261101_0942_31337.txt", "model_check_result"),
        ("logs/convert_output.txt", "conversion_log"),
        ("board_dump.txt", "hrt_model_info"),
        ("logs/verify.out", "hb_verifier"),
    }


def _facts(d, type_name):
    return [f for f in d.facts if f.type == type_name]


def test_versions_march_and_input_parameters_come_with_file_and_line(project_diagnosis):
    d = project_diagnosis
    versions = {f["given"]: f for f in _facts(d, "version")}
    plugin = versions["horizon_plugin_pytorch"]
    assert plugin["version"] == "3.0.5+cu126.torch260"
    assert (plugin.source.file, plugin.source.line) == (".model_check_results/model_check_result_261101_0942_31337.txt", 1)
    assert {"horizon_plugin_profiler", "hbdk", "UCP", "DNN", "HBRT"} <= set(versions)
    assert all(f.source.file and f.source.line for f in versions.values())
    marches = {(f["path"], f["march"]) for f in _facts(d, "artifact_march")}
    assert (".model_check_results/model_check_result_261101_0942_31337.txt", "nash-e") in marches
    params = {(f["name"], f["value"]) for f in _facts(d, "input_param")}
    assert ("input_type_rt", "nv12") in params or ("input_type_rt", "rgb") in params
    assert all(f.source.file and f.source.line for f in _facts(d, "input_param"))


def test_first_divergence_and_consistency_results_are_facts(project_diagnosis):
    d = project_diagnosis
    cosines = {f["tool"]: f for f in _facts(d, "layer_cosines")}
    assert set(cosines) >= {"hb_verifier", "conversion_log"}
    assert cosines["conversion_log"].source.line
    origins = {f["tool"]: f for f in d.run.by_type("node_origin")}  # judged by rules/54 from the probes' cosine_break
    assert origins["conversion_log"]["node"] and origins["conversion_log"].derivation.rule == "measure.node_origin"
    outputs = {f["output"]: f["consistent"] for f in _facts(d, "verifier_output")}
    assert outputs == {"cls_logits": True, "bbox_deltas": False}
    assert all(f["pair"] == "bc_hbm" for f in _facts(d, "verifier_output"))
    # quantized.bc normal, the hbm differs from it on x86 → the compile step: compile, not board
    assert d.run.by_type("chain_stage")[0]["stage"] == "compile"


def test_the_gate_stops_asking_what_the_files_answer(project_diagnosis):
    d = project_diagnosis
    assert "platform" not in d.verdict_json["missing"]  # the march in the files names the platform
    assert "versions" not in d.verdict_json["missing"]  # plugin, profiler, hbdk from the files
    assert "deploy_adaptation" not in d.verdict_json["missing"]  # the model's own input parameters


def test_the_model_check_march_against_the_platform_is_a_march_mismatch(tmp_path, rulebase):
    project = _project(tmp_path)
    case = write_case(project, "platform: RDK S100P\nresults: {qat_bc: normal, quantized_bc: abnormal}\nartifacts: [.]\n")
    d = diagnose_file(case, rulebase)
    assert d.verdict_json["stage"] == "user_side"
    reasons = " ".join(c["reason"] for c in d.verdict_json["conclusion"])
    assert "nash-e" in reasons and "nash-m" in reasons and "model_check_result_261101_0942_31337.txt" in reasons


def test_report_shows_the_readings(project_diagnosis):
    text = render_markdown(project_diagnosis)
    for fragment in ("较早的模型检查", "QAT 设置问题", "hb_verifier", "bbox_deltas"):
        assert fragment in text, fragment
    html = render_html(project_diagnosis)
    assert "逐节点 cosine（hb_verifier）" in html and "逐节点 cosine（conversion_log）" in html


def test_a_garbled_file_is_a_warning_naming_file_and_line(tmp_path, rulebase):
    project = tmp_path / "p"
    project.mkdir()
    text = (REAL / "hb_verifier" / "verifier_run.log").read_text(encoding="utf-8")
    (project / "verify.log").write_text(text.replace("| Relu_1   | 102         | 0.999993          |",
                                                     "| Relu_1   | 102 0.999993 |"), encoding="utf-8")
    case = write_case(project, "artifacts: [.]\n")
    d = diagnose_file(case, rulebase)
    (warning,) = [w for w in d.verdict_json["warnings"] if "verify.log" in w]
    assert "verify.log:18" in warning and "line up" in warning and "已跳过这部分" in warning
    # the other rows are read: the per-layer cosines reach the diagnosis
    assert any(f.type == "layer_cosines" and f["path"] == "verify.log" for f in d.facts)
    assert d.verdict_json["stage"] == "undetermined"  # the diagnosis goes on


def test_inspect_shows_what_each_probe_read(tmp_path, cli):
    project = _project(tmp_path)
    (project / "notes.md").write_text("nothing", encoding="utf-8")
    proc = cli("inspect", str(project), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    by_kind = {f["kind"]: f for f in data["files"]}
    assert by_kind["hrt_model_info"]["by"] == "content"
    assert by_kind["hrt_model_info"]["data"]["march"]["text"]
    assert by_kind["hb_verifier"]["data"]["outputs"][1]["consistent"] is False
    assert data["scanned"][0]["unrecognised"] == [str(project / "notes.md")] or \
        data["scanned"][0]["unrecognised"][0].endswith("notes.md")
    markdown = cli("inspect", str(project / "board_dump.txt"))
    assert markdown.returncode == 0 and "hrt_model_exec model_info" in markdown.stdout and "按内容识别" in markdown.stdout
    empty = tmp_path / "empty"
    empty.mkdir()
    nothing = cli("inspect", str(empty))
    assert "没有识别出任何产物" in nothing.stdout and "hb_verifier" in nothing.stdout
    missing = cli("inspect", str(tmp_path / "nope"))
    assert missing.returncode == 2 and "no such file or folder" in missing.stderr
