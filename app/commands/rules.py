"""`j6doctor rules …`: work on the rule base — start a rule (new), check it (lint), run the
examples (test: app/commands/rules_test.py), list the rules or show one, print the
rule-file schema."""

from __future__ import annotations

from pathlib import Path

from j6doctor.commands import options, rules_test
from j6doctor.commands.console import Console, Refusal
from j6doctor.commands.inputs import load_rules
from j6doctor.exit_codes import EXIT_FINDINGS, EXIT_OK


def register(commands) -> None:
    p = options.command(commands, "rules",
                        "Work on the rule base: start a rule (new), check it (lint), run each rule's example\n"
                        "cases (test), list the rules or show one (list, show), print the rule-file schema (schema).")
    sub = p.add_subparsers(dest="rules_command", metavar="COMMAND", title="commands")
    p.set_defaults(run=None, parser=p)
    _register_lint(sub)
    rules_test.register(sub)
    q = options.subcommand(sub, "new", help="Start a rule: a rule file with a failing example.",
                           description="Write PACK/<ID>.yaml: one rule with a placeholder condition and an example "
                                       "that\ndoes not fire it yet, so that `rules test PACK` fails until both are "
                                       "written.")
    q.add_argument("pack", type=Path, metavar="PACK")
    q.add_argument("rule_id", metavar="ID")
    q.add_argument("--title", help="The rule's title (what it recognises).")
    q.set_defaults(run=new)
    _register_list_show(sub)
    q = options.subcommand(sub, "schema", help="Print the JSON Schema of a rule file.",
                           description="Print the JSON Schema of a rule file (for editors), with fact types, fields "
                                       "and values.")
    q.add_argument("--plain", action="store_true", help="The generic schema, without the fact vocabulary.")
    q.set_defaults(run=schema)


def _register_lint(sub) -> None:
    q = options.subcommand(sub, "lint", help="Check rule files; exit 1 on errors.",
                           description="Check the bundled rules plus the PACKs (rule pack folders or single rule "
                                       "files):\nschema, vocabulary, rules that can never fire, rules that disagree "
                                       "on the same\nconditions, endless cycles, engine limits. With -k, the whole "
                                       "rule base is still\nchecked, and the messages of the matching rules (and "
                                       "those that name no rule:\nfile-level problems) are shown and counted.")
    q.add_argument("dirs", nargs="*", type=Path, metavar="PACK",
                   help="A rule pack folder, or a single rule file (*.yaml, *.yml).")
    q.add_argument("--strict", action="store_true", help="Warnings fail too.")
    q.add_argument("-k", dest="pattern", metavar="PATTERN",
                   help="Only the messages of the rules whose id contains PATTERN (or matches it as a glob: "
                        "*, ?, [...]), and those that name no rule.")
    q.set_defaults(run=lint)


def _register_list_show(sub) -> None:
    q = options.subcommand(sub, "list", help="List the rules: id, title, seed section, file:line.",
                           description="List the bundled rules plus those of the packs DIRS, in rule-base order.")
    q.add_argument("dirs", nargs="*", type=options.path_type("folder"), metavar="DIR")
    q.add_argument("-k", dest="pattern", metavar="PATTERN",
                   help="Only the rules whose id contains PATTERN (or matches it as a glob: *, ?, [...]).")
    q.add_argument("--format", dest="fmt", choices=["text", "json"], default="text")
    q.set_defaults(run=list_)
    q = options.subcommand(sub, "show", help="Show one rule: conditions, conclusions, examples, "
                           "the rules around it.",
                           description="Show the rule ID (bundled, or from the packs DIRS): its title, seed section "
                                       "and\nfile, its conditions in words, its conclusions, its examples, the rules "
                                       "that\nconclude what it reads and the rules that read what it concludes.")
    q.add_argument("rule_id", metavar="ID")
    q.add_argument("dirs", nargs="*", type=options.path_type("folder"), metavar="DIR")
    q.add_argument("--format", dest="fmt", choices=["text", "json"], default="text")
    q.set_defaults(run=show)


def id_matcher(pattern: str | None):
    """-k PATTERN: a glob (with * ? [) or a part of the rule id."""
    if pattern is None:
        return None
    if any(c in pattern for c in "*?["):
        from fnmatch import fnmatchcase

        return lambda rule_id: fnmatchcase(rule_id, pattern)
    return lambda rule_id: pattern in rule_id


def no_match(pattern: str) -> Refusal:
    return Refusal(f"-k {pattern}: no rule id matches (see `j6doctor rules list`)")


# ---------------------------------------------------------------------------- rules lint


