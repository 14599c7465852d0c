"""Explanations over a finished run: the derivation tree of a fact, and why a conclusion
was NOT reached (which rules could reach it, which of their conditions failed, and what
input would change that).

The run's conclusions come from the engine (durable-rules or CLIPS); this module only
re-reads its facts. The small condition matcher here mirrors the compiled semantics
(equality, ne/lt/le/gt/ge, in/not_in, contains, joins to earlier aliases) for the purpose
of explaining.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from j6doctor.engine.facts import Fact
from j6doctor.engine.rule_model import Condition, Ref, Rule, Test
from j6doctor.engine.runtime import RunResult

MAX_DEPTH = 6
MAX_PRODUCERS = 6


# ---------------------------------------------------------------------------- derivation trees

def derivation_tree(result: RunResult, rules: dict[str, Rule], fact_id: str,
                    seen: set[str] | None = None) -> dict[str, Any]:
    """A fact with everything it was derived from, down to input facts and their sources."""
    seen = set() if seen is None else seen
    fact = result.fact(fact_id)
    node: dict[str, Any] = {"fact": fact.id, "type": fact.type, "fields": dict(fact.fields)}
    if fact.id in seen:
        node["see_above"] = True
        return node
    seen.add(fact.id)
    if fact.derivation is None:
        node["source"] = fact.source.as_dict() if fact.source else {}
        return node
    d = fact.derivation
    rule = rules.get(d.rule)
    node.update({"rule": d.rule, "rule_title": rule.title if rule else "", "rule_file": d.rule_file,
                 "rule_line": d.rule_line})
    if rule is not None and rule.overrides:
        node["overrides"] = rule.overrides
    if d.absent:
        node["absent"] = list(d.absent)
    node["premises"] = [derivation_tree(result, rules, p, seen) for p in d.premises]
    return node


# ---------------------------------------------------------------------------- matching

def _test_holds(test: Test, fact: Fact, bound: dict[str, Fact]) -> bool | None:
    """True / False, or None when the test refers to an alias that is not bound."""
    value = fact.fields.get(test.field)
    operand = test.value
    if isinstance(operand, Ref):
        if operand.alias not in bound:
            return None
        operand = bound[operand.alias].fields.get(operand.field)
    op = test.op
    if op == "eq":
        return value == operand
    if op == "ne":
        return value != operand
    if op == "in":
        return value in operand
    if op == "not_in":
        return value not in operand
    if op == "contains":
        return isinstance(value, str) and str(operand).lower() in value.lower()
    if value is None or operand is None:
        return False
    try:
        return {"lt": value < operand, "le": value <= operand, "gt": value > operand, "ge": value >= operand}[op]
    except TypeError:
        return False


def matching_facts(cond: Condition, facts: list[Fact], bound: dict[str, Fact],
                   extra: tuple[Test, ...] = ()) -> list[Fact]:
    out = []
    for fact in facts:
        if fact.type != cond.type:
            continue
        if all(_test_holds(t, fact, bound) is not False for t in cond.tests + extra):
            out.append(fact)
    return out


def satisfying_binding(conditions: tuple[Condition, ...], facts: list[Fact],
                       pushed: dict[str, tuple[Test, ...]], limit: int = 20_000) -> dict[str, Fact] | None:
    """Facts for the aliases under which every condition holds, as the engine matches them
    (any combination, not only the first fact of each type), or None: none found within
    `limit` candidate facts. A `not:` comparing with an alias no condition binds counts as
    holding, as check_rule reports it."""
    tried = 0

    def search(at: int, bound: dict[str, Fact]) -> dict[str, Fact] | None:
        nonlocal tried
        if at == len(conditions):
            return dict(bound)
        cond = conditions[at]
        found = matching_facts(cond, facts, bound, pushed.get(cond.alias or "", ()))
        if cond.negated:
            unbound = any(isinstance(t.value, Ref) and t.value.alias not in bound for t in cond.tests)
            return search(at + 1, bound) if unbound or not found else None
        for fact in found if cond.alias else found[:1]:  # without an alias one match is as good as any
            tried += 1
            if tried > limit:
                return None
            if cond.alias:
                bound[cond.alias] = fact
            result = search(at + 1, bound)
            if result is not None:
                return result
            bound.pop(cond.alias or "", None)
        return None

    return search(0, {})


# ---------------------------------------------------------------------------- why not

@dataclass
class ConditionCheck:
    condition: str
    negated: bool
    satisfied: bool
    facts: list[str] = field(default_factory=list)
    unknown: bool = False  # a `not:` that compares with a fact an earlier failed condition did not bind  # matching facts (or, for `not`, the blockers)
    producers: list["RuleCheck"] = field(default_factory=list)  # for unmet derived conditions
    needs_input: str = ""  # for unmet input conditions: the input that would satisfy it
    needs: Condition | None = None  # ... as a condition (its literal tests, simplified)
    written: str = ""  # ... as the user would write it (filled by the caller, which knows the case)
    blocked_by: list[str] = field(default_factory=list)  # for a `not:` that fails: where its blockers came from
    instead: list[str] = field(default_factory=list)  # for an unmet input condition: what the inputs say instead
    pattern: Condition | None = field(default=None, compare=False)  # the condition checked (with pushed tests)
    words: str = ""  # the condition in the user's words (filled by the caller, which knows the vocabulary)

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"condition": self.condition, "negated": self.negated, "satisfied": self.satisfied}
        if self.words:
            out["words"] = self.words
        if self.unknown:
            out["unknown"] = True
        if self.facts:
            out["facts"] = self.facts
        if self.producers:
            out["producers"] = [p.as_dict() for p in self.producers]
        if self.needs_input:
            out["needs_input"] = self.needs_input
        if self.written:
            out["written"] = self.written
        if self.blocked_by:
            out["blocked_by"] = self.blocked_by
        if self.instead:
            out["instead"] = self.instead
        return out


@dataclass
class RuleCheck:
    rule: str
    title: str
    file: str
    line: int | None
    fired: bool
    conditions: list[ConditionCheck]

    def as_dict(self) -> dict[str, Any]:
        return {"rule": self.rule, "title": self.title, "file": self.file, "line": self.line,
                "fired": self.fired, "conditions": [c.as_dict() for c in self.conditions]}


def _describe(cond: Condition, extra: tuple[Test, ...]) -> str:
    return Condition(cond.type, cond.tests + extra, cond.negated, cond.alias, cond.line).describe()


def entries_of(cond: Condition, facts: list[Fact], identity: tuple[str, ...]) -> list[Fact]:
    """The facts of the condition's type that agree with it on the `identity` fields (the
    same case entry, results.qat_bc), whatever else they say: what the inputs say instead."""
    tests = tuple(t for t in cond.tests if t.field in identity and not isinstance(t.value, Ref))
    return matching_facts(Condition(cond.type, tests), facts, {}) if tests else []


def producers_of(rules: list[Rule], type_name: str, wanted: tuple[Test, ...]) -> list[tuple[Rule, dict[str, tuple[Test, ...]]]]:
    """Rules that can derive a `type_name` fact meeting the literal tests in `wanted`, with
    the extra tests that pushes onto their conditions (a conclusion field that copies a
    bound fact's field carries the requirement over to that fact)."""
    found = []
    for rule in rules:
        for concl in rule.then:
            if concl.type != type_name:
                continue
            pushed: dict[str, list[Test]] = {}
            possible = True
            for test in wanted:
                if isinstance(test.value, Ref):
                    continue
                value = concl.fields.get(test.field)
                if isinstance(value, Ref):
                    pushed.setdefault(value.alias, []).append(Test(value.field, test.op, test.value))
                elif isinstance(value, str) and "${" in value:
                    continue  # a text template may produce anything
                elif not _test_holds(test, _Literal(test.field, value), {}):
                    possible = False
            if possible and _compatible(rule, pushed):
                found.append((rule, {k: tuple(v) for k, v in pushed.items()}))
                break
    return found


def _compatible(rule: Rule, pushed: dict[str, list[Test]]) -> bool:
    """A requirement pushed onto a condition that its own literal tests exclude (e.g. stage
    convert onto `stage in [compile, board]`) means the rule cannot produce it."""
    for cond in rule.when:
        for test in pushed.get(cond.alias or "", ()):
            if test.op != "eq":
                continue
            probe = _Literal(test.field, test.value)
            for own in cond.tests:
                if own.field == test.field and not isinstance(own.value, Ref) and not _test_holds(own, probe, {}):
                    return False
    return True


class _Literal(Fact):
    def __init__(self, name: str, value: Any):
        super().__init__("", "", {name: value})


def check_rule(rule: Rule, result: RunResult, rules: list[Rule], vocab_input_types: set[str],
               pushed: dict[str, tuple[Test, ...]], depth: int, visiting: set[str]) -> RuleCheck:
    facts = result.facts
    bound: dict[str, Fact] = {}
    checks: list[ConditionCheck] = []
    if rule.text is not None:  # a text rule: did any clause of the texts it reads match?
        fired_on = [f for firing in result.firings if firing.rule == rule.id for f in firing.premises]
        reads = "、".join(f"{t}.{f}" for t, f in rule.text.reads)
        text = f"{reads} 中有子句匹配 {' | '.join(rule.text.match)}"
        check = ConditionCheck(text, False, bool(fired_on), sorted(set(fired_on)))
        if not fired_on:
            check.needs_input = f"{reads} 的描述中写明「{rule.title}」所说的情况（同一句中不含否定）"
        checks.append(check)
    # the facts under which the rule holds, where some do: the conditions are then shown with
    # them (the first fact of each type may fail a later join that another one passes)
    preferred = satisfying_binding(rule.when, facts, pushed) or {}
    for cond in rule.when:
        extra = pushed.get(cond.alias or "", ())
        matches = matching_facts(cond, facts, bound, extra)
        text = _describe(cond, extra)
        pattern = Condition(cond.type, cond.tests + extra, cond.negated, cond.alias, cond.line)
        if cond.negated:
            unbound = any(isinstance(t.value, Ref) and t.value.alias not in bound for t in cond.tests)
            if unbound:
                checks.append(ConditionCheck(text, True, True, [], unknown=True, pattern=pattern))
            else:
                checks.append(ConditionCheck(text, True, not matches, [f.id for f in matches], pattern=pattern))
            continue
        if matches:
            if cond.alias:
                chosen = preferred.get(cond.alias)
                bound[cond.alias] = chosen if chosen is not None and chosen in matches else matches[0]
            checks.append(ConditionCheck(text, False, True, [f.id for f in matches[:5]], pattern=pattern))
            continue
        check = ConditionCheck(text, False, False, pattern=pattern)
        literal = simplified(tuple(t for t in cond.tests + extra if not isinstance(t.value, Ref)))
        if cond.type in vocab_input_types:
            check.needs = Condition(cond.type, literal)
            check.needs_input = check.needs.describe()
        elif depth < MAX_DEPTH:
            for producer, more in producers_of(rules, cond.type, literal)[:MAX_PRODUCERS]:
                if producer.id in visiting:
                    continue
                check.producers.append(check_rule(producer, result, rules, vocab_input_types, more,
                                                  depth + 1, visiting | {producer.id}))
        checks.append(check)
    fired = rule.id in result.fired_rules()
    return RuleCheck(rule.id, rule.title, rule.file, rule.line, fired, checks)


def simplified(tests: tuple[Test, ...]) -> tuple[Test, ...]:
    """The tests without those an equality on the same field already implies
    (`artifact≠float` beside `artifact=quantized_bc`)."""
    equal = {t.field: t.value for t in tests if t.op == "eq"}

    def implied(t: Test) -> bool:
        if t.op == "eq" or t.field not in equal:
            return False
        value = equal[t.field]
        return ((t.op == "ne" and value != t.value) or (t.op == "in" and value in t.value)
                or (t.op == "not_in" and value not in t.value))

    return tuple(t for t in tests if not implied(t))


def walk_checks(checks: list[RuleCheck]):
    """Every condition check, producers' included, depth first."""
    for check in checks:
        for cond in check.conditions:
            yield cond
            yield from walk_checks(cond.producers)


def why_not(result: RunResult, rules: list[Rule], type_name: str, wanted: dict[str, Any],
            input_types: set[str]) -> list[RuleCheck]:
    """For every rule that could derive `type_name` with the field values `wanted`, which of
    its conditions hold on this run's facts and which do not, recursively for derived facts."""
    tests = tuple(Test(k, "eq", v) for k, v in wanted.items())
    return [check_rule(rule, result, rules, input_types, pushed, 0, {rule.id})
            for rule, pushed in producers_of(rules, type_name, tests)]


def inputs_needed(checks: list[RuleCheck]) -> list[dict[str, Any]]:
    """What would let some path of rules fire: input facts to add (`add`) and facts that
    block a `not:` condition (`remove`), each once, in the order met."""
    needed: list[dict[str, Any]] = []

    def walk(check: RuleCheck) -> None:
        for cond in check.conditions:
            if cond.satisfied:
                continue
            if cond.negated:
                item = {"kind": "remove", "condition": cond.condition, "facts": cond.facts, "rule": check.rule,
                        "blocked_by": cond.blocked_by}
            elif cond.needs_input:
                item = {"kind": "add", "condition": cond.written or cond.needs_input, "facts": [], "rule": check.rule,
                        "instead": cond.instead}
            else:
                for producer in cond.producers:
                    walk(producer)
                continue
            if all(n["condition"] != item["condition"] or n["kind"] != item["kind"] for n in needed):
                needed.append(item)

    for check in checks:
        walk(check)
    return needed
