"""Tool output pasted into the user's words (probes/pasted_output.py): an hb_mapper conversion
log, hb_verifier output or hrt_model_exec model_info in the symptom or the deployment notes
gives the facts its file would, sourced to the case key; prose around it is passed by; a
part the parser skips is a note, not a crash."""

from __future__ import annotations

from pathlib import Path

from j6doctor.diagnosis import diagnose_data

REAL = Path(__file__).parent / "fixtures" / "formats" / "real"
COLLAPSE = (REAL / "conversion_log" / "hb_mapper_makertbin.first_node_collapse.log").read_text(encoding="utf-8")
HEALTHY = (REAL / "conversion_log" / "hb_mapper_makertbin.healthy.log").read_text(encoding="utf-8")


def _post(log: str) -> str:
    return f"X5 上 yolov5 转换后板端检测框很乱，下面是转换日志：\n```\n{log}\n```\n请问是哪里的问题？"


def _facts(diagnosis, type_name: str) -> list:
    return [f for f in diagnosis.run.facts if f.type == type_name]


def test_a_pasted_log_whose_first_node_collapses_points_at_the_input_preprocessing(rulebase):
    diagnosis = diagnose_data({"symptom": _post(COLLAPSE)}, rulebase)
    assert diagnosis.verdict_json["stage"] == "user_side"
    (cosines,) = _facts(diagnosis, "layer_cosines")
    assert cosines["first_node"] == "HZ_PREPROCESS_FOR_images" and cosines["first_node_cosine"] < 0.9
    assert cosines["path"].startswith("symptom 第 3–") and "（粘贴的" in cosines["path"]
    # the fact comes from the case key that holds the text, not from a file
    assert cosines.source.kind == "case" and cosines.source.key == "symptom"
    assert any(f["item"] == "preprocess" for f in _facts(diagnosis, "user_mismatch"))


def test_a_healthy_pasted_log_gives_its_cosines_and_no_mismatch(rulebase):
    diagnosis = diagnose_data({"deployment": {"notes": "转换日志如下\n" + HEALTHY}}, rulebase)
    (cosines,) = _facts(diagnosis, "layer_cosines")
    assert cosines["first_node_cosine"] > 0.99
    assert not _facts(diagnosis, "first_node_collapsed")
    assert not any(f["item"] == "preprocess" for f in _facts(diagnosis, "user_mismatch"))


def test_words_without_a_log_give_no_tool_facts(rulebase):
    diagnosis = diagnose_data({"symptom": "X5 上 yolov5 转换后板端检测框很乱，The main quantized node information 没看懂"},
                              rulebase)
    assert not _facts(diagnosis, "layer_cosines")


def test_a_part_of_the_paste_the_parser_skips_is_noted_and_the_rest_is_read(rulebase):
    # the dict after model_deps_info cut short where the user trimmed the paste
    lines = COLLAPSE.splitlines()
    at = next(i for i, line in enumerate(lines) if "model_deps_info:" in line)
    cut = "\n".join(lines[:at] + [lines[at][:lines[at].index("model_deps_info:") + 60] + " ..."] + lines[at + 1:])
    diagnosis = diagnose_data({"symptom": _post(cut)}, rulebase)
    notes = [f["text"] for f in _facts(diagnosis, "intake_note") if f["key"].startswith("symptom 第 3–")]
    assert len(notes) == 1 and "model_deps_info is not a complete Python dict literal" in notes[0]
    # the rest of the paste is read: the collapse still points at the preprocessing
    assert diagnosis.verdict_json["stage"] == "user_side"


def test_pasted_hb_verifier_output_gives_each_outputs_consistency(rulebase):
    table = (REAL / "hb_verifier" / "consistency_mixed.txt").read_text(encoding="utf-8")
    diagnosis = diagnose_data({"symptom": _post(table)}, rulebase)
    consistent = {f["output"]: f["consistent"] for f in _facts(diagnosis, "verifier_output")}
    assert consistent == {"cls_logits": True, "bbox_deltas": False}


