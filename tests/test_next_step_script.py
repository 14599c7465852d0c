"""The runnable next step: every rendered script compiles, imports the documented APIs and
calls them in the documented order (checked with j6doctor's own script checker), and carries
every value from the user (case file, work folders, artifact paths) as an inert string literal."""

from __future__ import annotations

import ast
import datetime
import io
import json
import os
import re
import subprocess
import sys
import tokenize
from pathlib import Path

import pytest
from conftest import EXAMPLES, FULL_INFO, ok
from j6doctor.diagnosis import diagnose, diagnose_data, diagnose_file
from j6doctor.evidence import EvidenceOptions
from j6doctor.next_step_script import (
    PyLiteral,
    _environment,
    pyrepr,
    render_next_step,
    script_stage,
)
from j6doctor.probes.user_scripts import check_source
from j6doctor.templates import TEMPLATES_DIR

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
    assert d.verdict_json["stage"] == stage
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


def constants(script: str) -> dict:
    """The module-level constants of a generated file, as Python reads them."""
    tree = ast.parse(script)
    return {t.id: ast.literal_eval(node.value) for node in tree.body if isinstance(node, ast.Assign)
            for t in node.targets if isinstance(t, ast.Name)}


@pytest.mark.parametrize("results", [{}, {"board": ok("abnormal")}])
def test_undetermined_or_baseline_gets_the_report_steps_by_hand(results, rulebase):
    d, script = render(results, rulebase)
    values = constants(script)
    assert values["STAGE"] == d.verdict_json["stage"] and values["PROCEDURE"] is None
    assert values["STEPS"] == [s["text"] for s in d.verdict_json["next_steps"]] and values["STEPS"]
    assert "no script is generated" in script


