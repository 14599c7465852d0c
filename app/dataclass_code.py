"""The code `dataclasses` generates, compiled once and kept between runs.

Every @dataclass writes the source of its __init__, __repr__, __eq__, ... and compiles it
when its module is imported: about 1 ms a class, nine tenths of it in `compile`, which is
a third of a cold one-case diagnosis (tens of record classes). `dataclasses` looks `exec` up
in its own module first, so an `exec` placed there that reuses the code compiled before
for the same source text changes nothing but the time: the source is the same, so is the
code object. The compiled code is kept in the user's private cache (user_cache.py) as one
marshal file per interpreter build, written back when a run compiled something new.

Installed when j6doctor is imported (app/__init__.py), before any of its dataclasses is
created, and applied when `dataclasses` is imported; J6DOCTOR_CACHE=0 leaves it untouched.
"""

from __future__ import annotations

import builtins
import marshal
import sys

from j6doctor.user_cache import cache_dir, read_private, write_private

MAX_ENTRIES = 4096  # a process that generates classes without end (a test suite) stops adding
_NAME = f"dataclass-code-{sys.implementation.cache_tag}-{sys.hexversion:x}.marshal"
_STAMP = f"{sys.version}|{marshal.version}"  # code is only reused by the build that compiled it
_code: dict[str, object] = {}
_added = 0
_exec = builtins.exec


def _cached_exec(source, globals=None, locals=None):
    """exec, with the code of a source text compiled once (as dataclasses compiles it)."""
    global _added
    if type(source) is str:
        code = _code.get(source)
        if code is None:
            code = compile(source, "<string>", "exec")
            if len(_code) < MAX_ENTRIES:
                _code[source] = code
                _added += 1
        source = code
    return _exec(source, globals, locals)


def install() -> None:
    """Route dataclasses' compilation through the kept code: now if `dataclasses` is loaded,
    else when it is first imported (a command that defines no record, `--help`, then loads
    neither `dataclasses` nor the kept code)."""
    if cache_dir() is None:
        return
    module = sys.modules.get("dataclasses")
    if module is not None:
        _patch(module)
    elif not any(isinstance(finder, _PatchOnImport) for finder in sys.meta_path):
        sys.meta_path.insert(0, _PatchOnImport())


def _patch(dataclasses) -> None:
    """Load the kept code and give `dataclasses` the caching exec (once)."""
    if getattr(dataclasses, "exec", None) is _cached_exec:
        return
    data = read_private(cache_dir(), _NAME)  # type: ignore[arg-type]
    if data is not None:
        try:
            stamp, code = marshal.loads(data)
            if stamp == _STAMP and isinstance(code, dict):
                _code.update(code)
        except Exception:  # a truncated or foreign file: compiled again, and rewritten
            pass
    dataclasses.exec = _cached_exec
    import atexit

    atexit.register(save)


class _PatchOnImport:
    """A meta path finder that only watches for `dataclasses`: the standard finders load it,
    then it is patched before the importer sees it."""

    def find_spec(self, name, path=None, target=None):
        if name != "dataclasses":
            return None
        sys.meta_path.remove(self)
        from importlib.machinery import PathFinder

        spec = PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        loader = spec.loader
        exec_module = loader.exec_module

        def exec_and_patch(module):
            exec_module(module)
            _patch(module)

        loader.exec_module = exec_and_patch  # this spec's loader only: made for this one module
        return spec


def save() -> None:
    """Keep the code compiled in this run for the next one (nothing to do when nothing new)."""
    global _added
    folder = cache_dir()
    if not _added or folder is None:
        return
    try:
        data = marshal.dumps((_STAMP, _code))
    except ValueError:  # an object marshal cannot write: not kept
        return
    if write_private(folder, _NAME, data):
        _added = 0
