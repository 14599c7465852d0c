"""The commands of `j6doctor`, one module each: it registers its subparser (`register`) and
holds what the command runs (`run(args, console) -> exit code`). app/cli.py builds the
parser from COMMANDS, in the order `j6doctor --help` lists them."""

from j6doctor.commands import ask, cases, diagnose, explain, inspect, next_step, rules, schema, triage

COMMANDS = (diagnose, next_step, explain, inspect, ask, triage, schema, cases, rules)
