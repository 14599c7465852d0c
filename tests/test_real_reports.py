"""Real reports in (issue 9): what forum posts, GitHub issues and support tickets from J6 / S100
and X3 / X5 / PTQ users contain — accepted, read, never dropped, with the stages still open."""

from __future__ import annotations

import json

import pytest

from conftest import EXAMPLES, FULL_INFO, ok, write_case
from j6doctor.diagnosis import diagnose_file
from j6doctor.probes import InputError
from j6doctor.probes.case_file import case_facts, read_case
from j6doctor.report import render_markdown


def stages(d):
    return [c["stage"] for c in d.verdict_json["candidates"]]


def steps(d):
    return " ".join(s["text"] for s in d.verdict_json["next_steps"])


def facts_of(d, type_name):
    return [f for f in d.facts if f.type == type_name]


# ---------------------------------------------------------------------------- 1. intake

def test_versions_take_any_package_under_its_usual_spelling(tmp_path):
    path = write_case(tmp_path, """\
versions:
  OE: "3.0.31"
  OpenExplorer: "3.0.31"
  horizon_plugin_pytorch: "3.0.5+cu126.torch260"
  plugin: "3.0.5"
  hbdk4: "4.1.2"
  hbdk: "3.49.15"
  horizon_plugin_profiler: "3.0.5"
  PyTorch: "2.6.0"
  hb_mapper: "1.24.3"
  horizon_nn: "1.1.0"
  UCP: "3.7.4"
  DNN: "3.7.4_(4.3.2 HBRT)"
  HBRT: "4.3.2"
  CUDA: "12.6"
  rknn-toolkit2: "2.3.0"
""")
    facts = {f["given"]: f for f in case_facts(read_case(path)) if f.type == "version"}
    assert {g: f["package"] for g, f in facts.items()} == {
        "OE": "openexplorer", "OpenExplorer": "openexplorer", "horizon_plugin_pytorch": "horizon-plugin-pytorch",
        "plugin": "horizon-plugin-pytorch", "hbdk4": "hbdk4-compiler", "hbdk": "hbdk3",
        "horizon_plugin_profiler": "horizon-plugin-profiler", "PyTorch": "torch", "hb_mapper": "hb-mapper",
        "horizon_nn": "horizon-nn", "UCP": "ucp", "DNN": "dnn", "HBRT": "hbrt", "CUDA": "other",
        "rknn-toolkit2": "other"}
    assert facts["horizon_plugin_pytorch"]["version"] == "3.0.5+cu126.torch260"
    assert facts["horizon_plugin_pytorch"]["number"] == 3000005
    assert facts["rknn-toolkit2"].source.line == 16


def test_hbdk_alias_is_decided_by_the_major_version(tmp_path):
    for version, package in (("4.4.2", "hbdk4-compiler"), ("3.49.15", "hbdk3"), ("dev", "hbdk4-compiler")):
        facts = case_facts(read_case(write_case(tmp_path, f'versions: {{hbdk: "{version}"}}\n')))
        assert [f["package"] for f in facts if f.type == "version"] == [package]


def test_unknown_packages_are_kept_and_shown(diagnose):
    d = diagnose({**FULL_INFO, "versions": {**FULL_INFO["versions"], "rknn-toolkit2": "2.3.0", "CUDA": "12.6"},
                  "results": {"qat_bc": ok("normal"), "quantized_bc": ok("abnormal")}})
    text = render_markdown(d)
    assert "rknn-toolkit2 2.3.0" in text and "CUDA 12.6" in text
    assert d.verdict_json["missing"] == []


def test_a_version_yaml_read_as_a_number_is_accepted_with_a_warning(diagnose):
    d = diagnose({**FULL_INFO, "versions": {"plugin": 3.1, "profiler": "3.1.2", "hbdk4": 4.4},
                  "results": {"qat_bc": ok("normal"), "quantized_bc": ok("abnormal")}})
    assert d.verdict_json["stage"] == "convert"
    warnings = " ".join(d.verdict_json["warnings"])
    assert "3.10" in warnings and "4.40" in warnings and "请加引号" in warnings
    assert {f["given"]: f["version"] for f in facts_of(d, "version")}["plugin"] == "3.1"


def test_a_close_typo_of_a_package_is_kept_with_a_did_you_mean(diagnose):
    d = diagnose({"versions": {"horizon-plugin-pytroch": "3.1.2"}})
    assert any("horizon-plugin-pytroch" in w and "horizon-plugin-pytorch" in w for w in d.verdict_json["warnings"])


