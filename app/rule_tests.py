"""`j6doctor rules test`: run every rule's own example cases through the real engine and
report, per rule, whether its examples fire it (or, with `fires: false`, do not), whether
the verdict matches what the example expects, and whether one run concluded two values of
an exclusive field (two rules disagreeing on the same evidence).

Condition coverage, as `opa test --coverage` reports lines: a condition of a rule (a
`when:` line or a `not:` guard) is *decided* by an example of the rule when, on that
example's facts, every other condition holds and this one does not — the example shows the
condition doing its job. Conditions no example decides are listed with their lines."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from j6doctor.diagnosis import diagnose_data
from j6doctor.evidence import EvidenceOptions
from j6doctor.engine import RuleBase, Source
from j6doctor.case_words import annotate
from j6doctor.engine.explain import Explainer, inputs_needed
from j6doctor.engine.rule_model import Rule
from j6doctor.probes import InputError
from j6doctor.verdict_model import Verdict


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
    conditions: list[tuple[int | None, str]] = field(default_factory=list)  # (line, condition in words)
    decided: set[int] = field(default_factory=set)  # indexes of conditions an example decides alone

    @property
    def undecided(self) -> list[tuple[int | None, str]]:
        return [c for i, c in enumerate(self.conditions) if i not in self.decided]


def _blocked_at(rule: Rule, run, rulebase: RuleBase) -> list[str]:
    """Why an example did not fire its rule: the first condition that no longer holds with
    the ones before it, and — as `explain --why-not` says it — what the example would need:
    the case entry to write, the input a `not:` is blocked by, or what the rules that derive
    the missing fact still lack."""
    if rule.text is not None:
        return []
    explainer = Explainer.of(run, rulebase)
    held = explainer.matcher.holds([rule.when[:index + 1] for index in range(len(rule.when))])
    for index, holds in enumerate(held):
        if holds is False:
            cond = rule.when[index]
            why = "a fact it forbids is there" if cond.negated else "no fact matches (with the conditions before it)"
            return [f"blocked at line {cond.line}: {cond.in_words()} — {why}", *_why_not(rule, index, explainer)]
    return []


MAX_NEEDS_SHOWN = 4


def _why_not(rule: Rule, index: int, explainer: Explainer) -> list[str]:
    check = explainer.check(rule)
    annotate([check], explainer.result)
    cond = check.conditions[index]
    if cond.blocked_by:
        return [f"  it is there because of: {'; '.join(cond.blocked_by)}"]
    if cond.written or cond.needs_input:
        instead = [f"  it says instead: {'; '.join(cond.instead)}"] if cond.instead else []
        return [f"  the example needs: {cond.written or cond.needs_input}", *instead]
    needs = [n for n in inputs_needed(cond.producers)]
    lines = [f"  the rules that derive it still need: {n['condition']} ({n['rule']})" if n["kind"] == "add"
             else f"  the rules that derive it are blocked by: {'; '.join(n.get('blocked_by') or n['facts'])} "
                  f"({n['rule']})" for n in needs[:MAX_NEEDS_SHOWN]]
    if len(needs) > MAX_NEEDS_SHOWN:
        lines.append(f"  ... and {len(needs) - MAX_NEEDS_SHOWN} more (j6doctor explain --why-not shows them all)")
    return lines


def _decided_alone(rule: Rule, run, rulebase: RuleBase) -> set[int]:
    """The conditions that alone keep `rule` from matching the run's facts (every other one holds)."""
    if rule.text is not None or not rule.when:
        return set()
    matcher = Explainer.of(run, rulebase).matcher
    whole, *without = matcher.holds([rule.when] + [rule.when[:i] + rule.when[i + 1:] for i in range(len(rule.when))])
    return set() if whole is not False else {i for i, holds in enumerate(without) if holds}


def _expectations(expect: dict[str, Any], verdict: Verdict) -> list[str]:
    problems = []
    if "stage" in expect and verdict.stage != expect["stage"]:
        problems.append(f"stage is {verdict.stage}, expected {expect['stage']}")
    if "missing" in expect and verdict.missing != expect["missing"]:
        problems.append(f"missing is {verdict.missing}, expected {expect['missing']}")
    if "mistakes" in expect:
        got = [m.id for m in verdict.mistakes]
        if got != expect["mistakes"]:
            problems.append(f"mistakes are {got}, expected {expect['mistakes']}")
    # (the chain's own stage tells a verdict of 暂不能判断 that read a result from one that read none)
    chain = verdict.chain_stage.stage if verdict.chain_stage else None
    if "chain_stage" in expect and chain != expect["chain_stage"]:
        problems.append(f"chain_stage is {chain}, expected {expect['chain_stage']}")
    unknown = sorted(set(expect) - {"stage", "chain_stage", "missing", "mistakes"})
    if unknown:
        problems.append(f"unknown expectation {unknown[0]!r} (stage, chain_stage, missing, mistakes)")
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


