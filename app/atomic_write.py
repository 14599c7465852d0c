"""Writing an output file: never over a file the run read, never half-written.

The text goes to a uniquely named temporary file beside the target and replaces it in one
rename, so concurrent runs writing the same target never collide on the temporary name
and a reader never sees a partial file.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO, Iterator


def same_file(a: Path, b: Path) -> bool:
    """One file under two spellings (relative, `..`, a symlink, a hard link)."""
    try:
        sa, sb = os.stat(a), os.stat(b)
    except OSError:
        return os.path.abspath(a) == os.path.abspath(b)
    return (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)


def is_protected(target: Path, protected: list[Path]) -> bool:
    return any(same_file(target, p) for p in protected)


def write_atomic(target: Path, text: str) -> None:
    """Write `text` (UTF-8) to `target` through a unique temporary file; OSError on failure."""
    write_bytes_atomic(target, text.encode("utf-8"))


def write_bytes_atomic(target: Path, data: bytes, mode: int | None = None) -> None:
    """Write `data` to `target` through a unique temporary file beside it, renamed over it in
    one step; OSError on failure (the temporary file is then removed). `mode`: the file's
    permission bits; None keeps those of the file replaced, or gives a new file the umask's."""
    with writing_atomic(target, mode) as stream:
        stream.write(data)


@contextmanager
def writing_atomic(target: Path, mode: int | None = None) -> Iterator[BinaryIO]:
    """A binary stream whose content replaces `target` in one rename when the block ends
    without an exception (for outputs too large to build in memory); on an exception the
    temporary file is removed and `target` stays as it was."""
    import tempfile  # only when a file is written (not for a report on stdout)

    target = Path(os.path.realpath(target))  # replace the file a symlink points at, not the link
    handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".j6doctor-tmp", dir=target.parent)
    try:
        with os.fdopen(handle, "wb") as stream:
            yield stream
        if mode is not None:
            os.chmod(temporary, mode)
        elif target.exists():
            os.chmod(temporary, os.stat(target).st_mode & 0o7777)
        else:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(temporary, 0o666 & ~umask)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


@contextmanager
def locked(lock: Path) -> Iterator[None]:
    """Hold an exclusive lock on the file `lock` (created if need be, and kept for the next
    holder) for the block: one writer at a time across processes. OSError when the lock file
    cannot be made."""
    import fcntl

    with open(lock, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