def test_every_unknown_key_and_bad_value_is_reported_in_one_run(tmp_path):
    path = write_case(tmp_path, """\
sympton: "板端掉点"
platfrom: J6M
results:
  qat_bc: {status: normall, evidnce: dataset_eval}
  quantized_bc: {status: abnormal, evidence: datset}
deployment:
  checklist:
    layuot: ok
""")
    with pytest.raises(InputError) as info:
        read_case(path)
    text = info.value.render()
    for fragment in ("case.yaml:1: unknown key 'sympton'", "did you mean 'symptom'",
                     "case.yaml:2: unknown key 'platfrom'", "did you mean 'platform'",
                     "case.yaml:4: unknown key 'evidnce'", "case.yaml:4: results.qat_bc.status: \"normall\"",
                     "did you mean 'normal'", "case.yaml:5: results.quantized_bc.evidence",
                     "case.yaml:8: unknown key 'layuot'"):
        assert fragment in text, text


def test_enum_values_are_case_insensitive_and_take_aliases(tmp_path):
    path = write_case(tmp_path, """\
flow: QAT
results:
  QAT.bc: {status: Normal, evidence: DATASET_EVAL}
  Quantized.bc: {status: ABNORMAL, evidence: Dataset}
  board: {failure: Load_Error, message: "FC Parse error", by: HRT_MODEL_EXEC}
deployment:
  checklist:
    Layout: OK
    pre_processing: {status: Mismatch, note: "BGR"}
user_checks:
  normalisation: consistent
""")
    case = read_case(path)
    assert case.data["results"]["qat_bc"] == {"status": "normal", "evidence": "dataset_eval"}
    assert case.data["results"]["quantized_bc"] == {"status": "abnormal", "evidence": "dataset_eval"}
    assert case.data["results"]["board"]["failure"] == "load_error"
    assert case.data["deployment"]["checklist"] == {"layout": {"status": "ok"},
                                                    "preprocess": {"status": "mismatch", "note": "BGR"}}
    assert case.data["user_checks"] == {"normalization": {"status": "ok"}}
    facts = case_facts(case)
    qat_bc = next(f for f in facts if f.type == "result" and f["artifact"] == "qat_bc")
    assert qat_bc.source.key == "results.QAT.bc" and qat_bc.source.line == 3  # as the user wrote it
    failure = next(f for f in facts if f.type == "failure")
    assert failure["by"] == "vendor_tool" and failure.source.key == "results.board.message"


def test_two_keys_naming_one_artifact_are_refused(tmp_path):
    path = write_case(tmp_path, "results:\n  qat_pt: normal\n  calibrated_model: abnormal\n")
    with pytest.raises(InputError, match="'calibrated_model' and 'qat_pt' both name 'qat_pt'"):
        read_case(path)


def test_the_loaded_document_is_not_changed(tmp_path):
    from j6doctor.engine.strict_yaml import load_yaml
    from j6doctor.probes.case_file import validate_case
    doc = load_yaml("results:\n  calibrated_model: Normal\n")
    validate_case(doc, "case.yaml", None)
    assert doc.data == {"results": {"calibrated_model": "Normal"}}


# ---------------------------------------------------------------------------- 2. platforms and flows

@pytest.mark.parametrize("given,family,series,march", [
    ("X5", "X5", "X5", "bayes-e"), ("RDK X5", "X5", "X5", "bayes-e"), ("bayes-e", "X5", "X5", "bayes-e"),
    ("X3", "X3", "X3", "bernoulli2"), ("RDK X3 Module", "X3", "X3", "bernoulli2"), ("bernoulli2", "X3", "X3", "bernoulli2"),
    ("J5", "J5", "J5", "bayes"), ("RDK Ultra", "J5", "J5", "bayes"), ("RDK S600", "J6P", "J6", "nash-p"),
    ("J6M (nash-m)", "J6M", "J6", "nash-m"), ("RDK S100P / nash-m", "J6M", "J6", "nash-m"), ("J6", "J6", "J6", ""),
])
def test_platform_families_and_aliases(tmp_path, given, family, series, march):
    facts = case_facts(read_case(write_case(tmp_path, f"platform: {given}\n")))
    (platform,) = [f for f in facts if f.type == "platform"]
    assert (platform["family"], platform["series"], platform["march"]) == (family, series, march)


def test_a_non_horizon_platform_is_other_with_a_warning(diagnose):
    d = diagnose({"platform": "RK3588", "versions": {"rknn-toolkit2": "2.3.0"},
                  "results": {"quantized_bc": ok("normal"), "board": ok("abnormal")}})
    assert [f["family"] for f in facts_of(d, "platform")] == ["other"]
    assert any("RK3588" in w and "other" in w for w in d.verdict_json["warnings"])
    assert d.verdict_json["stage"] == "compile"  # the stage logic works for all
    assert "versions" not in d.verdict_json["missing"]  # Horizon versions are not asked of other toolchains


