"""Strict, safe YAML reading with line numbers.

Built on PyYAML's SafeLoader (never the full loader), with three additions that a
diagnostic input needs:
- duplicate mapping keys are an error (a silently overwritten key drops evidence);
- aliases are refused (no alias bombs, no shared sub-trees);
- every mapping key and sequence item gets its 1-based line, addressable by key path;
- nesting is limited (MAX_DEPTH), so that no reader of the data can run out of stack;
- the number of values is limited (MAX_NODES), counted on the parser's events before any
  node is built, so that a few megabytes of `[{}, {}, ...]` cannot grow into gigabytes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import yaml


class YamlInputError(ValueError):
    """A YAML document that cannot be read; carries the line where it went wrong."""

    def __init__(self, message: str, line: int | None = None):
        super().__init__(message)
        self.message = message
        self.line = line


class YamlTooLargeError(YamlInputError):
    """A document of more values than MAX_NODES (refused whatever its syntax)."""


Path = tuple[Any, ...]


@dataclass
class LocatedDocument:
    """A parsed document plus the line of every key path in it."""

    data: Any
    lines: dict[Path, int] = field(default_factory=dict)

    def line_of(self, path: Path) -> int | None:
        """Line of `path`, or of its nearest located ancestor."""
        path = tuple(path)
        while path:
            if path in self.lines:
                return self.lines[path]
            path = path[:-1]
        return self.lines.get(())


# LibYAML's parser when PyYAML has it (about 10x faster on the rule files), else the
# pure-Python one; both with the safe constructor only.
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
# Rule and case files nest about ten levels; deeper data would only exhaust the recursion of
# the readers after the parser (JSON Schema validation, error messages).
MAX_DEPTH = 100


_INT_TAG = "tag:yaml.org,2002:int"
MAX_INT_DIGITS = 4300  # the default limit of int() on text (Python 3.11+ and 3.10.7+)
# A case or rule file holds a few thousand values (the largest bundled file, the vocabulary,
# about 6,500); each built value costs some hundred bytes with its line.
MAX_NODES = 200_000
_NODE_EVENTS = (yaml.ScalarEvent, yaml.MappingStartEvent, yaml.SequenceStartEvent, yaml.AliasEvent)


def _check_node_count(text: str) -> None:
    """Refuse a document of more than MAX_NODES values before building any of them. A value
    takes at least one character and a separator, so a shorter text is not counted."""
    if len(text) <= MAX_NODES:
        return
    counter = _Loader(text)
    try:
        count = 0
        while counter.check_event():
            event = counter.get_event()
            if isinstance(event, _NODE_EVENTS):
                count += 1
                if count > MAX_NODES:
                    raise YamlTooLargeError(f"more than {MAX_NODES} values; a case, rule or metrics file holds a "
                                            "few thousand (split it, or keep what matters)",
                                            event.start_mark.line + 1)
    finally:
        counter.dispose()


def _check_and_collect(node: yaml.Node, path: Path, lines: dict[Path, int], seen: set[int],
                       used_at: int | None = None, depth: int = 0) -> None:
    """Record the line of every key path; refuse aliases and duplicate keys.

    The composer resolves an alias to the very node object its anchor names, so a node met
    twice is an alias (refused before construction: no alias bomb can expand)."""
    if id(node) in seen:
        raise YamlInputError("YAML aliases (*name) and anchors (&name) are not allowed; write the value out",
                             used_at or node.start_mark.line + 1)
    seen.add(id(node))
    lines.setdefault(path, node.start_mark.line + 1)
    if depth > MAX_DEPTH and isinstance(node, (yaml.MappingNode, yaml.SequenceNode)):
        raise YamlInputError(f"nested more than {MAX_DEPTH} levels deep", node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        first: dict[Any, int] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                raise YamlInputError("a mapping key must be a plain value", key_node.start_mark.line + 1)
            key = key_node.value
            line = key_node.start_mark.line + 1
            if key in first and key_node.tag == "tag:yaml.org,2002:str":
                raise YamlInputError(f"duplicate key {key!r} (first at line {first[key]}); keep one of them", line)
            first.setdefault(key, line)
            child = path + (key,)
            lines[child] = line
            _check_and_collect(value_node, child, lines, seen, line, depth + 1)
    elif isinstance(node, yaml.ScalarNode) and node.tag == _INT_TAG and len(node.value) > MAX_INT_DIGITS:
        # Python refuses to read an integer this long (sys.int_info.str_digits_check_threshold)
        raise YamlInputError(f"a number of {len(node.value)} digits; at most {MAX_INT_DIGITS} are read (quote it "
                             "if it is text)", node.start_mark.line + 1)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            child = path + (index,)
            lines[child] = item.start_mark.line + 1
            _check_and_collect(item, child, lines, seen, item.start_mark.line + 1, depth + 1)


# YAML 1.1 (PyYAML) reads a number written with an exponent but no point (`1e-05`, `5E+3`)
# as text, YAML 1.2 and every other tool as a number: places that expect a number use this.
# also published in JSON Schemas (ECMA syntax): the surrounding spaces are allowed there
EXPONENT_NUMBER_PATTERN = r"^\s*[-+]?(?:\d+\.?\d*|\.\d+)[eE][-+]?\d+\s*$"
_EXPONENT_NUMBER = re.compile(EXPONENT_NUMBER_PATTERN)


def exponent_number(value: Any) -> Any:
    """`value` as a float when it is text YAML 1.1 left unread (`1e-05`); else unchanged."""
    if isinstance(value, str) and _EXPONENT_NUMBER.match(value.strip()):
        return float(value)
    return value


# what to do about the YAML mistakes people make most
_YAML_HINTS = {"found character '\\t' that cannot start any token": " (indent with spaces, not tabs)",
               "found character that cannot start any token":  # LibYAML's wording
                   " (indent with spaces, not tabs; quote a value that starts with @ or `)",
               "mapping values are not allowed here": " (quote a value that holds ': ')",
               "mapping values are not allowed in this context": " (quote a value that holds ': ')"}


def load_yaml(text: str) -> LocatedDocument:
    """Parse one YAML document safely; raise YamlInputError with a line on failure.

    Same result as yaml.safe_load for documents without aliases or duplicate keys."""
    loader = _Loader(text)
    try:
        _check_node_count(text)
        node = loader.get_single_node()
        if node is None:
            return LocatedDocument(None, {})
        lines: dict[Path, int] = {}
        _check_and_collect(node, (), lines, set())
        data = loader.construct_document(node)
        if isinstance(data, dict):
            _check_constructed_keys(data, node)
        return LocatedDocument(data, lines)
    except YamlInputError:
        raise
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        problem = exc.problem or exc.context or "malformed YAML"
        raise YamlInputError(f"not valid YAML: {problem}{_YAML_HINTS.get(problem, '')}", line) from None
    except yaml.reader.ReaderError as exc:  # a control character: no mark, but a position
        # LibYAML counts the position in UTF-8 bytes, the pure-Python reader in characters.
        head = (text.encode("utf-8", "surrogatepass")[:exc.position].decode("utf-8", "replace")
                if _Loader is not yaml.SafeLoader else text[:exc.position])
        line = head.count("\n") + 1 if isinstance(exc.position, int) else None
        raise YamlInputError(f"not valid YAML: unacceptable character #x{exc.character:04x}: "
                             f"{exc.reason}", line) from None
    except yaml.YAMLError as exc:
        raise YamlInputError(f"not valid YAML: {exc}") from None
    except (RecursionError, TypeError, ValueError) as exc:
        raise YamlInputError(f"not valid YAML: {type(exc).__name__}") from None
    finally:
        loader.dispose()


def _check_constructed_keys(data: dict, node: yaml.MappingNode) -> None:
    """Keys that differ as text but not as values (`1` and `1.0`, `true` and `yes`) collide."""
    if len(data) != len(node.value):
        raise YamlInputError("duplicate key (two keys with the same value); keep one of them",
                             node.start_mark.line + 1)


# ---------------------------------------------------------------------------- JSON

_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')


def load_json(text: str, holds: str = "a document", non_finite: bool = False) -> LocatedDocument:
    """Parse one JSON document as strictly as load_yaml reads YAML, with the line of every
    key path: a duplicate key, more than MAX_NODES values or MAX_DEPTH levels are refused with
    their line, and so are NaN / Infinity unless `non_finite` (they are then floats, as
    json.dump writes them, for the reader to judge value by value). `holds`: what the
    document is, for the messages. Raises YamlInputError (message, line)."""
    from j6doctor.engine.json_lines import key_lines

    _check_json_size(text, holds)
    try:
        data = _decoded(text, holds, non_finite, _no_duplicates)
    except _DuplicateKey:
        _decoded(text, holds, non_finite, None)  # a syntax error further on is said first (the walk needs valid JSON)
        path, line, first = key_lines(text).repeated[0]
        raise YamlInputError(f"duplicate key {path[-1]!r} (first at line {first}); keep one of them", line) from None
    # Python 3.13's decoder reads far deeper nesting than the recursion limit lets a reader
    # walk: the depth is bounded here, on every Python the same.
    if _depth(data) > MAX_DEPTH:
        raise YamlInputError(f"JSON nesting is too deep (more than {MAX_DEPTH} levels)")
    return LocatedDocument(data, key_lines(text).lines)


def _decoded(text: str, holds: str, non_finite: bool, pairs_hook) -> Any:
    """json.loads with its errors said as YamlInputError (with the line where it knows one);
    _DuplicateKey, raised by `pairs_hook`, passes through."""
    import json

    try:
        return json.loads(text, object_pairs_hook=pairs_hook,
                          parse_constant=float if non_finite else lambda name: _reject_constant(name, text, holds))
    except (_DuplicateKey, YamlInputError):  # (NaN / Infinity: said by the hook with its line)
        raise
    except json.JSONDecodeError as exc:
        raise YamlInputError(f"not valid JSON: {exc.msg}", exc.lineno) from None
    except RecursionError:
        raise YamlInputError("JSON nesting is too deep") from None
    except ValueError as exc:  # e.g. an integer of more than 4300 digits
        raise YamlInputError(f"not valid JSON: {exc}") from None


class _DuplicateKey(ValueError):
    pass


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


def _depth(value: Any) -> int:
    """Levels of nesting of a parsed JSON value, walked without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            item = list(item.values())
        if isinstance(item, list):
            deepest = max(deepest, level)
            if level <= MAX_DEPTH:
                stack.extend((child, level + 1) for child in item)
    return deepest


def _check_json_size(text: str, holds: str) -> None:
    """MAX_NODES for JSON: a value needs a comma after it (outside strings), counted before the
    decoder builds any of them."""
    if len(text) <= MAX_NODES:
        return
    blanked = _JSON_STRING.sub('""', text)
    if blanked.count(",") > MAX_NODES:
        cut = 0
        for _ in range(MAX_NODES + 1):
            cut = blanked.index(",", cut) + 1
        raise YamlTooLargeError(f"more than {MAX_NODES} values; {holds} holds a few thousand (split it, or keep "
                                "what matters)", blanked.count("\n", 0, cut) + 1)


def _reject_constant(name: str, text: str, holds: str):
    """NaN / Infinity: refused, on the line of its first use outside a string (the decoder's
    hook is not told where it is)."""
    blanked = _JSON_STRING.sub(lambda m: " " * len(m.group()), text)
    found = re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", blanked)
    line = blanked.count("\n", 0, found.start()) + 1 if found else None
    raise YamlInputError(f"{name} is not a valid number in {holds}; write a finite number or leave the key out", line)
