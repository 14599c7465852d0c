"""`j6doctor diagnose`: which stage, and why, as a Markdown, JSON or HTML report."""

from __future__ import annotations

from j6doctor.commands import options
from j6doctor.commands.console import Console
from j6doctor.commands.inputs import Inputs, diagnose_inputs, render_report, report_format
from j6doctor.commands.library import keep_diagnosis, store_files
from j6doctor.exit_codes import EXIT_FAIL_ON, EXIT_OK


def register(commands) -> None:
    p = options.command(commands, "diagnose",
                        "Diagnose CASE (case.yaml / case.json) and/or the artifacts under --workdir:\n"
                        "which stage, and why.")
    options.add_inputs(p)
    p.add_argument("--format", dest="fmt", choices=["md", "json", "html"], default=None,
                   help="Chinese Markdown report, the JSON verdict of the public contract, or a "
                        "self-contained HTML page (default: `format` in j6doctor.toml, else md).")
    options.add_output(p)
    options.add_fail_on(p)
    options.add_store(p)
    p.set_defaults(run=run)


def run(args, console: Console) -> int:
    diagnosed = diagnose_inputs(Inputs.from_args(args), console)
    diagnosis = diagnosed.diagnosis
    library = keep_diagnosis(diagnosis, args.store or diagnosed.config.store, console)
    console.write(render_report(diagnosis, report_format(args.fmt, diagnosed.config), console.verbosity > 0),
                  args.output,
                  diagnosed.protected + store_files(library))
    return fail_on_code(diagnosis.verdict.stage, args.fail_on, console)


def fail_on_code(stage: str, fail_on: list[str] | None, console: Console) -> int:
    """`--fail-on`: the report is written; the exit status says the verdict was one of these."""
    if fail_on and stage in fail_on:
        console.say(f"j6doctor: 结论为 {stage}（--fail-on），退出码 {EXIT_FAIL_ON}")
        return EXIT_FAIL_ON
    return EXIT_OK
