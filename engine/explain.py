"""Explanations over a finished run: the derivation tree of a fact, and why a conclusion
was NOT reached (which rules could reach it, which of their conditions failed, and what
input would change that).

Derivation trees are the provenance the engine's run recorded (runtime.py: the rule and
the premise facts of every derived fact). Whether a rule's conditions hold on the run's
facts, and with which facts, is asked of the same engine (condition_match.py): this module
matches no fact itself, so an explanation cannot contradict the run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from j6doctor.engine.condition_match import FactMatcher, bound_aliases, refers_outside
from j6doctor.engine.rule_model import Condition, Ref, Rule, Test
from j6doctor.engine.runtime import RunResult

if TYPE_CHECKING:
    from j6doctor.engine import RuleBase

MAX_DEPTH = 6
MAX_PRODUCERS = 6
MAX_FACTS_SHOWN = 5  # of the facts meeting a condition


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


# ---------------------------------------------------------------------------- why not

@dataclass
class ConditionCheck:
    condition: str
    negated: bool
    satisfied: bool
    facts: list[str] = field(default_factory=list)  # matching facts (or, for `not`, the blockers)
    unknown: bool = False  # a `not:` that compares with a fact an unmet condition did not bind
    producers: list["RuleCheck"] = field(default_factory=list)  # for unmet derived conditions
    needs_input: str = ""  # for unmet input conditions: the input that would satisfy it
    needs: Condition | None = None  # ... as a condition (its literal tests, simplified)
    written: str = ""  # ... as the user would write it (filled by the caller, which knows the case)
    blocked_by: list[str] = field(default_factory=list)  # for a `not:` that fails: where its blockers came from
    instead: list[str] = field(default_factory=list)  # for an unmet input condition: what the inputs say instead
    instead_facts: list[str] = field(default_factory=list, compare=False)  # ... as fact ids (the same case entry)
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
                elif not test.admits(value):
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
            for own in cond.tests:
                if own.field == test.field and not own.is_join and not own.admits(test.value):
                    return False
    return True


def evaluation_order(rule: Rule) -> list[int]:
    """The rule's conditions in the order the engine joins them (compiler.compile_rule):
    the positive ones first, then the `not:` ones."""
    return ([i for i, c in enumerate(rule.when) if not c.negated]
            + [i for i, c in enumerate(rule.when) if c.negated])


@dataclass
class _Outcome:
    """What the engine said of one condition, asked together with the conditions met before it."""

    state: str  # "met", "unmet" or "unknown"
    facts: list[str] = field(default_factory=list)  # the facts meeting it; for an unmet `not:`, its blockers


Pushed = dict[str, tuple[Test, ...]]  # alias -> tests a wanted conclusion adds to its condition


@dataclass
class _Walk:
    """One rule's conditions being asked of the engine, in its order (evaluation_order)."""

    conds: list[Condition]  # in written order, with the tests pushed onto them
    pending: list[int]  # not asked yet
    met: list[int] = field(default_factory=list)
    outcomes: dict[int, _Outcome] = field(default_factory=dict)
    plan: list[tuple[int, tuple[Condition, ...], tuple[Condition, ...] | None]] = field(default_factory=list)

    def questions(self) -> list[tuple[Condition, ...]]:
        """The next questions, supposing each pending condition is met (each asked with the
        met ones and the pending ones before it): then one engine run answers them all. For
        a `not:`, also the question whose last condition is its positive form: its blockers."""
        self.plan = _plan(self.conds, self.met, self.pending)
        return [q for _, q, _ in self.plan] + [b for _, _, b in self.plan if b is not None]

    def take(self, answers: list, matcher: FactMatcher) -> None:
        """The answers up to the first unmet condition; the ones after it are asked again."""
        blocking = [(index, b) for index, _, b in self.plan if b is not None]
        blockers = {index: (b, a) for (index, b), a in zip(blocking, answers[len(self.plan):])}
        for (index, question, _), answer in zip(self.plan, answers):
            if not question:  # a `not:` comparing with a fact no met condition binds
                self.outcomes[index] = _Outcome("unknown")
            elif answer:
                self.met.append(index)
                facts = [] if self.conds[index].negated else matcher.facts_at(answer, _last_place(question))
                self.outcomes[index] = _Outcome("met", facts[:MAX_FACTS_SHOWN])
            else:
                outcome = self.outcomes[index] = _Outcome("unknown" if answer is None else "unmet")
                if index in blockers:
                    blocker, blocked_by = blockers[index]
                    outcome.facts = matcher.facts_at(blocked_by, _last_place(blocker))
                self.pending = self.pending[self.pending.index(index) + 1:]
                return
        self.pending = []


