"""Artifact discovery: find the debugging artifacts under the given paths, identify each by
its content (the file kinds and their content signatures are data in the fact vocabulary;
file names are only a hint), and record what exists, its size and sha256 (an audit must
know which file a conclusion came from).

Knows how to recognise a file, not how to read it: reading each kind is another probe's job.
Scans are bounded (depth, number of files, bytes read to identify a file); a bound that
is hit is reported, never silently.

A diagnosis reads each file once: it scans with hashing left for later, and within
`hashing_reads` a file its probe reads whole is hashed from those bytes; any other file is
hashed (streaming) when its sha256 is first asked for.
"""

from __future__ import annotations

import errno
import fnmatch
import hashlib
import os
import re
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import NamedTuple
from pathlib import Path

from j6doctor.facts import per_vocabulary, vocabulary
from j6doctor.probes.input_error import InputError
from j6doctor.probes.text_file import observing_reads

# Scanning stops here: an artifact folder is small; a home directory is not.
MAX_FILES = 20_000
# User scripts read per diagnosis: a work folder holds a few training / export scripts, a
# source checkout a few hundred. Each is parsed into a syntax tree and becomes facts, so a
# folder of 16,000 scripts took 1 GB and 30 s; those past this count (in path order) are
# listed as not read, in one note.
MAX_SCRIPTS = 200
MAX_SKIPPED_LISTED = 10   # names of scripts not read shown in that note
MAX_DEPTH = 8
HEAD_BYTES = 4096  # read from each file to identify it by content
# Files larger than this are hashed over their first HASH_BYTES only (a sparse 20 GB
# model.hbm took 67 s in full); the report says so next to the digest.
HASH_BYTES = 64 * 1024 * 1024
# Folders that never hold artifacts; hidden ones such as .model_check_results or
# .horizon_plugin_pytorch_logs do, so they are scanned.
_SKIP_DIRS = {".git", ".hg", ".svn", "__pycache__", ".venv", "venv", "node_modules", "op_infos",
              ".horizon", ".mypy_cache", ".pytest_cache", ".tox", ".idea", ".vscode", "site-packages"}


@dataclass(frozen=True)
class FoundFile:
    """A file discovery recognised: its kind, where it is, how it was recognised."""

    kind: str
    path: Path  # absolute
    display: str  # relative to the base folder, with '/' separators
    size: int
    digest: str | None = field(default=None, compare=False)  # sha256, None until computed
    by: str = "content"  # "content" or "name": what identified it
    hashed: int = -1  # bytes the sha256 covers; -1: the whole file

    @property
    def sha256(self) -> str:
        """The file's sha256 (of its first HASH_BYTES for a larger file): taken from the bytes
        a probe read (hashing_reads), else computed now. OSError when it cannot be read."""
        if self.digest is None:
            object.__setattr__(self, "digest", sha256_of(self.path))
        return self.digest

    def take_digest(self, raw: bytes, digest: str) -> None:
        """The sha256 of the file's whole content `raw`, as just read."""
        if self.digest is None and len(raw) == self.size:
            object.__setattr__(self, "digest", digest)


@dataclass
class ScanSummary:
    """One given path: how many files were looked at and which were not recognised."""

    display: str
    files: int = 0
    recognised: int = 0
    unrecognised: list[str] = field(default_factory=list)  # the first few, for the report
    bound: str = ""  # which scan bound was hit, if any


MAX_LISTED = 20  # unrecognised names kept per scanned path


class _Kind(NamedTuple):
    """A file kind: its names, content signatures and magic bytes."""

    kind: str
    names: tuple[str, ...]
    signatures: tuple[re.Pattern, ...]
    magic: tuple[bytes, ...]


@per_vocabulary
def _kinds() -> tuple[_Kind, ...]:
    enum = vocabulary().enums["file_kind"]
    return tuple(_Kind(
        kind,
        tuple(str(n).lower() for n in enum.attr(kind, "names", ())),
        tuple(re.compile(str(p), re.MULTILINE) for p in enum.attr(kind, "signatures", ())),
        tuple(bytes.fromhex(str(m)) for m in enum.attr(kind, "magic", ())),
    ) for kind in enum.values)


