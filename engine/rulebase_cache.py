"""A compiled rule base kept between runs, so a fresh process does not parse, validate and
compile every rule file again.

The key is a hash of everything the compiled rule base depends on: every rule file's path
and bytes (bundled rules and packs alike), the vocabulary, the engine's own source files and
rule schema, the engine backend and its build, j6doctor's version and the Python version. Any change gives
another key; old entries are pruned.

The cache is a pickle, so it is only ever read from a folder that belongs to the user and
that nobody else can write to (`$XDG_CACHE_HOME/j6doctor` or `~/.cache/j6doctor`, mode
0700, each file 0600 and owned by the user); anything else is ignored and rebuilt, never
trusted. J6DOCTOR_CACHE=0 turns the cache off. Only rule bases that loaded without error
are stored.
"""

from __future__ import annotations

import gc
import hashlib
import pickle
import sys
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

from j6doctor import __version__
from j6doctor.user_cache import cache_dir, open_private, write_private

FORMAT = 1
KEEP = 16  # entries kept; older ones are removed when a new one is written
_ENGINE_DIR = Path(__file__).resolve().parent


@lru_cache(maxsize=1)
def _engine_sources() -> bytes:
    """A hash of the engine's source files, made when a cache key is first needed (a run
    that uses no cache hashes nothing) and kept for the process: its entries are all stored
    under the code it read then."""
    digest = hashlib.sha256()
    for path in sorted(_ENGINE_DIR.iterdir()):
        if path.suffix in (".py", ".json"):
            digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.digest()


def key_of(*parts: bytes | str) -> str:
    """A cache key for anything else that depends on this interpreter and the engine's code."""
    digest = hashlib.sha256()
    digest.update(f"{FORMAT}|{__version__}|{sys.version}|".encode())
    digest.update(_engine_sources())
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        digest.update(len(data).to_bytes(8, "little") + data)
    return digest.hexdigest()[:32]


def cache_key(files: list[tuple[str, str, bytes]], vocab: Any, engine: str, engine_version: str) -> str:
    """files: (path, shown name, bytes) of every rule file, in load order."""
    digest = hashlib.sha256()
    digest.update(f"{FORMAT}|{__version__}|{sys.version_info[:3]}|{engine}|{engine_version}|".encode())
    digest.update(_engine_sources())
    digest.update(vocab.fingerprint.encode() if getattr(vocab, "fingerprint", "") else
                  hashlib.sha256(pickle.dumps(vocab, protocol=4)).digest())
    for path, shown, data in files:
        digest.update(f"{path}\0{shown}\0{len(data)}\0".encode())
        digest.update(hashlib.sha256(data).digest())
    return digest.hexdigest()[:32]


def load_or_build(key: str, build: Callable[[], Any], folder: Path | None = None, kind: str = "rulebase") -> Any:
    """The cached value of `key`, or `build()` (stored for next time). Any problem with the
    cache itself is silent: the value is built as if there were no cache. `kind` names the
    entry (rulebase, vocabulary): each kind keeps its own KEEP entries."""
    folder = folder if folder is not None else cache_dir()
    if folder is None:
        return build()
    name = f"{kind}-{key}.pickle"
    entry = open_private(folder, name)
    if entry is not None:
        try:
            with entry, _collector_paused():
                return pickle.load(entry)
        except Exception:  # a truncated or stale entry: rebuilt below
            pass
    value = build()
    _store(folder, name, value, kind)
    return value


@contextmanager
def _collector_paused():
    """An entry is one large tree of objects that lives as long as the process: the cyclic
    garbage collector, triggered every few hundred allocations while it is built, would only
    walk the growing tree again and again (some fifty collections for the rule base), and
    every full collection after it once more. So it is built with the collector paused and
    then moved to the permanent generation (gc.freeze, the gc module's advice for long-lived
    objects), where no collection walks it."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if was_enabled:
            gc.enable()


def _store(folder: Path, name: str, value: Any, kind: str = "rulebase") -> None:
    try:
        data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    except (pickle.PicklingError, RecursionError, TypeError, AttributeError):
        return  # a value that cannot be kept only costs time next run
    if write_private(folder, name, data):
        try:
            _prune(folder, kind)
        except OSError:
            pass


def _prune(folder: Path, kind: str) -> None:
    entries = sorted(folder.glob(f"{kind}-*.pickle"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in entries[KEEP:]:
        old.unlink(missing_ok=True)
