"""`j6doctor explain`: the evidence chain of the verdict, and with --why-not what would
conclude another stage."""

from __future__ import annotations

from j6doctor.commands import options
from j6doctor.commands.console import Console, Refusal
from j6doctor.commands.inputs import Inputs, diagnose_inputs, report_format
from j6doctor.exit_codes import EXIT_OK


def register(commands) -> None:
    p = options.command(commands, "explain",
                        "The evidence chain of the verdict: every derived fact with its rule, rule file and\n"
                        "line, down to the input facts and their sources (case key, file, line, sha256).")
    options.add_inputs(p)
    options.stages(p.add_argument("--why-not", dest="why_not_stage", metavar="STAGE",
                                  help="Also explain why the verdict is not STAGE: the rules that would conclude "
                                       "it, their failed conditions, and the evidence that would change the answer."))
    p.add_argument("--format", dest="fmt", choices=["md", "json"], default=None)
    options.add_output(p)
    p.set_defaults(run=run)


def run(args, console: Console) -> int:
    from j6doctor.explain_report import explain_data, render_explain_json, render_explain_markdown, stage_choices
    from j6doctor.facts import using

    why_not = args.why_not_stage
    if why_not is not None and why_not not in stage_choices():
        raise Refusal(f"--why-not: {options.unknown_stage(why_not, stage_choices())}")
    diagnosed = diagnose_inputs(Inputs.from_args(args), console)
    with using(diagnosed.diagnosis.rulebase.vocab):  # explained in the rule base's words (a pack's)
        data = explain_data(diagnosed.diagnosis, why_not)
        if report_format(args.fmt, diagnosed.config) == "json":
            text = render_explain_json(data)
        else:
            text = render_explain_markdown(diagnosed.diagnosis, data)
    console.write(text, args.output, diagnosed.protected)
    return EXIT_OK
