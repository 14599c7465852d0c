"""Command line: `j6doctor diagnose CASE [--format md|json] [-o FILE]`.

Exit codes (public contract): 0 a verdict was produced (暂不能判断 included), 2 a usage
error or invalid input (message on stderr), 1 an internal error.
"""

from __future__ import annotations

import os
import sys
import traceback
from pathlib import Path

import click

from . import __version__

EXIT_OK, EXIT_INTERNAL, EXIT_INPUT = 0, 1, 2


def _fail(message: str, code: int) -> None:
    click.echo(f"j6doctor: error: {message}", err=True)
    sys.exit(code)


def _write(text: str, output: Path | None, protected: list[Path]) -> None:
    if output is None:
        click.echo(text, nl=False)
        return
    target = output.resolve()
    if any(target == p.resolve() for p in protected if p.exists()):
        _fail(f"{output}: refusing to overwrite an input file; choose another -o path", EXIT_INPUT)
    if target.is_dir():
        _fail(f"{output}: is a folder; -o takes a file path", EXIT_INPUT)
    tmp = target.with_name(f".{target.name}.j6doctor-tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, target)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        _fail(f"{output}: cannot write: {exc.strerror}", EXIT_INPUT)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="j6doctor")
def cli() -> None:
    """j6doctor — locate where a horizon_plugin_pytorch J6 model loses accuracy between
    qat.pt, qat.export.pt, qat.bc, quantized.bc, hbm and the board, with the evidence chain."""


@cli.command()
@click.argument("case", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--format", "fmt", type=click.Choice(["md", "json"]), default="md", show_default=True,
              help="Chinese Markdown report, or the JSON verdict of the public contract.")
@click.option("-o", "--output", type=click.Path(path_type=Path, dir_okay=False),
              help="Write the report to this file instead of standard output.")
def diagnose(case: Path, fmt: str, output: Path | None) -> None:
    """Diagnose CASE (case.yaml / case.json): which stage, and why."""
    from .diagnose import diagnose_file
    from .engine import EngineError, RuleBaseErrors
    from .probes import InputError
    from .report import render_json, render_markdown

    try:
        diagnosis = diagnose_file(case)
    except InputError as exc:
        _fail(exc.render(), EXIT_INPUT)
    except RuleBaseErrors as exc:
        _fail(f"the rule base is invalid:\n{exc}", EXIT_INTERNAL)
    except EngineError as exc:
        _fail(str(exc), EXIT_INTERNAL)
    text = render_json(diagnosis) if fmt == "json" else render_markdown(diagnosis)
    protected = [case] + [diagnosis.case.folder / p for p in diagnosis.case.data.get("artifacts") or []]
    _write(text, output, protected)


def main() -> None:
    try:
        cli.main(standalone_mode=True)
    except SystemExit:
        raise
    except KeyboardInterrupt:
        click.echo("j6doctor: interrupted", err=True)
        sys.exit(130)
    except Exception as exc:  # last line of defence: no traceback unless asked for
        if os.environ.get("J6DOCTOR_DEBUG"):
            traceback.print_exc()
        click.echo(f"j6doctor: internal error: {type(exc).__name__}: {exc} "
                   "(set J6DOCTOR_DEBUG=1 for a traceback)", err=True)
        sys.exit(EXIT_INTERNAL)
