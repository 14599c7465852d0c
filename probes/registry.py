"""Which probe reads which file kind: the `probe` declaration of each kind in the fact
vocabulary (facts/vocabulary.yaml, enum file_kind), beside its names and content
signatures. Modules are imported on first use, so that a diagnosis that meets no compare
table never imports pandas.

A declaration names the probe module, its reader and, for `j6doctor inspect`, a summary
function when the file can be large (a compare table of 100k rows). For a diagnosis, every
declared module has `add_facts(found, out)` (probes/probe_output.py), or a function that
reads all files of the kind together (`read_together`: the newest model check is the
current one).
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path
from typing import Any, Callable, NamedTuple

from j6doctor.facts import per_vocabulary, vocabulary
from j6doctor.probes.input_error import InputError
from j6doctor.probes.probe_output import folder_of

_NAME = re.compile(r"[a-z_][a-z0-9_]*\Z")


class Probe(NamedTuple):
    """The probe a file kind declares (its attributes in the vocabulary)."""

    module: str
    reader: str
    summary: str | None = None
    read_together: str | None = None
    scanned: bool = True  # False: the diagnosis reads it itself (the evaluation results, with the tolerance)
    pasted: str | None = None  # its function (text, found, out) for the kind's output pasted into words


@per_vocabulary
def probes() -> dict[str, Probe]:
    """kind → its probe, for every kind that declares one."""
    enum = vocabulary().enums["file_kind"]
    out = {}
    for kind in enum.values:
        module = enum.attr(kind, "probe")
        if module is None:
            continue
        probe = Probe(module, enum.attr(kind, "reader", ""), enum.attr(kind, "summary"),
                      enum.attr(kind, "read_together"), enum.attr(kind, "scanned", True), enum.attr(kind, "pasted"))
        names = [name for name in (probe.module, probe.reader, probe.summary, probe.read_together, probe.pasted)
                 if name is not None]
        if not all(_NAME.match(name) for name in names):  # a defect of the bundled vocabulary
            raise ValueError(f"file_kind.{kind}: probe, reader, summary, read_together and pasted are Python names: "
                             f"{probe}")
        out[kind] = probe
    return out


def reader(kind: str) -> Callable[[Path, str], Any] | None:
    """The function that reads a file of this kind (path, display) → its result; None for
    kinds that are only recorded (models, configs)."""
    probe = probes().get(kind)
    return None if probe is None else getattr(_module(probe.module), probe.reader)


def pasted(kind: str) -> Callable[[str, Any, Any], None] | None:
    """The function that reads the kind's output pasted into the user's words (text, found,
    out); None for kinds that declare none."""
    probe = probes().get(kind)
    return None if probe is None or probe.pasted is None else getattr(_module(probe.module), probe.pasted)


def summarizer(kind: str) -> Callable[[Any], Any] | None:
    probe = probes().get(kind)
    return None if probe is None or probe.summary is None else getattr(_module(probe.module), probe.summary)


def _module(name: str):
    return importlib.import_module(f"{__package__}.{name}")


def add_facts(found: list, out, problem: Callable[[Any, InputError], None],
              progress: Callable[[str], None] | None = None) -> None:
    """Every found file through its probe's add_facts, compare tables first (sensitivity
    rows are joined to them through fused groups). A file a probe refuses goes to
    `problem(found_file, error)` and the others are still read."""
    declared = probes()
    out.csv_folders.update(folder_of(f) for f in found if f.kind == "compare_per_layer_csv")
    out.txt_twins.update(f.display[:-4] for f in found if f.kind == "sensitivity_txt")
    for kind, probe in declared.items():
        group = [f for f in found if f.kind == kind]
        if probe.read_together and group:
            try:
                getattr(_module(probe.module), probe.read_together)(group, out)
            except InputError as exc:
                problem(next(f for f in group if f.display == exc.file), exc)
    ordered = sorted(found, key=lambda f: (0 if f.kind.startswith("compare_per_layer") else 1, f.display))
    for item in ordered:
        probe = declared.get(item.kind)
        if probe is None or probe.read_together or not probe.scanned:
            continue  # models, configs: recorded, not read
        if progress is not None:
            progress(f"读取 {item.display}")
        try:
            _module(probe.module).add_facts(item, out)
        except InputError as exc:
            problem(item, exc)