class Explainer:
    """Why-not answers over one finished run: every condition asked of the engine the run used."""

    def __init__(self, result: RunResult, rules: list[Rule], matcher: FactMatcher, input_types: set[str],
                 identity: dict[str, tuple[str, ...]] | None = None):
        self.result = result
        self.rules = rules
        self.matcher = matcher
        self.input_types = input_types
        self.identity = identity or {}  # input type -> the fields that name one case entry
        self.fired = result.fired_rules()
        self._outcomes: dict[str, list[_Outcome]] = {}

    @classmethod
    def of(cls, result: RunResult, rulebase: "RuleBase") -> "Explainer":
        vocab = rulebase.vocab
        return cls(result, rulebase.rules, FactMatcher(result.facts, vocab, rulebase.engine),
                   {n for n, t in vocab.types.items() if t.origin == "input"},
                   {n: tuple(t.written_fields[:1]) for n, t in vocab.types.items() if t.written_as})

    def why_not(self, type_name: str, wanted: dict[str, Any]) -> list[RuleCheck]:
        """For every rule that could derive `type_name` with the field values `wanted`, which of
        its conditions hold on this run's facts and which do not, recursively for derived facts."""
        tests = tuple(Test(k, "eq", v) for k, v in wanted.items())
        return self.checks([(rule, pushed, {rule.id}) for rule, pushed in producers_of(self.rules, type_name, tests)], 0)

    def check(self, rule: Rule, pushed: Pushed | None = None, depth: int = 0) -> RuleCheck:
        """Which conditions of one rule hold on the run's facts (and, below MAX_DEPTH, what the
        rules deriving its unmet conditions lack)."""
        (check,) = self.checks([(rule, pushed or {}, {rule.id})], depth)
        return check

    def outcomes(self, items: list[tuple[Rule, Pushed]]) -> list[list[_Outcome]]:
        """Each condition of each rule (in its written order): met, unmet or unknown, asked in
        the engine's order together with the conditions met before it. One engine run asks
        the next questions of every rule at once."""
        keys = [f"{rule.id}|{pushed!r}" for rule, pushed in items]
        walks = {key: _Walk([_with(c, pushed.get(c.alias or "", ())) for c in rule.when], evaluation_order(rule))
                 for key, (rule, pushed) in zip(keys, items) if key not in self._outcomes}
        active = [w for w in walks.values() if w.pending]
        while active:
            asked = [w.questions() for w in active]
            answers = iter(self.matcher.matches([q for questions in asked for q in questions]))
            for walk, questions in zip(active, asked):
                walk.take([next(answers) for _ in questions], self.matcher)
            active = [w for w in active if w.pending]
        for key, walk in walks.items():
            self._outcomes[key] = [walk.outcomes[i] for i in range(len(walk.conds))]
        return [self._outcomes[key] for key in keys]

    def checks(self, items: list[tuple[Rule, Pushed, set[str]]], depth: int) -> list[RuleCheck]:
        """RuleChecks of rules (with the tests pushed onto them and the rules on the path to
        them), the rules deriving their unmet conditions checked in turn, a level at a time."""
        out: list[RuleCheck] = []
        derived: list[tuple[ConditionCheck, list[tuple[Rule, Pushed, set[str]]]]] = []
        inputs: list[ConditionCheck] = []
        for (rule, pushed, visiting), outcomes in zip(items, self.outcomes([(r, p) for r, p, _ in items])):
            conditions = [self._text_check(rule)] if rule.text is not None else []
            for cond, outcome in zip(rule.when, outcomes):
                pattern = _with(cond, pushed.get(cond.alias or "", ()))
                check = ConditionCheck(pattern.describe(), cond.negated, outcome.state != "unmet", outcome.facts,
                                       unknown=outcome.state == "unknown", pattern=pattern)
                conditions.append(check)
                if outcome.state != "unmet" or cond.negated:
                    continue
                literal = simplified(tuple(t for t in pattern.tests if not t.is_join))
                if pattern.type in self.input_types:
                    check.needs = Condition(pattern.type, literal)
                    check.needs_input = check.needs.describe()
                    inputs.append(check)
                elif depth < MAX_DEPTH:
                    derived.append((check, [(p, more, visiting | {p.id}) for p, more in
                                            producers_of(self.rules, pattern.type, literal)[:MAX_PRODUCERS]
                                            if p.id not in visiting]))
            out.append(RuleCheck(rule.id, rule.title, rule.file, rule.line, rule.id in self.fired, conditions))
        self._fill_instead(inputs)
        below = iter(self.checks([item for _, producers in derived for item in producers], depth + 1)
                     if derived else ())
        for check, producers in derived:
            check.producers = [next(below) for _ in producers]
        return out

    def _text_check(self, rule: Rule) -> ConditionCheck:
        """A text rule: did any clause of the texts it reads match (the run's firings say)?"""
        fired_on = [f for firing in self.result.firings if firing.rule == rule.id for f in firing.premises]
        spec = rule.text
        assert spec is not None
        reads = "、".join(f"{t}.{f}" for t, f in spec.reads)
        patterns = " | ".join(spec.sources) or f"（没有别的规则读懂、含 {'、'.join(spec.unread)} 的句子）"
        text = f"{reads} 中有子句匹配 {patterns}"
        check = ConditionCheck(text, False, bool(fired_on), sorted(set(fired_on)))
        if not fired_on:
            check.needs_input = f"{reads} 的描述中写明「{rule.title}」所说的情况（同一句中不含否定）"
        return check

    def _fill_instead(self, checks: list[ConditionCheck]) -> None:
        """For unmet input conditions: the facts of their type that agree with them on the
        fields naming one case entry (results.qat_bc), whatever else they say: what the
        inputs say instead."""
        asked = []
        for check in checks:
            needs: Condition = check.needs  # type: ignore[assignment]
            identity = self.identity.get(needs.type, ())
            tests = tuple(t for t in needs.tests if t.field in identity)
            if tests:
                asked.append((check, (Condition(needs.type, tests),)))
        for (check, _), answer in zip(asked, self.matcher.matches([q for _, q in asked])):
            check.instead_facts = self.matcher.facts_at(answer, 0)


def _with(cond: Condition, extra: tuple[Test, ...]) -> Condition:
    return cond._replace(tests=cond.tests + extra) if extra else cond


def _plan(conds: list[Condition], met: list[int], pending: list[int]
          ) -> list[tuple[int, tuple[Condition, ...], tuple[Condition, ...] | None]]:
    """For each pending condition, supposing the ones before it are met: the question (it with
    the met ones and those before it; empty for a `not:` comparing with an alias none of them
    binds) and, for a `not:`, the question whose last condition is its positive form (which
    facts block it)."""
    plan = []
    for n, index in enumerate(pending):
        before = [conds[i] for i in met + pending[:n]]
        cond = conds[index]
        if cond.negated and refers_outside(cond, bound_aliases(before)):
            plan.append((index, (), None))
            continue
        question = tuple(before) + (cond,)
        blocker = tuple(before) + (cond._replace(negated=False, alias=None),) if cond.negated else None
        plan.append((index, question, blocker))
    return plan


def _last_place(question: tuple[Condition, ...]) -> int:
    """The place of the question's last condition (a positive one) among its positive conditions."""
    return sum(1 for c in question if not c.negated) - 1


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
