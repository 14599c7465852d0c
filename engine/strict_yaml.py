"""Strict, safe YAML reading with line numbers.

Built on PyYAML's SafeLoader (never the full loader), with three additions that a
diagnostic input needs:
- duplicate mapping keys are an error (a silently overwritten key drops evidence);
- anchors and aliases are refused (no alias bombs, no shared sub-trees);
- every mapping key and sequence item gets its 1-based line, addressable by key path.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml


class YamlInputError(ValueError):
    """A YAML document that cannot be read; carries the line where it went wrong."""

    def __init__(self, message: str, line: int | None = None):
        super().__init__(message)
        self.message = message
        self.line = line


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


class _StrictSafeLoader(yaml.SafeLoader):
    """SafeLoader that refuses aliases and duplicate keys."""

    def compose_node(self, parent, index):  # type: ignore[override]
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise YamlInputError(
                "YAML aliases (*name) are not allowed; write the value out",
                event.start_mark.line + 1,
            )
        event = self.peek_event()
        anchor = getattr(event, "anchor", None)
        if anchor is not None:
            raise YamlInputError(
                f"YAML anchors (&{anchor}) are not allowed; write the value out",
                event.start_mark.line + 1,
            )
        return super().compose_node(parent, index)

    def construct_mapping(self, node, deep=False):  # type: ignore[override]
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            try:
                hash(key)
            except TypeError:
                raise YamlInputError(
                    "a mapping key must be a plain value", key_node.start_mark.line + 1
                ) from None
            line = key_node.start_mark.line + 1
            if key in seen:
                raise YamlInputError(
                    f"duplicate key {key!r} (first at line {seen[key]})", line
                )
            seen[key] = line
        return super().construct_mapping(node, deep=deep)


def _collect_lines(node: yaml.Node, path: Path, lines: dict[Path, int]) -> None:
    lines.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
            child = path + (key,)
            lines[child] = key_node.start_mark.line + 1
            _collect_lines(value_node, child, lines)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            child = path + (index,)
            lines[child] = item.start_mark.line + 1
            _collect_lines(item, child, lines)


def load_yaml(text: str) -> LocatedDocument:
    """Parse one YAML document safely; raise YamlInputError with a line on failure.

    Same result as yaml.safe_load for documents without aliases or duplicate keys.
    """
    loader = _StrictSafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return LocatedDocument(None, {})
        lines: dict[Path, int] = {}
        _collect_lines(node, (), lines)
        data = loader.construct_document(node)
        return LocatedDocument(data, lines)
    except YamlInputError:
        raise
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        problem = exc.problem or exc.context or "malformed YAML"
        raise YamlInputError(f"not valid YAML: {problem}", line) from None
    except yaml.YAMLError as exc:
        raise YamlInputError(f"not valid YAML: {exc}") from None
    except RecursionError:
        raise YamlInputError("YAML nesting is too deep") from None
    finally:
        loader.dispose()
