"""Writing into a user's case file without losing what was there: only the top-level keys an
update touches are written anew (with their comments), every other line stays as it was,
byte for byte; the new text replaces the file in one rename. Used by `j6doctor ask` (answers)
and by the recorder (Case.record: results of an evaluation)."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.scalarstring import DoubleQuotedScalarString

from j6doctor.atomic_write import write_atomic


def merge(data: Any, updates: dict[str, Any]) -> None:
    """Add the answers to the loaded document in place; never overwrite what is there."""
    for key, value in updates.items():
        if key not in data:
            data[key] = value
        elif isinstance(value, dict) and isinstance(data[key], dict):
            for sub, sub_value in value.items():
                if sub not in data[key]:
                    data[key][sub] = sub_value


def _quoted(value: Any) -> Any:
    """Answers are text: quote them, or YAML would read a version like 4.4 as a number."""
    if isinstance(value, dict):
        return {k: _quoted(v) for k, v in value.items()}
    if isinstance(value, str):
        return DoubleQuotedScalarString(value)
    return value


def write_case(path: Path, updates: dict[str, Any]) -> None:
    """Merge the answers into the case file atomically; a new file is created when there was
    none. In YAML only the top-level keys the answers touch are written anew (with their
    comments); every other line stays as it was, byte for byte."""
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    write_atomic(path, with_updates(text, path.suffix, updates))


def with_updates(text: str, suffix: str, updates: dict[str, Any]) -> str:
    """The case text (YAML or JSON by `suffix`) with `updates` merged in (see merge)."""
    if suffix.lower() == ".json":
        data = json.loads(text) if text.strip() else {}
        merge(data, updates)
        return json.dumps(data, ensure_ascii=False, indent=2) + "\n"
    return _yaml_with_answers(text, _quoted(updates))


def _yaml() -> YAML:
    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.allow_unicode = True
    yaml.width = 4096  # a long answer stays on its line
    return yaml


def _dumped(yaml: YAML, data: Any) -> str:
    buffer = io.StringIO()
    yaml.dump(data, buffer)
    return buffer.getvalue()


def _yaml_with_answers(text: str, updates: dict[str, Any]) -> str:
    yaml = _yaml()
    data = yaml.load(text) if text.strip() else None
    if data is None:  # empty or comment-only file: keep its text and append the answers
        return (text.rstrip("\n") + "\n" if text.strip() else "") + _dumped(yaml, updates)
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    starts = sorted((data.lc.key(k)[0], k) for k in data)
    before = {key: set(data[key]) if isinstance(data[key], dict) else None for _, key in starts}
    merge(data, updates)
    replaced: dict[int, tuple[int, str]] = {}  # first line -> (end line, new text)
    for index, (start, key) in enumerate(starts):
        if key not in updates:
            continue
        end = starts[index + 1][0] if index + 1 < len(starts) else len(lines)
        while end > start + 1 and (not lines[end - 1].strip() or lines[end - 1].lstrip().startswith("#")):
            end -= 1  # blank lines and comments before the next key stay where they are
        value = data[key]
        if before[key] and not value.fa.flow_style():
            # a block mapping: its lines stay, the new entries go after them at its indentation
            indent = " " * value.lc.key(next(iter(before[key])))[1]
            added = _dumped(yaml, {sub: value[sub] for sub in value if sub not in before[key]})
            block = "".join(lines[start:end]) + "".join(indent + line if line.strip() else line
                                                         for line in added.splitlines(keepends=True))
        else:
            block = _dumped(yaml, {key: value})
        replaced[start] = (end, block)
    out: list[str] = []
    k = 0
    while k < len(lines):
        if k in replaced:
            end, block = replaced[k]
            out.append(block)
            k = end
        else:
            out.append(lines[k])
            k += 1
    existing = {key for _, key in starts}
    new = {key: data[key] for key in updates if key not in existing}
    if new:
        out.append(_dumped(yaml, new))
    return "".join(out)


def with_replacement(text: str, suffix: str, place: tuple[str, str], value: Any, kept: tuple[str, Any]) -> str:
    """The case text (YAML or JSON by `suffix`) with the entry at `place` (results, the key as
    written) replaced by `value` and `kept` (a list key, an item) appended to that list. YAML
    goes through a ruamel.yaml round trip, which keeps the comments and the order of the rest."""
    name, item = kept
    if suffix.lower() == ".json":
        data = json.loads(text)
        data[place[0]][place[1]] = value
        data.setdefault(name, []).append(item)
        return json.dumps(data, ensure_ascii=False, indent=2) + "\n"
    yaml = _yaml()
    data = yaml.load(text)
    data[place[0]][place[1]] = _quoted(value)
    if name not in data or data[name] is None:
        data[name] = []
    data[name].append(_quoted(item))
    return _dumped(yaml, data)