def signatures_of(kind: str) -> tuple[re.Pattern, ...]:
    """The content signatures of a file kind (what recognises its text)."""
    return next((k.signatures for k in _kinds() if k.kind == kind), ())


def looked_for() -> list[str]:
    """The kinds a scan recognises, as their labels (for a folder where none was found)."""
    enum = vocabulary().enums["file_kind"]
    return [str(enum.attr(k.kind, "label", k.kind)) for k in _kinds()]


def _specificity(glob: str) -> int:
    return sum(1 for ch in glob if ch not in "*?[]")


def _by_name(name: str, kinds: tuple[_Kind, ...]) -> str | None:
    """The kind whose most specific glob matches the name."""
    lower = name.lower()
    best: tuple[int, str] | None = None
    for spec in kinds:
        for glob in spec.names:
            if fnmatch.fnmatchcase(lower, glob):
                score = _specificity(glob)
                if best is None or score > best[0]:
                    best = (score, spec.kind)
    return best[1] if best else None


def _text(head: bytes) -> str | None:
    """The head of a text file (a cut multi-byte character at the end is dropped), else None."""
    if b"\x00" in head:
        return None
    text = head.decode("utf-8", errors="replace").removeprefix("\ufeff")
    if text.count("\ufffd") > 2:  # more than the cut character at the end: not UTF-8 text
        return None
    return text.replace("\r\n", "\n")


def identify(name: str, head: bytes) -> tuple[str | None, str]:
    """(kind, "content" | "name") of a file from its name and first bytes; (None, "") when
    it is no artifact. Content decides; the name decides among kinds the content allows."""
    kinds = _kinds()
    text = _text(head)
    if text is not None:
        matched = tuple(k for k in kinds if any(p.search(text) for p in k.signatures))
        if matched:
            return (_by_name(name, matched) or matched[0].kind), "content"
    else:
        matched = tuple(k for k in kinds if any(head.startswith(m) for m in k.magic))
        if matched:
            kind = _by_name(name, matched)
            if kind is not None:
                return kind, "content"
    kind = _by_name(name, kinds)
    return (kind, "name") if kind else (None, "")


def _digest(raw: bytes, limit: int = HASH_BYTES) -> str:
    """sha256_of for a file whose whole content is `raw`."""
    return hashlib.sha256(memoryview(raw)[:limit]).hexdigest()


class Digests:
    """The sha256 of the files read whole while hashing_reads is open."""

    def __init__(self) -> None:
        self._seen: dict[str, str] = {}

    def record(self, path: Path, raw: bytes) -> str:
        digest = self._seen[os.path.realpath(path)] = _digest(raw)
        return digest

    def of(self, path: Path) -> str:
        """The digest of a file read (as read), else sha256_of it now."""
        return self._seen.get(os.path.realpath(path)) or sha256_of(path)


@contextmanager
def hashing_reads(found: list[FoundFile]) -> Iterator[Digests]:
    """While open, a file read whole through text_file.read_bytes is hashed from the bytes
    read: a found file takes that digest (FoundFile.sha256), and so does any other file, for
    Digests.of."""
    digests = Digests()
    by_path: dict[str, list[FoundFile]] = {}
    for item in found:
        by_path.setdefault(os.path.realpath(item.path), []).append(item)

    def observe(path: Path, raw: bytes) -> None:
        digest = digests.record(path, raw)
        for item in by_path.get(os.path.realpath(path), ()):
            item.take_digest(raw, digest)

    with observing_reads(observe):
        yield digests


def sha256_of(path: Path, limit: int = HASH_BYTES) -> str:
    """sha256 of the file, or of its first `limit` bytes for a larger file."""
    digest = hashlib.sha256()
    left = limit
    with path.open("rb") as handle:
        while left > 0:
            block = handle.read(min(1 << 20, left))
            if not block:
                break
            digest.update(block)
            left -= len(block)
    return digest.hexdigest()


def _relative(path: Path, base: Path) -> str:
    try:
        return path.relative_to(base).as_posix()
    except ValueError:
        return path.as_posix()


