"""`j6doctor ask`: asks for the missing gate items through stdin, writes them into the case
file without losing what was there, then diagnoses."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

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
    answers = "normal\ndataset_eval\ny\nqa/badcase.pt\nJ6M\n3.1.2\n3.1.2\n4.4\nNV12 输入，板端 resize 双线性\n"
    proc = run_ask(tmp_path, "case.yaml", answers)
    assert proc.returncode == 0, proc.stderr
    out = proc.stderr  # the dialogue; stdout holds the report alone
    assert proc.stdout.startswith("# j6doctor 诊断报告")
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
    report = proc.stdout
    assert "当前最可能阶段：**compile / 部署适配**" in report
    assert "需要用户补充的信息或产物：无" in report


def test_empty_answers_skip_and_end_of_input_stops(tmp_path):
    (tmp_path / "case.yaml").write_text(ORIGINAL, encoding="utf-8")
    proc = run_ask(tmp_path, "case.yaml", "\n\n")
    assert proc.returncode == 0
    assert "输入结束" in proc.stderr
    assert (tmp_path / "case.yaml").read_text(encoding="utf-8") == ORIGINAL  # nothing answered, nothing written
    assert "暂不能判断" in proc.stdout or "基线确认" in proc.stdout


def test_invalid_answers_are_asked_again(tmp_path):
    (tmp_path / "case.yaml").write_text("results: {qat_pt: normal, qat_bc: abnormal}\n", encoding="utf-8")
    proc = run_ask(tmp_path, "case.yaml", "\n\nJ7\nnash-m\n")  # skip symptom and badcase
    assert "无法识别 'J7'" in proc.stderr
    assert read_case(tmp_path / "case.yaml").data["platform"] == "nash-m"


def test_an_answer_never_given_is_never_written(tmp_path):
    """Three answers that are not an evidence kind leave the question unanswered (no default
    is stored), the user is told so, and only the latest error line stands above the
    question asked again."""
    (tmp_path / "case.yaml").write_text(ORIGINAL, encoding="utf-8")
    proc = run_ask(tmp_path, "case.yaml", "normal\n3.1.2\nyes\nok\n")
    assert proc.returncode == 0, proc.stderr
    assert read_case(tmp_path / "case.yaml").data["results"]["quantized_bc"] == {"status": "normal"}
    assert "3 次回答都无法识别：这一问不填写" in proc.stderr
    assert "证据类型未填写" in proc.stderr
    # each error line printed once, above the next try only (not again above the one after)
    assert proc.stderr.count("无法识别 '3.1.2'") == 1 and proc.stderr.count("无法识别 'yes'") == 1
    assert proc.stderr.index("无法识别 '3.1.2'") < proc.stderr.index("无法识别 'yes'") < proc.stderr.index("3 次回答")


def test_new_case_file_and_json(tmp_path):
    proc = run_ask(tmp_path, "new.yaml", "qat_pt\nqat_bc\n\n")
    assert proc.returncode == 0
    assert read_case(tmp_path / "new.yaml").data["results"] == {  # no evidence kind given: none written
        "qat_pt": {"status": "normal"},
        "qat_bc": {"status": "abnormal"}}
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
    out = proc.stderr.decode()
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
    assert "回答超过 64 KiB，只保留前面部分" in proc.stderr.decode()
    case = read_case(tmp_path / "case.yaml").data
    assert case["symptom"] == "低" * (64 * 1024 // 3) and case["platform"] == "J6M"


ALIGNED = """# 板端问题
symptom: "板端 mAP 低 6 个点，这是一段很长很长的描述，用来检查写回时不会在行中间被折行，也不会在行尾留下空格，因为默认八十列就会折行"   # 来自评测报告
results:
  qat_bc:   {status: normal,   evidence: dataset_eval}   # 对齐
  board:    {status: abnormal, evidence: multi_frame_visual}

