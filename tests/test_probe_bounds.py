"""Bounds that are bounds (issue 26): a work folder of thousands of user scripts reads a
stated number of them and lists the rest as not read; a case path no file can have is bad
input naming its key and the path, shortened. (The compare-table line bound is tested in
test_input_bounds.py with the other size limits.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import write_case
from j6doctor.evidence import EvidenceOptions, collect
from j6doctor.probes import InputError
from j6doctor.probes.artifacts import MAX_SCRIPTS, MAX_SKIPPED_LISTED, find_artifacts
from j6doctor.probes.case_file import read_case

SCRIPT = "import torch\n\nmodel = torch.nn.Linear(4, 2)\nprint(model)\n"


def _scripts(folder: Path, count: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for k in range(count):
        (folder / f"step_{k:05d}.py").write_text(SCRIPT, encoding="utf-8")
    return folder


def test_scripts_past_the_bound_are_listed_not_read(tmp_path):
    work = _scripts(tmp_path / "work", MAX_SCRIPTS + 37)
    (work / "badcase.txt").write_text("The bad case input index of each output:\n", encoding="utf-8")
    notes: list[tuple[str, str]] = []
    found, problems, summaries = find_artifacts([work], tmp_path, notes=notes, hash_now=False)
    scripts = [f.display for f in found if f.kind == "script"]
    assert scripts == [f"work/step_{k:05d}.py" for k in range(MAX_SCRIPTS)]
    assert [f.kind for f in found if f.kind != "script"] == ["badcase_txt"]   # other artifacts still found
    assert problems == [] and summaries[0].recognised == MAX_SCRIPTS + 38
    (note,) = notes
    assert note[0] == "work"
    assert f"超过 {MAX_SCRIPTS} 个" in note[1] and "另外 37 个没有读取" in note[1]
    skipped = [f"work/step_{k:05d}.py" for k in range(MAX_SCRIPTS, MAX_SCRIPTS + MAX_SKIPPED_LISTED)]
    assert "、".join(skipped) in note[1] and f"另有 {37 - MAX_SKIPPED_LISTED} 个" in note[1]


def test_a_folder_of_sixteen_thousand_scripts_is_read_within_the_bound(tmp_path):
    """The shape of the report: 16,000 scripts took 1 GB and 30 s; now MAX_SCRIPTS are read,
    one warning names the others, and the diagnosis has facts for the scripts read only."""
    work = _scripts(tmp_path / "many", 16_000)
    evidence = collect(None, EvidenceOptions(workdirs=[work], use_environment=False))
    files = [f for f in evidence.facts if f.type == "artifact_file"]
    assert len(files) == MAX_SCRIPTS
    (note,) = [f for f in evidence.facts if f.type == "intake_note" and "用户脚本" in f["text"]]
    assert f"另外 {16_000 - MAX_SCRIPTS} 个没有读取" in note["text"]


def test_scripts_at_the_bound_give_no_note(tmp_path):
    notes: list[tuple[str, str]] = []
    found, _, _ = find_artifacts([_scripts(tmp_path / "w", MAX_SCRIPTS)], tmp_path, notes=notes, hash_now=False)
    assert len(found) == MAX_SCRIPTS and notes == []


@pytest.mark.parametrize("key", ["artifacts", "scripts"])
def test_a_case_path_longer_than_any_file_path_is_bad_input_naming_key_and_path(tmp_path, key):
    path = "qa/" * 1700 + ("train.py" if key == "scripts" else "compare_per_layer_out.csv")
    case = write_case(tmp_path, f"symptom: mAP 掉了 5 个点\n{key}:\n  - ok.txt\n  - {path}\n")
    with pytest.raises(InputError) as info:
        read_case(case)
    error = info.value
    assert error.line == 4
    assert error.message.startswith(f"{key}.1: the path 'qa/qa/")
    assert f"…{path[-20:]}' ({len(path)} characters) is longer than 4095 bytes" in error.message
    assert len(error.message) < 300   # the path is shortened, not quoted whole


def test_a_long_path_within_the_bound_is_only_missing(tmp_path):
    path = "qa/" * 1000 + "train.py"   # 3008 characters, names of 2 bytes: no file, but a possible path
    case = read_case(write_case(tmp_path, f"symptom: drop\nscripts: [{path}]\n"))
    assert case.data["scripts"] == [path]


def test_a_long_path_with_a_lone_surrogate_is_named_not_a_crash(tmp_path):
    case = write_case(tmp_path, '{"symptom": "drop", "artifacts": ["' + "ab/" * 1400 + '\\ud800.txt"]}', "case.json")
    with pytest.raises(InputError, match=r"artifacts\.0: the path 'ab/ab/"):
        read_case(case)