def _walk(root: Path, summary: ScanSummary, notes: list[tuple[str, str]], base: Path):
    """Files under root, sorted, depth-limited; symlinked folders are followed once each
    (a link back to a folder already on the way is a loop, reported and not entered)."""
    root_depth = len(root.parts)
    seen: set[tuple[int, int]] = set()
    for current, dirs, files in os.walk(root, followlinks=True):
        here = Path(current)
        try:
            info = here.stat()
        except OSError:
            dirs[:] = []
            continue
        if (info.st_dev, info.st_ino) in seen:
            notes.append((_relative(here, base), "符号链接形成循环（指回已经扫描过的目录），没有再次进入"))
            dirs[:] = []
            continue
        seen.add((info.st_dev, info.st_ino))
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS)
        if len(here.parts) - root_depth >= MAX_DEPTH and dirs:
            summary.bound = summary.bound or f"folders deeper than {MAX_DEPTH} levels were not scanned"
            dirs[:] = []
        for name in sorted(files):
            yield here / name


def _head(path: Path) -> bytes:
    with path.open("rb") as handle:
        return handle.read(HEAD_BYTES)


def _follow_link(path: Path) -> Path | str:
    """The target of a symlink, or why it cannot be resolved: a loop (RuntimeError up to
    Python 3.12, ELOOP after) or a missing target."""
    try:
        return path.resolve(strict=True)
    except (RuntimeError, OSError) as exc:
        if isinstance(exc, RuntimeError) or exc.errno == errno.ELOOP:
            return "symlink loop (following the link leads back to it); skipped"
        return "symlink to a file that does not exist; skipped"


def not_found(path: Path, noun: str) -> str:
    """Why a path that does not exist is not there, for a message: a symlink loop, a symlink
    to nothing, or no such `noun` ("file", "rule pack folder")."""
    try:
        if path.is_symlink():
            target = _follow_link(path)
            if isinstance(target, str):
                return target.removesuffix("; skipped")
    except OSError:
        pass
    return f"no such {noun}"


def not_a_rule_pack(pack: Path) -> str | None:
    """Why a --rules path is no rule pack folder, for a message; None when it is one."""
    if pack.is_dir():
        return None
    if pack.exists():
        return "not a folder; --rules takes a rule pack folder of *.yaml / *.yml files"
    return f"{not_found(pack, 'rule pack folder')}; --rules takes a folder of *.yaml / *.yml rule files"


def _regular(path: Path, display: str, problems: list[tuple[str, str]],
             notes: list[tuple[str, str]]) -> Path | None:
    """The regular file behind `path` (a symlink followed and noted), or None with the
    reason recorded: a dangling link, a link loop, a pipe or a device."""
    if path.is_symlink():
        target = _follow_link(path)
        if isinstance(target, str):
            problems.append((display, target))
            return None
        notes.append((display, f"是符号链接，读取的是它指向的 {target}"))
    else:
        target = path
    try:
        if stat.S_ISREG(target.stat().st_mode):
            return target
    except OSError as exc:
        problems.append((display, f"cannot read: {exc.strerror}"))
        return None
    problems.append((display, "not a regular file (a pipe, socket or device); skipped"))
    return None


def find_artifacts(paths: list[Path], base: Path, display_of: dict[Path, str] | None = None,
                   on_file=None, notes: list[tuple[str, str]] | None = None, hash_now: bool = True,
                   ) -> tuple[list[FoundFile], list[tuple[str, str]], list[ScanSummary]]:
    """Scan files and folders for artifacts.

    Returns the files found (in a stable order), the problems met as (path, message) — a
    missing path, an unreadable file, a scan bound that was hit; never fatal — and one
    summary per given path. Things worth a look that are not problems (a symlink followed,
    a link loop not entered, user scripts past MAX_SCRIPTS not read) are appended to
    `notes`. With hash_now off, each file is hashed when its sha256 is first asked for
    (see hashing_reads), not here."""
    scan = _Scan(base, display_of or {}, on_file, [] if notes is None else notes, hash_now)
    for given in paths:
        scan.path(given)
    if scan.scripts.skipped:
        scan.notes.append(scan.scripts.note(", ".join(s.display for s in scan.summaries)))
    return sorted(scan.found.values(), key=lambda f: (f.display, f.kind)), scan.problems, scan.summaries


