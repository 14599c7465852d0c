"""`j6doctor cases …`: the case library that `diagnose --store` and `triage --store` fill:
list, search, show, resolve, stats, rediagnose, export, import."""

from __future__ import annotations

from pathlib import Path

from j6doctor.commands import options
from j6doctor.commands.console import Console, Refusal, check_output_path
from j6doctor.commands.inputs import load_rules
from j6doctor.commands.library import open_required, store_call, store_files
from j6doctor.exit_codes import EXIT_FINDINGS, EXIT_OK


def register(commands) -> None:
    p = options.command(commands, "cases",
                        "The case library that `diagnose --store` and `triage --store` fill: every diagnosis kept\n"
                        "(SQLite file or PostgreSQL URL), past cases found by similarity, rule changes checked\n"
                        f"against all stored cases (`rediagnose`, exit {EXIT_FINDINGS} when a verdict would change).")
    sub = p.add_subparsers(dest="cases_command", metavar="COMMAND", title="commands")
    p.set_defaults(run=None, parser=p)
    q = options.subcommand(sub, "list", help="The stored cases with their latest verdict.")
    _add_case_filters(q)
    q = options.subcommand(sub, "search", help="Cases whose title or case text contains TEXT.")
    q.add_argument("text", metavar="TEXT")
    _add_case_filters(q)
    _register_show_resolve_stats(sub)
    _register_rediagnose(sub)
    q = options.subcommand(sub, "export", help="The library as JSON Lines (one case per line).")
    options.add_output(q, "the lines")
    options.add_store(q, required=True)
    q.set_defaults(run=export)
    q = options.subcommand(sub, "import", help="Add the cases of an export (JSON Lines).")
    q.add_argument("file", type=options.path_type("file"), metavar="FILE")
    options.add_store(q, required=True)
    q.set_defaults(run=import_)


def _add_case_filters(parser) -> None:
    options.stages(parser.add_argument("--stage", help="The latest verdict's stage."))
    options.stages(parser.add_argument("--candidate", help="A stage among the latest verdict's candidates."))
    parser.add_argument("--platform", help="The platform family (J6M, X5, ...).")
    parser.add_argument("--flow", choices=["qat", "ptq"])
    parser.add_argument("--finding", help="Text of a finding or its topic.")
    parser.add_argument("--op-type", dest="op_type", help="Op type of the first divergent layer (Conv2d, add, ...).")
    parser.add_argument("--missing", help="An info-gate item the verdict lists as missing.")
    parser.add_argument("--since", metavar="DATE", help="Recorded on or after this date (YYYY-MM-DD).")
    parser.add_argument("--until", metavar="DATE", help="Recorded before this date (YYYY-MM-DD).")
    parser.add_argument("--format", dest="fmt", choices=["text", "json"], default="text")
    options.add_store(parser, required=True)
    parser.set_defaults(run=list_)


def _register_show_resolve_stats(sub) -> None:
    q = options.subcommand(sub, "show", help="A stored case's report (or --format json: its verdict).")
    q.add_argument("case_id", type=int, metavar="ID")
    q.add_argument("--format", dest="fmt", choices=["md", "json"], default="md")
    options.add_store(q, required=True)
    q.set_defaults(run=show)
    q = options.subcommand(sub, "resolve", help="Record a case's confirmed root cause.")
    q.add_argument("case_id", type=int, metavar="ID")
    options.stages(q.add_argument("--stage", required=True, type=lambda t: options.stage_list(t)[0],
                                  metavar="STAGE"))
    q.add_argument("--note", default="", metavar="TEXT")
    options.add_store(q, required=True)
    q.set_defaults(run=resolve)
    q = options.subcommand(sub, "stats",
                           help="Agreement of verdicts with confirmed root causes, per stage and rule-base version.")
    q.add_argument("--format", dest="fmt", choices=["text", "json"], default="text")
    options.add_store(q, required=True)
    q.set_defaults(run=stats)


