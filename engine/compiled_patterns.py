"""Regular expressions that a cached rule base can restore without compiling them again.

Python's `re` compiles a pattern in pure Python (parse, then code generation) and pickles a
compiled pattern as its source, so every process that loads the rule-base cache would compile
the text rules' ~100 large patterns again (about 0.2 s). The code the compiler produces is a
list of integers handed to `_sre.compile`; it is kept here next to the source, and restored
with `_sre.compile` directly when — and only when — it was produced by this very interpreter
(same implementation, version and `_sre` magic number). Anything else, or any error, compiles
from the source as usual.
"""

from __future__ import annotations

import array
import re
import sys
from typing import Any

try:  # Python 3.11+: re._parser / re._compiler; 3.10: sre_parse / sre_compile
    from re import _compiler as _sre_compiler, _parser as _sre_parser  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - Python 3.10
    import sre_compile as _sre_compiler  # type: ignore[no-redef]
    import sre_parse as _sre_parser  # type: ignore[no-redef]

import _sre

# Code from another interpreter is never used: it could read out of the pattern's bounds.
INTERPRETER = f"{sys.implementation.name}|{sys.version}|{_sre.MAGIC}|{_sre.CODESIZE}"
_CODE_TYPE = next(t for t in "IL" if array.array(t).itemsize == _sre.CODESIZE)
_FROZEN: dict[tuple[str, int], tuple] = {}  # one frozen form per pattern: pickled once, however many rules share it


def code_of(source: str, flags: int) -> tuple[Any, ...] | None:
    """The arguments `_sre.compile` takes for `source`, or None if they cannot be produced
    (then the pattern is compiled from its source when restored)."""
    try:
        parsed = _sre_parser.parse(source, flags)
        # an unsigned array: compact and fast to unpickle (opcodes are int subclasses that refuse pickling)
        code = array.array(_CODE_TYPE, _sre_compiler._code(parsed, flags))
        groupindex = parsed.state.groupdict
        indexgroup: list[str | None] = [None] * parsed.state.groups
        for name, index in groupindex.items():
            indexgroup[index] = name
        return (source, flags | parsed.state.flags, code, parsed.state.groups - 1,
                dict(groupindex), tuple(indexgroup))
    except Exception:  # an interpreter whose private compiler differs: plain compile later
        return None


def freeze(pattern: re.Pattern) -> tuple[str, str, int, tuple[Any, ...] | None]:
    """A picklable form of a compiled pattern that restores without recompiling."""
    key = (pattern.pattern, pattern.flags)
    frozen = _FROZEN.get(key)
    if frozen is None:
        frozen = _FROZEN[key] = (INTERPRETER, pattern.pattern, pattern.flags, code_of(pattern.pattern, pattern.flags))
    return frozen


def thaw(frozen: tuple[str, str, int, tuple[Any, ...] | None]) -> re.Pattern:
    interpreter, source, flags, args = frozen
    if interpreter == INTERPRETER and args is not None:
        try:
            source_, flags_, code, *rest = args
            restored = _sre.compile(source_, flags_, code.tolist(), *rest)
            if restored.pattern == source:
                return restored
        except Exception:
            pass
    return re.compile(source, flags)
