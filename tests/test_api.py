"""The Python API and the recorder (issue 31): `j6doctor.diagnose` gives the command line's
reports byte for byte on both engines, refusals are one exception carrying the printed line,
`Case.record` writes results into a case without losing anything, and the generated
next-step scripts close the loop: a bundled example goes from 暂不能判断 to a stage through
two recorded next steps, run against a stand-in of the proprietary packages
(tests/fixtures/standin) that follows their documented signatures.

Real engine runs, real files, real subprocesses for the command line and the scripts."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import j6doctor
from conftest import EXAMPLES, HAS_DURABLE, write_case, write_file

STANDIN = Path(__file__).parent / "fixtures" / "standin"
ENGINES = ["clips"] + (["durable"] if HAS_DURABLE else [])


def _cli(*args: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if k != "J6DOCTOR_DEBUG"}
    full.update(env or {})
    return subprocess.run([sys.executable, "-m", "j6doctor", *args], cwd=cwd, env=full, capture_output=True,
                          text=True, timeout=120)


# ---------------------------------------------------------------- the API is the command line

@pytest.mark.slow
@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", ["convert_j6m.yaml", "gap_qat_bc_unverified.yaml", "board_load_error.yaml"])
def test_reports_are_the_command_lines_byte_for_byte(tmp_path, name, engine):
    shutil.copy(EXAMPLES / name, tmp_path / name)
    if name == "convert_j6m.yaml":
        shutil.copytree(EXAMPLES / "qa_convert", tmp_path / "qa_convert")
    verdict = j6doctor.diagnose(tmp_path / name, engine=engine, environment=False)
    for fmt, text in (("json", verdict.to_json()), ("md", verdict.to_markdown()), ("html", verdict.to_html())):
        printed = _cli("diagnose", name, "--format", fmt, "--engine", engine, "--no-env", cwd=tmp_path)
        assert printed.returncode == 0, printed.stderr
        assert text == printed.stdout, f"{name} {fmt} on {engine}"
    assert verdict.stage == json.loads(verdict.to_json())["stage"] == verdict.to_dict()["stage"]


def test_the_verdict_carries_stage_candidates_missing_and_the_evidence_chain(tmp_path):
    shutil.copy(EXAMPLES / "gap_qat_bc_unverified.yaml", tmp_path / "case.yaml")
    verdict = j6doctor.diagnose(str(tmp_path / "case.yaml"), environment=False)
    assert verdict.stage == "undetermined" and verdict.missing == ["stage_results"]
    assert [c["stage"] for c in verdict.candidates] == ["export", "convert"]
    sources = [e["source"] for e in verdict.evidence if "source" in e]
    assert {"kind": "case", "file": "case.yaml", "line": 9, "key": "results.qat_pt"} in sources
    assert repr(verdict) == "<j6doctor.Verdict stage='undetermined' missing=['stage_results']>"


def test_case_data_is_checked_like_a_file():
    verdict = j6doctor.diagnose({"results": {"qat.bc": "normal", "quantized_bc": "abnormal"}})
    assert verdict.stage == "convert"
    with pytest.raises(j6doctor.J6DoctorError) as info:
        j6doctor.diagnose({"results": {"qat_bc": {"status": "sideways"}}})
    assert info.value.exit_code == 2 and "results.qat_bc.status" in str(info.value)


@pytest.mark.slow
@pytest.mark.parametrize("args,call", [
    (["diagnose", "missing.yaml"], lambda d: j6doctor.diagnose(d / "missing.yaml")),
    (["diagnose", "case.yaml", "--rules", "no_pack"], lambda d: j6doctor.diagnose(d / "case.yaml", rules=[d / "no_pack"])),
    (["diagnose", "--workdir", "nowhere"], lambda d: j6doctor.diagnose(workdirs=[d / "nowhere"])),
])
def test_a_refusal_is_one_exception_carrying_what_the_command_line_prints(tmp_path, monkeypatch, args, call):
    write_case(tmp_path, "symptom: x\n")
    monkeypatch.chdir(tmp_path)
    printed = _cli(*args, "--no-env", cwd=tmp_path)
    with pytest.raises(j6doctor.J6DoctorError) as info:
        call(Path("."))
    assert printed.returncode == info.value.exit_code == 2
    assert printed.stderr == str(info.value) + "\n"


def test_the_api_is_listed_typed_and_not_loaded_by_the_command_line():
    assert set(j6doctor.__all__) >= {"diagnose", "Verdict", "Case", "J6DoctorError"}
    assert (Path(j6doctor.__file__).parent / "py.typed").is_file()
    code = ("import sys\nfrom j6doctor.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in sys.modules if m in ('j6doctor.api', 'j6doctor.case_recorder')), file=sys.stderr)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.stderr.strip().splitlines()[-1] == "[]"


# ---------------------------------------------------------------- the recorder

ORIGINAL = """\
# my evaluation notes: keep me
symptom: "quantized.bc 掉点"   # as reported
platform: J6M
results:
  float:        {status: normal, evidence: dataset_eval, metric: mAP, value: 41.5}
  qat.pt:       {status: normal, evidence: dataset_eval, metric: mAP, value: 41.2}   # qat.pt as named here
