"""`j6doctor rules test`: run every rule's own example cases through the real engine and
report, per rule, whether its examples fire it (or, with `fires: false`, do not), whether
the verdict matches what the example expects, and whether one run concluded two values of
an exclusive field (two rules disagreeing on the same evidence)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from .diagnose import diagnose_data
from .engine import RuleBase
from .probes import InputError


@dataclass
class ExampleResult:
    rule: str
    name: str
    file: str
    line: int | None
    passed: bool
    problems: list[str] = field(default_factory=list)


@dataclass
class RuleCoverage:
    rule: str
    file: str
    line: int | None
    examples: int
    fired_by_own: int
    fired_by_any: int


def _expectations(expect: dict[str, Any], verdict: dict[str, Any]) -> list[str]:
    problems = []
    if "stage" in expect and verdict["stage"] != expect["stage"]:
        problems.append(f"stage is {verdict['stage']}, expected {expect['stage']}")
    if "missing" in expect and verdict["missing"] != expect["missing"]:
        problems.append(f"missing is {verdict['missing']}, expected {expect['missing']}")
    if "mistakes" in expect:
        got = [m["id"] for m in verdict["mistakes"]]
        if got != expect["mistakes"]:
            problems.append(f"mistakes are {got}, expected {expect['mistakes']}")
    unknown = sorted(set(expect) - {"stage", "missing", "mistakes"})
    if unknown:
        problems.append(f"unknown expectation {unknown[0]!r} (stage, missing, mistakes)")
    return problems


def _disagreement(run, rulebase: RuleBase) -> list[str]:
    problems = []
    for type_name, ftype in rulebase.vocab.types.items():
        for field_name in ftype.exclusive:
            facts = run.by_type(type_name)
            values = sorted({str(f[field_name]) for f in facts})
            if len(values) > 1:
                rules = sorted({f.derivation.rule for f in facts if f.derivation})
                problems.append(f"{type_name}.{field_name} concluded as {', '.join(values)} "
                                f"by {', '.join(rules)} on the same evidence")
    return problems


def run_rule_tests(rulebase: RuleBase, selected: Callable[[str], bool] | None = None
                   ) -> tuple[list[ExampleResult], list[RuleCoverage]]:
    """Run the examples of every rule (of those whose id `selected` accepts), with per-rule
    coverage of the rules run."""
    rules = [r for r in rulebase.rules if selected is None or selected(r.id)]
    results: list[ExampleResult] = []
    fired_any: dict[str, int] = {r.id: 0 for r in rules}
    fired_own: dict[str, int] = {r.id: 0 for r in rules}
    for rule in rules:
        for index, example in enumerate(rule.examples):
            name = example.name or f"example {index + 1}"
            try:
                d = diagnose_data(example.case, rulebase, display=f"{rule.id}#{index + 1}",
                                  base=Path(rule.folder) if rule.folder else None)
            except InputError as exc:
                results.append(ExampleResult(rule.id, name, rule.file, example.line, False,
                                             [f"the example case is invalid: {exc.render()}"]))
                continue
            fired = d.run.fired_rules()
            for rule_id in fired:
                if rule_id in fired_any:
                    fired_any[rule_id] += 1
            problems = []
            if (rule.id in fired) != example.fires:
                problems.append("did not fire the rule" if example.fires else "fired the rule, expected not to")
            elif example.fires:
                fired_own[rule.id] += 1
            problems += _expectations(example.expect, d.verdict)
            problems += _disagreement(d.run, rulebase)
            results.append(ExampleResult(rule.id, name, rule.file, example.line, not problems, problems))
    coverage = [RuleCoverage(r.id, r.file, r.line, len(r.examples), fired_own[r.id], fired_any[r.id])
                for r in rules]
    return results, coverage


def coverage_failures(coverage: list[RuleCoverage]) -> list[str]:
    out = []
    for c in coverage:
        if c.examples == 0:
            out.append(f"{c.file}:{c.line}: rule {c.rule}: has no example case")
        elif c.fired_by_own == 0:
            out.append(f"{c.file}:{c.line}: rule {c.rule}: none of its examples fires it")
    return out