def test_consistency_strategy_is_j6_only(diagnose):
    j6 = diagnose({**FULL_INFO, "results": {"qat_bc": ok("normal"), "quantized_bc": ok("abnormal")}})
    assert "ConsistencyStrategy" in steps(j6)
    x5 = diagnose({**FULL_INFO, "platform": "RDK X5", "versions": {"plugin": "1.10.4", "hbdk": "3.49.15"},
                   "results": {"qat_pt": ok("normal"), "quantized_bc": ok("abnormal")}})
    assert x5.verdict_json["stage"] == "convert"  # X5 QAT: no qat.bc on its chain
    assert "ConsistencyStrategy" not in steps(x5) and "qat_bc" not in steps(x5)


@pytest.mark.parametrize("case,how", [
    ({"results": {"calibrated_model": "normal", "quantized_model.onnx": "abnormal"}}, "PTQ 的产物名"),
    ({"versions": {"hb_mapper": "1.24.3"}, "results": {"qat_pt": "normal", "quantized_bc": "abnormal"}}, "hb_mapper"),
    ({"symptom": "用 hb_mapper makertbin 转换后掉点", "results": {"qat_pt": "normal", "quantized_bc": "abnormal"}}, "描述"),
    ({"flow": "PTQ", "results": {"qat_pt": "normal", "quantized_bc": "abnormal"}}, "案例写明"),
])
def test_ptq_flow_is_stated_or_inferred_and_maps_onto_the_chain(diagnose, case, how):
    d = diagnose({**case, "platform": "RDK X5"})
    assert d.verdict_json["flow"]["flow"] == "ptq" and how in d.verdict_json["flow"]["how"]
    assert d.verdict_json["stage"] == "convert"
    text = steps(d)
    assert "hb_verifier" in text and "转换日志" in text
    assert "QuantAnalysis(" not in text and "ConsistencyStrategy" not in text


def test_ptq_gate_asks_for_the_toolchain_and_the_conversion_input_parameters(diagnose):
    d = diagnose({"platform": "RDK X5", "badcase": {"reproducible": True}, "symptom": "定点模型掉点",
                  "results": {"calibrated_model": ok("normal"), "quantized_model": ok("abnormal")}})
    details = {m["id"]: m for m in d.verdict_json["missing_detail"]}
    assert set(details) == {"versions", "deploy_adaptation"}
    assert "OE" in details["versions"]["details"][0] and details["versions"]["ask"] == ["openexplorer"]
    assert "input_type_rt" in details["deploy_adaptation"]["details"][0]
    assert "horizon-plugin" not in json.dumps([(m["details"], m["ask"]) for m in details.values()], ensure_ascii=False)
    given = diagnose({"platform": "RDK X5", "badcase": {"reproducible": True}, "symptom": "定点模型掉点",
                      "versions": {"OE": "1.2.8"},
                      "input_parameters": {"input_type_rt": "nv12", "input_type_train": "rgb", "norm_type": "data_scale"},
                      "results": {"calibrated_model": ok("normal"), "quantized_model": ok("abnormal")}})
    assert given.verdict_json["missing"] == []


def test_ptq_deployment_steps_name_the_ptq_tools(diagnose):
    d = diagnose({"flow": "ptq", "results": {"quantized_model": ok("normal"), "bin": ok("abnormal")}})
    assert d.verdict_json["stage"] == "compile"
    assert "hb_verifier" in steps(d) and "hb_model_info" in steps(d)


def test_multi_input_parameters_are_split_by_input_name(tmp_path):
    facts = case_facts(read_case(write_case(tmp_path, """\
input_parameters:
  input_name: "img;calib"
  input_type_rt: "nv12;featuremap"
  mean_value: [123.675, 116.28, 103.53]
""")))
    params = [(f["name"], f["value"], f["input"]) for f in facts if f.type == "input_param"]
    assert ("input_type_rt", "nv12", "img") in params and ("input_type_rt", "featuremap", "calib") in params
    assert ("mean_value", "123.675 116.28 103.53", "") in params


# ---------------------------------------------------------------------------- 3. failures

