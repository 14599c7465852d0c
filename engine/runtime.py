"""Run a compiled rule base on durable-rules and record the provenance of every fact.

Runtime pattern (shared/engine/NOTES.md §6): one host per process without background
threads, rulesets registered once per compiled rule base, one sid per diagnosis deleted
at the end; actions never assert directly - they append derived facts to a queue that
the driver asserts breadth-first; a firing budget and a depth cap make every run end.
"""

from __future__ import annotations

import itertools
import threading
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import durable.engine
import durable_rules_engine
from durable.engine import Host, MessageNotHandledException, MessageObservedException

from . import engine_json

from .compiler import READY_TYPE, SHADOW_PREFIX, START_TYPE, CompiledRule, CompiledRuleBase, Partition
from .errors import EngineRunError, VocabularyError
from .facts import Derivation, Fact
from .rule_loader import PLACEHOLDER
from .rule_model import Ref
from .text_rules import conclusion_fields, find_matches
from .vocabulary import Vocabulary

DEFAULT_MAX_FIRINGS = 10_000
DEFAULT_MAX_DEPTH = 64

# durable-rules error codes (rules.h) in words, for messages a rule author can act on.
_ERROR_CODES = {
    101: "too many diagnoses alive at once (sid table full)",
    102: "a rule attribute has the wrong type",
    105: "unknown key in a compiled rule",
    106: "too many rules in one ruleset",
    107: "too many inequality / or tests under one condition",
    108: "too many identical conditions",
    113: "too many comparisons in one condition",
    302: "a fact has too many fields",
    303: "too many range / join tests match one fact at once",
    304: "a rule matches more than 16 facts",
    311: "a rule compares with a field that a fact does not have",
}


# durable-rules writes the JSON its C engine parses with the json module, whose `1e-05`
# that parser cannot read (error 204): it gets the same text with positional numbers.
durable.engine.json = engine_json


class _SyncHost(Host):
    """A Host without the two background threads the stock one starts (NOTES §0.4)."""

    def __init__(self) -> None:
        self._handlers: dict[str, Any] = {}
        super().__init__()

    def _run(self) -> None:  # no dispatch / timer threads: everything runs synchronously
        pass

    def get_action(self, action_name: str):
        handler = self._handlers[action_name]
        return handler


_HOST_LOCK = threading.Lock()
_HOST: _SyncHost | None = None
_REGISTERED: set[str] = set()
_SIDS = itertools.count(1)
_ACTIVE = threading.local()


def _host() -> _SyncHost:
    global _HOST
    if _HOST is None:
        _HOST = _SyncHost()
    return _HOST


def _translate(exc: Exception) -> str:
    text = str(exc)
    code = None
    if "error code:" in text:
        try:
            code = int(text.rsplit(":", 1)[1].strip())
        except ValueError:
            code = None
    if code in _ERROR_CODES:
        return f"{_ERROR_CODES[code]} (durable-rules error {code})"
    return text


def _register(compiled: CompiledRuleBase) -> None:
    with _HOST_LOCK:
        if compiled.fingerprint in _REGISTERED:
            return
        host = _host()
        for part in compiled.partitions():
            host._handlers[f"{part.name}:__start"] = _noop
            for crule in part.rules:
                host._handlers[f"{part.name}:{crule.key}"] = _make_action(part, crule)
            try:
                host.register_rulesets({part.name: part.definition()})
            except Exception as exc:  # durable raises its own error type with a code
                raise EngineRunError(
                    f"durable-rules refused ruleset {part.name}: {_translate(exc)}"
                ) from None
        _REGISTERED.add(compiled.fingerprint)


def _noop(c) -> None:
    return None


def _make_action(part: Partition, crule: CompiledRule):
    def action(c) -> None:
        run = getattr(_ACTIVE, "run", None)
        if run is not None:
            run.fire(crule, c)
    return action


@dataclass
class Firing:
    rule: str
    premises: tuple[str, ...]
    derived: tuple[str, ...]
    stratum: int

    def as_dict(self) -> dict[str, Any]:
        return {"rule": self.rule, "premises": list(self.premises),
                "derived": list(self.derived), "stratum": self.stratum}


