"""`j6doctor ask`: ask for the missing information that would change the judgement, write
the answers into CASE, then diagnose. The questions go to stderr, the report to stdout."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from j6doctor.commands import options
from j6doctor.commands.console import Console, Refusal
from j6doctor.commands.inputs import Inputs, diagnose_inputs, render_report, report_format
from j6doctor.commands.library import keep_diagnosis, open_library, store_files
from j6doctor.exit_codes import EXIT_OK


def register(commands) -> None:
    p = options.command(commands, "ask",
                        "Ask for the missing information that would change the judgement (info gate order,\n"
                        "with the reason), write the answers into CASE (created with the first answer; existing\n"
                        "content and comments are kept), then diagnose. An empty answer skips; end of input stops\n"
                        "asking; Ctrl-C saves the answers given so far and exits 130. The questions go to stderr,\n"
                        "the final report to stdout (or -o).")
    p.add_argument("case", nargs="?", default=Path("case.yaml"), type=Path, metavar="CASE",
                   help="The case file the answers are written into (created with the first answer). "
                        "[default: case.yaml]")
    p.add_argument("--workdir", dest="workdirs", action="append", default=[], metavar="DIR",
                   type=options.path_type("folder"), help="Folder of artifacts to scan (repeatable).")
    p.add_argument("--env", action=argparse.BooleanOptionalAction, default=None,
                   help="Read (or not) this machine's package versions and board type (default: config, else on).")
    p.add_argument("--rules", dest="rule_packs", action="append", default=[], metavar="PACK",
                   type=options.path_type("folder"),
                   help="Extra rule pack folder (repeatable); its rules and vocabulary decide what is asked.")
    p.add_argument("--metrics", type=options.path_type("file"), metavar="FILE",
                   help="Evaluation results (CSV / YAML / JSON rows: artifact, metric, value[, dataset, frames]).")
    p.add_argument("--format", dest="fmt", choices=["md", "json", "html"], default=None,
                   help="The final report: Chinese Markdown, the JSON verdict or an HTML page "
                        "(default: `format` in j6doctor.toml, else md).")
    options.add_output(p, "the final report")
    options.add_store(p)
    p.set_defaults(run=run)


def _check_case(case: Path) -> None:
    """CASE of `ask` is the file the answers are written into: not standard input (which
    carries the answers), not a folder (said with the file to give instead), a case file's
    name, in a folder that exists."""
    if str(case) == "-":
        raise Refusal("ask writes the answers into the case file, so CASE cannot be standard input (standard "
                      "input carries the answers); give the case file, e.g. `j6doctor ask case.yaml` (created "
                      "if absent)")
    _check_not_a_folder(case)
    if case.suffix.lower() not in (".yaml", ".yml", ".json"):
        raise Refusal(f"{case}: a case file ends in .yaml, .yml or .json")
    if not case.exists() and not case.parent.is_dir():  # said before the questions, not after the answers
        raise Refusal(f"{case}: the folder {case.parent} does not exist; create it or give another CASE path")


def _check_not_a_folder(case: Path) -> None:
    try:
        is_folder = case.is_dir()
    except (OSError, ValueError):  # a name too long, a NUL byte: said where the file is used
        return
    if not is_folder:
        return
    found = [case / name for name in ("case.yaml", "case.yml", "case.json") if (case / name).is_file()]
    if found:
        raise Refusal(f"{case}: is a folder; ask writes the answers into a case file: give {found[0]}"
                      f" (`j6doctor ask {found[0]} --workdir {case}` also scans the folder's artifacts)")
    raise Refusal(f"{case}: is a folder; ask writes the answers into a case file: give one to create in it, e.g. "
                  f"`j6doctor ask {case / 'case.yaml'} --workdir {case}` (--workdir scans the folder's artifacts)")


def _answer_reader(console: Console):
    """ask(question) -> the answer line typed (or piped) in; the question on stderr."""
    from j6doctor.ask import EndOfAnswers, read_answer

    stdin = getattr(sys.stdin, "buffer", None)
    encoding = getattr(sys.stdin, "encoding", None) or "utf-8"
    if encoding.lower().replace("_", "-") in ("ascii", "ansi-x3.4-1968", "us-ascii"):
        encoding = "utf-8"  # a C / POSIX locale: answers are still typed in UTF-8
    try:  # answers piped in are not echoed: each prompt then ends its own line
        prompt_nl = not sys.stdin.isatty()
    except (AttributeError, ValueError, OSError):  # no stdin, or a closed one
        prompt_nl = True

    def answer(question: str) -> str:
        console.tell(question, nl=prompt_nl)
        if stdin is None:  # a text-only stream (embedding): nothing to decode
            line = sys.stdin.readline()
            if not line:
                raise EndOfAnswers()
            return line.rstrip("\r\n")
        return read_answer(stdin, encoding, console.tell, lambda: console.tell(question, nl=prompt_nl))

    return answer


def run(args, console: Console) -> int:
    from j6doctor.ask import ask_session

    case = args.case
    _check_case(case)
    latest = []  # the latest diagnosis run: its config and the files it read

    def diagnose_case(exists: bool):
        inputs = Inputs(case if exists else None, tuple(args.workdirs), args.metrics, env=args.env,
                        rule_packs=tuple(args.rule_packs), empty_case=None if exists else case)
        latest[:] = [diagnose_inputs(inputs, console)]
        return latest[0].diagnosis

    if args.store:
        open_library(args.store)  # an unusable store is said before the first question, not after the answers
    try:
        diagnosis = ask_session(case, diagnose_case, _answer_reader(console), console.tell)
    except OSError as exc:  # the answers cannot be written into CASE
        raise Refusal(f"{case}: cannot write: {exc.strerror or exc}; give a CASE path in a writable folder") from None
    console.tell("")
    config = latest[0].config
    library = keep_diagnosis(diagnosis, args.store or config.store, console)  # the case as completed by the answers
    console.write(render_report(diagnosis, report_format(args.fmt, config)), args.output,
                  latest[0].protected + store_files(library))
    return EXIT_OK