def fixture_problems(rule: Rule, example) -> list[str]:
    """The files and folders an example case names (artifacts, scripts, metrics) that are
    not there, relative to the rule file's folder: such an example tests nothing it claims to."""
    from j6doctor.probes.case_file import case_paths

    folder = Path(rule.folder) if rule.folder else Path.cwd()
    data = example.case if isinstance(example.case, dict) else {}
    return [f"{'.'.join(map(str, where))} names {text}, which does not exist in {folder}"
            for where, text in case_paths(data) if isinstance(text, str) and not (folder / text).exists()]


def missing_fixtures(rules: list[Rule]) -> list[tuple[Rule, Any, str]]:
    """fixture_problems of every example: (rule, example, problem)."""
    return [(rule, example, problem) for rule in rules for example in rule.examples
            for problem in fixture_problems(rule, example)]


def example_options(rule: Rule, index: int) -> EvidenceOptions:
    """What an example reads besides its case: the facts it gives, cited by the example."""
    example = rule.examples[index]
    where = f"{rule.file}:{example.line}" if example.line else rule.file
    return EvidenceOptions(use_environment=False, given_facts=[
        (type_name, fields, Source("example", file=where, key=f"facts[{k}].{type_name}"))
        for k, (type_name, fields) in enumerate(example.facts)])


@dataclass
class _Tally:
    """Per rule id, over the examples run: how many fired it (any rule's examples, its own),
    and the conditions its examples decide."""

    fired_any: dict[str, int]
    fired_own: dict[str, int]
    decided: dict[str, set[int]]


def _run_example(rule: Rule, index: int, rulebase: RuleBase, tally: _Tally) -> ExampleResult:
    """One example of `rule` through the whole pipeline; the rules it fires, whether it
    fires its own rule and the conditions it decides go into `tally`."""
    example = rule.examples[index]
    name = example.name or f"example {index + 1}"
    try:
        d = diagnose_data(example.case, rulebase, display=f"{rule.id}#{index + 1}",
                          base=Path(rule.folder) if rule.folder else None,
                          options=example_options(rule, index))
    except InputError as exc:
        return ExampleResult(rule.id, name, rule.file, example.line, False,
                             [f"the example case is invalid: {exc.render()}"])
    fired = d.run.fired_rules()
    for rule_id in fired:
        if rule_id in tally.fired_any:
            tally.fired_any[rule_id] += 1
    problems = fixture_problems(rule, example)
    if (rule.id in fired) != example.fires:
        problems.append("did not fire the rule" if example.fires else "fired the rule, expected not to")
        if example.fires:
            problems += _blocked_at(rule, d.run, rulebase)
    elif example.fires:
        tally.fired_own[rule.id] += 1
    if rule.id not in fired:
        tally.decided[rule.id] |= _decided_alone(rule, d.run, rulebase)
    problems += _expectations(example.expect, d.verdict)
    problems += _disagreement(d.run, rulebase)
    return ExampleResult(rule.id, name, rule.file, example.line, not problems, problems)


