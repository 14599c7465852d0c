"""The runnable next step: every rendered script compiles, imports the documented APIs and
calls them in the documented order (checked with j6doctor's own script checker)."""

from __future__ import annotations

import ast

import pytest

from conftest import FULL_INFO, ok
from j6doctor.diagnose import diagnose_data
from j6doctor.evidence import EvidenceOptions
from j6doctor.next_step_script import render_next_step
from j6doctor.probes.user_scripts import check_source

STAGES = {
    "pre_export": {"qat_pt": ok("normal"), "qat_export_pt": ok("abnormal")},
    "export": {"qat_pt": ok("normal"), "qat_bc": ok("abnormal")},
    "convert": {"qat_bc": ok("normal"), "quantized_bc": ok("abnormal")},
    "qat_training": {"qat_pt": ok("abnormal")},
    "compile": {"quantized_bc": ok("normal"), "hbm_x86": ok("abnormal")},
    "board": {"quantized_bc": ok("normal"), "hbm_x86": ok("normal"), "board": ok("abnormal")},
}
# (module, name) pairs each stage's script must import: KNOWLEDGE.md §10
IMPORTS = {
    "pre_export": {("horizon_plugin_pytorch.quantization.hbdk4", "pre_export"),
                   ("horizon_plugin_pytorch.quantization", "set_fake_quantize"),
                   ("horizon_plugin_profiler", "QuantAnalysis")},
    "export": {("horizon_plugin_pytorch.quantization.hbdk4", "export"),
               ("horizon_plugin_pytorch.quantization.hbdk4", "pre_export"),
               ("horizon_plugin_profiler", "QuantAnalysis")},
    "convert": {("hbdk4.compiler", "convert"), ("horizon_plugin_pytorch.quantization.hbdk4", "export"),
                ("horizon_plugin_profiler", "QuantAnalysis")},
    "qat_training": {("horizon_plugin_profiler", "QuantAnalysis")},
    "compile": set(),
    "board": set(),
}
QA_TYPE = {"pre_export": "pre_export", "export": "export", "convert": "convert", "qat_training": "fake_quant"}


def render(results, rulebase, **extra):
    d = diagnose_data({**FULL_INFO, "results": results, **extra}, rulebase)
    return d, render_next_step(d)


def imports_of(tree):
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            found |= {(node.module, alias.name) for alias in node.names}
    return found


def calls_in_order(tree):
    calls = sorted((node for node in ast.walk(tree) if isinstance(node, ast.Call)),
                   key=lambda node: (node.lineno, node.col_offset))
    return [node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            for node in calls]


@pytest.mark.parametrize("stage", sorted(STAGES))
@pytest.mark.parametrize("split", [False, True])
def test_rendered_script_compiles_and_follows_the_api(stage, split, rulebase):
    extra = {"input_formats_differ": True} if split else {}
    d, script = render(STAGES[stage], rulebase, **extra)
    assert d.verdict["stage"] == stage
    tree = ast.parse(script)
    compile(script, f"next_step_{stage}.py", "exec")
    assert IMPORTS[stage] <= imports_of(tree)
    report = check_source(script, f"next_step_{stage}.py")
    assert report.findings == [], report.findings
    if stage in QA_TYPE:
        assert f"analysis_type:{QA_TYPE[stage]}" in report.uses
        calls = calls_in_order(tree)
        assert calls.index("run") < calls.index("compare_per_layer") < calls.index("sensitivity")
        assert ("split_run" in report.uses) == (split and stage in ("export", "convert"))
    assert "FILL IN" in script and 'raise NotImplementedError("j6doctor: fill in' in script or stage in ("compile", "board")


def test_export_script_never_compares_qat_pt_with_qat_bc(rulebase):
    _, script = render(STAGES["export"], rulebase)
    assert 'QuantAnalysis(qat_export_pt, qat_bc, "export"' in script
    assert "FakeQuantState.VALIDATION" in script and "_FLOAT)" not in script


def test_convert_script_fills_march_and_marks_it_when_unknown(rulebase):
    _, script = render(STAGES["convert"], rulebase)
    assert "MARCH = 'nash-m'\n" in script
    d = diagnose_data({k: v for k, v in FULL_INFO.items() if k != "platform"} | {"results": STAGES["convert"]}, rulebase)
    unknown = render_next_step(d)
    assert "MARCH = None  # FILL IN" in unknown and "ConsistencyStrategy" not in unknown


def test_paths_found_in_the_case_are_filled_in(tmp_path, rulebase):
    (tmp_path / "models").mkdir()
    for name in ("qat.pt", "quantized.bc", "model.hbm"):
        (tmp_path / "models" / name).write_bytes(b"x")
    d = diagnose_data({**FULL_INFO, "results": STAGES["board"], "artifacts": ["models"]}, rulebase, base=tmp_path,
                      options=EvidenceOptions(use_environment=False))
    script = render_next_step(d)
    assert "QUANTIZED_BC = 'models/quantized.bc'  # found by j6doctor" in script
    assert "HBM = 'models/model.hbm'  # found by j6doctor" in script
    convert = diagnose_data({**FULL_INFO, "results": STAGES["convert"], "artifacts": ["models"]}, rulebase,
                            base=tmp_path, options=EvidenceOptions(use_environment=False))
    assert "QAT_PT = 'models/qat.pt'  # found by j6doctor" in render_next_step(convert)


def test_deployment_script_carries_the_checklist(rulebase):
    _, script = render(STAGES["board"], rulebase, deployment={"checklist": {"layout": {"status": "mismatch"}}})
    assert "('layout', 'NCHW / NHWC 转换正确', 'mismatch')" in script
    report = check_source(script, "next_step_board.py")
    assert "hb_verifier" in script and "quant_analysis" not in report.uses  # mistake M10
    assert report.findings == []


@pytest.mark.parametrize("results", [{}, {"board": ok("abnormal")}])
def test_no_script_when_undetermined_or_baseline(results, rulebase):
    _, script = render(results, rulebase)
    assert script is None


def test_cli_next_step(cli, tmp_path):
    from conftest import EXAMPLES
    out = tmp_path / "next_step.py"
    proc = cli("next-step", str(EXAMPLES / "convert_j6m.yaml"), "--no-env", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    compile(out.read_text(encoding="utf-8"), "next_step.py", "exec")
    none = cli("next-step", str(EXAMPLES / "empty.yaml"), "--no-env")
    assert none.returncode == 0 and none.stdout == "" and "没有可运行的下一步脚本" in none.stderr
