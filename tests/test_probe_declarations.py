"""Each file kind declares the probe that reads it in the fact vocabulary (enum file_kind:
probe, reader, summary, read_together, scanned, pasted): every declaration names a module of
j6doctor.probes and functions it has; every probe module that adds facts for found files is
declared by some kind; a rule pack may add kinds but no probe."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import j6doctor.probes as probes_package
from j6doctor.engine import VocabularyError
from j6doctor.facts import bundled, with_packs
from j6doctor.probes.registry import probes, reader, summarizer


def test_every_declared_probe_has_its_module_and_functions():
    declared = probes()
    assert {"compare_per_layer_csv", "sensitivity_txt", "model_check_result", "hb_verifier"} <= set(declared)
    for kind, probe in declared.items():
        module = importlib.import_module(f"j6doctor.probes.{probe.module}")
        assert callable(reader(kind)), kind
        if probe.summary:
            assert callable(summarizer(kind)), kind
        if probe.read_together:
            assert callable(getattr(module, probe.read_together)), kind
        elif probe.scanned:
            assert callable(getattr(module, "add_facts", None)), f"{probe.module} reads {kind} but has no add_facts"
        if probe.pasted:
            assert callable(getattr(module, probe.pasted)), kind


def test_every_probe_module_that_adds_facts_for_found_files_is_declared():
    declared = {p.module for p in probes().values()}
    adding = set()
    for info in pkgutil.iter_modules(probes_package.__path__):
        if info.name == "registry":  # the one that calls them
            continue
        module = importlib.import_module(f"j6doctor.probes.{info.name}")
        if callable(getattr(module, "add_facts", None)):
            adding.add(info.name)
    assert adding - declared == set(), "probe modules no file kind declares"


def test_kinds_without_a_probe_are_recorded_not_read():
    enum = bundled().enums["file_kind"]
    recorded = [kind for kind in enum.values if enum.attr(kind, "probe") is None]
    assert {"qat_pt", "hbm", "compile_config"} <= set(recorded)
    assert all(reader(kind) is None for kind in recorded)


@pytest.mark.parametrize("attribute", ["probe: compare_per_layer", "reader: read_compare_per_layer",
                                       "pasted: add_pasted_facts"])
def test_a_pack_cannot_declare_a_probe(tmp_path, attribute):
    pack = tmp_path / "pack"
    pack.mkdir()
    (pack / "vocabulary.yaml").write_text(
        "enums:\n  file_kind:\n    values:\n      vendor_log:\n        label: vendor log\n"
        f"        names: [\"vendor*.log\"]\n        {attribute}\n", encoding="utf-8")
    with pytest.raises(VocabularyError) as refused:
        with_packs([pack], {pack: "pack"})
    name = attribute.split(":")[0]
    assert str(refused.value).startswith(f"pack/vocabulary.yaml: enums.file_kind.values.vendor_log.{name}: "
                                         "a pack cannot declare a probe")


def test_a_pack_may_add_a_kind_that_is_recorded(tmp_path):
    pack = tmp_path / "pack"
    pack.mkdir()
    (pack / "vocabulary.yaml").write_text(
        "enums:\n  file_kind:\n    values:\n      vendor_log:\n        label: vendor log\n"
        "        names: [\"vendor*.log\"]\n", encoding="utf-8")
    vocab = with_packs([pack], {pack: "pack"})
    assert "vendor_log" in vocab.enums["file_kind"].values
