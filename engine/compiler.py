"""Compile rules onto durable-rules rulesets.

What the compiler guarantees (see the research notes in shared/engine/):
- stratified negation: a rule that negates a fact type runs in a later stratum than every
  rule producing that type, and negated patterns match *shadow* copies of the facts that
  are asserted before any positive fact, because durable-rules decides `$not` when an
  activation is created and never revisits it;
- every join pattern ends with the always-true `_k` sentinel (engine bug, NOTES §5.1);
  no join on a rule's first pattern (ignored by the engine, §5.3); no nested `$or` in a
  pattern with joins (joins after it are skipped, §5.2) - such `in` tests are expanded
  into one durable rule per value;
- rules are split into rulesets of at most PARTITION_SIZE rules, each checked against the
  engine's fixed tables before registration (limits.py), so that no rule base can hang it.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from dataclasses import dataclass, field
from typing import Any

from .errors import RuleBaseError, RuleBaseErrors
from .limits import check_partition
from .rule_model import Condition, Ref, Rule, Test
from .text_rules import CompiledTextRule
from .vocabulary import Vocabulary

PARTITION_SIZE = 200
START_TYPE = "__start"  # one per diagnosis and ruleset: makes delete_state safe (NOTES §5.4)
READY_TYPE = "__ready"  # asserted after the shadows: triggers rules that only negate
SHADOW_PREFIX = "~"
_OPS = {"ne": "$neq", "lt": "$lt", "le": "$lte", "gt": "$gt", "ge": "$gte"}


@dataclass
class CompiledRule:
    key: str  # durable rule name
    rule: Rule
    positive_aliases: list[tuple[str, int]]  # durable alias -> index of the condition in rule.when
    definition: dict[str, Any]


@dataclass
class Partition:
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
    fingerprint: str
    rules: list[Rule]
    strata: list[list[Partition]]
    stratum_of: dict[str, int]
    text_rules: list[CompiledTextRule] = field(default_factory=list)  # run before the strata

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
    looping = sorted(r for r, lv in level.items() if lv > len(rules) // 2)
    first = next(r for r in rules if r.id == looping[0])
    raise RuleBaseErrors([RuleBaseError(
        "negation through a cycle: these rules negate facts that depend on their own "
        f"conclusions: {', '.join(looping[:8])}",
        file=first.file, line=first.line, rule_id=first.id, field="when",
        hint="a rule may only say `not: <type>` of types that do not depend on what it concludes",
    )])


def _literal_tests(tests: list[Test]) -> tuple[list[dict], list[Test]]:
    """Compile the constant tests; return them and the `in` tests left for expansion."""
    eq: list[dict] = []
    other: list[dict] = []
    pending_in: list[Test] = []
    for test in tests:
        if test.op == "eq":
            eq.append({test.field: test.value})
        elif test.op in _OPS:
            other.append({_OPS[test.op]: {test.field: test.value}})
        elif test.op == "contains":
            # durable-rules' own regex dialect, anchored and case-insensitive; the loader
            # admits only letters, digits, '_' and spaces, which need no escaping there.
            other.append({"$imt": {test.field: f".*{test.value}.*"}})
        elif test.op == "not_in":
            other.extend({"$neq": {test.field: v}} for v in test.value)
        elif test.op == "in":
            if len(test.value) == 1:
                eq.append({test.field: test.value[0]})
            else:
                pending_in.append(test)
    return eq + other, pending_in


def _join_test(test: Test, alias_of: dict[str, str]) -> dict:
    ref: Ref = test.value
    operand = {alias_of[ref.alias]: ref.field}
    if test.op == "eq":
        return {test.field: operand}
    return {_OPS[test.op]: {test.field: operand}}


def _pattern(cond: Condition, alias_of: dict[str, str], first_alias: str | None,
             in_choice: dict[str, Any]) -> tuple[list[dict], bool]:
    type_value = SHADOW_PREFIX + cond.type if cond.negated else cond.type
    literal = [t for t in cond.tests if not t.is_join]
    joins = [t for t in cond.tests if t.is_join]
    compiled, pending_in = _literal_tests(literal)
    for test in pending_in:
        key = _choice_key(cond, test)
        if key in in_choice:
            compiled.append({test.field: in_choice[key]})
        else:
            compiled.append({"$or": [{test.field: v} for v in test.value]})
    tests = [{"type": type_value}] + compiled
    tests += [_join_test(t, alias_of) for t in joins]
    if joins and first_alias:
        tests.append({"$eq": {"_k": {first_alias: "_k"}}})
    return tests, bool(joins)


def _choice_key(cond: Condition, test: Test) -> str:
    return f"{id(cond)}:{test.field}"


# `in` lists in conditions that also join are expanded into one engine rule per choice;
# their product is bounded before anything is built (4 lists of 30 values would be 810,000).
MAX_EXPANSIONS = 64


def expansion_count(rule: Rule) -> int:
    count = 1
    for cond in rule.when:
        if any(t.is_join for t in cond.tests):
            for test in cond.tests:
                if test.op == "in" and len(test.value) > 1:
                    count *= len(test.value)
    return count


def _expansions(rule: Rule) -> list[dict[str, Any]]:
    """`in` tests inside patterns that also join are expanded: one choice per value."""
    axes = []
    for cond in rule.when:
        if any(t.is_join for t in cond.tests):
            for test in cond.tests:
                if test.op == "in" and len(test.value) > 1:
                    axes.append([(_choice_key(cond, test), v) for v in test.value])
    if not axes:
        return [{}]
    return [dict(combo) for combo in itertools.product(*axes)]


def compile_rule(rule: Rule, base_key: str) -> list[CompiledRule]:
    out = []
    for n, choice in enumerate(_expansions(rule)):
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
            tests, _ = _pattern(cond, alias_of, first_alias, choice)
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


def compile_rules(rules: list[Rule], vocab: Vocabulary) -> CompiledRuleBase:
    """Compile and check a whole rule base. Raises RuleBaseErrors, never hangs.

    Text rules are not compiled onto the engine: they run first, in Python (text_rules.py)."""
    text_rules = [r for r in rules if r.text is not None]
    fact_rules = [r for r in rules if r.text is None]
    level = stratify(fact_rules)
    too_many = [RuleBaseError(
        f"its `in` lists in conditions that compare with other facts make {expansion_count(r)} engine rules "
        f"(limit {MAX_EXPANSIONS})", file=r.file, line=r.line, rule_id=r.id, field="when",
        hint="move the `in` test to a condition without refs, or split the rule")
        for r in fact_rules if expansion_count(r) > MAX_EXPANSIONS]
    if too_many:
        raise RuleBaseErrors(too_many)
    by_stratum: dict[int, list[CompiledRule]] = {}
    for number, rule in enumerate(rules):
        if rule.text is None:
            by_stratum.setdefault(level[rule.id], []).extend(compile_rule(rule, f"r{number}"))
    definition_text = json.dumps(
        {"strata": {k: [(c.key, c.rule.id, c.definition) for c in v] for k, v in sorted(by_stratum.items())},
         "text": [(r.id, r.text.reads, r.text.match, r.text.unless,  # type: ignore[union-attr]
                   [(c.type, sorted((k, str(v)) for k, v in c.fields.items())) for c in r.then])
                  for r in text_rules]},
        sort_keys=True, ensure_ascii=False,
    )
    fingerprint = hashlib.sha256(definition_text.encode()).hexdigest()[:12]
    strata: list[list[Partition]] = []
    errors: list[RuleBaseError] = []
    for stratum_index, key in enumerate(sorted(by_stratum)):
        compiled = by_stratum[key]
        parts = []
        for chunk_index in range(0, len(compiled), PARTITION_SIZE):
            chunk = compiled[chunk_index:chunk_index + PARTITION_SIZE]
            part = Partition(f"j6d{fingerprint}s{stratum_index}p{chunk_index // PARTITION_SIZE}",
                             stratum_index, chunk)
            for crule in chunk:
                part.consumes |= crule.rule.consumes()
                part.negates |= crule.rule.negates()
            errors.extend(check_partition(part, vocab))
            parts.append(part)
        strata.append(parts)
    if errors:
        raise RuleBaseErrors(errors)
    stratum_of = {rule.id: sorted(by_stratum).index(level[rule.id]) for rule in fact_rules}
    return CompiledRuleBase(fingerprint, rules, strata, stratum_of,
                            [CompiledTextRule.of(r) for r in text_rules])
