"""Command-line conventions a new user expects: `-` for standard input and output, clear
refusals of missing or misplaced paths, -q / -v, --fail-on for CI, and the settings a site
always uses in j6doctor.toml / [tool.j6doctor]."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from conftest import SITE_RULE, write_case, write_file

CASE = "results:\n  qat_bc: {status: normal, evidence: dataset_eval}\n  quantized_bc: {status: abnormal, evidence: dataset_eval}\n"


def run(tmp_path, *args, stdin: str | None = None):
    env = {k: v for k, v in os.environ.items() if k != "J6DOCTOR_DEBUG"}
    return subprocess.run([sys.executable, "-m", "j6doctor", *args], cwd=tmp_path, input=stdin, env=env,
                          capture_output=True, text=True, timeout=120)


def test_dash_reads_the_case_from_stdin_and_writes_to_stdout(tmp_path):
    proc = run(tmp_path, "diagnose", "-", "--no-env", "--format", "json", "-o", "-", stdin=CASE)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["stage"] == "convert"
    assert not (tmp_path / "-").exists()
    as_json = run(tmp_path, "diagnose", "-", "--no-env", stdin=json.dumps({"results": {"board": {"status": "abnormal"}}}))
    # "<stdin>" would be an HTML tag to a Markdown viewer: written "\<stdin>" (shown as "<stdin>")
    assert as_json.returncode == 0 and "案例：\\<stdin>" in as_json.stdout


def test_a_bad_case_on_stdin_is_named(tmp_path):
    proc = run(tmp_path, "diagnose", "-", "--no-env", stdin="resutls: {}\n")
    assert proc.returncode == 2 and "<stdin>:1: unknown key 'resutls'" in proc.stderr


def test_missing_metrics_file_is_refused(tmp_path):
    write_case(tmp_path, CASE)
    proc = run(tmp_path, "diagnose", "case.yaml", "--no-env", "--metrics", "nonexist.csv")
    assert proc.returncode == 2
    assert "nonexist.csv: no such file; --metrics takes an evaluation results file" in proc.stderr
    assert proc.stdout == ""


def test_metrics_alone_is_a_diagnosis(tmp_path):
    write_file(tmp_path, "eval.csv", "artifact,metric,value\nqat_pt,mAP,0.512\nqat_bc,mAP,0.511\n"
                                     "quantized_bc,mAP,0.431\n")
    proc = run(tmp_path, "diagnose", "--metrics", "eval.csv", "--no-env", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["stage"] == "convert"


def test_a_folder_as_case_says_what_to_do(tmp_path):
    write_case(tmp_path / "report_1" if (tmp_path / "report_1").mkdir() is None else tmp_path, CASE)
    proc = run(tmp_path, "diagnose", "report_1")
    assert proc.returncode == 2
    assert "'report_1' is a folder; give the case file (report_1/case.yaml), or scan the folder with --workdir" \
        in proc.stderr


def test_fail_on_sets_exit_1_after_writing_the_report(tmp_path):
    write_case(tmp_path, "results:\n  board: {status: abnormal}\n")
    proc = run(tmp_path, "diagnose", "case.yaml", "--no-env", "--fail-on", "baseline,undetermined")
    assert proc.returncode == 1 and proc.stdout.startswith("# j6doctor 诊断报告")
    assert "--fail-on" in proc.stderr
    assert run(tmp_path, "diagnose", "case.yaml", "--no-env", "--fail-on", "convert").returncode == 0
    assert run(tmp_path, "diagnose", "case.yaml", "--no-env", "-q", "--fail-on", "undetermined").stderr == ""
    bad = run(tmp_path, "diagnose", "case.yaml", "--fail-on", "bogus")
    assert bad.returncode == 2 and "unknown stage 'bogus'" in bad.stderr


def test_triage_fail_on(tmp_path):
    write_case(tmp_path, "results:\n  board: {status: abnormal}\n", "a.yaml")
    write_case(tmp_path, CASE, "b.yaml")
    assert run(tmp_path, "triage", "a.yaml", "b.yaml", "--fail-on", "compile").returncode == 0
    hit = run(tmp_path, "triage", "a.yaml", "b.yaml", "--fail-on", "convert")
    assert hit.returncode == 1 and "1 case(s) concluded convert (--fail-on), e.g. b.yaml" in hit.stderr


def test_verbose_names_config_packs_and_engine(tmp_path):
    write_case(tmp_path, CASE)
    write_file(tmp_path, "j6doctor.toml", "environment = false\n")
    proc = run(tmp_path, "diagnose", "case.yaml", "-v")
    assert proc.returncode == 0
    assert "j6doctor: 配置 " in proc.stderr and "j6doctor.toml" in proc.stderr and "规则引擎" in proc.stderr


def test_config_sets_packs_tolerance_and_format(tmp_path):
    pack = tmp_path / "site_rules"
    write_file(pack, "site.yaml", SITE_RULE)
    write_file(tmp_path, "j6doctor.toml", 'environment = false\nformat = "json"\nrules = ["site_rules"]\n'
                                          "tolerance = 0.5\n")
    case = "results:\n  qat_pt: {status: normal, metric: mAP, value: 0.50}\n  quantized_bc: {status: abnormal, metric: mAP, value: 0.40}\n"
    write_case(tmp_path, case)
    proc = run(tmp_path, "diagnose", "case.yaml")
    assert proc.returncode == 0, proc.stderr
    verdict = json.loads(proc.stdout)  # format = "json"
    assert any(f["text"] == "站点规则已加载" for f in verdict["findings"])  # rules = ["site_rules"]
    assert "容差" in json.dumps(verdict["trace"], ensure_ascii=False)  # a 20 % drop within tolerance 0.5
    md = run(tmp_path, "diagnose", "case.yaml", "--format", "md")  # the command line wins
    assert md.stdout.startswith("# j6doctor 诊断报告")


def test_bad_config_values_name_the_file_and_key(tmp_path):
    write_case(tmp_path, CASE)
    for text, fragment in [('format = "pdf"\n', "format: expected one of md, json, html"),
                           ("tolerance = -1\n", "tolerance: expected a finite number greater than 0"),
                           ('rules = ["missing_pack"]\n', "rules: "),
                           ("tolerance = true\n", "tolerance: expected a number")]:
        write_file(tmp_path, "j6doctor.toml", text)
        proc = run(tmp_path, "diagnose", "case.yaml")
        assert proc.returncode == 2 and "j6doctor.toml" in proc.stderr and fragment in proc.stderr, proc.stderr


def test_shell_completion_through_argcomplete(tmp_path):
    """What `eval "$(register-python-argcomplete j6doctor)"` runs on <TAB>: the completer
    reads COMP_LINE and writes the candidates to file descriptor 8."""
    out = tmp_path / "candidates"
    for line, expected in [("j6doctor diagnose --f", {"--format", "--fail-on"}), ("j6doctor sch", {"schema"}),
                           ("j6doctor schema v", {"verdict"})]:
        env = {**os.environ, "_ARGCOMPLETE": "1", "_ARGCOMPLETE_IFS": "\n", "COMP_LINE": line,
               "COMP_POINT": str(len(line)), "_ARGCOMPLETE_SUPPRESS_SPACE": "1"}
        proc = subprocess.run(["bash", "-c", f'"{sys.executable}" -m j6doctor 8>"{out}"'], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        assert {c.strip() for c in out.read_text().split("\n")} >= expected, (line, out.read_text())
