"""Which probe reads which file kind (the kinds themselves, with their content signatures,
are data in the fact vocabulary). Modules are imported on first use, so that a diagnosis
that meets no compare table never imports pandas.

Each entry gives the probe module, its reader and, for `j6doctor inspect`, what to show of
its result: the whole result, or a summary of it when the file can be large (a compare
table of 100k rows). For a diagnosis, every probe module listed here has
`add_facts(found, out)` (probes/probe_output.py); the model checks are read together
(`add_facts_of_all`: the newest one is the current one).
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any, Callable

from j6doctor.probes.input_error import InputError
from j6doctor.probes.probe_output import folder_of

# kind -> (module, reader function, summary function or None)
_READERS: dict[str, tuple[str, str, str | None]] = {
    "compare_per_layer_csv": ("compare_per_layer", "read_compare_per_layer", "summarize"),
    "compare_per_layer_txt": ("compare_per_layer", "read_compare_per_layer", "summarize"),
    "sensitivity_txt": ("sensitivity", "read_sensitivity_txt", "summarize_sensitivity"),
    "badcase_txt": ("badcase", "read_badcase_txt", None),
    "sensitivity_pt": ("pt_file", "read_pt", None),
    "badcase_pt": ("pt_file", "read_pt", None),
    "all_badcase_info": ("pt_file", "read_pt", None),
    "model_check_result": ("model_check", "read_model_check", None),
    "fx_graph": ("fx_graph", "read_fx_graph", None),
    "abnormal_layer_advisor": ("layer_advisor", "read_layer_advisor", None),
    "script": ("user_scripts", "check_script", None),
    "hb_verifier": ("hb_verifier", "read_hb_verifier", None),
    "conversion_log": ("conversion_log", "read_conversion_log", None),
    "quant_info": ("quant_info", "read_quant_info", None),
    "hb_model_info": ("hb_model_info", "read_hb_model_info", None),
    "hrt_model_info": ("hrt_model_info", "read_hrt_model_info", None),
    "plugin_log": ("plugin_log", "read_plugin_log", None),
    "metrics": ("metrics_file", "read_metrics", None),
}


def reader(kind: str) -> Callable[[Path, str], Any] | None:
    """The function that reads a file of this kind (path, display) → its result; None for
    kinds that are only recorded (models, configs)."""
    entry = _READERS.get(kind)
    if entry is None:
        return None
    return getattr(_module(entry[0]), entry[1])


def summarizer(kind: str) -> Callable[[Any], Any] | None:
    entry = _READERS.get(kind)
    if entry is None or entry[2] is None:
        return None
    return getattr(_module(entry[0]), entry[2])


# the evaluation results file is read by the diagnosis itself (evidence.py), with the tolerance
_NOT_ARTIFACTS = {"metrics"}
# kinds read together, by one function of their module, before the others
_GROUPS: dict[str, tuple[str, str]] = {"model_check_result": ("model_check", "add_facts_of_all")}


def _module(name: str):
    return importlib.import_module(f"{__package__}.{name}")


def add_facts(found: list, out, problem: Callable[[Any, InputError], None],
              progress: Callable[[str], None] | None = None) -> None:
    """Every found file through its probe's add_facts, compare tables first (sensitivity
    rows are joined to them through fused groups). A file a probe refuses goes to
    `problem(found_file, error)` and the others are still read."""
    out.csv_folders.update(folder_of(f) for f in found if f.kind == "compare_per_layer_csv")
    out.txt_twins.update(f.display[:-4] for f in found if f.kind == "sensitivity_txt")
    for kind, (module, function) in _GROUPS.items():
        group = [f for f in found if f.kind == kind]
        if group:
            try:
                getattr(_module(module), function)(group, out)
            except InputError as exc:
                problem(next(f for f in group if f.display == exc.file), exc)
    ordered = sorted(found, key=lambda f: (0 if f.kind.startswith("compare_per_layer") else 1, f.display))
    for item in ordered:
        entry = _READERS.get(item.kind)
        if entry is None or item.kind in _GROUPS or item.kind in _NOT_ARTIFACTS:
            continue  # models, configs: recorded, not read
        if progress is not None:
            progress(f"读取 {item.display}")
        try:
            _module(entry[0]).add_facts(item, out)
        except InputError as exc:
            problem(item, exc)