def test_cli_next_step(cli, tmp_path):
    out = tmp_path / "next_step.py"
    proc = cli("next-step", str(EXAMPLES / "convert_j6m.yaml"), "--no-env", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    compile(out.read_text(encoding="utf-8"), "next_step.py", "exec")
    manual = cli("next-step", str(EXAMPLES / "empty.yaml"), "--no-env")
    assert manual.returncode == 0 and "没有可运行的排查脚本，写出的是报告中的下一步（手动执行）" in manual.stderr
    assert constants(manual.stdout)["STAGE"] == "undetermined" and constants(manual.stdout)["STEPS"]


def test_user_side_verdict_keeps_its_stage_and_names_the_procedure(cli):
    proc = cli("next-step", str(EXAMPLES / "user_side_layout.yaml"), "--no-env")
    assert proc.returncode == 0, proc.stderr
    values = constants(proc.stdout)
    verdict = json.loads(cli("diagnose", str(EXAMPLES / "user_side_layout.yaml"), "--no-env", "--format", "json").stdout)
    assert values["STAGE"] == verdict["stage"] == "user_side"
    assert values["PROCEDURE"] == verdict["chain_stage"]["stage"]


def test_the_case_badcase_is_used_instead_of_searching_one(tmp_path, rulebase):
    data = {"results": {"qat_bc": ok("normal"), "quantized_bc": ok("abnormal")}, "platform": "J6M",
            "badcase": {"reproducible": True, "path": "qa_old/all_badcase_info.pt"}}
    d, script = render(data["results"], rulebase, **{k: v for k, v in data.items() if k != "results"})
    values = constants(script)
    assert values["BADCASE"] == "qa_old/all_badcase_info.pt"
    assert 'use_badcase(qa, "./qa_convert")' in script and "qa.auto_find_bad_case(" not in script
    _, searched = render(data["results"], rulebase)
    assert "BADCASE" not in constants(searched) and "qa.auto_find_bad_case(build_dataloader())" in searched


# --- Hostile names: every user value must reach the script as an inert string literal ---------
#
# The case file's name, the work folders' names and the artifact paths are put into the script.
# Each payload below would run code (create the file PWNED in the working directory) if it were
# pasted into the docstring, a comment or a string literal unquoted. The scripts are rendered
# from real files in tmp_path, compiled, compared token by token with the script rendered from
# plain names, and run in a subprocess (with stub horizon_plugin_* / hbdk4 modules) that must
# stop at the script's own FILL IN exit.

MARKER = "PWNED"
PAYLOADS = {
    "docstring_dq": '"""+__import__("os").system("touch PWNED")+"""',
    "docstring_sq": "'''+__import__('os').system('touch PWNED')+'''",
    "quotes": '"+open("PWNED","w").close()+"\'+open(\'PWNED\',\'w\').close()+\'',
    "backslash": '\\\'\\"\\\\',
    "newline": '\nopen("PWNED","w").close()\n#',
    "crlf_shell": '\r\n__import__("os").system("touch PWNED") # ${HOME} $(touch PWNED) `touch PWNED`',
    "jinja_controls": '{{ 7*7 }}{% raw %}{#\x0c\t\x0b\x1b[0m',
    "unicode_breaks": '模型é\u2028open("PWNED","w").close()\u2029\x85ñ',
    "undecodable": "\udcff\udcfe\nopen('PWNED','w').close()",  # a file name that is not UTF-8
}
PLAIN = ""
# stub packages: the scripts import them at the top; nothing in them is reached before FILL IN
STUBS = {
    "hbdk4/__init__.py": "",
    "hbdk4/compiler.py": "convert = None\n",
    "horizon_plugin_profiler/__init__.py": "QuantAnalysis = None\n",
    "horizon_plugin_pytorch/__init__.py": "",
    "horizon_plugin_pytorch/quantization/__init__.py": "FakeQuantState = set_fake_quantize = None\n",
    "horizon_plugin_pytorch/quantization/hbdk4.py": "export = pre_export = None\n",
}
# the chain results through evaluation metrics (work folder without a case file); qat_training
# cannot be stated by metrics (qat.pt is their baseline): it is covered by the case file
METRICS = {
    "pre_export": {"qat_pt": 41, "qat_export_pt": 30},
    "export": {"qat_pt": 41, "qat_bc": 30},
    "convert": {"qat_pt": 41, "qat_bc": 41, "quantized_bc": 30},
    "compile": {"qat_pt": 41, "quantized_bc": 41, "hbm_x86": 30},
    "board": {"qat_pt": 41, "quantized_bc": 41, "hbm_x86": 41, "board": 30},
}
PATH_CONSTANTS = ("QAT_PT", "QUANTIZED_BC", "HBM")  # the artifact paths a script may carry


def _artifacts(folder: Path, payload: str) -> None:
    folder.mkdir()
    for name in (f"m{payload}qat.pt", f"m{payload}quantized.bc", f"m{payload}.hbm"):
        (folder / name).write_bytes(b"x")


def _yaml_safe(text: str) -> bool:
    """A case file is UTF-8 text: a lone surrogate (undecodable file name) cannot be in it."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _from_case_file(root: Path, stage: str, payload: str, rulebase, mismatch: bool | None = None):
    """A case file named after the payload, listing a folder named after it, plus a work
    folder named after it; the artifacts in both carry it in their names. Compile / board
    cases hold a checklist mismatch (noted with the payload) when the payload can be in one
    (`mismatch`: as for another payload, so that two scripts have the same structure)."""
    folder = root / "case"
    folder.mkdir()
    data = {**FULL_INFO, "results": STAGES[stage]}
    if stage in ("compile", "board") and (_yaml_safe(payload) if mismatch is None else mismatch):
        data["deployment"] = {"checklist": {"layout": {"status": "mismatch", "note": f"n{payload}"}}}
    if _yaml_safe(payload):
        _artifacts(folder / f"art{payload}", payload)
        data["artifacts"] = [f"art{payload}"]
    _artifacts(folder / f"wd{payload}", payload)
    path = folder / f"c{payload}.yaml"
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")  # JSON is YAML
    d = diagnose_file(path, rulebase, EvidenceOptions(workdirs=[folder / f"wd{payload}"], use_environment=False))
    return d, folder


def _from_workdir(root: Path, stage: str, payload: str, rulebase):
    """No case file: the work folder's name is the title, the metrics state the results."""
    workdir = root / f"wd{payload}\\"  # a trailing backslash would escape a closing quote
    _artifacts(workdir, payload)
    metrics = root / "metrics.csv"
    metrics.write_text("artifact,metric,value\n" + "".join(f"{a},mAP,{v}\n" for a, v in METRICS[stage].items()),
                       encoding="utf-8")
    d = diagnose(None, rulebase, EvidenceOptions(workdirs=[workdir], metrics=metrics, use_environment=False))
    return d, workdir


def _masked_tokens(script: str) -> list[tuple[int, str]]:
    """The script's tokens with every string literal's text replaced: what is code and comment."""
    return [(tok.type, "<str>" if tok.type == tokenize.STRING else tok.string)
            for tok in tokenize.generate_tokens(io.StringIO(script).readline)]


def _constants(tree: ast.Module) -> dict[str, object]:
    return {node.targets[0].id: ast.literal_eval(node.value) for node in tree.body
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, (ast.Constant, ast.List, ast.Tuple))}