def test_a_load_error_is_not_bisected_like_an_accuracy_problem(diagnose):
    d = diagnose({**FULL_INFO, "results": {"quantized_bc": ok("normal"),
                                           "board": {"failure": "load_error", "message": "FC Parse error"}}})
    assert d.verdict_json["stage"] == "compile"
    text = steps(d)
    assert "march" in text and "BPU 核数" in text and "UCP / DNN / HBRT" in text
    assert "QuantAnalysis(" not in text and "x86 上仿真" not in text
    assert stages(d) == ["user_side", "compile", "board"]
    assert "badcase" not in d.verdict_json["missing"] and "deploy_adaptation" not in d.verdict_json["missing"]
    assert any("不是精度问题" in f["text"] for f in d.verdict_json["findings"])


@pytest.mark.parametrize("message", [
    "[BPU_PLAT]Make sure inst Suport (nash-e) Platform!!", "Incompatible Platform!!", "FC Parse error",
    "core mask write fc failed", "hbDNNWaitTaskDone failed",
])
def test_r9_messages_in_free_text_are_load_errors(diagnose, message):
    d = diagnose({**FULL_INFO, "symptom": f"板端跑模型报错：{message}",
                  "results": {"quantized_bc": ok("normal")}})
    assert d.verdict_json["stage"] == "compile"
    assert [(f["artifact"], f["kind"]) for f in d.run.by_type("failed")] == [("board", "load_error")]


def test_a_load_error_with_another_march_is_user_side(diagnose):
    d = diagnose({**FULL_INFO, "platform": "RDK S100P", "deployment": {"notes": "hbm 用 --march nash-e 编译"},
                  "results": {"board": {"failure": "load_error", "message": "Incompatible Platform!!"}}})
    assert d.verdict_json["stage"] == "user_side"
    assert d.verdict_json["chain_stage"]["stage"] == "compile"
    assert "nash-e" in d.verdict_json["conclusion"][0]["reason"] and "nash-m" in d.verdict_json["conclusion"][0]["reason"]


@pytest.mark.parametrize("artifact,stage", [
    ("qat_export_pt", "pre_export"), ("qat_bc", "export"), ("quantized_bc", "convert"), ("hbm", "compile"),
    ("qat_pt", "qat_training"),
])
def test_a_build_failure_names_the_stage_that_builds_the_artifact(diagnose, artifact, stage):
    d = diagnose({**FULL_INFO, "results": {artifact: {"failure": "compile_error", "message": "unsupported op Foo"}}})
    assert d.verdict_json["stage"] == stage


def test_failure_and_normal_status_contradict(tmp_path):
    with pytest.raises(InputError, match="status normal and failure load_error contradict"):
        read_case(write_case(tmp_path, "results:\n  board: {status: normal, failure: load_error}\n"))


# ---------------------------------------------------------------------------- 4. who produced a result

def test_board_problem_reproduced_by_the_vendor_tool_points_at_the_toolchain(diagnose):
    base = {"quantized_bc": ok("normal"), "hbm_x86": ok("normal")}
    own = diagnose({**FULL_INFO, "results": {**base, "board": {**ok("abnormal"), "by": "own_app"}}})
    assert own.verdict_json["stage"] == "board"
    for by in ("vendor_tool", "hrt_model_exec infer"):
        d = diagnose({**FULL_INFO, "results": {**base, "board": {**ok("abnormal"), "by": by}}})
        assert d.verdict_json["stage"] == "compile", by
        assert stages(d) == ["compile"]
    # a vendor sample or demo is an application, with its own pre- and post-processing
    for by in ("sample", "rdk_model_zoo 的 demo"):
        d = diagnose({**FULL_INFO, "results": {**base, "board": {**ok("abnormal"), "by": by}}})
        assert d.verdict_json["stage"] == "board", by


# ---------------------------------------------------------------------------- 5. comparisons and controls

def test_equal_outputs_carry_the_wrongness_up_the_chain(diagnose):
    d = diagnose({**FULL_INFO, "results": {"qat_bc": ok("normal"), "board": ok("abnormal")},
                  "comparisons": [{"a": "board", "b": "quantized.bc", "relation": "same"}]})
    assert d.verdict_json["stage"] == "convert"  # quantized.bc is as wrong as the board on that input


def test_a_control_through_the_same_board_code_clears_board_integration(diagnose):
    results = {"quantized_bc": ok("normal"), "hbm_x86": ok("normal"), "board": ok("abnormal")}
    d = diagnose({**FULL_INFO, "results": results,
                  "comparisons": [{"variant": "zoo .bin", "stage": "board", "status": "normal"}]})
    assert d.verdict_json["stage"] == "compile" and "board" not in stages(d)
    unsplit = diagnose({**FULL_INFO, "results": {"quantized_bc": ok("normal"), "board": ok("abnormal")},
                        "controls": [{"variant": "zoo .bin", "stage": "board", "status": "normal"}]})
    assert stages(unsplit) == ["compile"]


