"""Facts: plain typed records with a source (input facts) or a derivation (derived facts).

Provenance is data: an input fact says where it came from (file, line, key, sha256, or
the user), a derived fact says which rule made it from which fact ids.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple


class Source(NamedTuple):
    """Where an input fact came from."""

    kind: str  # "case" (a key of the case file), "file" (an artifact file), "environment", "user"
    file: str | None = None
    line: int | None = None
    key: str | None = None
    sha256: str | None = None

    def describe(self) -> str:
        parts = []
        if self.file:
            parts.append(self.file + (f":{self.line}" if self.line else ""))
        if self.key:
            parts.append(self.key)
        if not parts:
            parts.append(self.kind)
        text = " ".join(parts)
        if self.sha256:
            text += f" (sha256 {self.sha256[:12]})"
        return text

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in (
            ("kind", self.kind), ("file", self.file), ("line", self.line),
            ("key", self.key), ("sha256", self.sha256),
        ) if v is not None}


class Derivation(NamedTuple):
    """How a derived fact was concluded: the rule and the facts it matched."""

    rule: str
    rule_file: str
    rule_line: int | None
    premises: tuple[str, ...]
    absent: tuple[str, ...] = ()  # negated conditions that held, in words
    overrides: str | None = None  # file:line of the bundled rule a rule pack replaced

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "rule": self.rule,
            "rule_file": self.rule_file,
            "rule_line": self.rule_line,
            "premises": list(self.premises),
        }
        if self.absent:
            out["absent"] = list(self.absent)
        if self.overrides:
            out["overrides"] = self.overrides
        return out


@dataclass
class Fact:
    """A typed record of the vocabulary with where it came from (source) or what derived it."""

    id: str
    type: str
    fields: dict[str, Any]
    source: Source | None = None
    derivation: Derivation | None = None
    depth: int = 0
    stratum: int = field(default=-1)

    def __getitem__(self, key: str) -> Any:
        return self.fields[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self.fields.get(key, default)

    def content_key(self) -> tuple:
        """Identity of the fact's content (type and fields), used to de-duplicate."""
        return (self.type, tuple(sorted((k, _freeze(v)) for k, v in self.fields.items())))

    def engine_payload(self, type_name: str | None = None) -> dict[str, Any]:
        """The dict asserted into durable-rules (`_k` is the join sentinel, see
        docs/engine_notes.md §4.1).

        An empty field is left out: durable-rules cannot compare with null (errors 311 / 312),
        and the compiler tests emptiness with `$nex` (compiler.py)."""
        payload = {k: v for k, v in self.fields.items() if v is not None}
        payload["id"] = self.id if type_name is None else f"{type_name}:{self.id}"
        payload["type"] = type_name or self.type
        payload["_k"] = 1
        payload["_d"] = self.depth
        return payload

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "type": self.type, "fields": dict(self.fields)}
        if self.source is not None:
            out["source"] = self.source.as_dict()
        if self.derivation is not None:
            out["derivation"] = self.derivation.as_dict()
        return out


def _freeze(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    return (type(value).__name__, value)
