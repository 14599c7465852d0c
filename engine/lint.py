"""Static checks of a rule base for its authors: what the loader and the compiler refuse,
plus rules that can never fire, rules that disagree on the same evidence, and derivation
cycles that could not end. Generic: it knows the vocabulary, not the domain."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from j6doctor.engine.backends import ENGINES, available
from j6doctor.engine.compiler import compile_rules
from j6doctor.engine.limits import check_rulebase
from j6doctor.engine.errors import RuleBaseError, RuleBaseErrors
from j6doctor.engine.explain import producers_of
from j6doctor.engine.join_growth import MAX_OPEN_CONDITIONS, growth
from j6doctor.engine.rule_loader import load_rule_dirs
from j6doctor.engine.rule_model import Ref, Rule
from j6doctor.engine.vocabulary import Vocabulary


@dataclass(frozen=True)
class LintIssue:
    level: str  # "error" | "warning" | "info"
    file: str | None
    line: int | None
    rule: str | None
    message: str
    hint: str | None = None

    def render(self) -> str:
        where = (self.file or "") + (f":{self.line}" if self.file and self.line else "")
        parts = [p for p in (where, self.level, f"rule {self.rule}" if self.rule else "") if p]
        text = ": ".join(parts + [self.message])
        return text + (f"\n  hint: {self.hint}" if self.hint else "")


def _from_error(err: RuleBaseError) -> LintIssue:
    return LintIssue("error", err.file, err.line, err.rule_id,
                     f"{err.field}: {err.message}" if err.field else err.message, err.hint)


def _issue(level: str, rule: Rule, message: str, hint: str | None = None, line: int | None = None) -> LintIssue:
    return LintIssue(level, rule.file, line or rule.line, rule.id, message, hint)


def _never_fires(rules: list[Rule], vocab: Vocabulary) -> list[LintIssue]:
    issues = []
    for rule in rules:
        for cond in rule.when:
            ftype = vocab.types[cond.type]
            if ftype.origin == "input":
                continue
            literal = tuple(t for t in cond.tests if not isinstance(t.value, Ref))
            if not any(cond.type in r.produces() for r in rules):
                if cond.negated:
                    issues.append(_issue("warning", rule, f"no rule derives {cond.type!r}: `not: {cond.type}` always holds",
                                         "remove the condition, or add the rule that derives it", cond.line))
                else:
                    issues.append(_issue("error", rule, f"can never fire: no rule derives {cond.type!r}",
                                         "add a rule that concludes it, or test an input fact type", cond.line))
            elif not cond.negated and not producers_of(rules, cond.type, literal):
                issues.append(_issue("error", rule, f"can never fire: no rule derives {cond.describe()}",
                                     "check the values against what the producing rules conclude", cond.line))
    return issues


def _signature(rule: Rule) -> tuple:
    def cond_key(cond):
        return (cond.type, cond.negated, tuple(sorted((t.field, t.op, repr(t.value)) for t in cond.tests)))
    return tuple(sorted(cond_key(c) for c in rule.when))


def _disagreements(rules: list[Rule], vocab: Vocabulary) -> list[LintIssue]:
    """Rules with the same conditions that conclude different values of an exclusive field."""
    issues = []
    by_signature: dict[tuple, list[Rule]] = {}
    for rule in rules:
        by_signature.setdefault(_signature(rule), []).append(rule)
    for group in by_signature.values():
        for type_name, ftype in vocab.types.items():
            for field_name in ftype.exclusive:
                values: dict[str, Rule] = {}
                for rule in group:
                    for concl in rule.then:
                        value = concl.fields.get(field_name)
                        if concl.type == type_name and value is not None and not isinstance(value, Ref):
                            values.setdefault(repr(value), rule)
                if len(values) > 1:
                    first, *others = values.values()
                    issues.append(_issue(
                        "error", first,
                        f"concludes a different {type_name}.{field_name} than "
                        f"{', '.join(r.id for r in others)} on the same conditions",
                        "make the conditions exclusive, or merge the rules"))
    return issues


def _join_growth(rules: list[Rule]) -> list[LintIssue]:
    """Rules whose join can grow combinatorially with the facts of one type (join_growth.py):
    warned before they run into the engine's time or memory cap."""
    issues = []
    for rule in rules:
        found = growth(rule)
        if found is not None and found.open > MAX_OPEN_CONDITIONS:
            issues.append(_issue("warning", rule, f"its join can grow combinatorially: {found.describe()}; "
                                 f"more than {MAX_OPEN_CONDITIONS} such conditions on one type are flagged",
                                 f"tie the conditions on {found.type} to each other with equalities "
                                 "(`name: {ref: a.name}`), or test what they share once and count it upstream"))
    return issues


