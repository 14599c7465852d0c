"""The argparse pieces the commands share: the help formatter, argument types, the options
several commands take (inputs, -o, --engine, --store, --fail-on, -q / -v) and the exit
codes at the end of the top-level help."""

from __future__ import annotations

import argparse
import os
import stat
from pathlib import Path

from j6doctor.commands import COMMANDS
from j6doctor.exit_codes import EXIT_FAIL_ON
from j6doctor.terminal_text import terminal_columns

# ---------------------------------------------------------------------------- formatting


class Formatter(argparse.RawDescriptionHelpFormatter):
    """Descriptions keep their paragraphs; option help shows its default."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: int | None = None):
        # argparse builds a formatter for every add_argument; without a width each one imports
        # shutil (and its compression modules) for shutil.get_terminal_size: the same lookup here
        super().__init__(prog, indent_increment, max_help_position,
                         terminal_columns() - 2 if width is None else width)

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if action.default not in (None, False, argparse.SUPPRESS) and "%(default)" not in text \
                and action.option_strings and not isinstance(action.default, (list, tuple)):
            text += "  [default: %(default)s]"
        return text


def exit_status_text() -> str:
    """The exit codes of app/exit_codes.py, each with the comment beside it there: the help
    lists what the module says, so the two cannot drift apart. A code with two names (an
    alias) is listed once, with the name that has a comment."""
    import re

    from j6doctor import exit_codes

    try:
        source = Path(exit_codes.__file__).read_text(encoding="utf-8")
    except (OSError, TypeError, ValueError):  # no source next to the module: the names alone
        source = ""
    notes = dict(re.findall(r"^(EXIT_\w+)\s*=\s*\d+\s*#\s*(.+?)\s*$", source, re.MULTILINE))
    lines: dict[int, str] = {}
    for name, value in vars(exit_codes).items():
        if not (name.startswith("EXIT_") and isinstance(value, int)):
            continue
        if value not in lines or name in notes:
            lines[value] = notes.get(name) or name[len("EXIT_"):].lower().replace("_", " ")
    return "exit status:\n" + "\n".join(f"  {value:<5}{lines[value]}" for value in sorted(lines))


class TopParser(argparse.ArgumentParser):
    """The top-level parser: its help ends with the exit codes, read only when it is shown."""

    def format_help(self) -> str:
        self.epilog = exit_status_text()
        return super().format_help()


# ---------------------------------------------------------------------------- argument types


def path_type(kind: str):
    """A path argument that, when it exists, must be a `kind` ("file" or "folder"); a
    missing path is left to the command (which says what it expected)."""
    def check(text: str) -> Path:
        path = Path(text)
        try:
            mode = os.stat(path).st_mode
        except (OSError, ValueError):  # missing, a name too long, a NUL byte: the command says why
            return path
        if kind == "file" and stat.S_ISDIR(mode):
            raise argparse.ArgumentTypeError(f"{text!r} is a directory; a file path is expected")
        if kind == "folder" and not stat.S_ISDIR(mode):
            raise argparse.ArgumentTypeError(f"{text!r} is a file; a folder is expected")
        return path
    check.__name__ = f"{kind} path"  # argparse names the type in its messages
    return check


def case_path(text: str) -> Path:
    """CASE: a case file, or - for standard input; a folder gets told what to do instead."""
    if text == "-":
        return Path("-")
    path = Path(text)
    try:
        is_folder = path.is_dir()
    except (OSError, ValueError):
        return path
    if is_folder:
        found = [name for name in ("case.yaml", "case.yml", "case.json") if (path / name).is_file()]
        hint = f"give the case file ({path / found[0]})" if found else "give a case file"
        raise argparse.ArgumentTypeError(f"{text!r} is a folder; {hint}, or scan the folder with --workdir {text}")
    return path


def finite_float(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None


def unknown_stage(stage: str, allowed: list[str]) -> str:
    """"unknown stage 'convrt' (did you mean 'convert'?); allowed: …" """
    import difflib

    close = difflib.get_close_matches(stage, allowed, n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return f"unknown stage {stage!r}{hint}; allowed: {', '.join(allowed)}"


def stage_list(text: str) -> list[str]:
    from j6doctor.facts import enum_values

    stages = [part.strip() for part in text.replace(",", " ").split() if part.strip()]
    allowed = list(enum_values("stage"))
    unknown = [stage for stage in stages if stage not in allowed]
    if unknown or not stages:
        raise argparse.ArgumentTypeError(unknown_stage(unknown[0], allowed) if unknown else "name at least one stage")
    return stages


def complete_stages(prefix: str = "", **_kwargs) -> list[str]:
    """argcomplete's candidates for a STAGE option: the stages of the vocabulary (read only
    when completing), after the ones already listed before a comma (`convert,co<TAB>`)."""
    from j6doctor.facts import enum_values

    cut = prefix.rfind(",") + 1
    given, tail = prefix[:cut], prefix[cut:]
    listed = set(given.split(","))
    return [given + stage for stage in enum_values("stage") if stage.startswith(tail) and stage not in listed]


def stages(action: argparse.Action) -> argparse.Action:
    """A STAGE option: completed with the stage values, not file names."""
    action.completer = complete_stages  # type: ignore[attr-defined]
    return action


# ---------------------------------------------------------------------------- shared options

VERBOSE_HELP = ("Also say on stderr which config files, rule packs and engine were used (diagnose: and "
                "list every rule file checked in the Markdown report).")


def verbosity(verbose_help: str = VERBOSE_HELP) -> list[argparse.ArgumentParser]:
    """-q / -v, as a parent parser of the top level and of every (sub)command: they may be
    given anywhere (`j6doctor -q diagnose CASE`, `j6doctor diagnose CASE -q`). Neither has a
    default at any level, so a level that does not give one leaves the other's value; the
    last one given wins (a subcommand's after the top level's)."""
    parent = argparse.ArgumentParser(add_help=False, formatter_class=Formatter)
    group = parent.add_mutually_exclusive_group()
    group.add_argument("-q", "--quiet", dest="verbosity", action="store_const", const=-1, default=argparse.SUPPRESS,
                       help="Only errors on stderr: no progress line, no notes.")
    group.add_argument("-v", "--verbose", dest="verbosity", action="store_const", const=1, default=argparse.SUPPRESS,
                       help=verbose_help)
    return [parent]


def command(commands, name: str, description: str) -> argparse.ArgumentParser:
    """A command of the top level (`commands`: its subparsers), with its summary of COMMANDS."""
    return commands.add_parser(name, help=COMMANDS[name], description=description, formatter_class=Formatter,
                               parents=verbosity())


def listed(commands, name: str) -> None:
    """A command that is not run: its name and summary in `j6doctor --help`, and a choice the
    top-level parser knows, without its options."""
    commands.add_parser(name, help=COMMANDS[name], add_help=False)


def subcommand(sub, name: str, verbose_help: str = VERBOSE_HELP, **kwargs) -> argparse.ArgumentParser:
    """A command of a command group (`cases`, `rules`)."""
    return sub.add_parser(name, formatter_class=Formatter, parents=verbosity(verbose_help), **kwargs)


ENGINE_HELP = ("Rule engine: durable (durable-rules) or clips (CLIPS via clipspy). Default: `engine` in "
               "j6doctor.toml, else J6DOCTOR_ENGINE, else durable-rules where it is installed, else CLIPS.")


def add_engine(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--engine", type=str.lower, choices=["durable", "clips"], default=None, help=ENGINE_HELP)


def add_inputs(parser: argparse.ArgumentParser) -> None:
    """The options every command that diagnoses shares: what to read, and how to judge it."""
    parser.add_argument("case", nargs="?", metavar="CASE", type=case_path,
                        help="The case file (case.yaml / case.json); - reads it from standard input. "
                             "May be omitted when --workdir or --metrics is given.")
    parser.add_argument("--workdir", dest="workdirs", action="append", default=[], metavar="DIR",
                        type=path_type("folder"),
                        help="Folder of artifacts to scan (repeatable); CASE may then be omitted.")
    parser.add_argument("--metrics", type=path_type("file"), metavar="FILE",
                        help="Evaluation results (CSV / YAML / JSON rows: artifact, metric, value[, dataset, frames]); "
                             "CASE may then be omitted.")
    parser.add_argument("--tolerance", type=finite_float, metavar="X",
                        help="Allowed drop from the qat.pt baseline (default 0.01).")
    parser.add_argument("--absolute", action="store_true",
                        help="The tolerance is in metric units, not relative to the baseline.")
    parser.add_argument("--lower-is-better", action="store_true",
                        help="The metric is an error: larger values are worse.")
    parser.add_argument("--env", action=argparse.BooleanOptionalAction, default=None,
                        help="Read (or not) the installed package versions and board type of this machine to fill "
                             "what the case leaves out (default: on, or `environment` in j6doctor.toml).")
    parser.add_argument("--rules", dest="rule_packs", action="append", default=[], metavar="PACK",
                        type=path_type("folder"),
                        help="Extra rule pack folder (repeatable); its rules add to or override bundled ones by id.")
    add_engine(parser)


def add_fail_on(parser: argparse.ArgumentParser) -> None:
    stages(parser.add_argument(
        "--fail-on", dest="fail_on", type=stage_list, action="extend", metavar="STAGE",
        help=f"Exit {EXIT_FAIL_ON} (after writing the report) when the verdict is one of these "
             "stages, e.g. --fail-on undetermined or --fail-on convert,compile (repeatable)."))


def _store_text(text: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError("empty; give a SQLite file path or a postgresql:// URL")
    return text


def add_store(parser: argparse.ArgumentParser, required: bool = False) -> None:
    _store_text.__name__ = "store"  # argparse names the type in its messages
    parser.add_argument("--store", metavar="PATH|URL", required=False, type=_store_text,
                        help="The case library: a SQLite file (created if absent) or postgresql://user@host/db "
                             "(default: `store` in j6doctor.toml)." + (" Required here unless the config names one."
                                                                        if required else
                                                                        " Records the diagnosis and lists similar past "
                                                                        "cases in the report."))


def add_output(parser: argparse.ArgumentParser, what: str = "the report") -> None:
    parser.add_argument("-o", "--output", type=path_type("file"), metavar="FILE",
                        help=f"Write {what} to this file instead of standard output (- is standard output).")
