"""Which probe reads which file kind (the kinds themselves, with their content signatures,
are data in the fact vocabulary). Modules are imported on first use, so that a diagnosis
that meets no compare table never imports pandas.

Each entry gives the reader and, for `j6doctor inspect`, what to show of its result: the
whole result, or a summary of it when the file can be large (a compare table of 100k rows).
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any, Callable

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


def readable_kinds() -> tuple[str, ...]:
    return tuple(_READERS)


def reader(kind: str) -> Callable[[Path, str], Any] | None:
    """The function that reads a file of this kind (path, display) → its result; None for
    kinds that are only recorded (models, configs)."""
    entry = _READERS.get(kind)
    if entry is None:
        return None
    return getattr(importlib.import_module(f"{__package__}.{entry[0]}"), entry[1])


def summarizer(kind: str) -> Callable[[Any], Any] | None:
    entry = _READERS.get(kind)
    if entry is None or entry[2] is None:
        return None
    return getattr(importlib.import_module(f"{__package__}.{entry[0]}"), entry[2])