def _same_statements(rules: list[Rule]) -> list[LintIssue]:
    """Text rules with a match pattern that another text rule has too, with the same reading:
    one sentence then concludes both, which is a clash unless both are meant."""
    seen: dict[tuple[str, str], Rule] = {}
    issues = []
    for rule in rules:
        if rule.text is None:
            continue
        for pattern in rule.text.match:
            key = (" ".join(pattern.source.split()), rule.text.context)
            other = seen.setdefault(key, rule)
            if other is not rule and other.id != rule.id:
                issues.append(_issue("warning", rule, f"its pattern {pattern.source!r} is also a pattern of "
                                     f"{other.id} ({other.file}:{other.line}) with the same context: one "
                                     "sentence concludes both rules",
                                     "give one of them an `unless:` or a narrower pattern, or merge them"))
    return issues


def _cycles(rules: list[Rule]) -> list[LintIssue]:
    """Positive derivation cycles. They end when a round derives nothing new (identical
    facts are one fact), unless a rule in the cycle writes new text every round."""
    graph: dict[str, set[str]] = {}
    for rule in rules:
        for consumed in rule.consumes():
            graph.setdefault(consumed, set()).update(rule.produces())
    issues = []
    for rule in rules:
        for produced in rule.produces():
            if not (rule.consumes() & _reachable(graph, produced)):
                continue
            grows = any(
                isinstance(v, str) and "${" in v
                for concl in rule.then if concl.type in _reachable(graph, produced) | {produced}
                for v in concl.fields.values())
            if grows:
                issues.append(_issue("error", rule, f"derivation cycle through {produced!r} that writes new text "
                                     "every round: it could not terminate (the engine would cut it at its depth cap)",
                                     "conclude fields copied with {ref: ...} or literals, not ${...} text, inside a cycle"))
            else:
                issues.append(_issue("warning", rule, f"derivation cycle through {produced!r}; it ends when a round "
                                     "adds nothing new"))
            break
    return issues


def _reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    stack = [start]
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        stack.extend(graph.get(node, ()))
    return seen


def lint(directories: list[Path], vocab: Vocabulary, display: dict[Path, str] | None = None) -> list[LintIssue]:
    rules, errors = load_rule_dirs(directories, vocab, display)
    issues = [_from_error(e) for e in errors]
    if errors:
        return issues
    # Each backend has its own bounds (durable-rules' fixed tables; what CLIPS refuses to
    # build): a pack is checked on every engine installed here.
    # durable-rules' fixed tables are checked even where it is not installed: a pack written
    # on a machine that runs CLIPS may run on durable-rules elsewhere.
    seen: set[tuple] = set()
    found: list[RuleBaseError] = []
    for engine in [e for e in ENGINES if available(e)]:
        try:
            compiled = compile_rules(rules, vocab, engine)
        except RuleBaseErrors as exc:
            found += exc.errors
        else:
            if engine != "durable":
                found += check_rulebase(compiled, vocab)
    for error in found:
        key = (error.file, error.line, error.rule_id, str(error))
        if key not in seen:
            seen.add(key)
            issues.append(_from_error(error))
    issues += _never_fires(rules, vocab)
    issues += _disagreements(rules, vocab)
    issues += _cycles(rules)
    issues += _join_growth(rules)
    issues += _same_statements(rules)
    for rule in rules:
        if not rule.examples:
            issues.append(_issue("warning", rule, "has no example case", "add `examples:` with a case that fires it"))
        if rule.overrides:
            issues.append(_issue("info", rule, f"overrides the rule at {rule.overrides}"))
    return sorted(issues, key=lambda i: ({"error": 0, "warning": 1, "info": 2}[i.level], i.file or "", i.line or 0))
