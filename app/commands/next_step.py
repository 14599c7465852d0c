"""`j6doctor next-step`: the concluded stage's next step as a runnable Python script."""

from __future__ import annotations

from j6doctor.commands import options
from j6doctor.commands.console import Console
from j6doctor.commands.inputs import Inputs, diagnose_inputs
from j6doctor.exit_codes import EXIT_OK


def register(commands) -> None:
    p = options.command(commands, "next-step",
                        "Write the concluded stage's next step as a runnable Python script (imports and call\n"
                        "order of the documented APIs; your paths filled in, FILL IN where the case lacks them).")
    options.add_inputs(p)
    options.add_output(p, "the script")
    p.set_defaults(run=run)


def run(args, console: Console) -> int:
    from j6doctor.next_step_script import render_next_step, script_stage

    diagnosed = diagnose_inputs(Inputs.from_args(args), console)
    diagnosis = diagnosed.diagnosis
    if script_stage(diagnosis) is None:
        console.say(f"j6doctor: {diagnosis.verdict.stage_label}：没有可运行的排查脚本，写出的是报告中的下一步（手动执行）")
    console.write(render_next_step(diagnosis), args.output, diagnosed.protected)
    return EXIT_OK
