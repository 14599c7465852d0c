"""The whole pipeline on artifact files: probes → facts → rules → 关键发现, with sources."""

from __future__ import annotations

import json
import shutil

import pytest

from conftest import FULL_INFO, REPO, ok
from synthetic import write_workdir
from j6doctor.diagnosis import diagnose, diagnose_data
from j6doctor.evidence import EvidenceOptions
from j6doctor.probes.case_file import case_from_data
from j6doctor.report import render_markdown
from j6doctor.rules import BUNDLED_RULES_DIR

FIXTURES = BUNDLED_RULES_DIR / "fixtures"
EXPECTED = json.loads((REPO / "tests" / "fixtures" / "formats" / "EXPECTED.json").read_text(encoding="utf-8"))
CONVERT = {**FULL_INFO, "results": {"qat_bc": ok("normal"), "quantized_bc": ok("abnormal")}}


@pytest.fixture
def workspace(tmp_path):
    shutil.copytree(FIXTURES / "horizon_quant_analysis", tmp_path / "qa_convert")
    shutil.copy(FIXTURES / "prepare" / "model_check_result.txt", tmp_path)
    shutil.copy(FIXTURES / "prepare" / "fx_graph.txt", tmp_path)
    return tmp_path


def run(data, base, rulebase, **options):
    return diagnose_data(data, rulebase, base=base, options=EvidenceOptions(use_environment=False, **options))


def facts_of(d, type_name):
    return [f for f in d.run.facts if f.type == type_name]


def test_error_origin_from_the_shared_fixture(workspace, rulebase):
    d = run({**CONVERT, "artifacts": ["qa_convert/"]}, workspace, rulebase)
    (origin,) = facts_of(d, "compare_origin")
    truth = EXPECTED["error_origin"]
    assert origin["mod_name"] == truth["compare_row_with_metrics"] and origin["row"] == truth["compare_row_index"]
    assert origin["fused_group"] == " → ".join(truth["fused_group"])
    assert origin["cosine"] == truth["cosine"] and origin["atol"] == truth["atol"]
    assert origin["max_qscale_diff"] == truth["max_qscale_diff"]
    assert origin["upstream"] == truth["upstream_row"] and origin["upstream_cosine"] == truth["upstream_cosine"]
    (step,) = [b for b in facts_of(d, "compare_break") if b["row"] == origin["row"]]
    assert step["op_type"].endswith("." + step["op_name"]) and "." not in step["op_name"]
    (reading,) = facts_of(d, "origin_reading")
    assert (reading["path"], reading["row"], reading["reading"]) == (origin["path"], origin["row"], "clamp")
    # the probe located the break (file and line); the rules made it the origin
    assert step.source.file == "qa_convert/compare_per_layer_out.csv" and step.source.line == 17
    assert len(step.source.sha256) == 64
    assert origin.source is None and origin.derivation.rule == "measure.error_origin"
    (summary,) = facts_of(d, "compare_summary")
    assert summary["rows"] == EXPECTED["compare_per_layer_out"]["rows"] and summary["analysis_type"] == "fake_quant"
    sens = {f["output"]: f for f in facts_of(d, "sensitivity_summary")}
    for name, truth in EXPECTED["sensitivity"].items():
        output = name.split("_")[1] + "_" + name.split("_")[2]
        assert sens[output]["top_op"] == truth["top"]
        assert sens[output]["compare_row"] == truth_row()
    shapes = {f["path"]: f["pattern"] for f in facts_of(d, "sensitivity_shape")}
    assert shapes == {path: "dominant" for path in (f["path"] for f in sens.values())}
    (badcase,) = facts_of(d, "badcase_info")
    assert badcase["used_index"] == EXPECTED["badcase"]["sample_used_by_run"] and badcase["disagree"] is False


def truth_row():
    return EXPECTED["error_origin"]["compare_row_with_metrics"]


