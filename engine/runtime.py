"""Forward chaining with provenance, on either engine backend.

The driver is the same for every backend (durable_backend.py, clips_backend.py): text
rules first, then stratum by stratum, shadows of the negated types, a ready marker, the
facts of the store one at a time and what they derive breadth-first. A backend only says
which rules each assertion matched (rule number, premise fact ids); the driver fires
them in a canonical order, keeps the provenance of every derived fact, and stops at a
firing budget and a depth cap, so every run ends and both engines give the same trace.
"""

from __future__ import annotations

import itertools
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from j6doctor.engine.backends import load_backend
from j6doctor.engine.compiler import CompiledRuleBase
from j6doctor.engine.errors import EngineRunError, VocabularyError
from j6doctor.engine.fact_gates import passes
from j6doctor.engine.facts import Derivation, Fact
from j6doctor.engine.placeholders import fill
from j6doctor.engine.rule_model import Ref, Rule
from j6doctor.engine.text_reader import Reading
from j6doctor.engine.text_rules import Readings, conclusion_fields, find_matches, texts_of
from j6doctor.engine.vocabulary import Vocabulary

DEFAULT_MAX_FIRINGS = 10_000
DEFAULT_MAX_DEPTH = 64


@dataclass
class Firing:
    """One rule firing: the premises it matched and the facts it derived."""

    rule: str
    premises: tuple[str, ...]
    derived: tuple[str, ...]
    stratum: int

    def as_dict(self) -> dict[str, Any]:
        return {"rule": self.rule, "premises": list(self.premises),
                "derived": list(self.derived), "stratum": self.stratum}


@dataclass
class RunResult:
    """What a run leaves: every fact (input and derived) and every firing, in order."""

    facts: list[Fact]
    firings: list[Firing]
    truncated: bool = False
    problems: list[str] = field(default_factory=list)
    engine: str = ""  # the backend that ran the rules

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
        self.ordinal: dict[str, int] = {f.id: n for n, f in enumerate(facts)}

    def stopped(self) -> bool:
        """Nothing more can fire: a problem, the memory cap, or the firing budget used up and a
        firing already dropped (asserting more facts would only make the engine build matches
        that are dropped too; a self-join over many facts makes millions)."""
        return (bool(self.problems) or self.out_of_memory
                or (self.truncated and len(self.firings) >= self.max_firings))

    def fire_batch(self, matches: list[tuple[int, tuple[str, ...]]]) -> None:
        """Fire the matches one assertion made, in a canonical order: rule priority, the
        rule's place in the rule base, then its premises' places in the store. Both engines
        report the same set of matches per assertion, so the trace is the same on both."""
        if not matches:
            return
        rules = self.compiled.rules
        ordinal = self.ordinal
        matches = sorted(set(matches), key=lambda m: (rules[m[0]].priority, m[0],
                                                      tuple(ordinal[i] for i in m[1])))
        for rule_number, premise_ids in matches:
            if self.out_of_memory or self.problems:
                return
            rule = rules[rule_number]
            try:
                self._fire(rule, premise_ids)
            except MemoryError:
                # the worker's memory cap hit inside an action: re-raised by run() so the worker
                # reports an engine limit (exit 2), not "a rule action failed" (exit 1)
                self.out_of_memory = True
            except Exception as exc:  # a conclusion that cannot be built: reported, never raised here
                self.problems.append(f"rule {rule.id}: {type(exc).__name__}: {exc}")

    def run_text_rules(self, readings: dict[str, Reading] | None) -> None:
        """Text rules first: their facts are in place before any fact rule runs. Each text is
        read once (`readings`: those made already, by the text) and shared by every rule."""
        inputs = texts_of(self.compiled.text_fields, [f for f in self.store if f.derivation is None])
        shared = Readings(self.vocab.text, readings)
        for compiled in self.compiled.text_rules:
            rule = compiled.rule
            for match in find_matches(compiled, inputs, shared):
                derived_ids: list[str] = []
                for concl in rule.then:
                    fields = conclusion_fields(match, concl.fields, self.vocab.types[concl.type].fields, self.vocab)
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

    def _store(self, candidate: Fact, content: tuple | None = None) -> str:
        """Keep a derived fact unless an identical one exists; its id either way. (`content`:
        the candidate's content key, where the caller has it already.)"""
        content = candidate.content_key() if content is None else content
        existing = self.by_content.get(content)
        if existing is not None:
            return existing
        candidate.id = f"d{next(self.counter)}"
        self.ordinal[candidate.id] = len(self.store)
        self.store.append(candidate)
        self.index[candidate.id] = candidate
        self.by_content[content] = candidate.id
        self.queue.append(candidate)
        return candidate.id

    def _fire(self, rule: Rule, premise_ids: tuple[str, ...]) -> None:
        if len(self.firings) >= self.max_firings:
            self.truncated = True
            return
        premises: list[Fact] = []
        bound: dict[str, Fact] = {}
        for fact_id, cond in zip(premise_ids, rule.positive):
            fact = self.index[fact_id]
            premises.append(fact)
            if cond.alias:
                bound[cond.alias] = fact
        depth = 1 + max((f.depth for f in premises), default=0)
        absent = self.compiled.absent_words[rule.id]
        derived_ids: list[str] = []
        for concl in rule.then:
            specs = self.vocab.types[concl.type].fields
            fields = {name: _resolve(value, bound, self.vocab, specs[name].type != "str")
                      for name, value in concl.fields.items()}
            try:
                fields = self.vocab.complete(concl.type, fields)
            except VocabularyError as exc:
                self.problems.append(f"rule {rule.id} ({rule.file}:{concl.line}): {exc}")
                continue
            candidate = Fact(
                id="", type=concl.type, fields=fields, depth=depth, stratum=self.stratum,
                derivation=Derivation(rule.id, rule.file, rule.line,
                                      tuple(f.id for f in premises), absent, rule.overrides),
            )
            content = candidate.content_key()
            if content not in self.by_content and depth > self.max_depth:
                self.truncated = True
                continue
            derived_ids.append(self._store(candidate, content))
        self.firings.append(Firing(rule.id, tuple(f.id for f in premises),
                                   tuple(derived_ids), self.stratum))


