"""Accuracy of j6doctor on the development set of real reports (benchmarks/real_reports/).

Each file is one public report (forum thread, GitHub issue, vendor FAQ, blog post) in two
forms: `case`, what a careful support engineer would write as the case file, and `words`,
the reporter's own words alone (the case is then `{symptom: words}`). `expect` holds what an
expert accepts, labelled from the evidence the reporter had when posting:

  stage                   the stages an expert accepts (any one is right)
  candidates_include      stages that must still be listed as possible
  evaluate_next_includes  artifacts the next check must evaluate
  missing_includes        info-gate items that must be asked for
  missing_excludes        info-gate items that must not be asked for
  mistakes_include        common-mistake ids the report shows
  checklist_ids           deployment-checklist items the verdict must list
  report_contains         words the Markdown report must contain

In the words form, a `report_contains` entry that the words do not contain is not scored
when the case cites artifact files: it can only come from those files (a node name in a
conversion log), which the words form does not have.

"Stage right" counts reports whose verdict stage is accepted; "other checks" counts every
other listed expectation met, over all of them. A report is diagnosed with the bundled rules
and no environment probe; `artifacts:` paths are relative to the report's folder.

    python benchmarks/real_report_accuracy.py [--form case|words] [-v]
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

REPORTS = Path(__file__).resolve().parent / "real_reports"
FORMS = ("case", "words")
CHECK_KEYS = ("candidates_include", "evaluate_next_includes", "missing_includes", "missing_excludes",
              "mistakes_include", "checklist_ids", "report_contains")


@dataclass
class Outcome:
    """One report in one form: the verdict's stage against the accepted ones, and every other check."""

    name: str
    form: str
    stage: str
    accepted: list[str]
    checks: list[tuple[str, bool]] = field(default_factory=list)  # (what was checked, met)

    @property
    def stage_right(self) -> bool:
        return self.stage in self.accepted


def load_reports(folder: Path = REPORTS) -> list[tuple[str, dict[str, Any]]]:
    return [(path.name, yaml.safe_load(path.read_text(encoding="utf-8")))
            for path in sorted(folder.glob("*.yaml"))]


def case_of(report: dict[str, Any], form: str, folder: Path) -> dict[str, Any]:
    if form == "words":
        return {"symptom": report["words"]}
    case = dict(report["case"])
    if case.get("artifacts"):
        case["artifacts"] = [str(folder / p) for p in case["artifacts"]]
    return case


def score(name: str, report: dict[str, Any], form: str, rulebase, folder: Path = REPORTS) -> Outcome:
    from j6doctor.diagnosis import diagnose_data
    from j6doctor.report import render_markdown

    # diagnose_data reads no environment: the answer depends on the report alone
    diagnosis = diagnose_data(case_of(report, form, folder), rulebase, display=name, base=folder)
    verdict = diagnosis.verdict_json
    expect = report["expect"]
    outcome = Outcome(name, form, verdict["stage"], list(expect["stage"]))
    found = {
        "candidates_include": [c["stage"] for c in verdict["candidates"]],
        "evaluate_next_includes": [e["artifact"] for e in verdict["evaluate_next"]],
        "missing_includes": verdict["missing"],
        "mistakes_include": [m["id"] for m in verdict["mistakes"]],
        "checklist_ids": [c["id"] for c in verdict["checklist"]],
    }
    report_text = render_markdown(diagnosis) if expect.get("report_contains") else ""
    for key in CHECK_KEYS:
        for wanted in expect.get(key) or []:
            if key == "report_contains" and not _derivable(wanted, report, form):
                continue
            if key == "missing_excludes":
                met = wanted not in verdict["missing"]
            elif key == "report_contains":
                met = wanted in report_text
            else:
                met = wanted in found[key]
            outcome.checks.append((f"{key}: {wanted}", met))
    return outcome


def _derivable(wanted: str, report: dict[str, Any], form: str) -> bool:
    """Whether the form holds what a report_contains entry asks for (see the module doc)."""
    if form != "words" or not report["case"].get("artifacts"):
        return True
    return wanted.lower() in report["words"].lower()


def run(form: str, folder: Path = REPORTS, rulebase=None) -> list[Outcome]:
    from j6doctor.diagnosis import load_rulebase

    rulebase = rulebase or load_rulebase()
    return [score(name, report, form, rulebase, folder) for name, report in load_reports(folder)]


def totals(outcomes: list[Outcome]) -> tuple[int, int, int, int]:
    """(stage right, reports, checks met, checks)."""
    checks = [met for o in outcomes for _, met in o.checks]
    return sum(o.stage_right for o in outcomes), len(outcomes), sum(checks), len(checks)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--form", choices=FORMS, action="append", help="one form (default: both)")
    parser.add_argument("-v", "--verbose", action="store_true", help="list every report that misses something")
    parser.add_argument("--folder", type=Path, default=REPORTS,
                        help="a folder of report files in the same form (default: the development set)")
    args = parser.parse_args(argv)
    for form in args.form or FORMS:
        outcomes = run(form, args.folder)
        right, reports, met, checks = totals(outcomes)
        print(f"{form:5}  stage right {right}/{reports} = {right / reports:.0%}   "
              f"other checks {met}/{checks} = {met / max(checks, 1):.0%}")
        if args.verbose:
            for o in outcomes:
                missed = [what for what, ok in o.checks if not ok]
                if not o.stage_right or missed:
                    print(f"  {'  ' if o.stage_right else 'XX'} {o.name}: {o.stage} (accepted: {', '.join(o.accepted)})"
                          + (f"; missed {'; '.join(missed)}" if missed else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