def test_key_findings_and_summary(workspace, rulebase):
    d = run({**CONVERT, "artifacts": ["qa_convert/", "model_check_result.txt", "fx_graph.txt"]}, workspace, rulebase)
    slots = {}
    for k in d.verdict_json["key_findings"]:
        slots.setdefault(k["slot"], []).append(k["text"])
    assert slots["first_layer"][0].startswith("backbone.layer3.relu2")
    assert "0.873105" in slots["metrics"][0] and "5922.93" in slots["metrics"][0]
    assert any(t.startswith("截断（clamp）") for t in slots["error_source"])
    assert any("convert 单层骤降" in t for t in slots["error_source"])
    assert any("maybe too large for int8" in t for t in slots["error_source"])
    assert any(t.startswith("compare_per_layer（qa_convert/compare_per_layer_out.csv，36 行") for t in slots["qa_summary"])
    assert any("sensitivity（qa_convert/output_bbox_pred_L1_sensitive_ops.txt" in t for t in slots["qa_summary"])
    findings = " ".join(f["text"] for f in d.verdict_json["findings"])
    assert "属于同一融合组" in findings and "scale_frozen" in findings and "unfused" in findings
    assert any("fake_quant" in w for w in d.verdict_json["warnings"])
    assert "badcase" not in d.verdict_json["missing"]  # auto_find_bad_case output stands for it
    assert d.verdict_json["mistakes"] == []


def test_compare_without_sensitivity_is_M09(tmp_path, rulebase):
    (tmp_path / "qa").mkdir()
    shutil.copy(FIXTURES / "horizon_quant_analysis" / "compare_per_layer_out.csv", tmp_path / "qa")
    d = run({**CONVERT, "artifacts": ["qa"]}, tmp_path, rulebase)
    assert [m["id"] for m in d.verdict_json["mistakes"]] == ["M09"]
    assert any("qa.sensitivity()" in s["text"] for s in d.verdict_json["next_steps"])


def test_worst_layer_downstream_of_origin_is_M06(rulebase):
    d = run({**CONVERT, "artifacts": ["worst_downstream"]}, FIXTURES, rulebase)
    (m06,) = d.verdict_json["mistakes"]
    assert m06["id"] == "M06" and "neck.reduce.relu" in m06["details"][0] and "backbone.layer2.relu" in m06["details"][0]


def test_gradual_decay_reading(rulebase):
    d = run({**CONVERT, "artifacts": ["gradual"]}, FIXTURES, rulebase)
    texts = [k["text"] for k in d.verdict_json["key_findings"] if k["slot"] == "error_source"]
    assert any("逐步衰减" in t and "backbone.block" in t for t in texts)
    assert not facts_of(d, "compare_origin")


def test_deployment_stage_marks_quantanalysis_not_applicable(workspace, rulebase):
    board = {**FULL_INFO, "results": {"quantized_bc": ok("normal"), "hbm_x86": ok("normal"), "board": ok("abnormal")},
             "deployment": {"notes": "NV12"}, "artifacts": ["qa_convert/"]}
    d = run(board, workspace, rulebase)
    assert d.verdict_json["stage"] == "board"
    slots = {k["slot"]: k["text"] for k in d.verdict_json["key_findings"]}
    assert slots["qa_summary"].startswith("不适用") and slots["first_layer"].startswith("不适用")


@pytest.mark.parametrize("content", [
    b"", b"\x00\x01garbage\x00", b"\xff\xfe\xfa not utf-8", b"+----+\n| a |\n",
    b"mod_name, base_op_type\nx, y, z, w\n",
])
def test_broken_file_is_reported_and_the_diagnosis_goes_on(tmp_path, rulebase, content):
    (tmp_path / "qa").mkdir()
    (tmp_path / "qa" / "compare_per_layer_out.txt").write_bytes(content)
    shutil.copy(FIXTURES / "horizon_quant_analysis" / "badcase.txt", tmp_path / "qa")
    d = run({**CONVERT, "artifacts": ["qa"]}, tmp_path, rulebase)
    assert d.verdict_json["stage"] == "convert"
    problems = facts_of(d, "probe_problem")
    if content:
        assert problems and problems[0]["path"] == "qa/compare_per_layer_out.txt"
        assert any("qa/compare_per_layer_out.txt" in w for w in d.verdict_json["warnings"])
    assert facts_of(d, "badcase_info")


def test_missing_artifact_path_is_a_warning(tmp_path, rulebase):
    d = run({**CONVERT, "artifacts": ["nowhere/"]}, tmp_path, rulebase)
    assert any("nowhere/" in w and "no such file" in w for w in d.verdict_json["warnings"])