def _resolve(value: Any, bound: dict[str, Fact], vocab: Vocabulary, typed: bool) -> Any:
    if isinstance(value, Ref):
        return bound[value.alias][value.field]

    def lookup(alias: str, field_name: str):
        fact = bound[alias]
        spec = vocab.types[fact.type].fields[field_name]
        return fact[field_name], vocab.enums.get(spec.enum or "")

    return fill(value, lookup, typed)


_PROGRAMS: dict[tuple[str, str], Any] = {}  # (engine, fingerprint) -> the backend's program


def program_for(compiled: CompiledRuleBase, vocab: Vocabulary) -> Any:
    """The rule base registered on its engine (once per process)."""
    key = (compiled.engine, compiled.fingerprint)
    program = _PROGRAMS.get(key)
    if program is None:
        program = _PROGRAMS[key] = load_backend(compiled.engine).Program(compiled, vocab)
    return program


def run(compiled: CompiledRuleBase, vocab: Vocabulary, facts: list[Fact], *,
        max_firings: int = DEFAULT_MAX_FIRINGS, max_depth: int = DEFAULT_MAX_DEPTH,
        program: Any = None, readings: dict[str, Reading] | None = None) -> RunResult:
    """Forward-chain `facts` through the rule base, stratum by stratum, on the engine the
    rule base was compiled for: on `program` (the rule base on its backend) if given, else
    on the one registered for the process (program_for). `readings`: the texts of the facts
    already read (text_reader.py), by text; the others are read here."""
    program = program if program is not None else program_for(compiled, vocab)
    state = _Run(compiled, vocab, facts, max_firings, max_depth)
    state.run_text_rules(readings)
    state.queue.clear()  # text facts are in the store: every stratum asserts the store first
    for stratum_index, partitions in enumerate(compiled.strata):
        state.stratum = stratum_index
        consumes = set().union(*(p.consumes for p in partitions))
        negates = set().union(*(p.negates for p in partitions))
        # (a fact no condition of the stratum admits by its literal tests is not asserted: fact_gates.py)
        positive, negated = compiled.gates[stratum_index] if compiled.gates else ({}, {})
        with program.session(stratum_index) as session:
            snapshot = list(state.store)
            # Shadows of every negated type first: a negated pattern sees the whole stratum input.
            for fact in snapshot:
                if fact.type in negates and passes(negated, fact.type, fact.fields):
                    state.fire_batch(session.assert_shadow(fact))
            state.fire_batch(session.ready())
            for fact in snapshot:
                if fact.type in consumes and passes(positive, fact.type, fact.fields):
                    state.fire_batch(session.assert_fact(fact))
                    if state.stopped():
                        break
            while state.queue and not state.stopped():
                fact = state.queue.popleft()
                if fact.type in consumes and passes(positive, fact.type, fact.fields):
                    state.fire_batch(session.assert_fact(fact))
        state.queue.clear()
        if state.stopped():
            break
    if state.out_of_memory:
        raise MemoryError("a rule action ran out of memory")
    if state.problems:
        raise EngineRunError("a rule action failed: " + "; ".join(state.problems))
    return RunResult(state.store, state.firings, state.truncated, state.problems, compiled.engine)