tried:
  - "ConsistencyStrategy level 0"
"""


def test_a_record_adds_its_entry_and_keeps_every_other_line(tmp_path):
    path = write_case(tmp_path, ORIGINAL)
    case = j6doctor.Case.open(path)
    entry = case.record("quantized.bc", metric="mAP", value=36.0, evidence="dataset_eval", script="eval_loop.py")
    assert entry["status"] == "abnormal"  # 36.0 against qat.pt's 41.2: beyond 1 %
    assert entry["recorded"]["script"] == "eval_loop.py" and entry["recorded"]["at"].endswith("Z")
    text = path.read_text(encoding="utf-8")
    kept = ORIGINAL.splitlines(keepends=True)
    assert text.startswith("".join(kept[:6]))  # comments, alignment, the user's own key spelling
    assert text.endswith("".join(kept[6:]))
    verdict = j6doctor.diagnose(path, environment=False)  # qat.bc is what the diagnosis asks for next
    assert (verdict.stage, [c["stage"] for c in verdict.candidates]) == ("undetermined", ["export", "convert"])


def test_the_same_result_again_changes_nothing_and_another_is_refused_with_its_line(tmp_path):
    path = write_case(tmp_path, ORIGINAL)
    case = j6doctor.Case.open(path)
    case.record("qat_bc", "normal", evidence="dataset_eval")
    before = path.read_bytes()
    case.record("qat.bc", "normal", evidence="dataset_eval")  # where / when aside, the same result
    assert path.read_bytes() == before
    with pytest.raises(j6doctor.J6DoctorError) as info:
        case.record("qat_bc", "abnormal", evidence="dataset_eval")
    assert str(info.value).startswith("j6doctor: error: case.yaml:7: results.qat_bc is already recorded")
    assert path.read_bytes() == before


def test_a_replacement_keeps_the_old_entry(tmp_path):
    path = write_case(tmp_path, ORIGINAL)
    case = j6doctor.Case.open(path)
    case.record("qat_export_pt", metric="mAP", value=41.0, evidence="dataset_eval")
    case.record("qat_export_pt", metric="mAP", value=39.0, evidence="dataset_eval", replace=True)
    data = j6doctor.diagnose(path, environment=False).to_dict()
    assert data["stage"] == "pre_export"
    import yaml

    written = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert written["results"]["qat_export_pt"]["value"] == 39.0
    assert [(r["artifact"], r["result"]["value"], r["result"]["status"]) for r in written["replaced_results"]] == \
        [("qat_export_pt", 41.0, "normal")]
    assert written["results"]["qat.pt"]["value"] == 41.2 and written["tried"] == ["ConsistencyStrategy level 0"]


def test_a_replacement_in_a_json_case_keeps_the_old_entry(tmp_path):
    path = tmp_path / "case.json"
    path.write_text(json.dumps({"results": {"qat.pt": {"status": "normal", "metric": "top1", "value": 76.1}}}))
    case = j6doctor.Case.open(path)
    case.record("quantized_bc", "normal", evidence="dataset_eval", script="a.py")
    case.record("quantized_bc", metric="top1", value=70.0, evidence="dataset_eval", replace=True, script="b.py")
    written = json.loads(path.read_text())
    assert written["results"]["qat.pt"]["value"] == 76.1  # the user's key as written
    assert written["results"]["quantized_bc"]["status"] == "abnormal"
    assert [(r["artifact"], r["result"]["status"], r["result"]["recorded"]["script"])
            for r in written["replaced_results"]] == [("quantized_bc", "normal", "a.py")]


def test_a_json_case_and_a_new_case_are_recorded_into(tmp_path):
    path = tmp_path / "case.json"
    path.write_text(json.dumps({"results": {"qat_pt": {"status": "normal", "metric": "top1", "value": 76.1}}}))
    j6doctor.Case.open(path).record("quantized_bc", metric="top1", value=75.9, evidence="dataset_eval")
    assert json.loads(path.read_text())["results"]["quantized_bc"]["status"] == "normal"
    fresh = j6doctor.Case.open(tmp_path / "new.yaml")
    fresh.record("board", failure="load_error", message="Incompatible Platform!!", script="board.py")
    assert j6doctor.diagnose(tmp_path / "new.yaml", environment=False).stage == "compile"


@pytest.mark.parametrize("call,fragment", [
    (lambda c: c.record("hbm_board_thing", "normal"), "unknown artifact 'hbm_board_thing'"),
    (lambda c: c.record("qat_bc", "sideways"), "record: results.qat_bc.status: \"sideways\" is not allowed"),
    (lambda c: c.record("qat_bc", "normal", evidence="rumour"), "record: results.qat_bc.evidence: \"rumour\""),
    (lambda c: c.record("qat_bc"), "give a status, a metric and value to judge, or a failure"),
    (lambda c: c.record("qat_bc", metric="mAP", value=float("nan")), "value must be a finite number"),
    (lambda c: c.record("qat_bc", metric="top5", value=80.0), "no earlier artifact has a normal top5 result"),
])
def test_a_record_that_would_not_read_is_refused_and_nothing_is_written(tmp_path, call, fragment):
    path = write_case(tmp_path, ORIGINAL)
    with pytest.raises(j6doctor.J6DoctorError) as info:
        call(j6doctor.Case.open(path))
    assert fragment in str(info.value) and info.value.exit_code == 2
    assert path.read_text(encoding="utf-8") == ORIGINAL


def test_a_case_that_cannot_be_recorded_into_is_refused_when_opened(tmp_path):
    for name, text in (("notes.txt", "x"), ("broken.yaml", "results: [1, 2")):
        (tmp_path / name).write_text(text)
        with pytest.raises(j6doctor.J6DoctorError):
            j6doctor.Case.open(tmp_path / name)


@pytest.mark.slow
def test_processes_recording_into_one_case_at_once_lose_nothing(tmp_path):
    path = write_case(tmp_path, ORIGINAL)
    code = ("import sys, j6doctor\n"
            "j6doctor.Case.open(sys.argv[1]).record(sys.argv[2], 'normal', evidence='dataset_eval')\n")
    artifacts = ["qat_export_pt", "qat_bc", "quantized_bc", "hbm", "hbm_x86", "board"]
    procs = [subprocess.Popen([sys.executable, "-c", code, str(path), a]) for a in artifacts]
    assert [p.wait(timeout=120) for p in procs] == [0] * len(artifacts)
    import yaml

    results = yaml.safe_load(path.read_text(encoding="utf-8"))["results"]
    assert set(artifacts) <= set(results)


# ---------------------------------------------------------------- the loop, end to end

DRIVER = """\
import importlib.util, sys
from horizon_plugin_pytorch import Model
spec = importlib.util.spec_from_file_location("step", sys.argv[1])
step = importlib.util.module_from_spec(spec)
spec.loader.exec_module(step)
VALUES = {"qat_pt": 41.2, "qat_export_pt": 41.1, "qat_bc": 36.4, "quantized_bc": 36.0}
step.load_qat_model = lambda: Model("qat_pt")
step.build_example_inputs = lambda: (1, 3, 224, 224)
step.evaluate = lambda model, artifact: VALUES[model.artifact]
step.main()
"""


@pytest.mark.slow
@pytest.mark.parametrize("engine", ENGINES)
def test_two_recorded_next_steps_take_a_bundled_example_to_its_stage(tmp_path, engine):
    shutil.copy(EXAMPLES / "record_loop.yaml", tmp_path / "case.yaml")
    (tmp_path / "driver.py").write_text(DRIVER)
    env = {"PYTHONPATH": os.pathsep.join([str(STANDIN), os.environ.get("PYTHONPATH", "")]),
           "J6DOCTOR_ENGINE": engine}
    assert j6doctor.diagnose(tmp_path / "case.yaml", engine=engine, environment=False).stage == "undetermined"
    recorded = []
    for step in ("step1.py", "step2.py"):
        written = _cli("next-step", "case.yaml", "--no-env", "-o", step, cwd=tmp_path, env=env)
        assert written.returncode == 0 and written.stderr == "", written.stderr
        ran = subprocess.run([sys.executable, "driver.py", step], cwd=tmp_path, capture_output=True, text=True,
                             env={**os.environ, **env}, timeout=120)
        assert ran.returncode == 0, ran.stderr
        recorded.append(ran.stdout.splitlines()[0])
    assert recorded == ["qat.bc（export(qat_pt, example_inputs)）：mAP = 36.4 → abnormal，已写入 case.yaml",
                        "qat.pt（load_qat_model()）：mAP = 41.2 → normal，已写入 case.yaml"]
    verdict = j6doctor.diagnose(tmp_path / "case.yaml", engine=engine, environment=False)
    assert verdict.stage == "export"
    chain = {e["source"]["key"] for e in verdict.evidence if e.get("source", {}).get("kind") == "case"}
    assert {"results.qat_bc", "results.qat_pt"} <= chain  # the recorded results are the evidence


PACK_VOCABULARY = """\
enums:
  platform:
    values:
      J7X: {board: RDK Z1, march: nova-x, series: J6, label: "J7X (nova-x, RDK Z1)", aliases: [RDK Z1]}