def _run_script(script: str, root: Path) -> subprocess.CompletedProcess:
    stubs, run_dir = root / "stubs", root / "run"
    for rel, text in STUBS.items():
        (stubs / rel).parent.mkdir(parents=True, exist_ok=True)
        (stubs / rel).write_text(text, encoding="utf-8")
    run_dir.mkdir()
    (run_dir / "next_step.py").write_text(script, encoding="utf-8")  # as `j6doctor next-step -o`
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env.update(PYTHONPATH=str(stubs), PYTHONIOENCODING="utf-8", PYTHONDONTWRITEBYTECODE="1")
    return subprocess.run([sys.executable, "-s", "next_step.py"], check=False, cwd=run_dir, env=env,
                          capture_output=True, text=True, encoding="utf-8", errors="replace", timeout=60)


def _markers(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.name == MARKER]


def _check_hostile_script(d, script: str, plain_script: str, payload: str, base: Path, stage: str, root: Path):
    # (a) it compiles, and the API checks still pass
    compile(script, "next_step.py", "exec")
    tree = ast.parse(script)
    assert check_source(script, "next_step.py").findings == []
    # the payload changed string literals only: code, comments and docstring are those of the
    # script rendered from plain names, token for token
    assert _masked_tokens(script) == _masked_tokens(plain_script)
    assert ast.get_docstring(tree) == ast.get_docstring(ast.parse(plain_script))
    assert all(payload not in tok.string for tok in tokenize.generate_tokens(io.StringIO(script).readline)
               if tok.type == tokenize.COMMENT)
    # no name, attribute or call the payload spells is code
    for node in ast.walk(tree):
        assert not (isinstance(node, ast.Name) and node.id in {"__import__", "open", "os", MARKER})
        assert not (isinstance(node, ast.Attribute) and node.attr == "system")
    # every string constant that carries the payload is one of the values, intact
    constants = _constants(tree)
    assert constants["CASE"] == d.title and payload in d.title
    values = {d.title}
    for name in PATH_CONSTANTS:
        if name in constants:
            path = constants[name]
            assert path is not None and payload in path, (name, path)
            assert (base / path).is_file(), (name, path)
            values.add(path)
    assert len(values) > 1  # the script carries at least one artifact path it found
    values |= set(constants.get("FIX_FIRST") or ())  # the verdict's reasons (user_side), quoting the case
    carriers = {node.value for node in ast.walk(tree) if isinstance(node, ast.Constant)
                and isinstance(node.value, str) and MARKER in node.value}
    assert carriers <= values or MARKER not in payload
    # (b) run it: it stops at its own FILL IN exit, and the payload never ran
    proc = _run_script(script, root)
    assert "SyntaxError" not in proc.stderr and MARKER not in proc.stdout
    assert proc.returncode == 1, proc.stderr
    if constants.get("FIX_FIRST"):  # the case's mismatch made the verdict user_side: said first
        assert proc.stderr.startswith("先修正诊断确认的问题，再执行下面的流程：\n  - "), proc.stderr
    if stage in ("compile", "board"):
        assert proc.stderr.endswith("\nj6doctor: fill in QUANTIZED_BC, HBM and INPUT_NPY first\n") or \
            proc.stderr == "j6doctor: fill in QUANTIZED_BC, HBM and INPUT_NPY first\n", proc.stderr
        assert len(proc.stdout.splitlines()) == len(constants["CHECKLIST"])
    else:
        first = "load_float_model" if stage == "qat_training" else "load_qat_model"
        assert proc.stderr.splitlines()[-1] == f"NotImplementedError: j6doctor: fill in {first}()", proc.stderr
    assert _markers(root) == [], _markers(root)


