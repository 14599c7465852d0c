"""Which rule engine runs a rule base.

Two backends run the same compiled rule model: durable-rules (the design's engine, a C
extension that needs a compiler to install and does not build on Python 3.13) and CLIPS
through clipspy (wheels for every platform). durable-rules is the default wherever it
imports; CLIPS is used where it does not, or when asked (`--engine`, the config's `engine`,
or J6DOCTOR_ENGINE).
"""

from __future__ import annotations

import importlib
import os
import sys
from functools import lru_cache
from types import ModuleType

from j6doctor.engine.errors import EngineError

ENGINES = ("durable", "clips")
_MODULES = {"durable": ".durable_backend", "clips": ".clips_backend"}
_IMPORT_ERRORS: dict[str, str] = {}
# durable-rules is an extra (`j6doctor[durable]`): it builds from source only, so a plain
# `pip install` must succeed without a compiler. Where it could be installed but is not,
# the default falls back to CLIPS and the command line says so once (fallback_note).
DURABLE_EXTRA = "pip install 'j6doctor[durable]'"
_FELL_BACK: list[str] = []


class EngineUnavailableError(EngineError):
    """The engine asked for cannot be imported here."""


def load_backend(name: str) -> ModuleType:
    """The backend module of `name`; EngineUnavailableError says why it cannot load."""
    if name not in _MODULES:
        raise EngineUnavailableError(f"unknown engine {name!r}; expected one of: {', '.join(ENGINES)}")
    try:
        return importlib.import_module(_MODULES[name], __package__)
    except ImportError as exc:  # a missing wheel, or a build for another Python (undefined symbol)
        _IMPORT_ERRORS[name] = f"{type(exc).__name__}: {exc}"
        raise EngineUnavailableError(_unavailable(name)) from None


def _unavailable(name: str) -> str:
    reason = _IMPORT_ERRORS.get(name, "not installed")
    if name == "durable":
        return (f"the durable-rules engine cannot be loaded here ({reason}); it installs with "
                f"{DURABLE_EXTRA} on Python 3.10-3.12 with a C compiler; use --engine clips")
    return f"the CLIPS engine cannot be loaded here ({reason}); install clipspy"


def available(name: str) -> bool:
    try:
        load_backend(name)
    except EngineUnavailableError:
        return False
    return True


def resolve(requested: str | None = None) -> str:
    """The engine to use: the one requested (argument, then J6DOCTOR_ENGINE), else
    durable-rules where it loads, else CLIPS."""
    name = (requested or os.environ.get("J6DOCTOR_ENGINE") or "").strip().lower()
    if name:
        try:
            load_backend(name)  # raises with the reason when it cannot run here
        except EngineUnavailableError as exc:
            if requested:
                raise
            raise EngineUnavailableError(f"J6DOCTOR_ENGINE={name}: {exc}") from None
        return name
    for candidate in ENGINES:
        if available(candidate):
            if candidate != ENGINES[0] and durable_installable() and not _FELL_BACK:
                _FELL_BACK.append(candidate)
            return candidate
    raise EngineUnavailableError("no rule engine can be loaded: " + "; ".join(
        _unavailable(n) for n in ENGINES))


def durable_installable() -> bool:
    """durable-rules builds and loads here (CPython 3.10-3.12, not Windows) given a compiler."""
    return sys.version_info < (3, 13) and sys.platform != "win32"


def fallback_note() -> str | None:
    """One line for the user when the default engine was CLIPS only because durable-rules is
    not installed where it could be (None otherwise, or when an engine was asked for)."""
    if not _FELL_BACK:
        return None
    return (f"j6doctor: note: the rule engine is CLIPS; durable-rules (the default engine) is not "
            f"installed here: {DURABLE_EXTRA} adds it (needs a C compiler and the Python headers)")


@lru_cache(maxsize=None)
def describe(name: str) -> str:
    """`durable-rules 2.0.28` / `CLIPS 6.4 (clipspy 1.0.6)`: what reports name (read from the
    package metadata once per process: a batch renders thousands of reports)."""
    return load_backend(name).describe()


def build_id(name: str) -> str:
    """Which installed build of the engine this is, cheaply (the files of its modules: path,
    size, modification time), for cache keys: reading package metadata costs a start more."""
    parts = []
    for module_name in load_backend(name).NATIVE_MODULES:
        module = sys.modules.get(module_name) or importlib.import_module(module_name)
        path = getattr(module, "__file__", None) or module_name
        try:
            info = os.stat(path)
            parts.append(f"{path}:{info.st_size}:{info.st_mtime_ns}")
        except OSError:
            parts.append(path)
    return f"{name}|" + "|".join(parts)
