"""Platform families other than J6 (issue 9 item 2): the J6-only procedure — hbdk4's convert /
export, QuantAnalysis, ConsistencyStrategy — is never scripted or advised for X3 / X5 / J5
(hbdk 3.x, hb_mapper, QAT through convert_fx / compile) or a non-Horizon platform.

`j6doctor next-step` writes, per family: J6 (or an unknown platform) the J6 procedure; X3 /
X5 / J5 the deployment-side checks for compile / board (hb_model_info, the checklist) and,
for every other stage, a file that says plainly that no script is generated and lists the
report's next steps; a non-Horizon platform that file for every stage. Which platform is in
which family is the vocabulary's (facts/vocabulary.yaml), never a table in the code."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import FULL_INFO, ok, write_case
from j6doctor.diagnosis import diagnose_data, diagnose_file
from j6doctor.facts import attr, enum_values
from j6doctor.next_step_script import render_next_step, script_stage, toolchain
from j6doctor.probes.user_scripts import check_source
from j6doctor.report import render_markdown

OLDER = {"X3": "RDK X3", "X5": "RDK X5", "J5": "bayes"}  # family -> how a user names it
STAGES = {
    "pre_export": {"qat_pt": ok("normal"), "qat_export_pt": ok("abnormal")},
    "export": {"qat_export_pt": ok("normal"), "qat_bc": ok("abnormal")},
    "convert": {"qat_bc": ok("normal"), "quantized_bc": ok("abnormal")},
    "convert_short": {"qat_pt": ok("normal"), "quantized_bc": ok("abnormal")},
    "qat_training": {"qat_pt": ok("abnormal")},
    "compile": {"quantized_bc": ok("normal"), "hbm_x86": ok("abnormal")},
    "board": {"quantized_bc": ok("normal"), "hbm_x86": ok("normal"), "board": ok("abnormal")},
}
DEPLOYMENT = ("compile", "board")
J6_ONLY_IMPORTS = ("hbdk4", "horizon_plugin_pytorch", "horizon_plugin_profiler")
NO_SCRIPT = "j6doctor: no script for this platform; carry out the steps above by hand"


def case(platform: str, results: dict, **extra) -> dict:
    versions = {"horizon-plugin-pytorch": "1.9.0", "hbdk": "3.49.15"}
    return {"symptom": "定点模型掉点", "platform": platform, "versions": versions,
            "badcase": {"reproducible": True}, "results": results, **extra}


def imported_modules(tree: ast.Module) -> set[str]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            found.add(node.module or "")
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
    return found


def called(tree: ast.Module) -> list[str]:
    return [node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            for node in ast.walk(tree) if isinstance(node, ast.Call)]


def constants(tree: ast.Module) -> dict:
    return {node.targets[0].id: ast.literal_eval(node.value) for node in tree.body
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, (ast.Constant, ast.List))}


def run_script(script: str, tmp_path: Path) -> subprocess.CompletedProcess:
    path = tmp_path / "next_step.py"
    path.write_text(script, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env.update(PYTHONIOENCODING="utf-8", PYTHONDONTWRITEBYTECODE="1")
    return subprocess.run([sys.executable, "-s", str(path)], check=False, cwd=tmp_path, env=env,
                          capture_output=True, text=True, encoding="utf-8", timeout=60)


def assert_no_j6_script(script: str) -> ast.Module:
    compile(script, "next_step.py", "exec")
    tree = ast.parse(script)
    modules = imported_modules(tree)
    assert not any(m.split(".")[0] in J6_ONLY_IMPORTS for m in modules), modules
    assert "QuantAnalysis" not in called(tree) and "convert" not in called(tree)
    assert '"hb_verifier"' not in script  # hbdk4's verifier (quantized.bc against .hbm) is not run
    report = check_source(script, "next_step.py")
    assert report.findings == [] and "quant_analysis" not in report.uses
    return tree


def no_j6_advice(d) -> None:
    texts = [s["text"] for s in d.verdict_json["next_steps"]]
    assert not any("QuantAnalysis(" in t or "ConsistencyStrategy（" in t or "bc_editor" in t for t in texts), texts
    assert not any("qat.export.pt" in r["item"] or "compare_per_layer_out" in r["item"] for r in d.verdict_json["retain"])


# --- the audit's case --------------------------------------------------------------------------

def test_qat_on_x5_gets_no_hbdk4_script_and_no_quant_analysis(tmp_path, rulebase):
    """The audit's repro: X5, QAT, qat.bc normal and quantized.bc abnormal."""
    d = diagnose_data(case("X5", STAGES["convert"]), rulebase)
    assert d.verdict_json["stage"] == "convert" and toolchain(d) == "hbdk3"
    script = render_next_step(d)
    tree = assert_no_j6_script(script)
    assert "MARCH" not in constants(tree)  # no march handed to a convert()
    assert "no script is generated for this platform family" in ast.get_docstring(tree)
    values = constants(tree)
    assert values["PLATFORM"] == "X5" and values["STAGE"] == "convert"
    assert values["STEPS"] == [s["text"] for s in d.verdict_json["next_steps"]] and values["STEPS"]
    no_j6_advice(d)
    first = d.verdict_json["next_steps"][0]
    assert first["rule"] == "next.older_toolchain_instead_of_j6" and "逐层比较 QAT 模型与定点模型" in first["text"]
    # the report does not offer a runnable script, nor QuantAnalysis as a next step
    assert script_stage(d) is None
    report = render_markdown(d)
    steps = report.split("## 下一步建议", 1)[1].split("## 需要保留的产物", 1)[0]
    assert "可直接运行的下一步脚本" not in steps and "QuantAnalysis(" not in steps
    # running it prints the steps and stops: nothing is done in the user's name
    proc = run_script(script, tmp_path)
    assert proc.returncode == 1 and proc.stderr.strip() == NO_SCRIPT
    assert proc.stdout.splitlines()[0] == "1. " + values["STEPS"][0]


