"""Artifact presence: find the debugging artifacts under the given paths and record what
exists, its size and sha256 (an audit must know which file a conclusion came from).

Knows file names, not formats: reading each file is another probe's job.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path

from .input_error import InputError

# Scanning stops here: an artifact folder is small; a home directory is not.
MAX_FILES = 20_000
MAX_DEPTH = 8
_SKIP_DIRS = {".git", "__pycache__", ".venv", "venv", "node_modules", "op_infos", ".horizon"}

_SENSITIVITY = re.compile(r"^(output_.*_)?sensitive_ops\.(txt|pt)$", re.IGNORECASE)


@dataclass(frozen=True)
class FoundFile:
    kind: str
    path: Path  # absolute
    display: str  # relative to the base folder, with '/' separators
    size: int
    sha256: str


def classify(name: str) -> str | None:
    """The file kind of a debugging artifact, from its file name (None: not an artifact)."""
    lower = name.lower()
    sens = _SENSITIVITY.match(lower)
    if sens:
        return "sensitivity_txt" if sens.group(2) == "txt" else "sensitivity_pt"
    exact = {
        "model_check_result.txt": "model_check_result",
        "fx_graph.txt": "fx_graph",
        "compare_per_layer_out.txt": "compare_per_layer_txt",
        "compare_per_layer_out.csv": "compare_per_layer_csv",
        "badcase.txt": "badcase_txt",
        "badcase.pt": "badcase_pt",
        "all_badcase_info.pt": "all_badcase_info",
        "abnormal_layer_advisor.txt": "abnormal_layer_advisor",
        "statistic.txt": "statistic",
    }
    if lower in exact:
        return exact[lower]
    if lower.endswith(".hbm"):
        return "hbm"
    if lower.endswith(".bc"):
        stem = lower[:-3]
        if "quantized" in stem or "int" in stem.split(".")[-1].split("_"):
            return "quantized_bc"
        if stem.endswith("modified"):
            return None  # an edited bc from bc_editor: kept, not a chain artifact
        return "qat_bc"
    if lower.endswith(".pt"):
        stem = lower[:-3]
        if stem.endswith("export") or ".export" in stem or "_export" in stem:
            return "qat_export_pt"
        if "qat" in stem:
            return "qat_pt"
        return None
    if lower.endswith((".yaml", ".yml", ".json")) and "compile" in lower:
        return "compile_config"
    if lower.endswith(".json") and ("bc_editor" in lower or "remove_fake_quant" in lower):
        return "bc_editor_config"
    if lower.endswith(".py"):
        return "script"
    return None


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _relative(path: Path, base: Path) -> str:
    try:
        return path.relative_to(base).as_posix()
    except ValueError:
        return path.as_posix()


def _walk(root: Path):
    """Files under root, sorted, depth-limited, not following links out of the tree."""
    root_depth = len(root.parts)
    for current, dirs, files in os.walk(root, followlinks=False):
        here = Path(current)
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS and not d.startswith("."))
        if len(here.parts) - root_depth >= MAX_DEPTH:
            dirs[:] = []
        for name in sorted(files):
            yield here / name


def find_artifacts(paths: list[Path], base: Path, display_of: dict[Path, str] | None = None,
                   on_file=None) -> tuple[list[FoundFile], list[tuple[str, str]]]:
    """Scan files and folders for artifacts.

    Returns the files found (in a stable order) and the problems met, as (path, message):
    a missing path or an unreadable file is reported, never fatal."""
    found: dict[Path, FoundFile] = {}
    problems: list[tuple[str, str]] = []
    seen = 0
    for given in paths:
        shown = (display_of or {}).get(given) or _relative(given, base)
        try:
            exists = given.exists()
        except OSError as exc:  # a name too long, a folder on the way that cannot be searched
            problems.append((shown, f"cannot read: {exc.strerror}"))
            continue
        if not exists:
            problems.append((shown, "no such file or folder"))
            continue
        candidates = [given] if given.is_file() else _walk(given)
        for path in candidates:
            if seen >= MAX_FILES:
                problems.append((shown, f"more than {MAX_FILES} files; the rest were not scanned"))
                break
            seen += 1
            kind = classify(path.name)
            if kind is None or path.is_symlink() or not path.is_file():
                continue
            resolved = path.resolve()
            if resolved in found:
                continue
            display = _relative(path, base)
            if on_file is not None:
                on_file(display)
            try:
                found[resolved] = FoundFile(kind, path, display, path.stat().st_size, sha256_of(path))
            except OSError as exc:
                problems.append((display, f"cannot read: {exc.strerror}"))
    return sorted(found.values(), key=lambda f: (f.display, f.kind)), problems


def require_folder(path: Path) -> Path:
    try:
        exists, is_dir = path.exists(), path.is_dir()
    except OSError as exc:  # e.g. a name longer than the file system allows
        raise InputError(str(path), f"cannot read: {exc.strerror}; expected a folder") from None
    if not exists:
        raise InputError(str(path), "no such folder")
    if not is_dir:
        raise InputError(str(path), "is not a folder")
    return path