def run_rule_tests(rulebase: RuleBase, selected: Callable[[str], bool] | None = None
                   ) -> tuple[list[ExampleResult], list[RuleCoverage]]:
    """Run the examples of every rule (of those whose id `selected` accepts), with per-rule
    coverage of the rules run."""
    rules = [r for r in rulebase.with_examples().rules if selected is None or selected(r.id)]
    tally = _Tally({r.id: 0 for r in rules}, {r.id: 0 for r in rules}, {r.id: set() for r in rules})
    results = [_run_example(rule, index, rulebase, tally) for rule in rules for index in range(len(rule.examples))]
    coverage = [RuleCoverage(r.id, r.file, r.line, len(r.examples), tally.fired_own[r.id], tally.fired_any[r.id],
                             [(c.line, c.in_words()) for c in r.when],
                             tally.decided[r.id])
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


def condition_coverage(coverage: list[RuleCoverage]) -> tuple[int, int]:
    """(conditions decided by an example, conditions) over the rules run."""
    total = sum(len(c.conditions) for c in coverage)
    return sum(len(c.decided) for c in coverage), total


def render_junit(results: list[ExampleResult], coverage: list[RuleCoverage]) -> str:
    """JUnit XML (the format CI systems show as test reports): one test suite per rule file,
    one test case per example (classname: the rule id), failures with their problems; a
    rule without an example that fires it is a failing case of its own."""
    import xml.etree.ElementTree as ET

    suites = ET.Element("testsuites", name="j6doctor rules test")
    by_file: dict[str, list] = {}
    for r in results:
        by_file.setdefault(r.file, []).append(r)
    for c in coverage:
        by_file.setdefault(c.file, [])
    for file in sorted(by_file):
        cases = by_file[file]
        missing = [c for c in coverage if c.file == file and (c.examples == 0 or c.fired_by_own == 0)]
        failures = sum(1 for r in cases if not r.passed) + len(missing)
        suite = ET.SubElement(suites, "testsuite", name=file, tests=str(len(cases) + len(missing)),
                              failures=str(failures), errors="0")
        for r in cases:
            case = ET.SubElement(suite, "testcase", classname=r.rule, name=r.name, file=file, line=str(r.line or 0))
            if not r.passed:
                ET.SubElement(case, "failure", message=r.problems[0] if r.problems else "failed").text = \
                    "\n".join(r.problems)
        for c in missing:
            case = ET.SubElement(suite, "testcase", classname=c.rule, name="has an example that fires it",
                                 file=file, line=str(c.line or 0))
            ET.SubElement(case, "failure", message="no example fires the rule" if c.examples else "no example case")
    ET.indent(suites)
    return ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n"


@dataclass
class RuleTestOutcome:
    """What `rules test` found: the examples run, the rules' coverage, and whether it fails."""

    results: list[ExampleResult]
    coverage: list[RuleCoverage]
    min_coverage: float | None = None  # --min-coverage PCT

    @property
    def failed(self) -> int:
        return sum(1 for r in self.results if not r.passed)

    @property
    def uncovered(self) -> list[str]:
        return coverage_failures(self.coverage)

    @property
    def percent(self) -> float:
        decided, conditions = condition_coverage(self.coverage)
        return 100.0 * decided / conditions if conditions else 100.0

    @property
    def below(self) -> bool:
        return self.min_coverage is not None and self.percent < self.min_coverage

    @property
    def has_findings(self) -> bool:
        """An example failed, a rule has no example that fires it, or coverage is too low."""
        return bool(self.failed or self.uncovered or self.below)


def render_json(outcome: RuleTestOutcome) -> str:
    import json

    decided, conditions = condition_coverage(outcome.coverage)
    return json.dumps({
        "passed": len(outcome.results) - outcome.failed, "failed": outcome.failed,
        "examples": [{"rule": r.rule, "name": r.name, "file": r.file, "line": r.line, "passed": r.passed,
                      "problems": r.problems} for r in outcome.results],
        "rules": [{"rule": c.rule, "file": c.file, "line": c.line, "examples": c.examples,
                   "fired_by_own": c.fired_by_own, "fired_by_any": c.fired_by_any,
                   "conditions": len(c.conditions), "decided": len(c.decided),
                   "undecided": [{"line": line, "condition": words} for line, words in c.undecided]}
                  for c in outcome.coverage],
        "uncovered_rules": outcome.uncovered,
        "condition_coverage": {"decided": decided, "conditions": conditions, "percent": round(outcome.percent, 1)},
    }, ensure_ascii=False, indent=2) + "\n"


def render_text(outcome: RuleTestOutcome, verbose: bool = False, show_coverage: bool = False) -> str:
    """For people: the failed examples (every example with `verbose`), the coverage table,
    the conditions no example decides (`show_coverage`), the summary line."""
    lines = []
    for r in outcome.results:
        if verbose or not r.passed:
            lines.append(f"{'PASS' if r.passed else 'FAIL'} {r.file}:{r.line} {r.rule}: {r.name}")
            lines += [f"    {problem}" for problem in r.problems]
    coverage = outcome.coverage
    lines += ["", f"{'rule':44} {'examples':>8} {'fired':>6} {'fired by any':>12} {'decided':>8}"]
    lines += [f"{c.rule:44} {c.examples:>8} {c.fired_by_own:>6} {c.fired_by_any:>12} "
              f"{len(c.decided):>3}/{len(c.conditions):<4}" for c in coverage]
    if show_coverage:
        lines += ["", "conditions no example decides (every other condition holds, this one does not):"]
        lines += [f"  {c.file}:{line}: {c.rule}: {words}" for c in coverage for line, words in c.undecided]
    lines += outcome.uncovered
    decided, conditions = condition_coverage(coverage)
    lines.append(f"{len(outcome.results) - outcome.failed} passed, {outcome.failed} failed; "
                 f"{sum(1 for c in coverage if c.fired_by_own)}/{len(coverage)} rules fired by their examples; "
                 f"conditions decided by an example: {decided}/{conditions} ({outcome.percent:.1f}%)")
    if outcome.below:
        lines.append(f"condition coverage {outcome.percent:.1f}% is below --min-coverage {outcome.min_coverage:g}%")
    return "\n".join(lines) + "\n"
