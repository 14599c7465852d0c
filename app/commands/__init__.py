"""The commands of `j6doctor`, one module each: it registers its subparser (`register`) and
holds what the command runs (`run(args, console) -> exit code`). app/cli.py builds the
parser from COMMANDS, in the order `j6doctor --help` lists them.

COMMANDS holds each command's one-line summary, so that `j6doctor --help` lists every
command, and `j6doctor diagnose ...` builds one subparser, without importing the other
command modules (module_of imports one when its command is run)."""

from __future__ import annotations

from importlib import import_module
from types import ModuleType

# name → the summary `j6doctor --help` shows
COMMANDS = {
    "diagnose": "Diagnose a case and/or work folders: which stage, and why.",
    "next-step": "Write the concluded stage's next step as a runnable Python script.",
    "explain": "The evidence chain of the verdict, rule by rule.",
    "inspect": "What each probe reads from files and folders, without a diagnosis.",
    "ask": "Ask for the missing information, write it into the case, then diagnose.",
    "triage": "Diagnose many cases and work folders at once, with a summary table.",
    "schema": "Print the JSON Schema of the verdict, a case file or a rule file.",
    "cases": "The case library: list, show, search, resolve, stats, rediagnose, export, import.",
    "rules": "Work on the rule base: new, lint, test, list, show, schema.",
}


def module_of(name: str) -> ModuleType:
    """The module of the command `name` (next-step: j6doctor.commands.next_step)."""
    return import_module(f"j6doctor.commands.{name.replace('-', '_')}")
