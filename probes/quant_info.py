"""hb_mapper `*_quant_info.json` (PTQ, docs/file_formats.md R5).

A JSON object keyed by node name, in graph order; each value has `type`, `inputs`,
`outputs`, `thresholds` (a list of lists of numbers, possibly empty) and
`cosine_similarity` written as a string (`"0.541412"`; values slightly above 1 such as
`"1.000045"` occur). It is read like the node table of the conversion log, with the same
cosine helpers (imported from conversion_log.py).

Each node gets the line of its key in the file. A node whose value is not such an object
(no type, a threshold or cosine that is no number) or that is listed twice is skipped and
named in `QuantInfo.skipped`; the other nodes are read. A file that is no JSON object of
nodes, or without a readable node, raises InputError naming the file, the line and what
was expected.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from j6doctor.engine.json_lines import key_lines
from j6doctor.probes.conversion_log import (
    COSINE_HEALTHY,
    FOLLOWING_NODES,
    CosineSummary,
    Fall,
    FirstNode,
    add_cosine_facts,
    cosine_breaks,
    first_node,
    summarize_cosines,
    worst_cosine,
)
from j6doctor.probes.input_error import InputError, Skips
from j6doctor.probes.text_file import load_text
from j6doctor.probes.text_tables import parse_number

__all__ = ["QuantInfo", "QuantNode", "parse_quant_info", "read_quant_info"]

# One entry per node with per-channel thresholds: large models stay far below this.
MAX_TEXT_BYTES = 64 * 1024 * 1024
EXPECTED = ("an hb_mapper *_quant_info.json (a JSON object keyed by node name; each value an "
            "object with type, inputs, outputs, thresholds and cosine_similarity)")

_MISSING = frozenset({"", "--", "none", "null"})


@dataclass(frozen=True)
class QuantNode:
    line: int                                 # line of the node's key in the file
    name: str
    type: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    thresholds: tuple[tuple[float, ...], ...]
    cosine: float | None                      # cosine_similarity as a number


@dataclass
class QuantInfo:
    display: str
    nodes: list[QuantNode]                    # in file order
    skipped: Skips = field(default_factory=Skips)   # nodes that could not be read (line and why)

    def node(self, name: str) -> QuantNode | None:
        return next((n for n in self.nodes if n.name == name), None)

    def breaks(self, healthy: float = COSINE_HEALTHY) -> list[Fall[QuantNode]]:
        return cosine_breaks(self.nodes, healthy)

    def worst_node(self) -> QuantNode | None:
        return worst_cosine(self.nodes)

    def first_node(self, following: int = FOLLOWING_NODES) -> FirstNode[QuantNode]:
        return first_node(self.nodes, following)

    def summary(self, healthy: float = COSINE_HEALTHY,
                following: int = FOLLOWING_NODES) -> CosineSummary[QuantNode]:
        return summarize_cosines(self.nodes, healthy, following)


def read_quant_info(path: Path | str, display: str | None = None) -> QuantInfo:
    path = Path(path)
    display = display or path.name
    return parse_quant_info(load_text(path, display, EXPECTED, MAX_TEXT_BYTES), display)


def parse_quant_info(text: str, display: str) -> QuantInfo:
    text = text.removeprefix("\ufeff")
    if not text.strip():
        raise InputError(display, f"empty file; expected {EXPECTED}")
    try:
        data = json.loads(text, object_pairs_hook=_first_kept)
    except json.JSONDecodeError as exc:
        raise InputError(display, f"invalid JSON ({exc.msg}, column {exc.colno}); "
                                  f"expected {EXPECTED}", exc.lineno) from None
    except (ValueError, RecursionError, MemoryError) as exc:
        # e.g. an integer with too many digits, or nesting too deep for the decoder
        raise InputError(display, f"unreadable JSON ({type(exc).__name__}); expected {EXPECTED}") from None
    located = key_lines(text, max_depth=1)  # the node lines (a node's own keys: only for a message)
    if not isinstance(data, dict):
        raise InputError(display, f"the JSON is {_kind(data)}; expected {EXPECTED}", located.lines[()])
    if not data:
        raise InputError(display, f"the JSON object has no nodes; expected {EXPECTED}", located.lines[()])
    # in file order: each node, and each key listed again (json.loads would keep the last)
    entries = sorted([(located.lines[(name,)], name, value) for name, value in data.items()]
                     + [(line, path[0], _AGAIN) for path, line, _ in located.repeated], key=lambda e: e[0])
    skips = Skips()
    nodes = []
    where = _KeyLine(text)
    for line, name, value in entries:
        if value is _AGAIN:
            skips.add(line, f"node {name!r} is listed again; the first one is read")
            continue
        try:
            nodes.append(_node(name, value, line, where, display))
        except InputError as error:
            skips.add_error(error)
    if not nodes:
        first = skips.kept[0]
        raise InputError(display, f"no readable node: {first.reason}", first.line)
    return QuantInfo(display, nodes, skips)


_AGAIN = object()  # a node's key met again


def _first_kept(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        out.setdefault(key, value)
    return out


class _KeyLine:
    """The line of a key inside a node's object, looked up when a message first needs one
    (a healthy file never walks its nodes' keys)."""

    def __init__(self, text: str):
        self.text = text
        self.lines: dict | None = None

    def __call__(self, node: str, key: str, line: int) -> int:
        if self.lines is None:
            self.lines = key_lines(self.text, max_depth=2).lines
        return self.lines.get((node, key), line)


def _node(name: str, value: Any, line: int, key_line: _KeyLine, display: str) -> QuantNode:
    if not isinstance(value, dict):
        raise InputError(display, f"node {name!r} is {_kind(value)}; expected an object with "
                                  "type, inputs, outputs, thresholds and cosine_similarity", line)

    def where(key: str) -> int:
        """The line of `key` inside this node's object, else the node's line."""
        return key_line(name, key, line)

    node_type = value.get("type")
    if not isinstance(node_type, str):
        found = "no type" if "type" not in value else f"type {_kind(node_type)}"
        raise InputError(display, f"node {name!r} has {found}; expected \"type\": \"<op type>\"",
                         where("type"))
    if "cosine_similarity" not in value and "thresholds" not in value:
        raise InputError(display, f"node {name!r} has neither thresholds nor cosine_similarity; "
                                  f"expected {EXPECTED}", line)
    return QuantNode(
        line=line,
        name=name,
        type=node_type,
        inputs=_names(value, "inputs", name, where, display),
        outputs=_names(value, "outputs", name, where, display),
        thresholds=_thresholds(value.get("thresholds", []), name, where, display),
        cosine=_cosine(value.get("cosine_similarity"), name, where, display),
    )


def _names(value: dict, key: str, node: str, where: Callable[[str], int],
           display: str) -> tuple[str, ...]:
    items = value.get(key, [])
    if not isinstance(items, list) or not all(isinstance(item, str) for item in items):
        raise InputError(display, f"{key} of node {node!r} is {_kind(items)}; expected a list "
                                  "of tensor names", where(key))
    return tuple(items)


def _thresholds(items: Any, node: str, where: Callable[[str], int],
                display: str) -> tuple[tuple[float, ...], ...]:
    def fail(found: str) -> InputError:
        return InputError(display, f"thresholds of node {node!r} {found}; expected a list of "
                                   "lists of numbers, e.g. [[2.01377], [127.0]]", where("thresholds"))

    if not isinstance(items, list):
        raise fail(f"is {_kind(items)}")
    result = []
    for group in items:
        if not isinstance(group, list):
            raise fail(f"holds {_kind(group)}")
        for number in group:
            if isinstance(number, bool) or not isinstance(number, (int, float)):
                raise fail(f"holds {_kind(number)}")
        try:
            result.append(tuple(float(number) for number in group))
        except OverflowError:
            raise fail("holds an integer too large for a float") from None
    return tuple(result)


def _cosine(raw: Any, node: str, where: Callable[[str], int], display: str) -> float | None:
    """The string form ("0.541412"), also tolerating a JSON number; None for a missing
    value (no key, null, "", "--", "None")."""
    if raw is None:
        return None
    if isinstance(raw, str):
        if raw.strip().lower() in _MISSING:
            return None
        value = parse_number(raw.strip())
        if value is not None:
            return value
        found = repr(raw[:40])
    elif isinstance(raw, (int, float)) and not isinstance(raw, bool):
        try:
            return float(raw)
        except OverflowError:
            found = "an integer too large for a float"
    else:
        found = _kind(raw)
    raise InputError(display, f"cosine_similarity of node {node!r} is {found}; expected a number "
                              "in a string, like \"0.999812\"", where("cosine_similarity"))


def _kind(value: Any) -> str:
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return f"the string {value[:40]!r}"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if value is None:
        return "null"
    return f"the number {value!r}" if isinstance(value, float) else "a number"


# --- facts (probes/probe_output.py) -------------------------------------------------------

def add_facts(found, out) -> None:
    info = read_quant_info(found.path, found.display)
    out.skipped(found, info.skipped)
    add_cosine_facts(found, out, "quant_info", info.nodes, [], info.summary())