# 部署说明
deployment: {notes: "NV12 输入"}
"""


def test_untouched_lines_stay_byte_for_byte(tmp_path):
    (tmp_path / "case.yaml").write_text(ALIGNED, encoding="utf-8")
    proc = run_ask(tmp_path, "case.yaml", "abnormal\n")  # quantized.bc, then end of input
    assert proc.returncode == 0, proc.stderr
    text = (tmp_path / "case.yaml").read_text(encoding="utf-8")
    original = ALIGNED.splitlines(keepends=True)
    assert text.startswith("".join(original[:5]))  # the long line and the aligned entries as written
    assert text.endswith("".join(original[5:]))    # the comment and the line after the block too
    added = text[len("".join(original[:5])):-len("".join(original[5:]))]
    assert added == '  quantized_bc:\n    status: "abnormal"\n'
    assert read_case(tmp_path / "case.yaml").data["results"]["quantized_bc"]["status"] == "abnormal"


def test_nothing_answered_creates_no_file(tmp_path):
    proc = run_ask(tmp_path, "new.yaml", "")
    assert proc.returncode == 0, proc.stderr
    assert not (tmp_path / "new.yaml").exists()
    assert proc.stdout.startswith("# j6doctor 诊断报告")


def test_format_json_puts_the_verdict_alone_on_stdout(tmp_path):
    (tmp_path / "case.yaml").write_text(ORIGINAL, encoding="utf-8")
    proc = run_ask(tmp_path, "case.yaml", "abnormal\n", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    verdict = json.loads(proc.stdout)
    assert verdict["schema_version"] and verdict["stage"] == "undetermined"  # quantized.bc abnormal: qat.bc next
    assert [e["artifact"] for e in verdict["evaluate_next"]] == ["qat_bc"]
    assert "[已验证正常和异常的产物]" in proc.stderr


def test_ctrl_c_keeps_the_answers_given_and_exits_130(tmp_path):
    import signal

    (tmp_path / "case.yaml").write_text(ORIGINAL, encoding="utf-8")
    # A terminal's Ctrl-C reaches a process whose SIGINT is at its default; a job started in the
    # background by a non-interactive shell (as CI runs the other interpreters) inherits it ignored.
    proc = subprocess.Popen([sys.executable, "-m", "j6doctor", "ask", "case.yaml", "--no-env"], cwd=tmp_path,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    proc.stdin.write("normal\n\n".encode())  # quantized.bc normal, the evidence kind left to its default
    proc.stdin.flush()
    seen = b""
    while b"[y/n]" not in seen:  # the badcase question: the results answer is complete
        chunk = proc.stderr.read1(4096)
        assert chunk, seen.decode(errors="replace")
        seen += chunk
    import time
    deadline = time.monotonic() + 60
    while proc.poll() is None and time.monotonic() < deadline:  # stdin stays open: closing it would race
        proc.send_signal(signal.SIGINT)  # (again, if a loaded machine had not yet got to reading)
        try:
            proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            pass
    assert proc.poll() is not None, "ask did not stop on Ctrl-C"
    err = seen + proc.stderr.read()
    proc.stdin.close()
    proc.stdout.close()
    proc.stderr.close()
    assert proc.returncode == 130, err.decode(errors="replace")
    assert "已把回答过的内容写入 case.yaml" in err.decode()
    case = read_case(tmp_path / "case.yaml").data
    assert case["results"]["quantized_bc"] == {"status": "normal"}  # the evidence question was never answered
    assert (tmp_path / "case.yaml").read_text(encoding="utf-8").startswith(ORIGINAL.splitlines(keepends=True)[0])


def test_a_ctrl_c_while_the_answers_are_saved_waits_for_the_save(tmp_path):
    """Ctrl-C pressed (even twice) while the case file is written: the file is complete, then
    the program stops."""
    import os
    import signal

    from j6doctor import ask as ask_module
    from j6doctor import case_writer

    case = tmp_path / "case.yaml"
    case.write_text(ORIGINAL, encoding="utf-8")
    real_write = case_writer.write_atomic
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a terminal

    def write_while_interrupted(path, text):
        os.kill(os.getpid(), signal.SIGINT)
        os.kill(os.getpid(), signal.SIGINT)
        real_write(path, text)

    try:
        case_writer.write_atomic = write_while_interrupted
        with pytest.raises(KeyboardInterrupt):
            with ask_module._interrupt_deferred():
                ask_module.write_case(case, {"results": {"quantized_bc": {"status": "normal"}}})
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        case_writer.write_atomic = real_write
        signal.signal(signal.SIGINT, previous)
    assert "quantized_bc" in case.read_text(encoding="utf-8")
    assert case.read_text(encoding="utf-8").startswith(ORIGINAL.splitlines()[0])


def test_with_a_store_the_completed_case_is_kept_and_its_report_lists_similar_ones(tmp_path):
    from j6doctor.store.library import open_library

    store = str(tmp_path / "lib.db")
    (tmp_path / "earlier.yaml").write_text(ORIGINAL.replace("6 个点", "5 个点")
                                           + "  quantized_bc: {status: normal, evidence: dataset_eval}\n",
                                           encoding="utf-8")
    earlier = subprocess.run([sys.executable, "-m", "j6doctor", "diagnose", "earlier.yaml", "--no-env",
                              "--store", store], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert earlier.returncode == 0, earlier.stderr
    (tmp_path / "case.yaml").write_text(ORIGINAL, encoding="utf-8")
    proc = run_ask(tmp_path, "case.yaml", "normal\n\n", "--store", store)
    assert proc.returncode == 0, proc.stderr
    assert "## 相似的历史案例" in proc.stdout and "earlier.yaml" in proc.stdout
    rows = open_library(store).rows()
    assert [r["title"] for r in rows] == ["earlier.yaml", "case.yaml"]
    kept = open_library(store).show(rows[1]["id"])["case_text"]
    assert kept == (tmp_path / "case.yaml").read_text(encoding="utf-8") and "quantized_bc" in kept  # with the answers