@pytest.mark.parametrize("payload_id", sorted(PAYLOADS))
@pytest.mark.parametrize("stage", sorted(STAGES))
def test_hostile_case_file_and_folder_names_stay_string_literals(stage, payload_id, tmp_path, rulebase):
    payload = PAYLOADS[payload_id]
    (tmp_path / "plain").mkdir()
    (tmp_path / "hostile").mkdir()
    plain_d, _ = _from_case_file(tmp_path / "plain", stage, PLAIN, rulebase, mismatch=_yaml_safe(payload))
    d, base = _from_case_file(tmp_path / "hostile", stage, payload, rulebase)
    assert script_stage(d) == stage  # compile / board: the checklist mismatch makes it user-side
    _check_hostile_script(d, render_next_step(d), render_next_step(plain_d), payload, base, stage,
                          tmp_path / "hostile")


@pytest.mark.parametrize("payload_id", sorted(PAYLOADS))
@pytest.mark.parametrize("stage", sorted(METRICS))
def test_hostile_work_folder_names_stay_string_literals(stage, payload_id, tmp_path, rulebase):
    payload = PAYLOADS[payload_id]
    (tmp_path / "plain").mkdir()
    (tmp_path / "hostile").mkdir()
    plain_d, _ = _from_workdir(tmp_path / "plain", stage, PLAIN, rulebase)
    d, base = _from_workdir(tmp_path / "hostile", stage, payload, rulebase)
    assert d.verdict_json["stage"] == script_stage(d) == stage
    _check_hostile_script(d, render_next_step(d), render_next_step(plain_d), payload, base, stage,
                          tmp_path / "hostile")


def test_cli_next_step_for_the_reported_case_name(cli, tmp_path):
    """The reported case: a docstring break-out in the case file's name, end to end."""
    case = tmp_path / 'c"""+__import__("os").system("touch PWNED")+""".yaml'
    case.write_text((EXAMPLES / "convert_j6m.yaml").read_text(encoding="utf-8"), encoding="utf-8")
    out = tmp_path / "next_step.py"
    proc = cli("next-step", str(case), "--no-env", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    script = out.read_text(encoding="utf-8")
    assert f"CASE = {case.name!r}\n" in script
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "c.yaml").write_text(case.read_text(encoding="utf-8"), encoding="utf-8")
    assert _masked_tokens(script) == _masked_tokens(render_next_step(diagnose_file(plain / "c.yaml")))
    run = _run_script(script, tmp_path)
    assert run.stderr.splitlines()[-1] == "NotImplementedError: j6doctor: fill in load_qat_model()", run.stderr
    assert _markers(tmp_path) == []


class _EvilStr(str):
    def __repr__(self):
        return '__import__("os").system("touch PWNED")'


@pytest.mark.parametrize(("value", "expected"), [
    *((v, v) for v in PAYLOADS.values()), (None, None), (True, True), (0, 0), (-7, -7), (1.5, 1.5), ("", ""),
    (_EvilStr("x"), "x"), (float("nan"), "nan"), (float("inf"), "inf"), (datetime.date(2024, 1, 2), "2024-01-02"),
    (["a", 1], "['a', 1]"),
])
def test_pyrepr_is_a_single_line_literal_of_the_value(value, expected):
    text = pyrepr(value)
    assert isinstance(text, PyLiteral) and "\n" not in text and "\r" not in text
    node = ast.parse(text, mode="eval").body
    if isinstance(node, ast.UnaryOp):  # a negative number
        assert isinstance(node.op, ast.USub)
        node = node.operand
    assert isinstance(node, ast.Constant)
    assert ast.literal_eval(text) == expected and type(ast.literal_eval(text)) is type(expected)


@pytest.mark.parametrize("source", ["{{ x }}", '{{ "x" }}', "{{ x | pyrepr ~ 'a' }}", "{{ (x | pyrepr)[1:] }}",
                                    "{{ x | pyrepr | replace('a', 'b') }}", "{{ x | pyrepr | trim }}"])
def test_templates_can_only_output_pyrepr_literals(source):
    with pytest.raises(TypeError, match="pyrepr"):
        _environment().from_string(source).render(x="a")


def test_every_template_value_goes_through_pyrepr():
    for path in sorted((TEMPLATES_DIR / "next_step").glob("*.j2")):
        for expr in re.findall(r"\{\{(.*?)\}\}", path.read_text(encoding="utf-8"), re.DOTALL):
            assert re.search(r"\|\s*pyrepr\s*$", expr), (path.name, expr)