def test_differing_outputs_are_only_noted(diagnose):
    d = diagnose({**FULL_INFO, "results": {"quantized_bc": ok("normal"), "hbm_x86": ok("normal")},
                  "comparisons": [{"a": "hbm_x86", "b": "board", "relation": "differs"}]})
    assert d.verdict_json["stage"] == "undetermined"
    assert any("输出不同" in f["text"] for f in d.verdict_json["findings"])


# ---------------------------------------------------------------------------- 6./8. never drop a confirmed statement; free text

STATED = [
    ("march", "symptom", "The march used at prepare differs from the board", "march"),
    ("march", "symptom", "prepare 用的 march 和板端不一致", "march"),
    ("runtime", "symptom", "warning: the hbrt library version is lower than the model's build version", "runtime_version"),
    ("colour", "deployment", "RGB fed to a YUV444 model", "preprocess"),
    ("colour", "deployment", "板端喂的是 BGR，模型要 NV12", "preprocess"),
    ("colour", "deployment", "颜色通道顺序搞反了", "preprocess"),
    ("layout", "deployment", "板端喂 NHWC，模型要 NCHW", "layout"),
    ("layout", "deployment", "NHWC data fed where the model expects NCHW", "layout"),
    ("normalisation", "symptom", "归一化做了两次", "normalization"),
    ("normalisation", "symptom", "the image was normalized twice", "normalization"),
    ("normalisation", "deployment", "mean / std 和训练时不一致", "normalization"),
    ("post-processing", "symptom", "class count not passed to the post-processing library", "io_nodes"),
    ("post-processing", "symptom", "后处理的 anchors 和训练不一致", "io_nodes"),
    ("post-processing", "symptom", "the output order differs from the training code", "io_nodes"),
    ("dequantize", "deployment", "删除了输出的反量化节点，但板端没有做反量化", "io_nodes"),
    ("stride", "deployment", "the board app ignores the buffer stride", "padding"),
    ("stride", "deployment", "板端程序没处理 stride 对齐", "padding"),
    ("cache", "symptom", "写完输入后忘了 flush cache", "cache_flush"),
    ("cache", "tried", "forgot to call hbUCPMemFlush after writing the input", "cache_flush"),
    ("scale", "symptom", "板端输入 scale 与标定时不一致", "input_scale"),
]


def _case_with_text(where: str, text: str) -> dict:
    case = {**FULL_INFO, "results": {"board": ok("abnormal")}}  # quantized.bc unverified: 基线确认 chain
    if where == "deployment":
        case["deployment"] = {"notes": text}
    elif where == "tried":
        case["tried"] = [text]
    else:
        case["symptom"] = text
    return case


@pytest.mark.parametrize("topic,where,text,item", STATED, ids=[f"{t[0]}:{t[2][:30]}" for t in STATED])
def test_a_mismatch_stated_in_free_text_is_never_dropped(diagnose, topic, where, text, item):
    d = diagnose(_case_with_text(where, text))
    assert d.verdict_json["stage"] == "user_side", d.verdict_json["text_facts"]
    assert d.verdict_json["chain_stage"]["stage"] == "baseline"  # the chain is still shown, for after the fix
    stated = [t for t in d.verdict_json["text_facts"] if t["kind"] == "stated" and t["item"] == item]
    assert stated and stated[0]["quote"] and stated[0]["key"].split(".")[0] in ("symptom", "deployment", "tried")
    mismatch = next(f for f in d.run.by_type("user_mismatch") if f["item"] == item)
    assert "从描述中识别" in mismatch["note"]
    if item in ("preprocess", "layout", "input_scale", "io_nodes", "padding"):
        assert {c["id"]: c["status"] for c in d.verdict_json["checklist"]}[item] == "mismatch"
    assert "从描述中识别" in render_markdown(d)


NEGATED = [
    "已确认 layout 一致",
    "已排除 layout 不一致",
    "layout mismatch was ruled out",
    "the layouts are the same, not a layout issue",
    "march 不一致的可能已经排除",
    "已核对 mean / std 没有问题",
    "not the cause: the class count is passed to the post-processing library",
    "已确认 stride 对齐一致",
    "hbrt 版本不匹配的问题已排除",
]


@pytest.mark.parametrize("text", NEGATED)
def test_negations_do_not_fire_a_mismatch(diagnose, text):
    d = diagnose(_case_with_text("symptom", text))
    assert (d.verdict_json["stage"], d.verdict_json["chain_stage"]["stage"]) == ("undetermined", "baseline"), \
        d.verdict_json["text_facts"]
    assert not [t for t in d.verdict_json["text_facts"] if t["kind"] == "stated" and t["item"] != "none"]


