"""`j6doctor schema`: the JSON Schema of the verdict, of a case file or of a rule file."""

from __future__ import annotations

from j6doctor.commands import options
from j6doctor.commands.console import Console
from j6doctor.commands.inputs import load_rules
from j6doctor.exit_codes import EXIT_OK


def register(commands) -> None:
    p = options.command(commands, "schema",
                        "Print a JSON Schema: `verdict` (the JSON verdict of `diagnose --format json`, with its\n"
                        "schema_version), `case` (case.yaml / case.json) or `rule` (a rule file, with the fact\n"
                        "vocabulary folded in). With --rules, the packs' vocabulary is included.")
    p.add_argument("what", choices=["verdict", "case", "rule"], metavar="{verdict,case,rule}")
    p.add_argument("--rules", dest="rule_packs", action="append", default=[], metavar="PACK",
                   type=options.path_type("folder"), help="Rule pack folder whose vocabulary to include (repeatable).")
    p.set_defaults(run=run)


def _document(what: str) -> dict:
    if what == "verdict":
        from j6doctor.verdict_schema import verdict_schema

        return verdict_schema()
    if what == "case":
        from j6doctor.probes.written_case_schema import written_case_schema

        return {"$schema": "https://json-schema.org/draft/2020-12/schema", "title": "j6doctor case file",
                "description": "case.yaml / case.json as written, shorthands and aliases included "
                               "(docs/CONTRACT.md)", **written_case_schema()}
    from j6doctor.engine.schema_export import vocabulary_schema
    from j6doctor.facts import vocabulary

    return vocabulary_schema(vocabulary())


def run(args, console: Console) -> int:
    """The JSON Schema of the verdict, of a case file or of a rule file (with the packs'
    vocabulary where it matters: their enum values and fact types)."""
    import json

    from j6doctor.facts import bundled, using

    # the packs' vocabulary (or a refusal that says why a pack cannot be loaded)
    vocab = load_rules(tuple(args.rule_packs)).vocab if args.rule_packs else bundled()
    with using(vocab):
        console.echo(json.dumps(_document(args.what), ensure_ascii=False, indent=2))
    return EXIT_OK
