"""`j6doctor triage PATH...`: many cases and work folders in one run, through the real
command (a subprocess): rows in input order whatever -j, a broken case is a row with the
message `diagnose` prints and never the end of the run, summary.csv / summary.json /
index.html that parse and agree, per-case reports identical to `diagnose`'s, the same
bytes on every run, the exit codes; and, in process, the expansion rules and bounds."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from html.parser import HTMLParser
from pathlib import Path

from conftest import EXAMPLES, EXAMPLE_CASES, REPO, run_with_terminal_stderr
import pytest

from j6doctor.diagnosis import diagnose_file
from j6doctor.triage import (ProgressBar, classify, expand, first_finding, render_table, report_stems,
                             _width)

FIXTURES = REPO / "tests" / "fixtures" / "formats"
BROKEN = {  # file name -> content: bad YAML, an unknown field, bytes that are no text
    "zz_bad_yaml.yaml": b"symptom: [\n",
    "zz_unknown_key.yaml": b"symptom: x\nplatfrom: J6M\n",
    "zz_not_text.yaml": b"\x00\xff\xfe\x00binary",
}


def triage(cli, *args, cwd: Path) -> subprocess.CompletedProcess:
    return cli("triage", *args, cwd=cwd)


def copy_examples(folder: Path, broken: bool = True) -> list[str]:
    """The bundled example cases (and the broken ones) in `folder`; their sorted names."""
    folder.mkdir(parents=True)
    for case in EXAMPLE_CASES:
        shutil.copy(case, folder / case.name)
    if broken:
        for name, content in BROKEN.items():
            (folder / name).write_bytes(content)
    return sorted(p.name for p in folder.iterdir())


def diagnose_error(cli, case: Path, cwd: Path) -> str:
    """What `diagnose` says about a case it cannot read: its stderr without the prefix."""
    proc = cli("diagnose", str(case), "--no-env", cwd=cwd)
    assert proc.returncode == 2, proc.stderr
    return proc.stderr.strip().removeprefix("j6doctor: error: ")


def read_out(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


class Links(HTMLParser):
    """The links, table rows and text of index.html."""

    def __init__(self):
        super().__init__()
        self.links: list[str] = []
        self.rows: list[tuple[str, str]] = []  # (class, id) of each <tr> in the summary body
        self.text: list[str] = []
        self.in_body = False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "a":
            self.links.append(attrs["href"])
        if tag == "tbody":
            self.in_body = True
        if tag == "tr" and self.in_body:
            self.rows.append((attrs.get("class", ""), attrs.get("id", "")))

    def handle_endtag(self, tag):
        if tag == "tbody":
            self.in_body = False

    def handle_data(self, data):
        self.text.append(data)


def test_examples_and_broken_cases(cli, tmp_path, rulebase):
    names = copy_examples(tmp_path / "cases")
    proc = triage(cli, "cases", "--out", "out", "-j", "2", cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr  # some cases could not be read
    out = tmp_path / "out"

    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    items = summary["items"]
    assert [i["path"] for i in items] == [f"cases/{n}" for n in names]  # sorted, as given
    assert [i["n"] for i in items] == list(range(1, len(names) + 1))
    failed = {Path(i["path"]).name: i for i in items if i["status"] != "ok"}
    assert set(failed) == set(BROKEN)
    assert all(i["status"] == "input_error" and i["stage"] is None and not i["reports"] for i in failed.values())
    for name, item in failed.items():  # the very message diagnose prints for the same file
        assert item["error"] == diagnose_error(cli, Path("cases") / name, tmp_path)
        assert f"j6doctor: error: cases/{name}: {item['error']}" in proc.stderr
    assert "platfrom" in failed["zz_unknown_key.yaml"]["error"]
    assert summary["counts"] == {**summary["counts"], "total": len(names), "diagnosed": len(names) - len(BROKEN),
                                 "input_errors": len(BROKEN), "internal_errors": 0}
    assert summary["exit_code"] == 2

    diagnosed = [i for i in items if i["status"] == "ok"]
    assert {i["stage"] for i in diagnosed} >= {"convert", "export", "board", "user_side", "undetermined"}
    for item in diagnosed:  # each row is the verdict `diagnose` gives the same file
        diagnosis = diagnose_file(tmp_path / item["path"], rulebase)
        verdict = diagnosis.verdict_json
        assert item["stage"] == verdict["stage"] and item["stage_label"] == verdict["stage_label"]
        assert item["missing"] == verdict["missing"]
        assert [c["stage"] for c in item["candidates"]] == [c["stage"] for c in verdict["candidates"]]
        assert item["first_finding"] == first_finding(diagnosis.verdict)
        assert list(item["reports"]) == ["html"]
        assert (out / item["reports"]["html"]).read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    by_name = {Path(i["path"]).name: i for i in items}
    assert by_name["empty.yaml"]["missing"][:2] == ["stage_results", "badcase"]
    assert by_name["contradictory.yaml"]["first_finding"].startswith("⚠ 评测结果相互矛盾")
    assert by_name["board_integration.yaml"]["first_finding"].startswith("板端 与 hbm x86 仿真 在同一输入上输出不同")
    # A per-case report is what `diagnose` writes for the same case, byte for byte.
    single = cli("diagnose", "cases/convert_j6m.yaml", "--no-env", "--format", "html", cwd=tmp_path)
    assert single.returncode == 0
    assert (out / by_name["convert_j6m.yaml"]["reports"]["html"]).read_text(encoding="utf-8") == single.stdout

    text = (out / "summary.csv").read_text(encoding="utf-8")
    assert text.startswith("\ufeff")  # spreadsheets then read the Chinese labels as UTF-8
    rows = list(csv.DictReader(io.StringIO(text.removeprefix("\ufeff"))))
    assert [r["path"] for r in rows] == [i["path"] for i in items]
    for row, item in zip(rows, items):
        assert row["status"] == item["status"] and row["stage"] == (item["stage"] or "")
        assert row["candidates"].split() == [c["stage"] for c in item["candidates"]]
        assert row["missing"].split() == item["missing"] and row["error"] == (item["error"] or "")
        assert row["report"] == item["reports"].get("html", "")

    page = (out / "index.html").read_text(encoding="utf-8")
    parsed = Links()
    parsed.feed(page)
    assert len(parsed.rows) == len(items)
    assert [cls for cls, _ in parsed.rows] == [i["status"] for i in items]
    assert parsed.links and all((out / link).is_file() for link in parsed.links)  # every link resolves
    assert {link for link in parsed.links} == {f for i in diagnosed for f in i["reports"].values()}
    words = "".join(parsed.text)
    assert "批量诊断" in words and "输入错误" in words and "首要发现" in words
    assert "unknown key 'platfrom'" in words  # shown (escaped in the source)
    assert "&#39;platfrom&#39;" in page and "<script" not in page and "http" not in page  # self-contained

    table = proc.stdout.splitlines()
    assert table[0].split()[:3] == ["#", "案例", "阶段"]
    listed = [line.split()[1] for line in table[1:len(names) + 1]]
    assert listed == [f"cases/{n}" for n in names]  # the terminal table in input order too
    assert f"共 {len(names)} 项：已诊断 {len(names) - len(BROKEN)}，输入错误 {len(BROKEN)}" in proc.stdout
    assert "\r" not in proc.stderr  # no progress bar when stderr is not a terminal


def _cli_has_format() -> bool:
    help_text = subprocess.run([sys.executable, "-m", "j6doctor", "triage", "--help"], capture_output=True,
                               text=True, timeout=60).stdout
    return "--format" in help_text


@pytest.mark.skipif(not _cli_has_format(), reason="`triage --format` is not wired in the command line yet")
def test_every_report_format(cli, tmp_path):
    copy_examples(tmp_path / "cases")
    proc = triage(cli, "cases", "--out", "out", "--format", "html,json,md", "-j", "2", cwd=tmp_path)
    assert proc.returncode == 2
    out = tmp_path / "out"
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["formats"] == ["html", "json", "md"]
    item = next(i for i in summary["items"] if i["path"] == "cases/convert_j6m.yaml")
    assert item["reports"] == {f: f"{item['reports']['html'][:-5]}.{f}" for f in ("html", "json", "md")}
    for fmt in ("json", "md", "html"):
        single = cli("diagnose", "cases/convert_j6m.yaml", "--no-env", "--format", fmt, cwd=tmp_path)
        assert (out / item["reports"][fmt]).read_text(encoding="utf-8") == single.stdout
    parsed = Links()
    parsed.feed((out / "index.html").read_text(encoding="utf-8"))
    assert {"HTML", "Markdown", "JSON"} <= set(parsed.text)
    assert all((out / link).is_file() for link in parsed.links)


def test_same_bytes_whatever_the_number_of_processes(cli, tmp_path):
    copy_examples(tmp_path / "cases")
    runs = {}
    for jobs in ("1", "2", "3"):
        proc = triage(cli, "cases", "--out", f"out{jobs}", "-j", jobs, cwd=tmp_path)
        assert proc.returncode == 2
        runs[jobs] = (proc.stdout, read_out(tmp_path / f"out{jobs}"))
    assert runs["1"] == runs["2"] == runs["3"]
    again = triage(cli, "cases", "--out", "out2", "-j", "2", cwd=tmp_path)  # over its own earlier output
    assert (again.stdout, read_out(tmp_path / "out2")) == runs["2"]
    assert str(tmp_path) not in json.dumps({k: v.decode("utf-8", "replace") for k, v in runs["2"][1].items()})


def make_tickets(root: Path) -> None:
    """A support desk's folder: tickets with a case and its artifacts, one with artifacts
    only, one broken, one with a PTQ conversion yaml beside its case, and a notes folder."""
    t1 = root / "T001"
    shutil.copytree(FIXTURES / "horizon_quant_analysis", t1 / "qa_convert")
    (t1 / "case.yaml").write_text((EXAMPLES / "convert_j6m.yaml").read_text(encoding="utf-8")
                                  + "artifacts: [qa_convert/]\n", encoding="utf-8")
    t2 = root / "T002"
    shutil.copytree(FIXTURES / "horizon_quant_analysis", t2 / "out")
    shutil.copytree(FIXTURES / "prepare", t2 / "prepare")
    (root / "T003").mkdir()
    (root / "T003" / "case.yaml").write_text("symptom: x\nplatfrom: J6M\n", encoding="utf-8")
    t4 = root / "T004"
    t4.mkdir()
    shutil.copy(EXAMPLES / "convert_j6m.json", t4 / "case.json")
    (t4 / "config.yaml").write_text(
        "model_parameters:\n  onnx_model: model.onnx\n  march: bayes-e\n"
        "input_parameters:\n  input_type_rt: nv12\n  input_type_train: rgb\n"
        "calibration_parameters:\n  cal_data_dir: ./calibration_data\n"
        "compiler_parameters:\n  optimize_level: O3\n", encoding="utf-8")
    (root / "notes").mkdir()
    (root / "notes" / "readme.txt").write_text("会议记录\n", encoding="utf-8")


def test_ticket_folders_and_work_folders(cli, tmp_path):
    make_tickets(tmp_path / "tickets")
    proc = triage(cli, "tickets/T004/case.json", "tickets", "missing.yaml", "--out", "out", cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    summary = json.loads((tmp_path / "out" / "summary.json").read_text(encoding="utf-8"))
    got = [(i["path"], i["kind"], i["status"]) for i in summary["items"]]
    assert got == [
        ("tickets/T004/case.json", "case", "ok"),  # given first; not repeated by the folder
        ("tickets/T001/case.yaml", "case", "ok"),  # its qa_convert/ is read through the case, not again
        ("tickets/T002", "workdir", "ok"),  # artifacts without a case: one work-folder diagnosis
        ("tickets/T003/case.yaml", "case", "input_error"),
        ("missing.yaml", "case", "input_error"),
    ]
    assert summary["skipped"] == [{"path": "tickets/T004/config.yaml", "why": summary["skipped"][0]["why"]}]
    assert "model_parameters" in summary["skipped"][0]["why"]
    items = {i["path"]: i for i in summary["items"]}
    assert items["missing.yaml"]["error"] == "missing.yaml: no such file; expected a YAML or JSON case file"
    ticket = (tmp_path / "out" / items["tickets/T001/case.yaml"]["reports"]["html"]).read_text("utf-8")
    assert "qa_convert/compare_per_layer_out.txt" in ticket and "qa_convert/badcase.txt" in ticket  # read via the case
    assert items["tickets/T001/case.yaml"]["stage"] == "convert"
    work = (tmp_path / "out" / items["tickets/T002"]["reports"]["html"]).read_text("utf-8")
    assert "out/compare_per_layer_out.txt" in work and "prepare/model_check_result.txt" in work
    # the work folder is diagnosed as `diagnose --workdir` diagnoses it
    single = cli("diagnose", "--workdir", "tickets/T002", "--no-env", "--format", "json", cwd=tmp_path)
    assert json.loads(single.stdout)["stage"] == items["tickets/T002"]["stage"]
    assert items["tickets/T002"]["reports"]["html"] == "003-T002.html"  # numbered, named after its path
    assert "1 .yaml/.json/.md file(s) are not case files" in proc.stderr


def test_every_case_diagnosed_exits_0(cli, tmp_path):
    copy_examples(tmp_path / "cases", broken=False)
    proc = triage(cli, "cases/convert_j6m.yaml", "cases/empty.yaml", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stderr == ""
    lines = proc.stdout.splitlines()
    assert lines[1].split()[:3] == ["1", "cases/convert_j6m.yaml", "convert"]
    assert lines[2].split()[:3] == ["2", "cases/empty.yaml", "暂不能判断"]
    assert "stage_results,badcase" in lines[2]
    assert not (tmp_path / "out").exists()


def test_refused_runs_exit_2(cli, tmp_path):
    copy_examples(tmp_path / "cases", broken=False)
    pack = triage(cli, "cases", "--rules", "no_such_pack", cwd=tmp_path)
    assert pack.returncode == 2 and "no_such_pack: no such rule pack folder" in pack.stderr and pack.stdout == ""
    same = triage(cli, "cases", "--out", "cases", cwd=tmp_path)
    assert same.returncode == 2 and "--out is the input folder" in same.stderr
    (tmp_path / "a_file").write_text("x", encoding="utf-8")
    not_folder = triage(cli, "cases", "--out", "a_file", cwd=tmp_path)
    assert not_folder.returncode == 2 and "a_file" in not_folder.stderr
    # an --out folder inside the input folder is not read as input
    inside = triage(cli, "cases", "--out", "cases/report", cwd=tmp_path)
    again = triage(cli, "cases", "--out", "cases/report", cwd=tmp_path)
    assert inside.returncode == again.returncode == 0 and inside.stdout == again.stdout


def test_reports_of_an_earlier_run_are_replaced(cli, tmp_path):
    names = copy_examples(tmp_path / "cases", broken=False)
    assert triage(cli, "cases", "--out", "out", cwd=tmp_path).returncode == 0
    first = set(read_out(tmp_path / "out"))
    (tmp_path / "cases" / names[0]).unlink()
    (tmp_path / "out" / "keep.txt").write_text("mine", encoding="utf-8")
    assert triage(cli, "cases", "--out", "out", cwd=tmp_path).returncode == 0
    second = set(read_out(tmp_path / "out"))
    summary = json.loads((tmp_path / "out" / "summary.json").read_text(encoding="utf-8"))
    listed = {f for i in summary["items"] for f in i["reports"].values()}
    assert len(listed) == len(names) - 1 and first != second
    assert second == listed | {"summary.csv", "summary.json", "index.html", "keep.txt"}  # no stale report left


def test_report_names_are_safe_and_the_index_escapes(cli, tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    shutil.copy(EXAMPLES / "convert_j6m.yaml", folder / '工单 <b>&"1".yaml')
    shutil.copy(EXAMPLES / "empty.yaml", folder / "x y.yaml")
    proc = triage(cli, "in", "--out", "out", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    files = sorted(p.name for p in (tmp_path / "out").iterdir())
    reports = [f for f in files if f not in ("summary.csv", "summary.json", "index.html")]
    assert reports == ["001-x_y.html", "002-工单_b_1.html"]
    page = (tmp_path / "out" / "index.html").read_text(encoding="utf-8")
    assert "<b>" not in page and "in/工单 &lt;b&gt;&amp;&#34;1&#34;.yaml" in page
    assert 'href="002-%E5%B7%A5%E5%8D%95_b_1.html"' in page


def test_progress_bar_only_on_a_terminal(tmp_path):
    copy_examples(tmp_path / "cases", broken=False)
    command = [sys.executable, "-m", "j6doctor", "triage", "cases", "-j", "2"]
    env = {k: v for k, v in os.environ.items() if k != "J6DOCTOR_DEBUG"}
    proc, shown = run_with_terminal_stderr(command, cwd=tmp_path, env=env)
    assert proc.returncode == 0
    assert "[j6doctor] 批量诊断 " in shown and f"/{len(EXAMPLE_CASES)}" in shown and shown.endswith("\r\x1b[K")
    quiet = subprocess.run(command + ["--no-progress"], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                           env=env)
    assert quiet.returncode == 0 and quiet.stderr == ""


def test_ctrl_c_stops_the_pool_and_leaves_no_process(tmp_path):
    cases = tmp_path / "cases"
    cases.mkdir()
    examples = [p for p in EXAMPLE_CASES if p.suffix == ".yaml"]
    for i in range(400):
        shutil.copy(examples[i % len(examples)], cases / f"c{i:03d}_{examples[i % len(examples)].name}")
    env = {k: v for k, v in os.environ.items() if k != "J6DOCTOR_DEBUG"}
    proc = subprocess.Popen([sys.executable, "-m", "j6doctor", "triage", "cases", "-j", "2", "--out", "out"],
                            cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True,  # its own process group, as a terminal's job
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 60
    while not list((tmp_path / "out").glob("0*.html")) and time.monotonic() < deadline:
        time.sleep(0.05)  # until the pool is at work
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C sends: every process of the job
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130 and "j6doctor: interrupted" in err.decode()
    time.sleep(0.5)
    left = subprocess.run(["ps", "-eo", "pgid="], capture_output=True, text=True).stdout.split()
    assert str(proc.pid) not in left  # no pool process, no engine worker left behind
    assert not (tmp_path / "out" / "summary.json").exists()


# --- in process: the expansion rules and bounds, the table, the bar --------------------


def test_which_files_are_cases(tmp_path):
    for name in ("compile_x86_and_board.yaml", "convert_j6m.json", "empty.yaml"):
        shutil.copy(EXAMPLES / name, tmp_path / name)
        assert classify(tmp_path / name) == ("case", ""), name
    (tmp_path / "typo.yaml").write_text("symtom: x\nplatform: J6M\n", encoding="utf-8")
    assert classify(tmp_path / "typo.yaml")[0] == "case"  # its row will name the typo
    (tmp_path / "metrics.yaml").write_text("- {artifact: qat_pt, metric: mAP, value: 41.2}\n", encoding="utf-8")
    assert classify(tmp_path / "metrics.yaml")[0] == "artifact"
    shutil.copy(FIXTURES / "real" / "quant_info" / "clsnet_224_quant_info.json", tmp_path / "q_quant_info.json")
    assert classify(tmp_path / "q_quant_info.json")[0] == "artifact"
    (tmp_path / "ci.yml").write_text("name: ci\non: [push]\njobs:\n  test: {runs-on: ubuntu-latest}\n",
                                     encoding="utf-8")
    assert classify(tmp_path / "ci.yml")[0] == "other"


def test_expansion_is_bounded(tmp_path):
    copy_examples(tmp_path / "cases", broken=False)
    few = expand([tmp_path / "cases"], max_files=5)
    assert few.bound_hit and len(few.items) == 5
    assert "more than 5 files looked at" in few.warnings[0]
    capped = expand([tmp_path / "cases"], max_items=3)
    assert capped.bound_hit and len(capped.items) == 3 and "only the first 3" in capped.warnings[0]
    whole = expand([tmp_path / "cases"])
    assert not whole.bound_hit and not whole.warnings and len(whole.items) == len(EXAMPLE_CASES)


def test_report_names_are_numbered_and_unique(tmp_path):
    make_tickets(tmp_path / "tickets")
    items = expand([tmp_path / "tickets" / "T001" / "case.yaml", tmp_path / "tickets"]).items
    stems = report_stems(items)
    assert len(set(stems)) == len(stems) and stems[:3] == ["001-case", "002-T002", "003-T003_case"]


def test_table_fits_a_terminal():
    rows = [{"n": 1, "path": "cases/" + "很长的工单名" * 10 + ".yaml", "status": "ok", "stage_label": "用户侧适配",
             "stage": "user_side", "candidates": [{"stage": "user_side"}, {"stage": "board"}],
             "missing": ["stage_results"], "first_finding": "x86 仿真正常、板端异常" * 10, "error": None},
            {"n": 2, "path": "cases/bad.yaml", "status": "input_error", "stage_label": None, "stage": None,
             "candidates": [], "missing": [], "first_finding": "", "error": "bad.yaml:2: not valid YAML\nmore"}]
    for line in render_table(rows, 100).splitlines():
        assert _width(line) <= 100
    full = render_table(rows)  # not a terminal: nothing cut
    assert "x86 仿真正常、板端异常" * 10 in full and "bad.yaml:2: not valid YAML（另 1 行）" in full


class Tty(io.StringIO):
    def isatty(self):
        return True


def test_progress_bar_object():
    tty = Tty()
    bar = ProgressBar(4, tty)
    bar.update(1, "cases/a.yaml")
    bar.update(4, "cases/d.yaml")  # the last step is always drawn
    bar.done()
    assert "[j6doctor] 批量诊断 " in tty.getvalue() and "4/4 cases/d.yaml" in tty.getvalue()
    assert tty.getvalue().endswith("\r\x1b[K")
    piped = io.StringIO()
    quiet = ProgressBar(4, piped)
    quiet.update(4)
    quiet.done()
    assert piped.getvalue() == ""


def test_expected_reports_beside_the_bundled_cases_are_skipped_as_our_own_output(cli, tmp_path):
    """examples/cases holds each case's expected JSON report; a verdict j6doctor wrote names
    case keys (stage, flow, ...) and, here, `compile` in its file name, but is no case and no
    compile config."""
    proc = triage(cli, str(EXAMPLES), "--out", "out", "--format", "json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((tmp_path / "out" / "summary.json").read_text(encoding="utf-8"))
    assert sorted(Path(i["path"]).name for i in summary["items"]) == sorted(p.name for p in EXAMPLE_CASES)
    skipped = {Path(s["path"]).name: s["why"] for s in summary["skipped"]}
    assert sorted(skipped) == sorted(p.name + suffix for p in EXAMPLE_CASES for suffix in (".expected.json", ".expected.md"))
    assert skipped["compile_x86_and_board.yaml.expected.json"].startswith("j6doctor 的 JSON 诊断结果")
    assert skipped["compile_x86_and_board.yaml.expected.md"].startswith("j6doctor 的 Markdown 诊断报告")


def test_a_post_saved_as_markdown_in_a_folder_is_named_as_skipped_and_diagnosed_by_name(cli, tmp_path):
    make_tickets(tmp_path / "tickets")
    post = tmp_path / "tickets" / "T001" / "forum_post.md"
    post.write_text("RDK X5 上 yolov5 的 bin 模型在板端没有检测框，onnx 在 PC 上正常。\n", encoding="utf-8")
    proc = triage(cli, "tickets", "--out", "out", cwd=tmp_path)
    summary = json.loads((tmp_path / "out" / "summary.json").read_text(encoding="utf-8"))
    assert "tickets/T001/forum_post.md" not in [i["path"] for i in summary["items"]]
    (why,) = [s["why"] for s in summary["skipped"] if s["path"] == "tickets/T001/forum_post.md"]
    assert "按文件名给出" in why and "were skipped" in proc.stderr
    by_name = triage(cli, "tickets/T001/forum_post.md", "--out", "out2", cwd=tmp_path)
    assert by_name.returncode == 0, by_name.stderr
    (item,) = json.loads((tmp_path / "out2" / "summary.json").read_text(encoding="utf-8"))["items"]
    assert item["status"] == "ok" and item["stage"] != ""