def test_a_negation_in_another_part_of_the_sentence_does_not_block(diagnose):
    d = diagnose(_case_with_text("symptom", "已确认 march 一致，但板端喂 NHWC，模型要 NCHW"))
    assert d.verdict_json["stage"] == "user_side"
    assert [t["item"] for t in d.verdict_json["text_facts"] if t["kind"] == "stated" and t["item"] != "none"] == ["layout"]


def test_free_text_facts_carry_key_line_and_span_back_to_the_case(tmp_path, rulebase):
    path = write_case(tmp_path, 'symptom: "板端掉点。板端喂 NHWC，模型要 NCHW；其他正常"\nresults:\n  board: abnormal\n')
    d = diagnose_file(path, rulebase)
    (fact,) = [t for t in d.verdict_json["text_facts"] if t["topic"] == "layout"]
    symptom = read_case(path).data["symptom"]
    assert symptom[fact["start"]:fact["end"]] == fact["quote"] == "板端喂 NHWC，模型要 NCHW"
    assert (fact["key"], fact["line"], fact["rule"]) == ("symptom", 1, "text.layout_mismatch")
    entry = next(t for t in d.verdict_json["trace"] if t["id"] == fact["fact"])
    premise = next(t for t in d.verdict_json["trace"] if t["id"] == entry["premises"][0])
    assert premise["source"] == {"kind": "case", "file": "case.yaml", "line": 1, "key": "symptom"}
    verdict_fact = d.verdict_json["conclusion"][0]["fact"]
    assert fact["fact"] in _ancestors(d, verdict_fact)  # the verdict's chain reaches the span


def _ancestors(d, fact_id):
    by_id = {t["id"]: t for t in d.verdict_json["trace"]}
    seen, todo = set(), [fact_id]
    while todo:
        current = todo.pop()
        if current not in seen:
            seen.add(current)
            todo += by_id[current].get("premises", [])
    return seen


def test_hints_are_raised_as_questions(diagnose):
    d = diagnose({**FULL_INFO, "deployment": {"notes": "板端送入 RGB 图像；编译时删除了输出 Dequantize 节点"},
                  "input_parameters": {"input_type_rt": "nv12"},
                  "results": {"quantized_bc": ok("normal"), "board": ok("abnormal")}})
    # settings against practice: the model wants NV12, the application feeds RGB → confirmed user side
    assert d.verdict_json["stage"] == "user_side"
    assert {c["id"]: c["status"] for c in d.verdict_json["checklist"]}["preprocess"] == "mismatch"
    text = steps(d)
    assert "删除节点的作用" in text or "被删除节点的作用" in text


def test_a_stated_single_frame_keeps_unspecified_results_from_confirming(diagnose):
    d = diagnose({**FULL_INFO, "symptom": "只有一张图片板端和 x86 不一致",
                  "results": {"quantized_bc": {"status": "normal"}, "hbm_x86": {"status": "normal"},
                              "board": {"status": "abnormal"}}})
    assert d.verdict_json["stage"] == "undetermined"
    assert [m["id"] for m in d.verdict_json["mistakes"]] == ["M01"]
    assert set(stages(d)) == {"board", "compile"}  # the stage the frame points at


# ---------------------------------------------------------------------------- 7. reference check

def test_float_equal_to_a_wrong_output_is_a_broken_reference(diagnose):
    case = {**FULL_INFO, "results": {"hbm": ok("abnormal", "badcase")},
            "comparisons": [{"a": "hbm", "b": "float", "relation": "equal"}]}
    d = diagnose(case)
    assert d.verdict_json["stage"] == "undetermined"
    assert d.verdict_json["next_steps"][0]["text"].startswith("先验证参考")
    assert "同一份预处理后的张量" in d.verdict_json["next_steps"][0]["text"]
    assert stages(d)[0] == "user_side"
    shown = diagnose({**case, "controls": [{"variant": "PyTorch 中的同一模型", "stage": "float", "status": "normal"}]})
    assert shown.verdict_json["stage"] == "user_side"


def test_the_broken_reference_example_blames_no_toolchain_stage(rulebase):
    d = diagnose_file(EXAMPLES / "broken_reference.yaml", rulebase)
    assert d.verdict_json["stage"] == "user_side"
    assert d.verdict_json["conclusion"][0]["reason"].startswith("参考（float）流程")
    assert d.verdict_json["checklist"] == []


# ---------------------------------------------------------------------------- 9. candidates

