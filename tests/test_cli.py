"""The command line: help, version, formats, -o, exit codes."""

from __future__ import annotations

import json

from conftest import EXAMPLES, write_case
from j6doctor import __version__


def test_help_and_version(cli):
    top = cli("--help")
    assert top.returncode == 0 and "diagnose" in top.stdout
    sub = cli("diagnose", "--help")
    assert sub.returncode == 0 and "--format" in sub.stdout
    # argparse writes "-o FILE, --output FILE" up to 3.12 and "-o, --output FILE" from 3.13
    assert "-o FILE, --output FILE" in sub.stdout or "-o, --output FILE" in sub.stdout
    version = cli("--version")
    assert version.returncode == 0 and __version__ in version.stdout


def test_usage_error_exits_2(cli):
    proc = cli("diagnose")
    assert proc.returncode == 2 and "give a case file (or - for standard input), --workdir DIR or --metrics FILE" in proc.stderr
    bad = cli("diagnose", str(EXAMPLES / "empty.yaml"), "--format", "pdf")
    assert bad.returncode == 2 and "pdf" in bad.stderr


def test_json_verdict_on_stdout(cli):
    proc = cli("diagnose", str(EXAMPLES / "convert_j6m.yaml"), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    verdict = json.loads(proc.stdout)
    for key in ("stage", "missing", "evidence", "findings", "checklist", "mistakes", "next_steps", "retain", "trace"):
        assert key in verdict
    assert verdict["stage"] == "convert"


def test_undetermined_still_exits_0(cli):
    proc = cli("diagnose", str(EXAMPLES / "empty.yaml"))
    assert proc.returncode == 0
    assert "暂不能判断" in proc.stdout


def test_output_file(cli, tmp_path):
    out = tmp_path / "report.md"
    proc = cli("diagnose", str(EXAMPLES / "board_integration.yaml"), "-o", str(out))
    assert proc.returncode == 0 and proc.stdout == ""
    assert out.read_text(encoding="utf-8").startswith("# j6doctor 诊断报告")


def test_output_never_overwrites_the_case_file(cli, tmp_path):
    case = write_case(tmp_path, "platform: J6M\n")
    proc = cli("diagnose", str(case), "-o", str(case))
    assert proc.returncode == 2 and "refusing to overwrite" in proc.stderr
    assert case.read_text(encoding="utf-8") == "platform: J6M\n"


def test_output_never_overwrites_a_listed_artifact(cli, tmp_path):
    artifact = tmp_path / "compare_per_layer_out.txt"
    artifact.write_text("table", encoding="utf-8")
    case = write_case(tmp_path, "artifacts:\n  - compare_per_layer_out.txt\n")
    proc = cli("diagnose", str(case), "-o", str(artifact))
    assert proc.returncode == 2
    assert artifact.read_text(encoding="utf-8") == "table"


def test_diagnose_does_not_touch_inputs(cli, tmp_path):
    case = write_case(tmp_path, (EXAMPLES / "user_side_layout.yaml").read_text(encoding="utf-8"))
    before = {p.name: p.stat().st_mtime_ns for p in tmp_path.iterdir()}
    assert cli("diagnose", str(case)).returncode == 0
    assert {p.name: p.stat().st_mtime_ns for p in tmp_path.iterdir()} == before


def test_internal_errors_have_no_traceback(cli, tmp_path):
    # A report path inside a folder that does not exist is a clean input error, not a crash.
    proc = cli("diagnose", str(EXAMPLES / "empty.yaml"), "-o", str(tmp_path / "no" / "such" / "r.md"))
    assert proc.returncode == 2 and "cannot write" in proc.stderr and "Traceback" not in proc.stderr


def test_non_finite_tolerance_and_unusable_metrics_path(cli, tmp_path):
    for value in ("inf", "nan", "-1"):
        proc = cli("diagnose", str(EXAMPLES / "empty.yaml"), "--tolerance", value)
        assert proc.returncode == 2 and "finite number greater than 0" in proc.stderr
    long_name = tmp_path / ("m" * 300 + ".csv")
    proc = cli("diagnose", str(EXAMPLES / "empty.yaml"), "--no-env", "--metrics", str(long_name), "--format", "json")
    assert proc.returncode == 2 and "cannot read" in proc.stderr and proc.stdout == ""


def test_a_post_whose_title_says_the_qat_model_dropped_after_conversion_is_read_by_its_scores(cli, tmp_path):
    # "QAT 模型转换后精度下降" names no model (the QAT model converted is no longer the QAT model):
    # the body's scores decide, the title does not make the QAT model itself bad
    post = tmp_path / "post.md"
    post.write_text("# 求助：QAT 模型转换后精度下降\n\n我们用 horizon_plugin_pytorch 做 QAT，qat.pt 在验证集上 mAP 41.2，"
                    "qat.bc 也是 41.0，但是 convert 得到的 quantized.bc 只有 35.3。\n", encoding="utf-8")
    proc = cli("diagnose", str(post), "--no-env", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    verdict = json.loads(proc.stdout)
    assert verdict["stage"] == "convert"
