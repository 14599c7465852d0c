"""A sign in a prepare-time artifact (model check, FX graph) that a module will not behave
alike in training and deployment: what kind, which module, where in the file."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Signal:
    """One sign about one module (or the whole model when `module` is empty)."""

    kind: str      # e.g. "unfused", "shared_module", "scale_frozen" (docs/file_formats.md §13.6)
    module: str    # module name the signal is about ("" if global)
    detail: str    # short English detail
    line: int      # 1-based line in the file
    type: str = ""  # class name of the module, where the file gives it (Conv2d, MaxPool2d ...)