@pytest.mark.parametrize("results,expected", [
    # an endpoint-only report keeps the application side open (its pre/post-processing), and
    # in the QAT flow (J6) the export too: qat.bc is not verified either
    ({"board": ok("abnormal")}, ["convert", "compile", "board", "user_side", "export"]),
    ({"hbm_x86": ok("abnormal"), "board": ok("abnormal")}, ["convert", "compile", "user_side", "export"]),
    ({"quantized_bc": ok("normal"), "board": ok("abnormal")}, ["compile", "board", "user_side"]),
    ({"quantized_bc": ok("normal"), "hbm_x86": ok("abnormal")}, ["compile"]),
    ({"qat_pt": ok("normal"), "quantized_bc": ok("abnormal")}, ["export", "convert"]),
    ({"qat_bc": ok("abnormal")}, ["qat_training", "export"]),
    ({"qat_export_pt": ok("abnormal")}, ["qat_training", "pre_export"]),
    ({"quantized_bc": ok("normal"), "board": ok("abnormal", "single_frame")}, ["board", "compile", "user_side"]),
    ({"qat_bc": ok("normal"), "quantized_bc": ok("abnormal")}, ["convert"]),
    ({}, ["qat_training", "pre_export", "export", "convert", "compile", "board", "user_side"]),
])
def test_every_verdict_lists_the_stages_still_possible(diagnose, results, expected):
    # (FULL_INFO's symptom says quantized.bc drops: words are evidence too, so none here)
    d = diagnose({**FULL_INFO, "symptom": "精度问题排查", "results": results})
    assert stages(d) == expected
    assert all(c["check"] for c in d.verdict_json["candidates"])


def test_candidates_are_in_the_report(rulebase):
    text = render_markdown(diagnose_file(EXAMPLES / "baseline_board_only.yaml", rulebase))
    summary = text.split("## 已确认事实")[0]
    assert "仍可能的阶段" in summary and "convert（`convert`）" in summary and "板端部署接入（`board`）" in summary


# ---------------------------------------------------------------------------- 10. less noise

def test_m02_only_when_the_user_acted_on_a_deployment_attribution(diagnose):
    plain = diagnose({**FULL_INFO, "results": {"board": ok("abnormal")}})
    assert plain.verdict_json["mistakes"] == [] and "先验证 quantized.bc" in steps(plain)
    for extra in ({"tried": ["换了 hbdk 版本重新编译"]}, {"suspect": "compile"}, {"suspect": ["板端"]},
                  {"symptom": "怀疑是 hbdk 编译器的 bug"}, {"tried": ["rewrote the board code"]}):
        d = diagnose({**FULL_INFO, **extra, "results": {"board": ok("abnormal")}})
        assert [m["id"] for m in d.verdict_json["mistakes"]] == ["M02"], extra


def test_deployment_reports_give_no_quant_analysis_reasons(diagnose):
    from j6doctor.rules import BUNDLED_RULES_DIR
    d = diagnose({**FULL_INFO, "deployment": {"notes": "NV12"},
                  "results": {"quantized_bc": ok("normal"), "hbm_x86": ok("abnormal")},
                  "artifacts": [str(BUNDLED_RULES_DIR / "fixtures" / "horizon_quant_analysis")]})
    assert d.verdict_json["stage"] == "compile"
    assert d.verdict_json["mistakes"] == []  # no M06 / M09 for a compile problem
    assert not any(f["topic"] in ("quant_analysis", "badcase") for f in d.verdict_json["findings"])
    assert "sensitivity" not in steps(d)


def test_a_small_drop_asks_before_naming_a_stage(diagnose):
    results = {"qat_bc": {**ok("normal"), "metric": "mAP", "value": 41.0},
               "quantized_bc": {**ok("abnormal"), "metric": "mAP", "value": 40.8}}
    d = diagnose({**FULL_INFO, "results": results})
    assert d.verdict_json["stage"] == "undetermined"
    assert d.verdict_json["next_steps"][0]["text"].startswith("先确认 quantized.bc 的下降")
    assert stages(d) == ["convert"]
    strict = diagnose({**FULL_INFO, "results": results, "metrics": {"tolerance": 0.001}})
    assert strict.verdict_json["stage"] == "convert"


# ---------------------------------------------------------------------------- 11. case first, environment second

