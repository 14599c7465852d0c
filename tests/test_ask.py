"""`j6doctor ask`: asks for the missing gate items through stdin, writes them into the case
file without losing what was there, then diagnoses."""

from __future__ import annotations

import json
import subprocess
import sys

from j6doctor.probes.case_file import read_case


def run_ask(tmp_path, case_name, answers, *extra):
    return subprocess.run([sys.executable, "-m", "j6doctor", "ask", case_name, "--no-env", *extra],
                          input=answers, capture_output=True, text=True, cwd=tmp_path, timeout=120)


ORIGINAL = """# 板端问题，QA 组 2026-11-30
symptom: "板端 mAP 低 6 个点"   # 来自评测报告
results:
  board: {status: abnormal, evidence: multi_frame_visual}
"""


def test_asks_in_gate_order_and_keeps_the_file(tmp_path):
    (tmp_path / "case.yaml").write_text(ORIGINAL, encoding="utf-8")
    answers = "normal\n\ny\nqa/badcase.pt\nJ6M\n3.1.2\n3.1.2\n4.4\nNV12 输入，板端 resize 双线性\n"
    proc = run_ask(tmp_path, "case.yaml", answers)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    order = [out.index(label) for label in ("[已验证正常和异常的产物]", "[稳定可复现 badcase", "[平台 / march]",
                                            "[软件版本", "[输入输出前后处理")]
    assert order == sorted(order)
    assert "必须知道精度从哪个产物开始下降" in out  # the reason is given with the question
    assert "quantized.bc 的评测结论" in out  # the gap's artifact is asked first
    text = (tmp_path / "case.yaml").read_text(encoding="utf-8")
    assert text.startswith("# 板端问题，QA 组 2026-11-30\nsymptom: \"板端 mAP 低 6 个点\"   # 来自评测报告\n")
    case = read_case(tmp_path / "case.yaml").data
    assert case["results"]["quantized_bc"] == {"status": "normal", "evidence": "dataset_eval"}
    assert case["versions"]["hbdk4-compiler"] == "4.4"  # stays text, not the number 4.4
    assert case["platform"] == "J6M" and case["badcase"] == {"reproducible": True, "path": "qa/badcase.pt"}
    assert case["deployment"]["notes"].startswith("NV12")
    report = out.split("# j6doctor 诊断报告", 1)[1]
    assert "当前最可能阶段：**compile / 部署适配**" in report
    assert "需要用户补充的信息或产物：无" in report


def test_empty_answers_skip_and_end_of_input_stops(tmp_path):
    (tmp_path / "case.yaml").write_text(ORIGINAL, encoding="utf-8")
    proc = run_ask(tmp_path, "case.yaml", "\n\n")
    assert proc.returncode == 0
    assert "输入结束" in proc.stdout
    assert (tmp_path / "case.yaml").read_text(encoding="utf-8") == ORIGINAL  # nothing answered, nothing written
    assert "暂不能判断" in proc.stdout or "基线确认" in proc.stdout


def test_invalid_answers_are_asked_again(tmp_path):
    (tmp_path / "case.yaml").write_text("results: {qat_pt: normal, qat_bc: abnormal}\n", encoding="utf-8")
    proc = run_ask(tmp_path, "case.yaml", "\n\nJ7\nnash-m\n")  # skip symptom and badcase
    assert "无法识别 'J7'" in proc.stdout
    assert read_case(tmp_path / "case.yaml").data["platform"] == "nash-m"


def test_new_case_file_and_json(tmp_path):
    proc = run_ask(tmp_path, "new.yaml", "qat_pt\nqat_bc\n\n")
    assert proc.returncode == 0
    assert read_case(tmp_path / "new.yaml").data["results"] == {
        "qat_pt": {"status": "normal", "evidence": "dataset_eval"},
        "qat_bc": {"status": "abnormal", "evidence": "dataset_eval"}}
    (tmp_path / "c.json").write_text(json.dumps({"symptom": "掉点", "results": {"board": {"status": "abnormal"}}}),
                                     encoding="utf-8")
    run_ask(tmp_path, "c.json", "abnormal\n")
    data = json.loads((tmp_path / "c.json").read_text(encoding="utf-8"))
    assert data["symptom"] == "掉点" and data["results"]["quantized_bc"]["status"] == "abnormal"


def test_bad_case_file_is_not_touched(tmp_path):
    (tmp_path / "case.yaml").write_text("resutls: {}\n", encoding="utf-8")
    proc = run_ask(tmp_path, "case.yaml", "x\n")
    assert proc.returncode == 2 and "unknown key 'resutls'" in proc.stderr
    assert (tmp_path / "case.yaml").read_text(encoding="utf-8") == "resutls: {}\n"


def run_ask_bytes(tmp_path, answers: bytes, **env):
    import os
    return subprocess.run([sys.executable, "-m", "j6doctor", "ask", "case.yaml", "--no-env"], input=answers,
                          capture_output=True, cwd=tmp_path, timeout=120, env={**os.environ, **env})


def test_answers_that_are_not_text_are_asked_again_and_never_written(tmp_path):
    """A GBK terminal writing into a UTF-8 session, a pasted binary, control characters: the
    line is asked again, and what is written reads back as a case."""
    (tmp_path / "case.yaml").write_text("results: {qat_pt: normal, qat_bc: abnormal}\n", encoding="utf-8")
    answers = ("\xb0\xe5\xb6\xcb mAP 低".encode("latin-1", "ignore") + b"\n"  # not UTF-8
               + "板端 mAP 低 3 个点\x00\x07\x1b[31m".encode() + b"\n"  # control characters
               + b"\xff\xfe\n\xff\n\xfe\n"  # three undecodable lines: the question is skipped
               + b"J6M\n")
    proc = run_ask_bytes(tmp_path, answers, PYTHONIOENCODING="utf-8")
    assert proc.returncode == 0, proc.stderr.decode()
    out = proc.stdout.decode()
    assert out.count("不是 utf-8 编码的文本，请重新输入") == 4 and "多次无法读取，跳过这一问" in out
    case = read_case(tmp_path / "case.yaml").data
    assert case["symptom"] == "板端 mAP 低 3 个点[31m"
    assert case["platform"] == "J6M" and "badcase" not in case


def test_a_gbk_terminal_is_read_in_its_own_encoding(tmp_path):
    (tmp_path / "case.yaml").write_text("results: {qat_pt: normal, qat_bc: abnormal}\n", encoding="utf-8")
    proc = run_ask_bytes(tmp_path, "板端 mAP 低 3 个点\n\nJ6M\n".encode("gbk"), PYTHONIOENCODING="gbk")
    assert proc.returncode == 0, proc.stderr.decode("gbk")
    case = read_case(tmp_path / "case.yaml").data
    assert case["symptom"] == "板端 mAP 低 3 个点" and case["platform"] == "J6M"


def test_an_overlong_answer_is_cut(tmp_path):
    (tmp_path / "case.yaml").write_text("results: {qat_pt: normal, qat_bc: abnormal}\n", encoding="utf-8")
    proc = run_ask_bytes(tmp_path, "低".encode() * 200_000 + b"\n\nJ6M\n", PYTHONIOENCODING="utf-8")
    assert proc.returncode == 0, proc.stderr.decode()
    assert "回答超过 64 KiB，只保留前面部分" in proc.stdout.decode()
    case = read_case(tmp_path / "case.yaml").data
    assert case["symptom"] == "低" * (64 * 1024 // 3) and case["platform"] == "J6M"
