"""`j6doctor triage`: many cases and work folders at once, with a summary table
(the work itself: app/triage.py)."""

from __future__ import annotations

import argparse
from pathlib import Path

from j6doctor.commands import options
from j6doctor.commands.console import Console, Refusal


def register(commands) -> None:
    p = options.command(commands, "triage",
                        "Diagnose many cases and/or work folders in a process pool and summarise them: one row\n"
                        "per case (stage, candidates, missing, first finding), on the terminal and, with --out,\n"
                        "as summary.csv, summary.json and index.html linking one report per case.\n\n"
                        "A PATH that is a file is a case; a folder is searched for case files (each one a case)\n"
                        "and for folders of artifacts without a case file (each one a work-folder diagnosis).\n"
                        "Exit 0 when every case was diagnosed, 2 when any could not be read (its row says why).")
    p.add_argument("paths", nargs="+", type=Path, metavar="PATH")
    p.add_argument("--out", type=options.path_type("folder"), metavar="DIR",
                   help="Write summary.csv, summary.json, index.html and one report per case here.")
    p.add_argument("--format", dest="formats", type=_formats, default=("html",), metavar="FORMATS",
                   help="The per-case reports written with --out: a comma list of html, json and md.  "
                        "[default: html]")
    p.add_argument("-j", "--jobs", type=int, metavar="N", help="Worker processes (default: all cores).")
    p.add_argument("--env", action=argparse.BooleanOptionalAction, default=None,
                   help="Read (or not) this machine's package versions and board type (default: config, else off "
                        "for triage: the cases are other people's).")
    p.add_argument("--rules", dest="rule_packs", action="append", default=[], metavar="PACK",
                   type=options.path_type("folder"), help="Extra rule pack folder (repeatable).")
    options.add_engine(p)
    p.add_argument("--no-progress", dest="progress", action="store_false",
                   help="No progress bar (it is shown only on a terminal anyway).")
    options.add_fail_on(p)
    options.add_store(p)
    p.set_defaults(run=run)


def _formats(text: str) -> tuple[str, ...]:
    chosen = tuple(dict.fromkeys(part.strip().lower() for part in text.split(",") if part.strip()))
    unknown = [f for f in chosen if f not in ("html", "json", "md")]
    if unknown or not chosen:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a comma list of html, json and md")
    return chosen


def run(args, console: Console) -> int:
    from j6doctor.config import load_config
    from j6doctor.probes import InputError
    from j6doctor.triage import triage_main

    if args.jobs is not None and args.jobs < 1:
        raise Refusal("--jobs must be 1 or more")
    store = args.store
    if store is None:
        try:
            store = load_config(Path.cwd()).store
        except InputError as exc:
            raise Refusal(exc.render()) from None
    return triage_main(args.paths, args.out, args.jobs, tuple(args.rule_packs), args.engine, args.env,
                       args.progress and console.verbosity >= 0, formats=args.formats, fail_on=args.fail_on,
                       store=store, stdout=console.out, stderr=console.err)
