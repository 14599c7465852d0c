"""The verdict as a typed record: what one diagnosis concluded, with the ids of the facts
and rules behind each part. `to_json()` gives the public JSON verdict (docs/CONTRACT.md),
keys in field order; `j6doctor schema verdict` prints its JSON Schema, derived from these
records (verdict_schema.py). The records are named tuples: immutable, typed, and made in a
fraction of the time a frozen dataclass takes to define (this module is on every run's path)."""

from __future__ import annotations

from typing import Any, NamedTuple

# The version of the JSON verdict's layout: a new key raises the minor number, a removed or
# changed key the major one (docs/CONTRACT.md).
SCHEMA_VERSION = "1.3"


class StageRef(NamedTuple):
    stage: str
    label: str


class MissingItem(NamedTuple):
    id: str
    label: str
    why: str
    details: list[str]
    ask: list[str]
    facts: list[str]


class EvaluateNext(NamedTuple):
    artifact: str
    label: str
    reason: str
    fact: str


class EvidenceEntry(NamedTuple):
    fact: str
    type: str
    fields: dict[str, Any]
    source: dict[str, Any]


class Conclusion(NamedTuple):
    fact: str
    rule: str
    reason: str


class Candidate(NamedTuple):
    stage: str
    label: str
    check: str
    why: str
    rule: str
    fact: str


class FlowRef(NamedTuple):
    flow: str
    label: str
    how: str
    fact: str


class TextFact(NamedTuple):
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


class UnreadText(NamedTuple):
    terms: str          # the words no text rule took up, as class=value
    quote: str
    key: str
    line: int | None
    start: int | None
    end: int | None
    rule: str
    fact: str


class Finding(NamedTuple):
    topic: str
    text: str
    rule: str
    fact: str


class KeyFinding(NamedTuple):
    slot: str
    text: str
    rule: str
    fact: str


class ChecklistEntry(NamedTuple):
    id: str
    label: str
    look_at: str
    status: str
    status_label: str
    note: str
    fact: str | None


class Mistake(NamedTuple):
    id: str
    title: str
    instead: str
    details: list[str]
    facts: list[str]


class NextStep(NamedTuple):
    order: int
    text: str
    rule: str
    fact: str


class Retained(NamedTuple):
    item: str
    rule: str
    fact: str


class ArtifactEntry(NamedTuple):
    kind: str
    path: str
    size: int | None
    sha256: str
    by: str
    hashed: int | None
    fact: str
    unread: str = ""  # why the file was found but left unread on purpose ("": read, or only recorded)


class RulebaseInfo(NamedTuple):
    fingerprint: str
    rules: int
    engine: str


class ToolInfo(NamedTuple):
    name: str
    version: str


class Verdict(NamedTuple):
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
    unread: list[UnreadText]
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
        """The public JSON verdict: plain dicts and lists, keys in declaration order."""
        return _plain(self)


def is_record(kind: type) -> bool:
    """Whether a type is a record made as a named tuple (the verdict's records, and others)."""
    return isinstance(kind, type) and issubclass(kind, tuple) and hasattr(kind, "_fields")


def _plain(value: Any) -> Any:
    kind = type(value)
    if kind in (str, int, float, bool) or value is None:
        return value
    if kind is list:
        return [_plain(v) for v in value]
    if kind is dict:
        return {k: _plain(v) for k, v in value.items()}
    if is_record(kind):
        return {name: _plain(v) for name, v in zip(value._fields, value)}
    if isinstance(value, tuple):
        return kind(_plain(v) for v in value)
    return value
