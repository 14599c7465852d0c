"""Where each input fact type comes from is written once, in the vocabulary: `probes:` of each
input type (facts/vocabulary.yaml) names the modules that write its facts. Checked here
against what the probes really add, run on the repository's own format fixtures and example
cases (no reader is replaced), and against the modules' sources."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

from conftest import EXAMPLE_CASES, REPO
from j6doctor.engine import Vocabulary, VocabularyError
from j6doctor.evidence import FactList
from j6doctor.facts import vocabulary
from j6doctor.probes import registry
from j6doctor.probes.artifacts import find_artifacts
from j6doctor.probes.case_file import case_facts, read_case
from j6doctor.probes.probe_output import ProbeOutput

PROBES = REPO / "probes"
# The writer that is no module of probes/: the diagnosis's own gathering (the metrics file, the
# folder scan, the machine's environment, and notes on values that cannot be used).
EVIDENCE = "evidence"
EVIDENCE_MODULE = REPO / "app" / "evidence.py"
# A script a user would hand over beside the artifacts (probes/user_scripts.py reads it).
USER_SCRIPT = """\
from horizon_plugin_pytorch.utils.quant_profiler import QuantAnalysis

qa = QuantAnalysis(qat_bc, "model.hbm", "convert", out_dir="./qa_convert")
qa.auto_find_bad_case(dataloader)
qa.run()
qa.compare_per_layer()
"""


def _input_types() -> dict[str, tuple[str, ...]]:
    return {name: t.probes for name, t in vocabulary().types.items() if t.origin == "input"}


def _written_by_file_probes(folders: list[Path]) -> dict[str, set[str]]:
    """type -> the probes/ modules that added facts of it, each file read alone by its probe."""
    found, _, _ = find_artifacts(folders, REPO)
    seen: dict[str, set[str]] = defaultdict(set)
    declared = registry.probes()
    for item in found:
        probe = declared.get(item.kind)
        if probe is None or not probe.scanned:
            continue  # recorded only (models, configs); the metrics file is evidence.py's
        facts = FactList()
        registry.add_facts([item], ProbeOutput(facts, 10), lambda found_file, error: None)
        for fact in facts.facts:
            seen[fact.type].add(probe.module)
    return seen


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> dict[str, set[str]]:
    scripts = tmp_path_factory.mktemp("scripts")
    (scripts / "eval_qat.py").write_text(USER_SCRIPT, encoding="utf-8")
    seen = _written_by_file_probes([REPO / "tests" / "fixtures", REPO / "examples", scripts])
    for path in EXAMPLE_CASES:
        for fact in case_facts(read_case(path)):
            seen[fact.type].add("case_file")
    return seen


def test_every_input_type_names_who_writes_it():
    modules = {p.stem for p in PROBES.glob("*.py")}
    for name, probes in _input_types().items():
        assert probes, f"{name}: no `probes:` in facts/vocabulary.yaml"
        unknown = [p for p in probes if p != EVIDENCE and p not in modules]
        assert not unknown, f"{name}: probes {unknown} are no module of probes/"


def test_what_the_probes_add_is_declared(written):
    declared = _input_types()
    assert {"case_file", "compare_per_layer", "hb_model_info", "conversion_log", "user_scripts"} <= set().union(
        *written.values()), written  # the fixtures reach the main readers
    undeclared = {t: sorted(mods - set(declared[t])) for t, mods in written.items() if mods - set(declared[t])}
    assert not undeclared, f"facts/vocabulary.yaml `probes:` misses these writers: {undeclared}"


def _strings_of(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}


def _probe_imports(path: Path) -> set[str]:
    """The probes/ modules a module imports from (a reader may build its facts with another's helpers)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {n.module.rsplit(".", 1)[1] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module
            and n.module.startswith("j6doctor.probes.")}


# Facts a module writes through FactList's funnels (app/evidence.py) without naming the type: a
# version or platform another input already stated becomes a note, and so does a number that is
# nan or inf in a fact with number fields (FactList.add).
FUNNELS = {".add_version(": {"version", "intake_note"}, ".add_platform(": {"platform", "intake_note"},
           ".signals(": {"check_signal"}, ".skipped(": {"intake_note"}}  # lines a reader skipped, named


def _writes(path: Path) -> set[str]:
    """The input types a module (with the probes/ modules it builds its facts with) can write."""
    sources = [path] + [PROBES / f"{m}.py" for m in _probe_imports(path) if (PROBES / f"{m}.py").is_file()]
    text = "".join(p.read_text(encoding="utf-8") for p in sources)
    types = vocabulary().types
    named = {t for t in set().union(*(_strings_of(p) for p in sources)) if t in types and types[t].origin == "input"}
    named |= set().union(*(funnel for call, funnel in FUNNELS.items() if call in text))
    if path == PROBES / "case_file.py":  # it reads the keys the vocabulary declares (facts/case_keys.py)
        named |= {t for t in types if types[t].read_from is not None}
    if any(f.type == "number" for t in named for f in types[t].fields.values()):
        named.add("intake_note")
    return named


def test_each_declared_writer_writes_the_type():
    """The other direction: a module named under `probes:` names the type in its code (or in a
    probes/ module it builds its facts with, or writes it through a FactList funnel)."""
    stale = [(name, probe) for name, probes in _input_types().items() for probe in probes
             if name not in _writes(EVIDENCE_MODULE if probe == EVIDENCE else PROBES / f"{probe}.py")]
    assert not stale, f"facts/vocabulary.yaml `probes:` names writers that never write the type: {stale}"


@pytest.mark.parametrize("spec, message", [
    ({"origin": "derived", "probes": ["case_file"]}, "probes: only an input type is written by probes"),
    ({"origin": "input", "probes": "case_file"}, "probes: expected a list of probe names"),
    ({"origin": "input", "probes": []}, "probes: expected a list of probe names"),
])
def test_the_vocabulary_refuses_a_wrong_probes_entry(spec, message):
    with pytest.raises(VocabularyError) as caught:
        Vocabulary.from_data({"types": {"t": {**spec, "fields": {"name": {"type": "str"}}}}}, "v.yaml")
    assert f"v.yaml: type 't': {message}" in str(caught.value)
