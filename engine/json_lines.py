"""The line of every key and list item of a JSON text, and the keys an object repeats.

Python's JSON decoder says no line for what it builds, and a document keeps one value per
key. Every JSON reader of j6doctor that names a line (the case file and the metrics file
through strict_yaml.load_json, hb_mapper's quant_info through probes/quant_info.py) asks
this walk, over a text the decoder has already accepted. Values below `max_depth` are
skipped by the decoder itself, so a 64 MB file of numbers costs one C pass, not a Python
loop per number.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_left
from dataclasses import dataclass, field

Path = tuple  # (key or index, ...), as strict_yaml.LocatedDocument has them

_SPACE = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()


@dataclass
class KeyLines:
    lines: dict[Path, int] = field(default_factory=dict)   # the first occurrence of each path
    repeated: list[tuple[Path, int, int]] = field(default_factory=list)  # (path, line, line of the first)


def key_lines(text: str, max_depth: int | None = None) -> KeyLines:
    """The lines of `text`, one JSON document the decoder accepts: of the document (path ()),
    of every key (at its name) and every list item (at its start) down to `max_depth` levels."""
    newlines = [m.start() for m in re.finditer("\n", text)]
    out = KeyLines()
    pos = _SPACE.match(text).end()
    out.lines[()] = bisect_left(newlines, pos) + 1
    stack: list[list] = []  # [path, None (an object) or the next index (a list)]
    pos = _value(text, pos, (), stack, max_depth)
    while stack:  # after a value, or just inside an opened object or list
        char = text[pos]
        if char in "}]":
            stack.pop()
            pos = _SPACE.match(text, pos + 1).end()
            continue
        if char == ",":
            pos = _SPACE.match(text, pos + 1).end()
        path, pos, again = _member(text, pos, stack[-1], newlines, out)
        # a repeated key's value is skipped whole: its keys are no paths of the document
        pos = _value(text, pos, path, stack, -1 if again else max_depth)
    return out


def _value(text: str, pos: int, path: Path, stack: list[list], max_depth: int | None) -> int:
    """Open the object or list at `pos` (within `max_depth`), else skip the value whole."""
    char = text[pos]
    if char in "{[" and (max_depth is None or len(path) < max_depth):  # (-1: skip it whole)
        stack.append([path, None if char == "{" else 0])
        return _SPACE.match(text, pos + 1).end()
    _, end = _DECODER.raw_decode(text, pos)
    return _SPACE.match(text, end).end()


def _member(text: str, pos: int, frame: list, newlines: list[int], out: KeyLines) -> tuple[Path, int, bool]:
    """The next key (an object) or item (a list) of `frame`, its line noted: its path, where
    its value starts, and whether the key is one the object had already."""
    line = bisect_left(newlines, pos) + 1
    if frame[1] is not None:
        path = frame[0] + (frame[1],)
        frame[1] += 1
        out.lines[path] = line
        return path, pos, False
    key, pos = json.decoder.scanstring(text, pos + 1)
    path = frame[0] + (key,)
    again = path in out.lines
    if again:
        out.repeated.append((path, line, out.lines[path]))
    else:
        out.lines[path] = line
    pos = _SPACE.match(text, pos).end() + 1  # past ':'
    return path, _SPACE.match(text, pos).end(), again


__all__ = ["KeyLines", "key_lines"]