def test_cli_next_step_on_the_audit_case(cli, tmp_path):
    path = write_case(tmp_path, "platform: X5\nversions: {horizon-plugin-pytorch: \"1.9.0\", hbdk: \"3.49.15\"}\n"
                                "results:\n  qat_bc: {status: normal, evidence: dataset_eval}\n"
                                "  quantized_bc: {status: abnormal, evidence: dataset_eval}\n", "qat_x5.yaml")
    out = tmp_path / "next_step.py"
    proc = cli("next-step", str(path), "--no-env", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    script = out.read_text(encoding="utf-8")
    assert_no_j6_script(script)
    assert "from hbdk4.compiler import convert" not in script and "quantization.hbdk4" not in script
    assert constants(ast.parse(script))["CASE"] == "qat_x5.yaml"


# --- every stage on every older family ---------------------------------------------------------

@pytest.mark.parametrize("stage", sorted(STAGES))
@pytest.mark.parametrize("family", sorted(OLDER))
def test_older_families_never_get_the_j6_procedure(family, stage, rulebase):
    d = diagnose_data(case(OLDER[family], STAGES[stage]), rulebase)
    assert {p["family"] for p in d.run.by_type("platform")} == {family}
    script = render_next_step(d)
    tree = assert_no_j6_script(script)
    no_j6_advice(d)
    values = constants(tree)
    assert values["PLATFORM"] == family
    if stage in DEPLOYMENT:
        # the deployment-side checks: the checklist, then what the compiled model expects
        assert script_stage(d) == stage
        assert "hb_model_info" in script and "subprocess" in imported_modules(tree)
        assert values["COMPILED_MODEL"] is None and "# FILL IN: path of the compiled model" in script
        assert len(values["CHECKLIST"]) == len(enum_values("check_item"))
        assert "X3 / X5 /\nJ5 families" in ast.get_docstring(tree)
    else:
        assert script_stage(d) is None
        assert values["STEPS"] == [s["text"] for s in d.verdict_json["next_steps"]]
        assert "subprocess" not in imported_modules(tree)


@pytest.mark.parametrize("stage", ["convert", "qat_training", "compile"])
def test_ptq_on_x5(stage, rulebase):
    """PTQ on X5: the PTQ tool steps (conversion log, hb_mapper), never QuantAnalysis."""
    results = {"convert": {"calibrated_model": ok("normal"), "quantized_model": ok("abnormal")},
               "qat_training": {"calibrated_model": ok("abnormal")},
               "compile": {"quantized_model": ok("normal"), "bin": ok("abnormal")}}[stage]
    d = diagnose_data(case("RDK X5", results, flow="ptq"), rulebase)
    assert d.verdict_json["stage"] == stage
    script = render_next_step(d)
    tree = assert_no_j6_script(script)
    no_j6_advice(d)
    if stage == "compile":
        assert "hb_model_info" in script
    else:
        steps = constants(tree)["STEPS"]
        assert steps and any("hb_mapper" in s or "转换日志" in s or "逐节点 cosine" in s for s in steps), steps
        assert "PTQ with hb_mapper" in ast.get_docstring(tree)


@pytest.mark.parametrize("stage", sorted(STAGES))
def test_non_horizon_platform_gets_no_script(stage, rulebase):
    d = diagnose_data(case("rk3588", STAGES[stage]), rulebase)
    assert toolchain(d) == "other" and script_stage(d) is None
    script = render_next_step(d)
    if stage == "convert_short":  # no short chain off Horizon: qat.bc is the gap, no stage yet
        assert d.verdict_json["stage"] == "undetermined" and "no script is generated" in script
        return
    tree = assert_no_j6_script(script)
    assert "hb_model_info" not in called(tree) and "not a Horizon platform" in ast.get_docstring(tree)


def test_a_failure_still_gets_no_script(rulebase):
    d = diagnose_data(case("RDK X5", {"board": {"failure": "load_error", "message": "Incompatible Platform!!"}}),
                      rulebase)
    assert script_stage(d) is None
    assert_no_j6_script(render_next_step(d))  # the report's steps, by hand


def test_undetermined_gets_no_script_on_any_family(rulebase):
    for platform in (*OLDER.values(), "rk3588"):
        d = diagnose_data(case(platform, {}), rulebase)
        assert script_stage(d) is None
        assert_no_j6_script(render_next_step(d))


# --- J6 keeps its procedure, and the families come from the vocabulary -------------------------

@pytest.mark.parametrize("platform", ["J6M", "J6", "RDK S100", None])
def test_j6_and_unknown_platform_keep_the_j6_procedure(platform, rulebase):
    data = {**FULL_INFO, "results": STAGES["convert"]}
    if platform is None:
        data.pop("platform")
    else:
        data["platform"] = platform
    d = diagnose_data(data, rulebase)
    assert toolchain(d) == "hbdk4" and script_stage(d) == "convert"
    script = render_next_step(d)
    assert "from hbdk4.compiler import convert" in script and "QuantAnalysis(qat_bc, quantized_bc" in script
    assert any("QuantAnalysis(" in s["text"] for s in d.verdict_json["next_steps"])
    if platform in ("J6", None):  # no variant named: the march is asked for, never left empty
        assert "MARCH = None  # FILL IN" in script
    else:
        assert "MARCH = 'nash-" in script


def test_the_toolchain_follows_the_vocabulary_series(rulebase):
    """Every platform value of the vocabulary: its series decides the toolchain."""
    for family in enum_values("platform"):
        series = attr("platform", family, "series")
        given = family if family != "other" else "rk3588"
        d = diagnose_data({"platform": given, "results": STAGES["convert"]}, rulebase)
        assert {p["series"] for p in d.run.by_type("platform")} == {series}
        expected = {"J6": "hbdk4", "other": "other"}.get(series, "hbdk3")
        assert toolchain(d) == expected, (family, series)


def test_hostile_case_name_stays_a_literal_in_the_manual_file(tmp_path, rulebase):
    name = 'c"""+__import__("os").system("touch PWNED")+""".yaml'
    path = write_case(tmp_path, "platform: X5\nresults:\n  qat_bc: {status: normal, evidence: dataset_eval}\n"
                                "  quantized_bc: {status: abnormal, evidence: dataset_eval}\n", name)
    script = render_next_step(diagnose_file(path, rulebase))
    tree = assert_no_j6_script(script)
    assert constants(tree)["CASE"] == name
    assert not any(isinstance(n, ast.Name) and n.id == "__import__" for n in ast.walk(tree))
    proc = run_script(script, tmp_path)
    assert proc.returncode == 1 and not (tmp_path / "PWNED").exists()
