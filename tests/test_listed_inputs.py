"""Inputs a case names and inputs far larger than a case holds (issue 30): every path the
case lists is read or named with why not; a symlink loop anywhere is named as a loop; a
document of hundreds of thousands of values is refused before it is built, naming the file,
the line and the key. In process, on the real readers and the real rule base."""

from __future__ import annotations

import os
import resource
from pathlib import Path

import pytest

from conftest import write_case, write_file
from j6doctor.diagnosis import diagnose_file
from j6doctor.engine.strict_yaml import MAX_NODES, YamlTooLargeError, load_yaml
from j6doctor.probes import InputError
from j6doctor.probes.case_file import read_case

# a badcase.txt as QuantAnalysis writes it (tests/fixtures/formats: FORMATS.md §5)
BADCASE_TXT = (Path(__file__).parent / "fixtures" / "formats" / "horizon_quant_analysis" / "badcase.txt").read_text()


def test_a_badcase_path_that_does_not_exist_is_named_with_its_case_key(tmp_path, rulebase):
    case = write_case(tmp_path, "symptom: quantized.bc 掉点\nbadcase: {reproducible: true, path: qa/badcase.pt}\n")
    d = diagnose_file(case, rulebase)
    problems = [f for f in d.facts if f.type == "probe_problem"]
    assert [(p.fields["path"], p.source.key) for p in problems] == [("qa/badcase.pt", "badcase.path")]
    assert "no such file" in problems[0].fields["message"]


def test_a_badcase_path_through_a_symlink_is_read_and_the_link_noted(tmp_path, rulebase):
    write_file(tmp_path / "runs", "badcase.txt", BADCASE_TXT)
    os.symlink(tmp_path / "runs" / "badcase.txt", tmp_path / "latest_badcase.txt")
    case = write_case(tmp_path, "symptom: x\nbadcase: {reproducible: true, path: latest_badcase.txt}\n")
    d = diagnose_file(case, rulebase)
    files = [f.fields for f in d.facts if f.type == "artifact_file"]
    assert [(f["path"], f["kind"]) for f in files] == [("latest_badcase.txt", "badcase_txt")]
    notes = [f.fields["text"] for f in d.facts if f.type == "intake_note"]
    assert any("latest_badcase.txt" in n and "符号链接" in n for n in notes), notes


def test_a_metrics_file_that_is_a_symlink_loop_is_refused_as_a_loop(tmp_path, rulebase):
    os.symlink(tmp_path / "b.csv", tmp_path / "a.csv")
    os.symlink(tmp_path / "a.csv", tmp_path / "b.csv")
    case = write_case(tmp_path, "symptom: x\nmetrics: a.csv\n")
    with pytest.raises(InputError) as info:
        diagnose_file(case, rulebase)
    assert info.value.file == "a.csv"
    assert "symlink loop" in info.value.message and "metrics.file" in str(info.value)


def test_a_listed_artifact_that_is_a_symlink_loop_is_a_warning_naming_the_loop(tmp_path, rulebase):
    os.symlink(tmp_path / "y.hbm", tmp_path / "x.hbm")
    os.symlink(tmp_path / "x.hbm", tmp_path / "y.hbm")
    case = write_case(tmp_path, "symptom: x\nartifacts: [x.hbm]\n")
    d = diagnose_file(case, rulebase)
    problems = [f for f in d.facts if f.type == "probe_problem"]
    assert [(p.fields["path"], p.source.key) for p in problems] == [("x.hbm", "artifacts.0")]
    assert "symlink loop" in problems[0].fields["message"]


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@pytest.mark.parametrize("text,line", [
    ("comparisons: [" + ",".join(["{}"] * (MAX_NODES + 5)) + "]\n", 1),
    # the document's mapping, the key and the list are values too: the item that is one too
    # many is on line MAX_NODES - 1
    ("tried:\n" + "- a\n" * (MAX_NODES + 5), MAX_NODES - 1),
])
def test_a_yaml_document_of_too_many_values_is_refused_before_it_is_built(text, line):
    before = _peak_mib()
    with pytest.raises(YamlTooLargeError) as info:
        load_yaml(text)
    assert info.value.line == line and f"more than {MAX_NODES} values" in info.value.message
    assert _peak_mib() - before < 200  # built, these would take gigabytes


def test_the_bound_is_not_met_by_a_large_ordinary_document():
    text = "rows:\n" + "".join(f"  - {{artifact: qat_bc, metric: mAP, value: {i}}}\n" for i in range(20_000))
    assert len(load_yaml(text).data["rows"]) == 20_000


def test_a_json_case_of_too_many_values_is_refused_by_file_and_line(tmp_path):
    path = write_file(tmp_path, "case.json", '{"symptom": "x",\n "comparisons": [' + ",".join(["[]"] * (MAX_NODES + 5))
                      + "]}\n")
    with pytest.raises(InputError) as info:
        read_case(path)
    assert (info.value.file, info.value.line) == ("case.json", 2)
    assert f"more than {MAX_NODES} values" in info.value.message


@pytest.mark.parametrize("text,key,line", [
    ("symptom: x\ncomparisons:\n" + "- {}\n" * 5000, "comparisons: 5000 entries; at most 100 are read", 2),
    ("symptom: x\ndeployment:\n  checklist:\n" + "".join(f"    item{i}: ok\n" for i in range(3000)),
     "deployment.checklist: 3000 keys; at most 1000 are read", 3),
])
def test_an_oversized_list_is_refused_once_before_the_schema_names_each_entry(tmp_path, text, key, line):
    path = write_file(tmp_path, "case.yaml", text)
    with pytest.raises(InputError) as info:
        read_case(path)
    assert info.value.message.startswith(key)
    assert info.value.line == line
    assert not info.value.more  # one message, not one per entry


@pytest.mark.parametrize("args,expected", [
    (["diagnose", "--workdir", "loop"], "loop: symlink loop (following the link leads back to it); --workdir takes"),
    (["diagnose", "--metrics", "loop"], "loop: symlink loop (following the link leads back to it); --metrics takes"),
    (["diagnose", "case.yaml", "--rules", "loop"], "loop: symlink loop (following the link leads back to it); --rules"),
    (["rules", "test", "loop"], "loop: symlink loop (following the link leads back to it); give a folder"),
    (["diagnose", "case.yaml", "--store", "loop"], "symlink loop (following the link leads back to it); give a SQLite"),
])
def test_a_symlink_loop_given_on_the_command_line_is_named_as_a_loop(tmp_path, monkeypatch, capsys, args, expected):
    from j6doctor.cli import main

    os.symlink(tmp_path / "loop2", tmp_path / "loop")
    os.symlink(tmp_path / "loop", tmp_path / "loop2")
    write_case(tmp_path, "symptom: x\n")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as info:
        main([*args, "--no-env"] if args[0] == "diagnose" else args)
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert expected in err and "no such" not in err, err
