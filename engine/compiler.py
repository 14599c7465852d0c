"""Compile rules onto durable-rules rulesets.

What the compiler guarantees (see docs/engine_notes.md):
- stratified negation: a rule that negates a fact type runs in a later stratum than every
  rule producing that type, and negated patterns match *shadow* copies of the facts that
  are asserted before any positive fact, because durable-rules decides `$not` when an
  activation is created and never revisits it;
- every join pattern ends with the always-true `_k` sentinel (engine bug,
  docs/engine_notes.md §4.1); no join on a rule's first pattern (ignored by the engine,
  §4.3); no nested `$or` in a pattern with joins (joins after it are skipped, §4.2) - such
  `in` tests are expanded into one durable rule per value;
- rules are split into rulesets of at most PARTITION_SIZE rules, each checked against the
  engine's fixed tables before registration (limits.py), so that no rule base can hang it.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
from dataclasses import dataclass, field
from typing import Any

from j6doctor.engine.errors import RuleBaseError, RuleBaseErrors
from j6doctor.engine.fact_gates import Gates, gates_of
from j6doctor.engine.rule_model import Condition, Ref, Rule, Test
from j6doctor.engine.text_rules import CompiledTextRule, fields_read
from j6doctor.engine.vocabulary import Vocabulary

PARTITION_SIZE = 200
START_TYPE = "__start"  # one per diagnosis and ruleset: makes delete_state safe (docs/engine_notes.md §5.2)
READY_TYPE = "__ready"  # asserted after the shadows: triggers rules that only negate
SHADOW_PREFIX = "~"
_OPS = {"ne": "$neq", "lt": "$lt", "le": "$lte", "gt": "$gt", "ge": "$gte"}


@dataclass
class CompiledRule:
    """One rule (or one expansion of its `in` alternatives) as an engine definition."""

    key: str  # durable rule name
    rule: Rule
    positive_aliases: list[tuple[str, int]]  # durable alias -> index of the condition in rule.when
    definition: dict[str, Any]
    # the definition as the engine's text, made once at compile time by the backend's
    # prepare() and kept in the rule-base cache (registering then encodes nothing)
    encoded: str = ""


@dataclass
class Partition:
    """The rules of one stratum that share fact types: registered as one engine ruleset."""

    name: str
    stratum: int
    rules: list[CompiledRule]
    consumes: set[str] = field(default_factory=set)  # types matched by positive patterns
    negates: set[str] = field(default_factory=set)  # types matched by negated patterns

    def definition(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "__start": {"all": [{"m": {"type": START_TYPE}}], "run": f"{self.name}:__start"}
        }
        for crule in self.rules:
            body = dict(crule.definition)
            body["run"] = f"{self.name}:{crule.key}"
            out[crule.key] = body
        return out


@dataclass
class CompiledRuleBase:
    """Every rule compiled: text rules first, then the strata in order."""

    fingerprint: str
    rules: list[Rule]
    strata: list[list[Partition]]
    stratum_of: dict[str, int]
    text_rules: list[CompiledTextRule] = field(default_factory=list)  # run before the strata
    engine: str = "durable"  # the backend that runs it (backends.py)
    # rules whose `in` alternatives make too many durable-rules rules (not expanded)
    expansion_errors: list[RuleBaseError] = field(default_factory=list)
    # each rule's negated conditions in words, as every firing records them (runtime.py)
    absent_words: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # fact type → the fields the text rules read of it (text_rules.fields_read)
    text_fields: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # each stratum's gates, (positive, negated): the facts its rules could match at all (fact_gates.py)
    gates: list[tuple[Gates, Gates]] = field(default_factory=list)

    def partitions(self) -> list[Partition]:
        return [p for stratum in self.strata for p in stratum]


def stratify(rules: list[Rule]) -> dict[str, int]:
    """Assign each rule a stratum; raise when negation is recursive."""
    producers: dict[str, list[Rule]] = {}
    for rule in rules:
        for type_name in rule.produces():
            producers.setdefault(type_name, []).append(rule)
    level = {rule.id: 0 for rule in rules}
    limit = len(rules) + 1
    for _ in range(limit + 1):
        changed = False
        for rule in rules:
            need = 0
            for type_name in rule.consumes():
                for producer in producers.get(type_name, ()):
                    need = max(need, level[producer.id])
            for type_name in rule.negates():
                for producer in producers.get(type_name, ()):
                    need = max(need, level[producer.id] + 1)
            if need > level[rule.id]:
                level[rule.id] = need
                changed = True
        if not changed:
            return level
        if max(level.values()) > limit:
            break
    raise RuleBaseErrors([_negation_cycle(rules, producers)])


def _negation_cycle(rules: list[Rule], producers: dict[str, list[Rule]]) -> RuleBaseError:
    """The error of a rule base whose negation is recursive: one cycle, rule by rule, reported
    at the rule of the cycle loaded last (the pack rule, or the override, that closed it)."""
    place = {rule.id: (bool(rule.overrides), index) for index, rule in enumerate(rules)}
    found = []
    for rule in rules:
        for negated in sorted(rule.negates()):
            for producer in producers.get(negated, ()):
                path = _dependency_path(producer, rule, producers)
                if path is not None:
                    found.append((rule, negated, path))
    rule, negated, path = max(found, key=lambda c: max(place[r.id] for r in [c[0], *(p for p, _ in c[2])]))
    blamed = max([rule, *(p for p, _ in path)], key=lambda r: place[r.id])
    text = f"{rule.id} ({_at(rule)}) negates {negated!r}"
    for concluder, read in path:
        who = f"{rule.id} itself" if concluder is rule else f"{concluder.id} ({_at(concluder)})"
        text += f", which {who} concludes" + (f"; it reads {read!r}" if read is not None else "")
    return RuleBaseError(
        f"negation through a cycle: {text}: whether a rule of the cycle holds would depend on its own "
        "conclusion", file=blamed.file, line=blamed.line, rule_id=blamed.id, field="when",
        hint="a rule may only say `not: <type>` of types that do not depend on what it concludes; remove the "
             "`not:` or the condition that closes the cycle")


def _dependency_path(start: Rule, goal: Rule, producers: dict[str, list[Rule]]) -> list[tuple[Rule, str | None]] | None:
    """Rules from `start` to `goal`, each reading (or negating) a type the next concludes:
    [(start, type it reads), ..., (goal, None)]; None when `start` does not depend on `goal`."""
    parents: dict[str, tuple[Rule, str] | None] = {start.id: None}
    queue = [start]
    while queue:
        rule = queue.pop(0)
        if rule.id == goal.id:
            path: list[tuple[Rule, str | None]] = [(goal, None)]
            while parents[path[0][0].id] is not None:
                prev, read = parents[path[0][0].id]  # type: ignore[misc]
                path.insert(0, (prev, read))
            return path
        for read in sorted(rule.consumes() | rule.negates()):
            for producer in producers.get(read, ()):
                if producer.id not in parents:
                    parents[producer.id] = (rule, read)
                    queue.append(producer)
    return None


def _at(rule: Rule) -> str:
    return f"{rule.file}:{rule.line}" if rule.line else rule.file


def _equals(name: str, value: Any) -> dict:
    """`field == value`; null means the field is empty, which the engine sees as absent
    (Fact.engine_payload leaves empty fields out)."""
    return {"$nex": {name: 1}} if value is None else {name: value}


def _one(tests: list[dict]) -> dict:
    return tests[0] if len(tests) == 1 else {"$and": tests}


def _alternatives(test: Test, nullable: bool) -> list[list[dict]] | None:
    """The tests that need a disjunction, as alternatives (each a list of tests that must
    all hold); None for a test that is one plain engine test. An empty field equals only
    null, differs from every value and is in no list: so `ne` / `not_in` on a field that
    can be empty also hold when it is absent."""
    name = test.field
    if test.op == "in" and len(test.value) > 1:
        return [[_equals(name, v)] for v in test.value]
    if test.op == "ne" and test.value is not None and nullable:
        return [[{"$nex": {name: 1}}], [{"$neq": {name: test.value}}]]
    if test.op == "not_in" and None not in test.value and nullable:
        return [[{"$nex": {name: 1}}], [{"$neq": {name: v}} for v in test.value]]
    return None


def _literal_tests(tests: list[Test], nullable: set[str]) -> tuple[list[dict], list[Test]]:
    """Compile the constant tests; return them and the tests that need alternatives."""
    eq: list[dict] = []
    other: list[dict] = []
    pending: list[Test] = []
    for test in tests:
        if _alternatives(test, test.field in nullable) is not None:
            pending.append(test)
        elif test.op in ("eq", "in"):
            value = test.value[0] if test.op == "in" else test.value
            (eq if value is not None else other).append(_equals(test.field, value))
        elif test.op == "ne" and test.value is None:
            other.append({"$ex": {test.field: 1}})
        elif test.op in _OPS:
            other.append({_OPS[test.op]: {test.field: test.value}})
        elif test.op == "contains":
            # durable-rules' own regex dialect, anchored and case-insensitive; the loader
            # admits only letters, digits, '_' and spaces, which need no escaping there.
            other.append({"$imt": {test.field: f".*{test.value}.*"}})
        elif test.op == "not_in":
            if None in test.value:
                other.append({"$ex": {test.field: 1}})
            other.extend({"$neq": {test.field: v}} for v in test.value if v is not None)
    return eq + other, pending


def _join_test(test: Test, alias_of: dict[str, str]) -> dict:
    ref: Ref = test.value
    operand = {alias_of[ref.alias]: ref.field}
    if test.op == "eq":
        return {test.field: operand}
    return {_OPS[test.op]: {test.field: operand}}


def _pattern(cond: Condition, alias_of: dict[str, str], first_alias: str | None,
             choice: dict[str, int], nullable: set[str], referenced: set[str]) -> list[dict]:
    """One condition's tests. `nullable`: its fields that can be empty; `referenced`: its
    fields other conditions compare with. durable-rules fails on a comparison with an absent
    field (errors 311 / 312), so both sides of such a join must exist: a comparison with an
    empty field never holds."""
    type_value = SHADOW_PREFIX + cond.type if cond.negated else cond.type
    literal = [t for t in cond.tests if not t.is_join]
    joins = [t for t in cond.tests if t.is_join]
    compiled, pending = _literal_tests(literal, nullable)
    for test in pending:
        options = _alternatives(test, test.field in nullable) or []
        key = _choice_key(cond, test)
        if key in choice:
            compiled.extend(options[choice[key]])
        else:
            compiled.append({"$or": [_one(o) for o in options]})
    guards = sorted({t.field for t in joins if t.field in nullable} | (referenced & nullable))
    compiled += [{"$ex": {name: 1}} for name in guards]
    tests = [{"type": type_value}] + compiled
    tests += [_join_test(t, alias_of) for t in joins]
    if joins and first_alias:
        tests.append({"$eq": {"_k": {first_alias: "_k"}}})
    return tests


def _choice_key(cond: Condition, test: Test) -> str:
    return f"{id(cond)}:{test.field}"


# Tests with alternatives (`in` lists; `ne` / `not_in` on fields that can be empty) in
# conditions that also join are expanded into one engine rule per choice; their product is
# bounded before anything is built (4 lists of 30 values would be 810,000).
MAX_EXPANSIONS = 64


def _axes(rule: Rule, vocab: Vocabulary) -> list[list[tuple[str, int]]]:
    axes = []
    for cond in rule.when:
        if any(t.is_join for t in cond.tests):
            nullable = _nullable(vocab, cond.type)
            for test in cond.tests:
                if not test.is_join:
                    options = _alternatives(test, test.field in nullable)
                    if options is not None:
                        axes.append([(_choice_key(cond, test), n) for n in range(len(options))])
    return axes


def expansion_count(rule: Rule, vocab: Vocabulary) -> int:
    count = 1
    for axis in _axes(rule, vocab):
        count *= len(axis)
    return count


def _expansions(rule: Rule, vocab: Vocabulary) -> list[dict[str, int]]:
    """Alternatives inside patterns that also join are expanded: one choice per option."""
    axes = _axes(rule, vocab)
    if not axes:
        return [{}]
    return [dict(combo) for combo in itertools.product(*axes)]


def _nullable(vocab: Vocabulary, type_name: str) -> set[str]:
    """Fields of a fact type that can be empty: neither required nor defaulted."""
    ftype = vocab.types.get(type_name)
    if ftype is None:
        return set()
    return {name for name, spec in ftype.fields.items() if not spec.required and spec.default is None}


def compile_rule(rule: Rule, base_key: str, vocab: Vocabulary) -> list[CompiledRule]:
    out = []
    referenced = rule.referenced()
    for n, choice in enumerate(_expansions(rule, vocab)):
        alias_of: dict[str, str] = {}
        patterns: list[dict] = []
        positive_aliases: list[tuple[str, int]] = []
        first_alias: str | None = None
        if not rule.positive:
            patterns.append({"ready": {"type": READY_TYPE}})
            first_alias = "ready"
        # Positive patterns first: a negated pattern may only refer to facts bound before it.
        ordered = [(i, c) for i, c in enumerate(rule.when) if not c.negated]
        ordered += [(i, c) for i, c in enumerate(rule.when) if c.negated]
        for index, cond in ordered:
            tests = _pattern(cond, alias_of, first_alias, choice, _nullable(vocab, cond.type),
                             referenced.get(cond.alias, set()) if cond.alias else set())
            expr = tests[0] if len(tests) == 1 else {"$and": tests}
            if cond.negated:
                patterns.append({f"n{index}$not": expr})
            else:
                alias = f"p{index}"
                patterns.append({alias: expr})
                positive_aliases.append((alias, index))
                if cond.alias:
                    alias_of[cond.alias] = alias
                if first_alias is None:
                    first_alias = alias
        definition: dict[str, Any] = {"all": patterns}
        if rule.priority:
            definition["pri"] = int(rule.priority)
        key = base_key if n == 0 else f"{base_key}x{n}"
        out.append(CompiledRule(key, rule, positive_aliases, definition))
    return out


def _fingerprint(by_stratum: dict[int, list[CompiledRule]], text_rules: list[Rule], vocab: Vocabulary) -> str:
    """A hash of everything a run's output depends on: the conditions, and what each rule
    concludes and where it is written (derived facts carry the rule's file and line)."""
    definition_text = json.dumps(
        {"strata": {k: [(c.key, c.rule.id, c.definition, c.rule.file, c.rule.line, c.rule.overrides,
                         [(t.type, sorted((f, str(v)) for f, v in t.fields.items())) for t in c.rule.then])
                        for c in v] for k, v in sorted(by_stratum.items())},
         "text": [(r.id, r.file, r.line, r.text.reads, r.text.sources,  # type: ignore[union-attr]
                   [p.source for p in r.text.unless], r.text.unread,  # type: ignore[union-attr]
                   r.text.context, r.text.every, sorted(r.text.groups.items()),  # type: ignore[union-attr]
                   [(c.type, sorted((k, str(v)) for k, v in c.fields.items())) for c in r.then])
                  for r in text_rules],
         # the words text rules read (the vocabulary's own hash of its data: a repr of its
         # sets would change with the process's hash seed)
         "text_context": (vocab.fingerprint or repr(sorted(vocab.text.terms))) if text_rules else ""},
        sort_keys=True, ensure_ascii=False,
    )
    return hashlib.sha256(definition_text.encode()).hexdigest()[:12]


def _partitions(compiled: list[CompiledRule], fingerprint: str, stratum_index: int) -> list[Partition]:
    """A stratum's rules in engine rulesets of at most PARTITION_SIZE rules, each folder's
    (the bundle's, each pack's) in rulesets of its own: a pack's rules are checked against
    the engine's limits together, wherever the bundle's count ends."""
    by_folder: dict[str, list[CompiledRule]] = {}  # (in the order the folders first come; a pack's
    for crule in compiled:                           # override of a bundled rule goes with its pack)
        by_folder.setdefault(crule.rule.folder or os.path.dirname(str(crule.rule.file)), []).append(crule)
    chunks = [rules[at:at + PARTITION_SIZE] for rules in by_folder.values() for at in range(0, len(rules), PARTITION_SIZE)]
    parts = []
    for number, chunk in enumerate(chunks):
        part = Partition(f"j6d{fingerprint}s{stratum_index}p{number}", stratum_index, chunk)
        for crule in chunk:
            part.consumes |= crule.rule.consumes()
            part.negates |= crule.rule.negates()
        parts.append(part)
    return parts


def _stratum_gates(partitions: list[Partition]) -> tuple[Gates, Gates]:
    """The gates of a stratum's positive and of its negated conditions (fact_gates.py)."""
    rules = [crule.rule for part in partitions for crule in part.rules]
    return (gates_of(c for rule in rules for c in rule.positive),
            gates_of(c for rule in rules for c in rule.negative))


def compile_rules(rules: list[Rule], vocab: Vocabulary, engine: str | None = None) -> CompiledRuleBase:
    """Compile and check a whole rule base for an engine (backends.resolve: the default one
    when None). Raises RuleBaseErrors, never hangs.

    Text rules are not compiled onto the engine: they run first, in Python (text_rules.py);
    those that list what the others left unread (`unread:`) run after the others.
    The strata, and the durable-rules partitions within them, are built for every engine:
    they are the rule base's structure; each backend checks the rule base against its own
    bounds."""
    from j6doctor.engine.backends import load_backend, resolve

    engine = resolve(engine)
    text_rules = sorted((r for r in rules if r.text is not None), key=lambda r: bool(r.text.unread))  # type: ignore[union-attr]
    fact_rules = [r for r in rules if r.text is None]
    level = stratify(fact_rules)
    too_many = [RuleBaseError(
        f"its `in` lists (and `ne` / `not_in` on fields that can be empty) in conditions that compare "
        f"with other facts make {expansion_count(r, vocab)} engine rules (limit {MAX_EXPANSIONS})",
        file=r.file, line=r.line, rule_id=r.id, field="when",
        hint="move the `in` test to a condition without refs, or split the rule")
        for r in fact_rules if expansion_count(r, vocab) > MAX_EXPANSIONS]
    unexpanded = {e.rule_id for e in too_many}
    by_stratum: dict[int, list[CompiledRule]] = {}
    for number, rule in enumerate(rules):
        if rule.text is None:
            if rule.id in unexpanded:  # kept in the structure without its durable-rules patterns
                compiled_rules = [CompiledRule(f"r{number}", rule, [], {"all": []})]
            else:
                compiled_rules = compile_rule(rule, f"r{number}", vocab)
            by_stratum.setdefault(level[rule.id], []).extend(compiled_rules)
    fingerprint = _fingerprint(by_stratum, text_rules, vocab)
    strata = [_partitions(by_stratum[key], fingerprint, stratum_index)
              for stratum_index, key in enumerate(sorted(by_stratum))]
    stratum_of = {rule.id: sorted(by_stratum).index(level[rule.id]) for rule in fact_rules}
    compiled_text_rules = [CompiledTextRule(r) for r in text_rules]
    result = CompiledRuleBase(fingerprint, rules, strata, stratum_of, compiled_text_rules, engine, too_many,
                              {r.id: tuple(c.describe() for c in r.negative) for r in fact_rules},
                              fields_read(compiled_text_rules), [_stratum_gates(parts) for parts in strata])
    backend = load_backend(engine)
    backend.prepare(result)
    errors = backend.check(result, vocab)
    if errors:
        raise RuleBaseErrors(errors)
    return result