def _register_rediagnose(sub) -> None:
    q = options.subcommand(
        sub, "rediagnose",
        help=f"Re-run every stored case on the current (or a candidate) rule base; exit {EXIT_FINDINGS} if any "
             "changes.",
        description="Re-run every stored case from its stored input facts (no original files needed)\n"
                    "on the bundled rules plus --rules PACKs, and list each case whose stage,\n"
                    "candidates, missing items or mistakes would change, with the rules behind the\n"
                    f"old and the new verdict. Exit {EXIT_FINDINGS} when any would change.")
    q.add_argument("--rules", dest="rule_packs", action="append", default=[], metavar="PACK",
                   type=options.path_type("folder"), help="Candidate rule pack folder (repeatable).")
    q.add_argument("--diff", action="store_true", help="Also show the candidates / missing / mistakes that change.")
    q.add_argument("-j", "--jobs", type=int, metavar="N", help="Worker processes (default: all cores).")
    q.add_argument("--format", dest="fmt", choices=["text", "json"], default="text")
    options.add_engine(q)
    options.add_store(q, required=True)
    q.set_defaults(run=rediagnose)


FILTERS = ("stage", "candidate", "platform", "flow", "finding", "op_type", "missing", "since", "until")


def list_(args, console: Console) -> int:
    from j6doctor.store.commands import list_text

    library = open_required(args.store, write=False)
    filters = {name: getattr(args, name) for name in FILTERS}
    rows = store_call(library, lambda: library.rows(text=getattr(args, "text", None), **filters))
    console.echo(list_text(rows, args.fmt), nl=False)
    return EXIT_OK


def show(args, console: Console) -> int:
    from j6doctor.store.commands import show_text

    library = open_required(args.store, write=False)
    console.echo(store_call(library, show_text, library, args.case_id, args.fmt), nl=False)
    return EXIT_OK


def resolve(args, console: Console) -> int:
    library = open_required(args.store)
    store_call(library, library.resolve, args.case_id, args.stage, args.note)
    console.say(f"j6doctor: 案例 #{args.case_id} 的根因记为 {args.stage}")
    return EXIT_OK


def stats(args, console: Console) -> int:
    from j6doctor.store.commands import stats_text

    library = open_required(args.store, write=False)
    console.echo(store_call(library, stats_text, library, args.fmt), nl=False)
    return EXIT_OK


def rediagnose(args, console: Console) -> int:
    from j6doctor.store.commands import rediagnose_text
    from j6doctor.store.rediagnose import rediagnose as rediagnose_library

    if args.jobs is not None and args.jobs < 0:
        raise Refusal("--jobs must be 0 (all cores) or more")
    library = open_required(args.store, write=False)
    packs = tuple(args.rule_packs)
    load_rules(packs, args.engine)  # a broken pack is said here, once, with its file and line
    count, changes = store_call(library, rediagnose_library, library, tuple(str(p) for p in packs), args.engine, args.jobs)
    console.echo(rediagnose_text(count, changes, args.fmt, args.diff), nl=False)
    return EXIT_FINDINGS if changes else EXIT_OK


def export(args, console: Console) -> int:
    """The lines go out as they are read (a large library is never held in memory); a file
    is replaced only once the export is complete."""
    library = open_required(args.store, write=False)
    output = args.output
    if output is None or str(output) == "-":
        try:
            count = store_call(library, library.export_jsonl, console.out)
            console.out.flush()
        except OSError as exc:  # a closed pipe, a full disk behind a redirection
            raise Refusal(f"cannot write the export to standard output: {exc.strerror or exc}") from None
    else:
        count = _export_to_file(library, output)
    console.say(f"j6doctor: 导出 {count} 个案例")
    return EXIT_OK


def _export_to_file(library, output: Path) -> int:
    import io

    from j6doctor.atomic_write import writing_atomic

    check_output_path(output, store_files(library))
    try:
        with writing_atomic(output) as stream:
            text = io.TextIOWrapper(stream, encoding="utf-8", newline="\n")
            count = store_call(library, library.export_jsonl, text)
            text.flush()
            text.detach()  # the binary stream is closed by writing_atomic
    except OSError as exc:
        raise Refusal(f"{output}: cannot write: {exc.strerror or exc}; give -o a file in an existing, writable "
                      "folder") from None
    return count


def import_(args, console: Console) -> int:
    library = open_required(args.store)
    try:
        with open(args.file, "rb") as lines:  # decoded line by line: an error names its line
            added, known = store_call(library, library.import_jsonl, lines, str(args.file))
    except OSError as exc:
        raise Refusal(f"{args.file}: cannot read: {exc.strerror or exc}; expected a JSON Lines file of "
                      "`j6doctor cases export`") from None
    console.say(f"j6doctor: 导入 {added} 个新案例，{known} 个已在案例库中")
    return EXIT_OK
