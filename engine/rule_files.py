"""The rule files of a folder, and their bytes: what a rule base is loaded from and what a
cached rule base is keyed by. Reading them parses nothing (rule_loader.py parses)."""

from __future__ import annotations

import stat
from pathlib import Path

from j6doctor.engine.errors import RuleBaseError, RuleBaseErrors
from j6doctor.engine.vocabulary import PACK_VOCABULARY

MAX_RULE_FILE_BYTES = 4 * 1024 * 1024


def read_rule_file(path: Path, name: str) -> bytes:
    """A rule file's bytes; a pipe or a device (which would block or never end) and an
    oversized file are refused before anything is read."""
    mode = path.stat().st_mode
    if not stat.S_ISREG(mode):
        raise RuleBaseErrors([RuleBaseError("not a regular file (a folder, pipe or device); expected a YAML rule file",
                                            file=name)])
    size = path.stat().st_size
    if size > MAX_RULE_FILE_BYTES:
        raise RuleBaseErrors([RuleBaseError(f"too large ({size} bytes; limit {MAX_RULE_FILE_BYTES}); "
                                            "expected a YAML rule file", file=name)])
    with path.open("rb") as handle:
        return handle.read(MAX_RULE_FILE_BYTES + 1)


def rule_file_bytes(directories: list[Path], display_root: dict[Path, str] | None = None
                    ) -> list[tuple[str, str, bytes]]:
    """(path, shown name, bytes) of every rule file load_rule_dirs would read, in its order:
    what a cached rule base is keyed by. Raises like load_rule_file on a file it refuses."""
    out = []
    for directory in directories:
        try:
            files = rule_files_in(directory) if directory.is_dir() else [directory]
        except OSError as exc:
            raise RuleBaseErrors([RuleBaseError(f"cannot read this folder: {exc.strerror}",
                                                file=str(directory))]) from None
        for path in files:
            shown = (display_root or {}).get(directory)
            display = f"{shown}/{path.name}" if shown else str(path)
            out.append((str(path.resolve()), display, read_rule_file(path, display)))
    return out


RULE_FILE_SUFFIXES = (".yaml", ".yml")


def rule_files_in(directory: Path) -> list[Path]:
    """The rule files of a folder, in a stable order: every entry named `*.yaml` or `*.yml`
    (in any case, as the case files), not only regular files: a pipe, a device (or a link to
    one) or a folder named like a rule file is refused by load_rule_file with a message,
    instead of being dropped without a word. A pack's vocabulary additions (PACK_VOCABULARY)
    are not rules; subfolders are not read (a pack keeps its fixtures there)."""
    return sorted(p for p in directory.iterdir()
                  if p.suffix.lower() in RULE_FILE_SUFFIXES and p.name != PACK_VOCABULARY)