def _rule_dirs(dirs: list[Path]):
    from j6doctor.rules import BUNDLED_RULES_DIR

    for folder in dirs:
        if not folder.exists():
            raise Refusal(f"{folder}: no such rule folder or file; give a rule pack folder (or a rule file)")
    return [BUNDLED_RULES_DIR, *dirs], {BUNDLED_RULES_DIR: "rules"}


def _pack_vocabulary(dirs: list[Path]):
    from j6doctor.diagnosis import pack_vocabulary
    from j6doctor.engine.errors import VocabularyError

    try:
        return pack_vocabulary([d for d in dirs if d.is_dir()], {d: str(d) for d in dirs})
    except (OSError, VocabularyError) as exc:
        raise Refusal(str(exc)) from None


def _missing_fixtures(rules, matcher, console: Console) -> int:
    """The examples whose fixture files are not there, said as errors; how many."""
    from j6doctor.rule_tests import missing_fixtures

    count = 0
    for rule, example, problem in missing_fixtures(rules):
        if matcher is None or matcher(rule.id):
            console.echo(f"{rule.file}:{example.line}: error: rule {rule.id}: example {example.name!r}: {problem}")
            count += 1
    return count


def lint(args, console: Console) -> int:
    from j6doctor.engine.lint import lint as lint_rules
    from j6doctor.engine.rule_loader import load_rule_dirs

    folders, display = _rule_dirs(args.dirs)
    vocab = _pack_vocabulary(args.dirs)
    issues = lint_rules(folders, vocab, display)
    rules = None
    matcher = id_matcher(args.pattern)
    if matcher is not None:  # the whole base is checked; the matching rules' messages are shown
        rules = load_rule_dirs(folders, vocab, display)[0]
        if rules and not any(matcher(r.id) for r in rules):
            raise no_match(args.pattern)
        issues = [i for i in issues if i.rule is None or matcher(i.rule)]
    for issue in issues:
        console.echo(issue.render())
    errors = sum(1 for i in issues if i.level == "error")
    if not errors:  # the rules load: their examples' fixtures must be there too
        if rules is None:
            rules = load_rule_dirs(folders, vocab, display)[0]
        errors += _missing_fixtures(rules, matcher, console)
    warnings = sum(1 for i in issues if i.level == "warning")
    console.echo(f"{errors} error(s), {warnings} warning(s)")
    return EXIT_FINDINGS if errors or (args.strict and warnings) else EXIT_OK


# ---------------------------------------------------------------------------- new, list, show, schema


def new(args, console: Console) -> int:
    from j6doctor.rule_scaffold import new_rule_file

    try:
        path = new_rule_file(args.pack, args.rule_id, args.title)
    except ValueError as exc:
        raise Refusal(str(exc)) from None
    except OSError as exc:
        raise Refusal(f"{args.pack}: cannot write: {exc.strerror or exc}; give a writable rule pack folder") from None
    console.echo(f"wrote {path}: its example does not fire the rule yet, so `j6doctor rules test {args.pack}` "
                 "fails\nuntil the conditions and the example case are written (see docs/AUTHORING.md)")
    return EXIT_OK


def list_(args, console: Console) -> int:
    import json

    from j6doctor.rule_catalog import listing, render_listing

    matcher = id_matcher(args.pattern)
    entries = [e for e in listing(load_rules(tuple(args.dirs))) if matcher is None or matcher(e["id"])]
    console.echo(json.dumps(entries, ensure_ascii=False, indent=2) if args.fmt == "json" else render_listing(entries))
    return EXIT_OK


def show(args, console: Console) -> int:
    import json

    from j6doctor.rule_catalog import detail, find, render_detail

    rulebase = load_rules(tuple(args.dirs))
    rule, _ = find(rulebase, args.rule_id)
    if rule is None:
        import difflib

        close = difflib.get_close_matches(args.rule_id, [r.id for r in rulebase.rules], n=3, cutoff=0.6)
        hint = (f"; did you mean {', '.join(close)}?" if close else
                f"; `j6doctor rules list` lists every rule id (`rules list -k {args.rule_id}`: the ids containing it)")
        raise Refusal(f"no rule with id {args.rule_id!r}{hint}")
    found = detail(rulebase, rule)
    console.echo(json.dumps(found, ensure_ascii=False, indent=2) if args.fmt == "json" else render_detail(found))
    return EXIT_OK


def schema(args, console: Console) -> int:
    import json

    from j6doctor.engine import rule_file_schema
    from j6doctor.engine.schema_export import vocabulary_schema
    from j6doctor.facts import vocabulary

    document = rule_file_schema() if args.plain else vocabulary_schema(vocabulary())
    console.echo(json.dumps(document, ensure_ascii=False, indent=2))
    return EXIT_OK