def test_a_pasted_model_description_in_a_code_block_gives_the_models_inputs_and_nothing_of_the_prose(rulebase):
    info = (REAL / "hrt_model_info" / "nv12_two_inputs.txt").read_text(encoding="utf-8")
    diagnosis = diagnose_data({"symptom": _post(info)}, rulebase)
    (model,) = _facts(diagnosis, "model_info")
    assert model["march"] == "nash-m" and model["path"].startswith("symptom 第 3–")
    assert {(f["name"], f["value"]) for f in _facts(diagnosis, "input_param")} >= {("input_type_rt", "nv12")}
    # the question after the code block is no garbled line of the table
    assert not [f for f in _facts(diagnosis, "intake_note") if "请问" in f["text"]]


def test_two_pasted_logs_are_two_outputs_each_with_its_own_lines(rulebase):
    text = f"第一次转换：\n```\n{COLLAPSE}\n```\n修正 mean 之后重新转换：\n```\n{HEALTHY}\n```\n板端还是不对"
    diagnosis = diagnose_data({"symptom": text}, rulebase)
    paths = [f["path"] for f in _facts(diagnosis, "layer_cosines")]
    assert len(paths) == 2 and len(set(paths)) == 2
    # only the first log's first node collapses
    assert [f["path"] for f in _facts(diagnosis, "first_node_collapsed")] == [paths[0]]


def test_a_pasted_block_over_the_limit_is_named_not_read(rulebase, monkeypatch):
    from j6doctor.probes import pasted_output

    monkeypatch.setattr(pasted_output, "MAX_PASTED_CHARS", 1000)
    diagnosis = diagnose_data({"symptom": _post(COLLAPSE)}, rulebase)
    assert not _facts(diagnosis, "layer_cosines")
    assert [f for f in _facts(diagnosis, "intake_note") if "not read" in f["text"] and f["key"].startswith("symptom 第")]


def test_the_platform_is_the_one_the_user_names_and_a_pasted_march_is_the_logs(rulebase):
    text = f"J6M 上 yolov5 板端结果不对，日志：\n```\n{HEALTHY}\n```\n"
    diagnosis = diagnose_data({"symptom": text}, rulebase)
    assert [f["family"] for f in _facts(diagnosis, "platform")] == ["J6M"]
    # the log was converted for bayes-e (X5): a march that does not fit the platform
    assert [f["march"] for f in _facts(diagnosis, "artifact_march")] == ["bayes-e"]
    assert diagnosis.verdict_json["stage"] == "user_side"


def test_versions_in_a_pasted_model_description_are_its_readers_alone(rulebase):
    info = (REAL / "hrt_model_info" / "nv12_two_inputs.txt").read_text(encoding="utf-8")
    diagnosis = diagnose_data({"symptom": _post(info)}, rulebase)
    versions = {f["package"]: f["version"] for f in _facts(diagnosis, "version")}
    assert versions["dnn"] == "3.7.4"
    assert not [f for f in _facts(diagnosis, "intake_note") if "以案例为准" in f["text"]]


def test_the_text_rules_read_the_words_around_a_pasted_block_not_its_lines(rulebase):
    # the log's own lines (a warning that an output "is not consistent", its input parameters)
    # are the tool's: its probe reads them; the user's sentence before the block is still read
    log = (REAL / "conversion_log" / "hb_compile.interleaved.crlf.log").read_text(encoding="utf-8")
    assert "input_layout_rt" in log and "WARNING" in log
    diagnosis = diagnose_data({"symptom": _post(log)}, rulebase)
    read = [f for f in diagnosis.run.facts if f.derivation is not None and f.derivation.rule.startswith("text.")]
    assert read and all("```" not in f.get("quote", "") and "line No" not in f.get("quote", "") for f in read)
    assert not [f for f in read if f.type == "said_setting"]
    assert any(f.type == "said_result" and f["mention"] == "board" for f in read)
    # a text that is a log without a fence is read whole (where its prose ends cannot be told)
    unfenced = diagnose_data({"symptom": "板端检测框很乱\n" + log}, rulebase)
    assert any(f.type == "said_setting" for f in unfenced.run.facts)
