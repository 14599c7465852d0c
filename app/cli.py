# PYTHON_ARGCOMPLETE_OK  (argcomplete looks for this marker: j6doctor completes its commands)
"""Command line: `j6doctor diagnose CASE [--format md|json|html] [-o FILE]` and friends.

The parser is built from the command modules of app/commands/ (one module per command);
this module parses, runs the command with a Console (the output streams and -q / -v), and
turns what the command ends with into the exit status of app/exit_codes.py (docs/CONTRACT.md,
"Exit codes"): 0 success, 1 findings, 2 bad input or usage, 3 an internal error, 130 Ctrl-C.

On a terminal, control characters that came from the inputs are shown escaped
(app/terminal_text.py); output to a pipe or a file is left as it is, the same bytes -o writes.

Built on argparse (standard library): `j6doctor --help` costs little more than starting
Python, and each command imports only what it uses.
"""

from __future__ import annotations

import argparse
import os
import sys

from j6doctor import __version__
from j6doctor.commands import COMMANDS, module_of, options
from j6doctor.commands.console import Console, Refusal
from j6doctor.exit_codes import EXIT_INPUT, EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_OK
from j6doctor.terminal_text import for_terminal


def build_parser(run: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command (run=None), or the parser that runs the command `run`
    (a name of COMMANDS, or "" for none): the others are only listed, by name and summary,
    and their modules are not imported."""
    parser = options.TopParser(
        prog="j6doctor", formatter_class=options.Formatter, parents=options.verbosity(),
        description="j6doctor — locate where a horizon_plugin_pytorch J6 model loses accuracy between\n"
                    "qat.pt, qat.export.pt, qat.bc, quantized.bc, hbm and the board, with the evidence chain.")
    parser.add_argument("--version", action="version", version=f"j6doctor, version {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")
    for name in COMMANDS:
        if run is None or name == run:
            module_of(name).register(commands)
        else:
            options.listed(commands, name)
    return parser


def command_run(argv: list[str]) -> str | None:
    """The command these arguments run: the first one that is no option (the top level's
    options take no value), "" when there is none, None when it is no command (argparse's
    error then lists every command)."""
    first = next((arg for arg in argv if not arg.startswith("-")), "")
    return first if first in COMMANDS or not first else None


def _complete(parser: argparse.ArgumentParser) -> None:
    """Shell completion through argcomplete when it is installed and the shell asks for it
    (it sets _ARGCOMPLETE); otherwise nothing is imported."""
    if "_ARGCOMPLETE" in os.environ:
        try:
            import argcomplete
        except ImportError:
            return
        argcomplete.autocomplete(parser)


def _run(argv: list[str] | None, console: Console) -> int:
    """Parse and run the command; its exit code."""
    arguments = sys.argv[1:] if argv is None else argv
    # shell completion needs every command's options; a run needs its own command's only
    parser = build_parser(None if "_ARGCOMPLETE" in os.environ else command_run(arguments))
    _complete(parser)
    args = parser.parse_args(arguments)
    run = getattr(args, "run", None)
    if run is None:  # `j6doctor` or `j6doctor rules` alone: its help, as click did
        (getattr(args, "parser", None) or parser).print_help(console.out)
        return EXIT_OK
    console.verbosity = getattr(args, "verbosity", 0) or 0
    try:
        return run(args, console)
    except Refusal as refusal:
        console.tell(f"j6doctor: error: {refusal.message}")
        return refusal.code


def _flush(console: Console) -> int | None:
    """Everything written reaches stdout; if it cannot (a closed pipe, a full disk behind a
    redirection), the error is said and stdout is pointed at /dev/null, so that the
    interpreter's own flush at exit does not fail again. EXIT_INPUT then, else None."""
    try:
        console.out.flush()
        return None
    except OSError as exc:
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            os.close(devnull)
        except (OSError, ValueError, AttributeError):
            pass
        console.tell(f"j6doctor: error: cannot write the report to standard output: {exc.strerror or exc}")
        return EXIT_INPUT


def _stop_engine_worker() -> None:
    """The engine child this process started ends and is reaped before the process does, on
    every path (engine/worker.py registers no atexit handler: the child would see its input
    close at our exit and end, but unreaped, its time missing from ours)."""
    worker = sys.modules.get("j6doctor.engine.worker")  # imported only if a rule base ran
    if worker is not None:
        worker.close_shared_worker()


def _close_libraries() -> None:
    keep = sys.modules.get("j6doctor.store.keep")  # imported only if a case library was opened
    if keep is not None:
        keep.close_libraries()


def _note_engine_fallback(console: Console) -> None:
    backends = sys.modules.get("j6doctor.engine.backends")  # imported only if an engine was picked
    note = backends.fallback_note() if backends is not None else None
    if note:
        console.tell(note)


def _unicode_streams() -> None:
    """Reports and messages are Chinese: a stream whose encoding cannot write them (ASCII,
    Latin-1: PYTHONIOENCODING, an old locale) writes UTF-8 instead of failing mid-report."""
    for stream in (sys.stdout, sys.stderr):
        encoding = getattr(stream, "encoding", None)
        try:
            "诊断⚠→".encode(encoding or "utf-8")
        except (UnicodeEncodeError, LookupError):
            if hasattr(stream, "reconfigure"):
                stream.reconfigure(encoding="utf-8")


def main(argv: list[str] | None = None) -> None:
    """The console script: runs the command, then exits with its status (returns when it is 0)."""
    _unicode_streams()
    console = Console(for_terminal(sys.stdout), for_terminal(sys.stderr))
    try:
        code = _run(argv, console)
    except KeyboardInterrupt:
        code = EXIT_INTERRUPTED
        console.tell("j6doctor: interrupted")
    except Exception as exc:  # last line of defence: no traceback unless asked for
        code = EXIT_INTERNAL
        if os.environ.get("J6DOCTOR_DEBUG"):
            import traceback

            traceback.print_exc()
        console.tell(f"j6doctor: internal error: {type(exc).__name__}: {exc} "
                     "(a defect of j6doctor: set J6DOCTOR_DEBUG=1 for a traceback and please report it)")
    finally:
        _stop_engine_worker()
        _close_libraries()
    _note_engine_fallback(console)
    code = _flush(console) or code
    if code != EXIT_OK:
        sys.exit(code)