@dataclass
class RunResult:
    facts: list[Fact]
    firings: list[Firing]
    truncated: bool = False
    problems: list[str] = field(default_factory=list)

    def by_type(self, type_name: str) -> list[Fact]:
        return [f for f in self.facts if f.type == type_name]

    def fact(self, fact_id: str) -> Fact:
        return self._index()[fact_id]

    def _index(self) -> dict[str, Fact]:
        cache = getattr(self, "_cache", None)
        if cache is None or len(cache) != len(self.facts):
            cache = {f.id: f for f in self.facts}
            self._cache = cache
        return cache

    def fired_rules(self) -> set[str]:
        return {f.rule for f in self.firings}


class _Run:
    def __init__(self, compiled: CompiledRuleBase, vocab: Vocabulary, facts: list[Fact],
                 max_firings: int, max_depth: int):
        self.compiled = compiled
        self.vocab = vocab
        self.store: list[Fact] = list(facts)
        self.index: dict[str, Fact] = {f.id: f for f in facts}
        self.by_content: dict[tuple, str] = {f.content_key(): f.id for f in facts}
        self.queue: deque[Fact] = deque()
        self.firings: list[Firing] = []
        self.max_firings = max_firings
        self.max_depth = max_depth
        self.truncated = False
        self.problems: list[str] = []
        self.out_of_memory = False
        self.stratum = 0
        self.counter = itertools.count(1)

    # called from inside durable-rules, synchronously
    def fire(self, crule: CompiledRule, c) -> None:
        if self.out_of_memory:
            return
        try:
            self._fire(crule, c)
        except MemoryError:
            # the worker's memory cap hit inside an action: re-raised by run() so the worker
            # reports an engine limit (exit 2), not "a rule action failed" (exit 1)
            self.out_of_memory = True
        except Exception as exc:  # durable swallows action exceptions; keep them
            self.problems.append(f"rule {crule.rule.id}: {type(exc).__name__}: {exc}")

    def run_text_rules(self) -> None:
        """Text rules first: their facts are in place before any fact rule runs."""
        inputs = [f for f in self.store if f.derivation is None]
        for compiled in self.compiled.text_rules:
            rule = compiled.rule
            for match in find_matches(compiled, inputs):
                derived_ids: list[str] = []
                for concl in rule.then:
                    type_fields = set(self.vocab.types[concl.type].fields)
                    fields = conclusion_fields(match, concl.fields, type_fields)
                    try:
                        fields = self.vocab.complete(concl.type, fields)
                    except VocabularyError as exc:
                        self.problems.append(f"rule {rule.id} ({rule.file}:{concl.line}): {exc}")
                        continue
                    derived_ids.append(self._store(Fact(
                        id="", type=concl.type, fields=fields, depth=1, stratum=-1,
                        derivation=Derivation(rule.id, rule.file, rule.line, (match.fact.id,), (), rule.overrides),
                    )))
                self.firings.append(Firing(rule.id, (match.fact.id,), tuple(i for i in derived_ids if i), -1))

    def _store(self, candidate: Fact) -> str:
        """Keep a derived fact unless an identical one exists; its id either way."""
        existing = self.by_content.get(candidate.content_key())
        if existing is not None:
            return existing
        candidate.id = f"d{next(self.counter)}"
        self.store.append(candidate)
        self.index[candidate.id] = candidate
        self.by_content[candidate.content_key()] = candidate.id
        self.queue.append(candidate)
        return candidate.id

    def _fire(self, crule: CompiledRule, c) -> None:
        if len(self.firings) >= self.max_firings:
            self.truncated = True
            return
        matched = c._m
        premises: list[Fact] = []
        bound: dict[str, Fact] = {}
        for alias, index in crule.positive_aliases:
            fact = self.index[matched[alias]["id"]]
            premises.append(fact)
            cond = crule.rule.when[index]
            if cond.alias:
                bound[cond.alias] = fact
        depth = 1 + max((f.depth for f in premises), default=0)
        absent = tuple(cond.describe() for cond in crule.rule.negative)
        derived_ids: list[str] = []
        for concl in crule.rule.then:
            fields = {name: _resolve(value, bound, self.vocab) for name, value in concl.fields.items()}
            try:
                fields = self.vocab.complete(concl.type, fields)
            except VocabularyError as exc:
                self.problems.append(f"rule {crule.rule.id} ({crule.rule.file}:{concl.line}): {exc}")
                continue
            candidate = Fact(
                id="", type=concl.type, fields=fields, depth=depth, stratum=self.stratum,
                derivation=Derivation(crule.rule.id, crule.rule.file, crule.rule.line,
                                      tuple(f.id for f in premises), absent, crule.rule.overrides),
            )
            if candidate.content_key() not in self.by_content and depth > self.max_depth:
                self.truncated = True
                continue
            derived_ids.append(self._store(candidate))
        self.firings.append(Firing(crule.rule.id, tuple(f.id for f in premises),
                                   tuple(derived_ids), self.stratum))


