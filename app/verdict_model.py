"""The verdict as a typed record: what one diagnosis concluded, with the ids of the facts
and rules behind each part. `to_json()` gives the public JSON verdict (docs/CONTRACT.md),
keys in field order; `j6doctor schema verdict` prints its JSON Schema, derived from these
records (verdict_schema.py)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

# The version of the JSON verdict's layout: a new key raises the minor number, a removed or
# changed key the major one (docs/CONTRACT.md).
SCHEMA_VERSION = "1.2"


@dataclass(frozen=True)
class StageRef:
    stage: str
    label: str


@dataclass(frozen=True)
class MissingItem:
    id: str
    label: str
    why: str
    details: list[str]
    ask: list[str]
    facts: list[str]


@dataclass(frozen=True)
class EvaluateNext:
    artifact: str
    label: str
    reason: str
    fact: str


@dataclass(frozen=True)
class EvidenceEntry:
    fact: str
    type: str
    fields: dict[str, Any]
    source: dict[str, Any]


@dataclass(frozen=True)
class Conclusion:
    fact: str
    rule: str
    reason: str


@dataclass(frozen=True)
class Candidate:
    stage: str
    label: str
    check: str
    why: str
    rule: str
    fact: str


@dataclass(frozen=True)
class FlowRef:
    flow: str
    label: str
    how: str
    fact: str


@dataclass(frozen=True)
class TextFact:
    topic: str
    topic_label: str
    kind: str
    kind_label: str
    item: str
    value: str
    quote: str
    key: str
    line: int | None
    start: int | None
    end: int | None
    rule: str
    fact: str


@dataclass(frozen=True)
class Finding:
    topic: str
    text: str
    rule: str
    fact: str


@dataclass(frozen=True)
class KeyFinding:
    slot: str
    text: str
    rule: str
    fact: str


@dataclass(frozen=True)
class ChecklistEntry:
    id: str
    label: str
    look_at: str
    status: str
    status_label: str
    note: str
    fact: str | None


@dataclass(frozen=True)
class Mistake:
    id: str
    title: str
    instead: str
    details: list[str]
    facts: list[str]


@dataclass(frozen=True)
class NextStep:
    order: int
    text: str
    rule: str
    fact: str


@dataclass(frozen=True)
class Retained:
    item: str
    rule: str
    fact: str


@dataclass(frozen=True)
class ArtifactEntry:
    kind: str
    path: str
    size: int | None
    sha256: str
    by: str
    hashed: int | None
    fact: str
    unread: str = ""  # why the file was found but left unread on purpose ("": read, or only recorded)


@dataclass(frozen=True)
class RulebaseInfo:
    fingerprint: str
    rules: int
    engine: str


@dataclass(frozen=True)
class ToolInfo:
    name: str
    version: str


@dataclass(frozen=True)
class Verdict:
    schema_version: str
    tool: ToolInfo
    stage: str
    stage_label: str
    missing: list[str]
    missing_detail: list[MissingItem]
    evaluate_next: list[EvaluateNext]
    evidence: list[EvidenceEntry]
    conclusion: list[Conclusion]
    chain_stage: StageRef | None
    candidates: list[Candidate]
    flow: FlowRef | None
    text_facts: list[TextFact]
    findings: list[Finding]
    key_findings: list[KeyFinding]
    warnings: list[str]
    checklist: list[ChecklistEntry]
    mistakes: list[Mistake]
    next_steps: list[NextStep]
    retain: list[Retained]
    artifacts: list[ArtifactEntry]
    trace: list[dict[str, Any]]   # every fact of the run, as engine Fact.as_dict-like entries
    rulebase: RulebaseInfo

    def key_texts(self, slot: str) -> list[str]:
        return [k.text for k in self.key_findings if k.slot == slot]

    def to_json(self) -> dict[str, Any]:
        """The public JSON verdict: plain dicts and lists, keys in declaration order (what
        dataclasses.asdict gives, without its deep copy of every leaf)."""
        return _plain(self)


_FIELDS: dict[type, tuple[str, ...]] = {}


def _plain(value: Any) -> Any:
    kind = type(value)
    if kind in (str, int, float, bool) or value is None:
        return value
    if kind is list:
        return [_plain(v) for v in value]
    if kind is dict:
        return {k: _plain(v) for k, v in value.items()}
    if dataclasses.is_dataclass(value):
        names = _FIELDS.get(kind)
        if names is None:
            names = _FIELDS[kind] = tuple(f.name for f in dataclasses.fields(value))
        return {name: _plain(getattr(value, name)) for name in names}
    if isinstance(value, tuple):
        return kind(_plain(v) for v in value)
    return value