def test_environment_fills_only_what_the_case_leaves_out(tmp_path, rulebase, monkeypatch):
    from j6doctor.diagnosis import diagnose as run
    from j6doctor.evidence import EvidenceOptions
    # "installed" Horizon packages: real distribution metadata on the import path
    site = tmp_path / "site"
    for name, version in (("horizon_plugin_pytorch", "3.0.5"), ("hbdk4_compiler", "4.4.2")):
        info = site / f"{name}-{version}.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name.replace('_', '-')}\nVersion: {version}\n")
    monkeypatch.syspath_prepend(str(site))
    case = read_case(write_case(tmp_path, 'platform: J6E\nversions: {plugin: "3.1.2"}\n'
                                          'results: {qat_bc: normal, quantized_bc: abnormal}\n'))
    d = run(case, rulebase, EvidenceOptions(use_environment=True, environ={"BOARD_TYPE": "RDK S100P"}))
    versions = {f["package"]: f for f in d.facts if f.type == "version"}
    assert versions["horizon-plugin-pytorch"]["version"] == "3.1.2"  # the case wins
    assert versions["hbdk4-compiler"].source.kind == "environment"  # the environment fills a gap
    assert [f["family"] for f in d.facts if f.type == "platform"] == ["J6E"]
    warnings = " ".join(d.verdict_json["warnings"])
    assert "3.0.5" in warnings and "3.1.2" in warnings and "以案例为准" in warnings
    assert "RDK S100P" in warnings and "J6E" in warnings
    assert "hbdk4-compiler 4.4.2（本机环境）" in render_markdown(d)


def test_config_file_turns_environment_reading_off(tmp_path, cli):
    (tmp_path / "j6doctor.toml").write_text("environment = false\n", encoding="utf-8")
    write_case(tmp_path, "results: {qat_bc: normal, quantized_bc: abnormal}\n")
    proc = cli("diagnose", "case.yaml", "--format", "json", cwd=tmp_path, env={"BOARD_TYPE": "RDK X5"})
    assert proc.returncode == 0, proc.stderr
    assert not [e for e in json.loads(proc.stdout)["trace"] if e.get("source", {}).get("kind") == "environment"]
    proc = cli("diagnose", "case.yaml", "--env", "--format", "json", cwd=tmp_path, env={"BOARD_TYPE": "RDK X5"})
    assert [e["fields"]["family"] for e in json.loads(proc.stdout)["trace"] if e["type"] == "platform"] == ["X5"]
    (tmp_path / "j6doctor.toml").write_text("environmnet = false\n", encoding="utf-8")
    bad = cli("diagnose", "case.yaml", cwd=tmp_path)
    assert bad.returncode == 2 and "unknown setting 'environmnet'" in bad.stderr


def test_pyproject_tool_table_is_a_config_and_the_user_file_is_read(tmp_path, cli):
    project = tmp_path / "proj"
    (project / "cases").mkdir(parents=True)
    (project / "pyproject.toml").write_text("[project]\nname = 'x'\n[tool.j6doctor]\nenvironment = false\n")
    write_case(project / "cases", "results: {qat_bc: normal}\n")
    proc = cli("diagnose", "cases/case.yaml", "--format", "json", cwd=project, env={"BOARD_TYPE": "RDK X5"})
    assert not [e for e in json.loads(proc.stdout)["trace"] if e["type"] == "platform"]
    home = tmp_path / "home"
    (home / ".config" / "j6doctor").mkdir(parents=True)
    (home / ".config" / "j6doctor" / "config.toml").write_text("environment = false\n")
    other = tmp_path / "other"
    other.mkdir()
    write_case(other, "results: {qat_bc: normal}\n")
    proc = cli("diagnose", "case.yaml", "--format", "json", cwd=other,
               env={"BOARD_TYPE": "RDK X5", "HOME": str(home), "XDG_CONFIG_HOME": ""})
    assert not [e for e in json.loads(proc.stdout)["trace"] if e["type"] == "platform"]


# ---------------------------------------------------------------------------- the JSON additions

def test_json_gains_candidates_text_facts_chain_stage_and_flow(rulebase):
    from j6doctor.report import render_json
    data = json.loads(render_json(diagnose_file(EXAMPLES / "free_text_only_mismatch.yaml", rulebase)))
    assert data["stage"] == "user_side"
    assert data["chain_stage"] == {"stage": "board", "label": "板端部署接入"}  # x86 normal, board abnormal
    assert [c["stage"] for c in data["candidates"]][0] == "user_side"
    assert set(data["candidates"][0]) == {"stage", "label", "check", "why", "rule", "fact"}
    (stated,) = [t for t in data["text_facts"] if t["item"] != "none"]  # the mismatch; the rest are results read
    assert {t["topic"] for t in data["text_facts"]} == {"post_processing", "said_result", "said_problem",
                                                         "deployment_named"}  # (the board is named)
    assert stated["topic"] == "post_processing" and stated["kind"] == "stated" and stated["key"] == "deployment.notes"
    assert data["flow"]["flow"] == "qat"
    assert {c["id"]: c["status"] for c in data["checklist"]}["io_nodes"] == "mismatch"