def _resolve(value: Any, bound: dict[str, Fact], vocab: Vocabulary) -> Any:
    if isinstance(value, Ref):
        return bound[value.alias][value.field]
    if isinstance(value, str) and "${" in value:
        def substitute(match) -> str:
            fact = bound[match.group(1)]
            raw = fact[match.group(2)]
            if match.group(3) == "|label":
                spec = vocab.types[fact.type].fields[match.group(2)]
                if spec.enum:
                    return str(vocab.enums[spec.enum].attr(raw, "label", raw))
            if match.group(3) == "|lower":
                return _text(raw).lower()
            return _text(raw)
        return PLACEHOLDER.sub(substitute, value)
    return value


def _text(value: Any) -> str:
    """A field value inside a conclusion's text: short and stable."""
    if value is None:
        return "—"
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        return format(value, ".6g")
    return str(value)


def _assert(host: _SyncHost, part: Partition, payload: dict[str, Any]) -> None:
    try:
        host.assert_fact(part.name, payload)
    except (MessageNotHandledException, MessageObservedException):
        pass  # a fact no rule of this ruleset matches, or already stored: both fine
    except durable_rules_engine.error as exc:
        raise EngineRunError(
            f"durable-rules failed on fact {payload.get('id')} ({payload.get('type')}): {_translate(exc)}"
        ) from None


def run(compiled: CompiledRuleBase, vocab: Vocabulary, facts: list[Fact], *,
        max_firings: int = DEFAULT_MAX_FIRINGS, max_depth: int = DEFAULT_MAX_DEPTH) -> RunResult:
    """Forward-chain `facts` through the rule base, stratum by stratum."""
    _register(compiled)
    host = _host()
    state = _Run(compiled, vocab, facts, max_firings, max_depth)
    state.run_text_rules()
    state.queue.clear()  # text facts are in the store: every stratum asserts the store first
    with _HOST_LOCK:
        _ACTIVE.run = state
        try:
            for stratum_index, partitions in enumerate(compiled.strata):
                state.stratum = stratum_index
                _run_stratum(host, state, partitions)
                if state.problems or state.out_of_memory:
                    break
        finally:
            _ACTIVE.run = None
    if state.out_of_memory:
        raise MemoryError("a rule action ran out of memory")
    if state.problems:
        raise EngineRunError("a rule action failed: " + "; ".join(state.problems))
    return RunResult(state.store, state.firings, state.truncated, state.problems)


def _run_stratum(host: _SyncHost, state: _Run, partitions: list[Partition]) -> None:
    sid = str(next(_SIDS))
    opened: list[Partition] = []
    try:
        for part in partitions:
            _assert(host, part, {"id": START_TYPE, "type": START_TYPE, "sid": sid})
            opened.append(part)
        snapshot = list(state.store)
        # Shadows of every negated type first: `$not` is decided when an activation is made.
        for part in partitions:
            for fact in snapshot:
                if fact.type in part.negates:
                    payload = fact.engine_payload(SHADOW_PREFIX + fact.type)
                    payload["sid"] = sid
                    _assert(host, part, payload)
            _assert(host, part, {"id": READY_TYPE, "type": READY_TYPE, "_k": 1, "sid": sid})
        for part in partitions:
            for fact in snapshot:
                if fact.type in part.consumes:
                    payload = fact.engine_payload()
                    payload["sid"] = sid
                    _assert(host, part, payload)
        while state.queue:
            fact = state.queue.popleft()
            for part in partitions:
                if fact.type in part.consumes:
                    payload = fact.engine_payload()
                    payload["sid"] = sid
                    _assert(host, part, payload)
    finally:
        for part in opened:
            try:
                host.delete_state(part.name, sid)
            except Exception:  # nothing left to clean if the engine already dropped it
                pass