types:
  calibration_set:
    origin: input
    probes: [case_file]
    meaning: 校准数据集的规模
    read_from: {key: calibration_set, schema: {type: integer, minimum: 1}, fields: {images: .}}
    fields:
      images: {type: int, required: true}
"""


def test_a_case_in_a_packs_words_is_recorded_into_with_the_pack(tmp_path):
    write_file(tmp_path / "pack", "vocabulary.yaml", PACK_VOCABULARY)
    path = write_case(tmp_path, "platform: RDK Z1\ncalibration_set: 200\nresults:\n  qat_pt: {status: normal}\n")
    with pytest.raises(j6doctor.J6DoctorError) as refused:
        j6doctor.Case.open(path)
    assert "unknown platform 'RDK Z1'" in str(refused.value)
    before = path.read_bytes()
    case = j6doctor.Case.open(path, rules=tmp_path / "pack")  # one folder, given alone
    case.record("quantized_bc", "abnormal", evidence="dataset_eval", script="eval.py")
    assert path.read_bytes().startswith(before)  # the user's lines kept, the new entry added
    verdict = case.diagnose(environment=False).to_dict()
    assert verdict["stage"] == "undetermined"
    assert [f["fields"] for f in verdict["trace"] if f["type"] == "calibration_set"] == [{"images": 200}]
    with pytest.raises(j6doctor.J6DoctorError) as no_pack:
        j6doctor.Case.open(path, rules=[tmp_path / "no_such_pack"])
    assert "no_such_pack" in str(no_pack.value)
