"""The folder where j6doctor keeps what it computed for the next run (compiled rule bases,
vocabularies): `$XDG_CACHE_HOME/j6doctor` or `~/.cache/j6doctor`.

What is kept there is pickled, so a file is only ever read when it and its folder belong to
this user and nobody else can write to them; anything else is ignored and rebuilt, never
trusted. J6DOCTOR_CACHE=0 turns every cache off.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO

from j6doctor.atomic_write import write_bytes_atomic


def cache_dir(environ=None) -> Path | None:
    """The cache folder, or None when caching is off or cannot be vouched for."""
    environ = os.environ if environ is None else environ
    if environ.get("J6DOCTOR_CACHE", "1") == "0" or not hasattr(os, "getuid"):
        return None  # off, or no owner to check (Windows): never trust a file we cannot vouch for
    base = environ.get("XDG_CACHE_HOME") or str(Path(environ.get("HOME", "~")).expanduser() / ".cache")
    return Path(base) / "j6doctor"


def is_private(path: Path, kind: int) -> bool:
    """`path` is ours alone: owned by this user, of the expected kind (stat.S_IFDIR or
    stat.S_IFREG; a symlink is neither), no access for others."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return _ours_alone(info, kind)


def _ours_alone(info: os.stat_result, kind: int) -> bool:
    return (info.st_uid == os.getuid() and stat.S_IFMT(info.st_mode) == kind
            and not info.st_mode & (stat.S_IRWXG | stat.S_IRWXO))


def write_private(folder: Path, name: str, data: bytes) -> bool:
    """Store `data` as folder/name (mode 0600, the folder 0700, created if missing) in one
    atomic rename; False, silently, when the folder is not private or anything fails: a
    cache that cannot be written only costs time."""
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not is_private(folder, stat.S_IFDIR):
            return False  # someone else's (or shared) folder: do not write there either
        write_bytes_atomic(folder / name, data, mode=0o600)
        return True
    except OSError:
        return False


def open_private(folder: Path, name: str) -> BinaryIO | None:
    """folder/name opened for reading when both are private (is_private), else None. The
    file is opened without following a link and checked again as opened: what is read is
    what was checked. (A reader unpickles from the file itself: a large entry is then in
    memory once, not once as the file's bytes and again as the objects' own.)"""
    entry = folder / name
    # (the entry is looked at before it is opened too: opening a pipe would wait for a writer)
    if not (is_private(folder, stat.S_IFDIR) and is_private(entry, stat.S_IFREG)):
        return None
    try:
        fd = os.open(entry, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        if _ours_alone(os.fstat(fd), stat.S_IFREG):
            return os.fdopen(fd, "rb")
    except OSError:
        pass
    os.close(fd)
    return None