def test_metrics_file_gives_results_and_conflicts_are_reported(tmp_path, rulebase):
    shutil.copy(FIXTURES / "metrics" / "metrics.csv", tmp_path)
    d = run({**FULL_INFO, "metrics": "metrics.csv"}, tmp_path, rulebase)
    assert d.verdict_json["stage"] == "convert"
    quantized = next(e for e in d.verdict_json["evidence"] if e["fields"].get("artifact") == "quantized_bc")
    assert quantized["source"] == {"kind": "file", "file": "metrics.csv", "line": 4, "key": "quantized_bc.mAP",
                                   "sha256": quantized["source"]["sha256"]}
    assert any("下降 5.2" in f["text"] for f in d.verdict_json["findings"])
    clash = run({**FULL_INFO, "metrics": "metrics.csv",
                 "results": {"quantized_bc": ok("normal")}}, tmp_path, rulebase)
    assert clash.verdict_json["stage"] == "undetermined"
    assert any("同时被记为异常和正常" in w for w in clash.verdict_json["warnings"])


def test_workdir_without_case(tmp_path, rulebase):
    work = write_workdir(tmp_path / "qa", 3000)
    shutil.copy(FIXTURES / "metrics" / "metrics.csv", tmp_path / "qa")
    d = diagnose(None, rulebase, EvidenceOptions(workdirs=[work], use_environment=False))
    assert d.verdict_json["stage"] == "convert"
    assert d.title.startswith("工作目录")
    assert [a["path"] for a in d.verdict_json["artifacts"]] == [
        "compare_per_layer_out.csv", "compare_per_layer_out.txt", "output_0_L1_sensitive_ops.txt"]
    # the txt of the same table is found, not read, and says so (in the JSON and on its report line)
    unread = {a["path"]: a["unread"] for a in d.verdict_json["artifacts"]}
    assert unread["compare_per_layer_out.csv"] == "" and unread["output_0_L1_sensitive_ops.txt"] == ""
    assert "compare_per_layer_out.csv 已读取" in unread["compare_per_layer_out.txt"]
    assert "未读取：同一文件夹的 compare_per_layer_out.csv 已读取" in render_markdown(d)


def test_environment_facts_satisfy_the_gate(tmp_path, rulebase):
    board = tmp_path / ".horizon"
    board.mkdir()
    (board / ".env.board").write_text("BOARD_TYPE=S100P\n", encoding="utf-8")
    case = case_from_data({k: v for k, v in CONVERT.items() if k != "platform"}, base=tmp_path)
    d = diagnose(case, rulebase, EvidenceOptions(use_environment=True, environ={}))
    (platform,) = facts_of(d, "platform")
    assert platform["family"] == "J6M" and platform.source.file == ".horizon/.env.board"
    assert "platform" not in d.verdict_json["missing"]
    from_env = diagnose(case_from_data({}, base=tmp_path / "x"), rulebase,
                        EvidenceOptions(environ={"BOARD_TYPE": "nash-e"}))
    assert [f["family"] for f in facts_of(from_env, "platform")] == ["J6E"]


def test_large_generated_set(tmp_path, rulebase):
    work = write_workdir(tmp_path / "qa", 20_000)
    d = run(CONVERT, tmp_path, rulebase, workdirs=[work])
    (origin,) = facts_of(d, "compare_origin")
    assert origin["row"] == 15_001
    assert [r["reading"] for r in facts_of(d, "origin_reading")] == ["clamp"]
    assert len(d.run.facts) < 100  # probes summarise: the engine never sees 20,000 rows


def test_diagnosis_without_artifacts_stays_as_before(rulebase):
    d = diagnose_data(CONVERT, rulebase)
    assert facts_of(d, "artifact_file") == [] and d.verdict_json["stage"] == "convert"


@pytest.mark.parametrize("op_type, short", [
    ("torch.nn.modules.conv.Conv2d", "Conv2d"),
    ("horizon_plugin_pytorch.nn.quantized.functional_modules.FloatFunctional.add", "add"),
    ("horizon_plugin_pytorch.nn.qat.conv2d.Conv2d[hbir.conv2d]", "Conv2d"),
    ("torch.Tensor.permute", "permute"),
    ("torch.cat", "cat"),
    ("", ""),
])
def test_the_error_origin_op_name_is_the_short_op_type(op_type, short):
    from j6doctor.probes.compare_per_layer import op_name

    assert op_name(op_type) == short
