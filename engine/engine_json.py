"""The JSON text handed to durable-rules' C engine.

Its parser reads numbers in positional notation only: `1e-05` or `1e+16` — what Python's
json module writes for small and large floats — make it fail with error 204 (facts) or
refuse a ruleset. Floats are therefore written positionally and exactly (`0.00001`,
`10000000000000000`), the shortest decimal that reads back as the same float; text is
encoded as the json module does. Non-finite numbers never reach the engine: the fact
vocabulary refuses them before (a `nan` in a table is a warning, not a fact).

Integers outside 64 bits (`10**20` in a case, `100000000000000000000` as a threshold) would
be clamped by the engine's integer parser to +-9223372036854775807 and compare wrongly:
they are written with a point, which the engine reads as the nearest double (beyond the
double range, as infinite, still above or below every finite number).
"""

from __future__ import annotations

import json
from typing import Any

loads = json.loads
# Text longer than this is cut for the engine (the fact itself keeps all of it): the C
# engine refuses messages of 16 MiB and more, and no rule needs more to match.
MAX_ENGINE_TEXT = 1 << 20
# The integers the engine reads as integers (int64); others are written as decimals.
_INT64 = range(-(1 << 63), 1 << 63)


def number(value: float) -> str:
    """A finite float in positional notation, exact to its shortest repr."""
    text = repr(value)
    if "e" not in text and "E" not in text:
        return text
    from decimal import Decimal  # only for the rare float repr writes with an exponent

    positional = format(Decimal(text), "f")
    return positional if "." in positional else positional + ".0"


def engine_text(text: str) -> str:
    """Text the C engine can take: at most MAX_ENGINE_TEXT characters, no lone surrogates
    (which cannot be UTF-8 and make the engine refuse the whole fact)."""
    text = text[:MAX_ENGINE_TEXT]
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "replace").decode("utf-8")
    return text


class PreEncoded(dict):
    """A mapping whose text is already known (a ruleset's rule, encoded at compile time).
    durable-rules removes the rule's `run` key before encoding the ruleset: the text is
    that of the mapping without it."""

    def __init__(self, mapping: dict, encoded: str):
        super().__init__(mapping)
        self.encoded = encoded


def dumps(value: Any, ensure_ascii: bool = False) -> str:
    """JSON text of facts and ruleset definitions (dicts, lists, str, int, float, bool, None)."""
    if _plain(value, 0):  # most facts: what the json module writes is already the engine's text
        return (_ASCII if ensure_ascii else _UTF8).encode(value)
    parts: list[str] = []
    _encode(value, parts, ensure_ascii)
    return "".join(parts)


_UTF8 = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
_ASCII = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"))


def _plain(value: Any, depth: int) -> bool:
    """Whether json.dumps writes `value` exactly as _encode does: text the engine takes
    unchanged, integers within 64 bits, floats that repr writes positionally (0, or
    1e-4 <= |x| < 1e16; never nan or inf), string keys, nothing pre-encoded."""
    kind = type(value)
    if kind is dict:
        if depth > 50:  # deeper than any fact: the exact path decides
            return False
        for key, item in value.items():
            if type(key) is not str or not _plain_leaf(item, depth):
                return False
        return True
    if kind is list or kind is tuple:
        if depth > 50:
            return False
        for item in value:
            if not _plain_leaf(item, depth):
                return False
        return True
    return _plain_leaf(value, depth)


def _plain_leaf(value: Any, depth: int) -> bool:
    kind = type(value)
    if kind is str:
        if len(value) > MAX_ENGINE_TEXT:
            return False
        if value.isascii():
            return True
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return False
        return True
    if kind is bool or value is None:
        return True
    if kind is int:
        return value in _INT64
    if kind is float:
        return value == 0 or 1e-4 <= abs(value) < 1e16
    if kind is dict or kind is list or kind is tuple:
        return _plain(value, depth + 1)
    return False


def _encode(value: Any, parts: list[str], ensure_ascii: bool) -> None:
    if type(value) is PreEncoded and not ensure_ascii:
        parts.append(value.encoded)
    elif isinstance(value, bool) or value is None:
        parts.append("true" if value is True else "false" if value is False else "null")
    elif isinstance(value, int):
        parts.append(str(value) if value in _INT64 else f"{value}.0")
    elif isinstance(value, float):
        parts.append(number(value))
    elif isinstance(value, str):
        parts.append(json.dumps(engine_text(value), ensure_ascii=ensure_ascii))
    elif isinstance(value, dict):
        parts.append("{")
        for index, (key, item) in enumerate(value.items()):
            if index:
                parts.append(",")
            parts.append(json.dumps(str(key), ensure_ascii=ensure_ascii))
            parts.append(":")
            _encode(item, parts, ensure_ascii)
        parts.append("}")
    elif isinstance(value, (list, tuple)):
        parts.append("[")
        for index, item in enumerate(value):
            if index:
                parts.append(",")
            _encode(item, parts, ensure_ascii)
        parts.append("]")
    else:
        raise TypeError(f"cannot hand {type(value).__name__} to the rule engine")