class _Scan:
    """One find_artifacts call: what it found, met and noted so far."""

    def __init__(self, base: Path, display_of: dict[Path, str], on_file, notes: list[tuple[str, str]],
                 hash_now: bool):
        self.base, self.display_of, self.on_file, self.notes, self.hash_now = base, display_of, on_file, notes, hash_now
        self.found: dict[Path, FoundFile] = {}
        self.problems: list[tuple[str, str]] = []
        self.summaries: list[ScanSummary] = []
        self.scripts = _ScriptCount()
        self.seen = 0

    def path(self, given: Path) -> None:
        """A given file or folder."""
        shown = self.display_of.get(given) or _relative(given, self.base)
        try:
            exists = given.exists()
        except OSError as exc:  # a name too long, a folder on the way that cannot be searched
            self.problems.append((shown, f"cannot read: {exc.strerror}"))
            return
        if not exists:
            # a listed link: say which of loop / missing target it is
            target = _follow_link(given) if given.is_symlink() else "no such file or folder"
            self.problems.append((shown, target if isinstance(target, str) else "cannot read"))
            return
        summary = ScanSummary(shown)
        self.summaries.append(summary)
        if not given.is_dir():  # a file listed by name is always read: the bound is for folder walks
            self.seen += 1
            self._file(given, summary)
        elif self.seen >= MAX_FILES:
            summary.bound = (f"not scanned: the folders listed before it used up the limit of {MAX_FILES} "
                             "files; list this folder or its files on their own")
        else:
            for path in _walk(given, summary, self.notes, self.base):
                if self.seen >= MAX_FILES:
                    summary.bound = f"more than {MAX_FILES} files; the rest were not scanned"
                    break
                self.seen += 1
                self._file(path, summary)
        if summary.bound:
            self.problems.append((shown, summary.bound))

    def _file(self, path: Path, summary: ScanSummary) -> None:
        """One file of a scan: identified, and kept when it is an artifact."""
        display = self.display_of.get(path) or _relative(path, self.base)
        target = _regular(path, display, self.problems, self.notes)
        if target is None:
            return
        summary.files += 1
        try:
            kind, by = identify(path.name, _head(target))
        except OSError as exc:
            self.problems.append((display, f"cannot read: {exc.strerror}"))
            return
        if kind is None:
            if len(summary.unrecognised) < MAX_LISTED:
                summary.unrecognised.append(display)
            return
        summary.recognised += 1
        if kind == "script" and not self.scripts.take(display):
            return
        resolved = target.resolve()
        if resolved in self.found:
            return
        if self.on_file is not None:
            self.on_file(display)
        try:
            size = target.stat().st_size
            self.found[resolved] = FoundFile(kind, target, display, size, sha256_of(target) if self.hash_now else None,
                                             by, -1 if size <= HASH_BYTES else HASH_BYTES)
        except OSError as exc:
            self.problems.append((display, f"cannot read: {exc.strerror}"))


class _ScriptCount:
    """The user scripts of a scan: the first MAX_SCRIPTS are read, the others counted and
    the first of them named."""

    def __init__(self) -> None:
        self.taken = 0
        self.skipped = 0
        self.names: list[str] = []

    def take(self, display: str) -> bool:
        """Whether this script is read."""
        if self.taken < MAX_SCRIPTS:
            self.taken += 1
            return True
        self.skipped += 1
        if len(self.names) < MAX_SKIPPED_LISTED:
            self.names.append(display)
        return False

    def note(self, where: str) -> tuple[str, str]:
        more = self.skipped - len(self.names)
        listed = "、".join(self.names) + (f" 等（另有 {more} 个）" if more else "")
        return (where, f"中的用户脚本（.py）超过 {MAX_SCRIPTS} 个：检查了按扫描顺序的前 {MAX_SCRIPTS} 个，"
                       f"另外 {self.skipped} 个没有读取：{listed}")


def require_folder(path: Path) -> Path:
    try:
        exists, is_dir = path.exists(), path.is_dir()
    except OSError as exc:  # e.g. a name longer than the file system allows
        raise InputError(str(path), f"cannot read: {exc.strerror}; expected a folder") from None
    if not exists:
        raise InputError(str(path), f"{not_found(path, 'folder')}; --workdir takes a folder of artifacts")
    if not is_dir:
        raise InputError(str(path), "is not a folder; --workdir takes a folder of artifacts")
    return path
