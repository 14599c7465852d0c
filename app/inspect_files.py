"""`j6doctor inspect FILE|DIR...`: what each probe reads from the given files, without a
diagnosis — which kind each file was recognised as (and whether by its content or only its
name), and the data the probe extracted, so a user can see what the tool read."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

from j6doctor.facts import label
from j6doctor.probes import InputError
from j6doctor.probes.artifacts import find_artifacts, looked_for
from j6doctor.probes.registry import reader, summarizer
from j6doctor.verdict_model import is_record

MAX_ITEMS = 200  # list items shown per list; the rest is counted
MAX_DEPTH = 12


def plain(value: Any, depth: int = 0) -> Any:
    """A probe's result as JSON data: records (dataclasses, named tuples) and mappings as
    objects, sequences as lists (long ones cut with a count), paths as text, nan / inf as text."""
    if depth > MAX_DEPTH:
        return "…"
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name), depth + 1) for f in dataclasses.fields(value)
                if not f.name.startswith("_")}
    if is_record(type(value)):  # a named tuple is a record too, not a list
        return {name: plain(item, depth + 1) for name, item in zip(value._fields, value)}
    if isinstance(value, dict):
        return {str(k): plain(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value, key=str) if isinstance(value, (set, frozenset)) else list(value)
        shown = [plain(v, depth + 1) for v in items[:MAX_ITEMS]]
        if len(items) > MAX_ITEMS:
            shown.append(f"… {len(items) - MAX_ITEMS} more")
        return shown
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, Path):
        return value.as_posix()
    return str(value)


def inspect_paths(paths: list[Path], base: Path) -> dict[str, Any]:
    found, problems, summaries = find_artifacts(paths, base)
    files = []
    for item in found:
        entry: dict[str, Any] = {"path": item.display, "kind": item.kind, "kind_label": label("file_kind", item.kind),
                                 "by": item.by, "size": item.size, "sha256": item.sha256}
        read = reader(item.kind)
        if read is None:
            entry["data"] = None  # a model or a config: recorded, not read
        else:
            try:
                result = read(item.path, item.display)
                summary = summarizer(item.kind)
                entry["data"] = plain(summary(result) if summary else result)
            except InputError as exc:
                entry["error"] = exc.render()
        files.append(entry)
    return {
        "files": files,
        "scanned": [{"path": s.display, "files": s.files, "recognised": s.recognised,
                     "unrecognised": s.unrecognised, "bound": s.bound} for s in summaries],
        "problems": [{"path": p, "message": m} for p, m in problems],
        "looked_for": looked_for(),
    }


def render_inspect_json(data: dict[str, Any]) -> str:
    return json.dumps(data, ensure_ascii=False, indent=2) + "\n"


def render_inspect_markdown(data: dict[str, Any]) -> str:
    out = ["# j6doctor inspect", ""]
    for scan in data["scanned"]:
        line = f"- {scan['path']}：看了 {scan['files']} 个文件，识别出 {scan['recognised']} 个"
        if scan["unrecognised"]:
            line += f"；未识别：{'、'.join(scan['unrecognised'])}"
        out.append(line + (f"（{scan['bound']}）" if scan["bound"] else ""))
    for problem in data["problems"]:
        out.append(f"- ⚠ {problem['path']}：{problem['message']}")
    if not data["files"]:
        out += ["", f"没有识别出任何产物。按内容能识别的是：{'、'.join(data['looked_for'])}"]
    for entry in data["files"]:
        how = "按内容识别" if entry["by"] == "content" else "只按文件名识别"
        out += ["", f"## {entry['path']}", "",
                f"{entry['kind_label']}（`{entry['kind']}`，{how}，{entry['size']} 字节，sha256 {entry['sha256'][:12]}）", ""]
        if "error" in entry:
            out.append(f"读取失败：{entry['error']}")
        elif entry["data"] is None:
            out.append("（只记录存在、大小与 sha256，不读取内容）")
        else:
            _lines(entry["data"], 0, out)
    return "\n".join(out) + "\n"


def _lines(value: Any, depth: int, out: list[str]) -> None:
    pad = "  " * depth
    if isinstance(value, dict):
        for key, item in value.items():
            if _nested(item):
                out.append(f"{pad}- {key}:")
                _lines(item, depth + 1, out)
            else:
                out.append(f"{pad}- {key}: {_scalar(item)}")
    elif isinstance(value, list):
        for item in value:
            if _nested(item):
                out.append(f"{pad}-")
                _lines(item, depth + 1, out)
            else:
                out.append(f"{pad}- {_scalar(item)}")
    else:
        out.append(f"{pad}- {_scalar(value)}")


def _located(value: Any) -> bool:
    """A value with its file line ({"text": ..., "line": N}), shown on one line."""
    return isinstance(value, dict) and set(value) == {"text", "line"}


def _nested(value: Any) -> bool:
    if _located(value):
        return False
    if isinstance(value, dict):
        return bool(value)
    if isinstance(value, list):
        return any(isinstance(v, (dict, list)) for v in value)
    return False


def _scalar(value: Any) -> str:
    if _located(value):
        return f"{value['text']}（第 {value['line']} 行）"
    if isinstance(value, list):
        return "[" + ", ".join(_scalar(v) for v in value) + "]"
    if isinstance(value, dict):
        return "（空）"
    return "—" if value is None else str(value)
