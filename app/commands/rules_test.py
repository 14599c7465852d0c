"""`j6doctor rules test`: run the rules' example cases, report coverage (the work:
app/rule_tests.py). Exit 1 when an example fails, a rule has no example that fires it, or
condition coverage is below --min-coverage."""

from __future__ import annotations

from pathlib import Path

from j6doctor.commands import options
from j6doctor.commands.console import Console
from j6doctor.commands.inputs import load_rules
from j6doctor.exit_codes import EXIT_FINDINGS, EXIT_OK


def register(sub) -> None:
    q = options.subcommand(
        sub, "test", help="Run every rule's examples; show coverage.",
        verbose_help="List every example, not only failures (and say which config, packs and engine).",
        description="Run the example cases of the rules of the PACKs (rule pack folders, or single\n"
                    "*.yaml or *.yml rule files); of every bundled rule when no PACK is given, or with --all.\n"
                    "Report per-rule coverage: examples that fire the rule, and conditions an example\n"
                    "decides (every other condition holds, this one does not). Fails when an example\n"
                    "fails, a rule has no example that fires it, or condition coverage is below\n"
                    "--min-coverage.")
    q.add_argument("dirs", nargs="*", type=Path, metavar="PACK",
                   help="A rule pack folder, or a single rule file (*.yaml, *.yml): its rules and their examples.")
    q.add_argument("-k", dest="pattern", metavar="PATTERN",
                   help="Only the rules whose id contains PATTERN (or matches it as a glob: *, ?, [...]).")
    q.add_argument("--all", dest="everything", action="store_true",
                   help="With PACKs: also run the bundled rules' examples (default: the packs' rules only).")
    q.add_argument("--format", dest="fmt", choices=["text", "json", "junit"], default="text",
                   help="text for people, json for tools, junit (XML) for CI test reports.")
    q.add_argument("--coverage", dest="show_coverage", action="store_true",
                   help="List every condition (when: line or not: guard) that no example decides.")
    q.add_argument("--min-coverage", type=options.finite_float, metavar="PCT",
                   help="Fail when less than PCT %% of the conditions are decided by an example.")
    options.add_output(q, "the result")
    options.add_engine(q)
    q.set_defaults(run=run)


def _in_packs(dirs: list[Path], everything: bool):
    """rule -> whether it is one of the PACKs' rules (every rule without PACKs or with --all)."""
    if not dirs or everything:
        return lambda rule: True
    packs = {str(d.resolve()) for d in dirs if d.is_dir()}
    files = {str(d) for d in dirs if not d.is_dir()}  # a single rule file: its rules are shown under its path
    return lambda rule: rule.file in files or any(str(Path(rule.folder).resolve()) == p for p in packs)


def run(args, console: Console) -> int:
    from j6doctor.commands.rules import id_matcher, no_match
    from j6doctor.rule_tests import RuleTestOutcome, render_json, render_junit, render_text, run_rule_tests

    dirs = list(args.dirs)
    rulebase = load_rules(tuple(dirs), args.engine, rule_files=True)
    matcher = id_matcher(args.pattern)
    in_packs = _in_packs(dirs, args.everything)
    selected = {r.id for r in rulebase.rules if in_packs(r) and (matcher is None or matcher(r.id))}
    results, coverage = run_rule_tests(rulebase, selected.__contains__)
    if args.pattern is not None and not coverage:
        raise no_match(args.pattern)
    outcome = RuleTestOutcome(results, coverage, args.min_coverage)
    if args.fmt == "json":
        text = render_json(outcome)
    elif args.fmt == "junit":
        text = render_junit(results, coverage)
    else:
        text = render_text(outcome, console.verbosity > 0, args.show_coverage)
    protected = [f for d in dirs for f in (d.rglob("*") if d.is_dir() else [d]) if f.is_file()]  # -o: no rule file
    console.write(text, args.output, protected)
    return EXIT_FINDINGS if outcome.has_findings else EXIT_OK
