"""Command line: `j6doctor diagnose CASE [--format md|json] [-o FILE]`.

Exit codes (public contract): 0 a verdict was produced (暂不能判断 included), 2 a usage
error or invalid input (message on stderr), 1 an internal error.
"""

from __future__ import annotations

import math
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
    from .atomic_write import is_protected, write_atomic

    if output is None:
        try:
            click.echo(text, nl=False)
            sys.stdout.flush()
        except OSError as exc:  # a closed pipe, a full disk behind a redirection
            _fail(f"cannot write the report to standard output: {exc.strerror or exc}", EXIT_INPUT)
        return
    if is_protected(output, protected):
        _fail(f"{output}: refusing to overwrite a file this run read; choose another -o path", EXIT_INPUT)
    if output.is_dir():
        _fail(f"{output}: is a folder; -o takes a file path", EXIT_INPUT)
    if output.exists() and not output.is_file():
        _fail(f"{output}: not a regular file (a pipe or a device); -o takes a file path", EXIT_INPUT)
    try:
        write_atomic(output, text)
    except OSError as exc:
        _fail(f"{output}: cannot write: {exc.strerror or exc}", EXIT_INPUT)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="j6doctor")
def cli() -> None:
    """j6doctor — locate where a horizon_plugin_pytorch J6 model loses accuracy between
    qat.pt, qat.export.pt, qat.bc, quantized.bc, hbm and the board, with the evidence chain."""


_ENGINE_OPTION = click.option(
    "--engine", type=click.Choice(["durable", "clips"], case_sensitive=False), default=None,
    help="Rule engine: durable (durable-rules) or clips (CLIPS via clipspy). Default: `engine` in "
         "j6doctor.toml, else J6DOCTOR_ENGINE, else durable-rules where it is installed, else CLIPS.")


def _input_options(command):
    """The options every command that diagnoses shares: what to read, and how to judge it."""
    options = [
        click.argument("case", required=False, type=click.Path(path_type=Path, dir_okay=False)),
        click.option("--workdir", "workdirs", multiple=True, type=click.Path(path_type=Path, file_okay=False),
                     help="Folder of artifacts to scan (repeatable); CASE may then be omitted."),
        click.option("--metrics", type=click.Path(path_type=Path, dir_okay=False),
                     help="Evaluation results (CSV / YAML / JSON rows: artifact, metric, value[, dataset, frames])."),
        click.option("--tolerance", type=float, help="Allowed drop from the qat.pt baseline (default 0.01)."),
        click.option("--absolute", is_flag=True, help="The tolerance is in metric units, not relative to the baseline."),
        click.option("--lower-is-better", is_flag=True, help="The metric is an error: larger values are worse."),
        click.option("--env/--no-env", "env", default=None,
                     help="Read (or not) the installed package versions and board type of this machine to fill "
                          "what the case leaves out (default: on, or `environment` in j6doctor.toml)."),
        click.option("--rules", "rule_packs", multiple=True, type=click.Path(path_type=Path, file_okay=False),
                     help="Extra rule pack folder (repeatable); its rules add to or override bundled ones by id."),
        _ENGINE_OPTION,
    ]
    for option in reversed(options):
        command = option(command)
    return command


def _rulebase(rule_packs: tuple[Path, ...], engine: str | None = None):
    """The bundled rule base plus packs; a broken pack is the user's input error (exit 2)."""
    from .diagnose import load_rulebase
    from .engine import EngineUnavailableError, RuleBaseErrors

    for pack in rule_packs:
        if not pack.is_dir():
            _fail(f"{pack}: " + ("not a folder; --rules takes a rule pack folder of *.yaml files"
                                 if pack.exists() else "no such rule pack folder"), EXIT_INPUT)
    try:
        return load_rulebase(rule_packs, engine)
    except EngineUnavailableError as exc:
        _fail(str(exc), EXIT_INPUT)
    except RuleBaseErrors as exc:
        _fail(f"the rule base is invalid:\n{exc}", EXIT_INPUT if rule_packs else EXIT_INTERNAL)


def _run(case: Path | None, workdirs: tuple[Path, ...], metrics: Path | None, tolerance: float | None,
         absolute: bool, lower_is_better: bool, env: bool | None, rule_packs: tuple[Path, ...] = (),
         engine: str | None = None):
    """Read the inputs and diagnose; every input problem exits 2 with its message."""
    from .config import load_config
    from .diagnose import diagnose as run_diagnosis
    from .engine import EngineError, EngineLimitError, RuleBaseErrors
    from .evidence import EvidenceOptions
    from .probes import InputError
    from .probes.artifacts import require_folder
    from .probes.case_file import read_case
    from .probes.metrics_file import Tolerance
    from .progress import Progress

    if case is None and not workdirs:
        _fail("give a case file, or --workdir DIR, or both (see --help)", EXIT_INPUT)
    if tolerance is not None and not (math.isfinite(tolerance) and tolerance > 0):
        _fail("--tolerance must be a finite number greater than 0", EXIT_INPUT)
    custom = tolerance is not None or absolute or lower_is_better
    config_files: tuple[str, ...] = ()
    try:
        config = load_config(case.parent if case is not None else workdirs[0])
    except InputError as exc:
        _fail(exc.render(), EXIT_INPUT)
    config_files = config.sources
    if env is None:
        env = config.environment
    options = EvidenceOptions(
        metrics=metrics,
        tolerance=Tolerance(tolerance if tolerance is not None else 0.01, not absolute, not lower_is_better)
        if custom else None,
        use_environment=env,
    )
    rulebase = _rulebase(rule_packs, (engine or config.engine or "").lower() or None)
    progress = Progress()
    options.progress = progress.step
    try:
        options.workdirs = [require_folder(w) for w in workdirs]
        loaded = read_case(case) if case is not None else None
        diagnosis = run_diagnosis(loaded, rulebase, options=options)
    except InputError as exc:
        _fail(exc.render(), EXIT_INPUT)
    except RuleBaseErrors as exc:
        _fail(f"the rule base is invalid:\n{exc}", EXIT_INTERNAL)
    except EngineLimitError as exc:  # the inputs or the packs are beyond what the engine can run
        _fail(str(exc), EXIT_INPUT)
    except EngineError as exc:
        _fail(str(exc), EXIT_INTERNAL)
    finally:
        progress.done()
    inputs = ([case] if case else []) + list(diagnosis.read_paths) + [Path(s) for s in config_files]
    inputs += [f for pack in rule_packs for f in pack.rglob("*") if f.is_file()]
    return diagnosis, inputs


@cli.command()
@_input_options
@click.option("--format", "fmt", type=click.Choice(["md", "json", "html"]), default="md", show_default=True,
              help="Chinese Markdown report, the JSON verdict of the public contract, or a self-contained HTML page.")
@click.option("-o", "--output", type=click.Path(path_type=Path, dir_okay=False),
              help="Write the report to this file instead of standard output.")
def diagnose(fmt: str, output: Path | None, **inputs) -> None:
    """Diagnose CASE (case.yaml / case.json) and/or the artifacts under --workdir:
    which stage, and why."""
    from .report import render_html, render_json, render_markdown

    diagnosis, protected = _run(**inputs)
    text = {"json": render_json, "html": render_html, "md": render_markdown}[fmt](diagnosis)
    _write(text, output, protected)


@cli.command("next-step")
@_input_options
@click.option("-o", "--output", type=click.Path(path_type=Path, dir_okay=False),
              help="Write the script to this file instead of standard output.")
def next_step(output: Path | None, **inputs) -> None:
    """Write the concluded stage's next step as a runnable Python script (imports and call
    order of the documented APIs; your paths filled in, FILL IN where the case lacks them)."""
    from .next_step_script import render_next_step

    diagnosis, protected = _run(**inputs)
    script = render_next_step(diagnosis)
    if script is None:
        click.echo(f"j6doctor: {diagnosis.verdict['stage_label']}：没有可运行的下一步脚本；"
                   "先补充报告中列出的信息再诊断", err=True)
        return
    _write(script, output, protected)


@cli.command()
@_input_options
@click.option("--why-not", "why_not_stage", metavar="STAGE",
              help="Also explain why the verdict is not STAGE: the rules that would conclude it, "
                   "their failed conditions, and the evidence that would change the answer.")
@click.option("--format", "fmt", type=click.Choice(["md", "json"]), default="md", show_default=True)
@click.option("-o", "--output", type=click.Path(path_type=Path, dir_okay=False))
def explain(why_not_stage: str | None, fmt: str, output: Path | None, **inputs) -> None:
    """The evidence chain of the verdict: every derived fact with its rule, rule file and
    line, down to the input facts and their sources (case key, file, line, sha256)."""
    from .explain_report import explain_data, render_explain_json, render_explain_markdown, stage_choices

    if why_not_stage is not None and why_not_stage not in stage_choices():
        _fail(f"--why-not: unknown stage {why_not_stage!r}; allowed: {', '.join(stage_choices())}", EXIT_INPUT)
    diagnosis, protected = _run(**inputs)
    data = explain_data(diagnosis, why_not_stage)
    text = render_explain_json(data) if fmt == "json" else render_explain_markdown(diagnosis, data)
    _write(text, output, protected)


@cli.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--format", "fmt", type=click.Choice(["md", "json"]), default="md", show_default=True)
@click.option("-o", "--output", type=click.Path(path_type=Path, dir_okay=False),
              help="Write to this file instead of standard output.")
def inspect(paths: tuple[Path, ...], fmt: str, output: Path | None) -> None:
    """What each probe reads from FILE / DIR (recursively): the kind each file is recognised
    as — by its content, or only by its name — and the data extracted, without a diagnosis."""
    from .inspect_files import inspect_paths, render_inspect_json, render_inspect_markdown

    missing = [p for p in paths if not p.exists()]
    if missing:
        _fail(f"{missing[0]}: no such file or folder", EXIT_INPUT)
    data = inspect_paths(list(paths), Path.cwd())
    text = render_inspect_json(data) if fmt == "json" else render_inspect_markdown(data)
    _write(text, output, list(paths) + [Path.cwd() / f["path"] for f in data["files"]])


@cli.command()
@click.argument("case", required=False, default="case.yaml", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--workdir", "workdirs", multiple=True, type=click.Path(path_type=Path, file_okay=False),
              help="Folder of artifacts to scan (repeatable).")
@click.option("--env/--no-env", "env", default=None,
              help="Read (or not) this machine's package versions and board type (default: config, else on).")
@click.option("-o", "--output", type=click.Path(path_type=Path, dir_okay=False),
              help="Write the final report to this file instead of standard output.")
def ask(case: Path, workdirs: tuple[Path, ...], env: bool | None, output: Path | None) -> None:
    """Ask for the missing information that would change the judgement (info gate order,
    with the reason), write the answers into CASE (created if absent; existing content and
    comments are kept), then diagnose. An empty answer skips; end of input stops asking."""
    from .ask import EndOfAnswers, ask_missing, read_answer, write_case
    from .report import render_markdown

    if case.suffix.lower() not in (".yaml", ".yml", ".json"):
        _fail(f"{case}: a case file ends in .yaml, .yml or .json", EXIT_INPUT)

    stdin = getattr(sys.stdin, "buffer", None)
    encoding = getattr(sys.stdin, "encoding", None) or "utf-8"
    if encoding.lower().replace("_", "-") in ("ascii", "ansi-x3.4-1968", "us-ascii"):
        encoding = "utf-8"  # a C / POSIX locale: answers are still typed in UTF-8

    def answer(question: str) -> str:
        click.echo(question, nl=False)
        if stdin is None:  # a text-only stream (embedding): nothing to decode
            line = sys.stdin.readline()
            if not line:
                raise EndOfAnswers()
            return line.rstrip("\r\n")
        return read_answer(stdin, encoding, click.echo, lambda: click.echo(question, nl=False))

    asked: set[str] = set()
    diagnosis = None
    for _ in range(3):  # answers can reveal new gaps (e.g. deploy_adaptation once the stage is known)
        if not case.exists() and not workdirs:
            write_case(case, {})
        # _run reads and validates the case: a bad case file exits 2 before anything is written
        diagnosis, protected = _run(case if case.exists() else None, workdirs, None, None, False, False, env)
        verdict = dict(diagnosis.verdict)
        verdict["missing_detail"] = [m for m in verdict["missing_detail"] if m["id"] not in asked]
        if not verdict["missing_detail"]:
            break
        asked.update(m["id"] for m in verdict["missing_detail"])
        data = diagnosis.case.data if diagnosis.case is not None else {}
        updates = ask_missing(data, verdict, answer, click.echo)
        if not updates:
            break
        write_case(case, updates)
        click.echo(f"\n已写入 {case}")
        diagnosis = None  # the case changed: diagnose again
    if diagnosis is None:
        diagnosis, protected = _run(case, workdirs, None, None, False, False, env)
    click.echo("")
    _write(render_markdown(diagnosis), output, protected)


@cli.group()
def rules() -> None:
    """Work on the rule base: lint it, run each rule's example cases, print the rule-file schema."""


def _rule_dirs(dirs: tuple[Path, ...]):
    from .rules import BUNDLED_RULES_DIR

    for folder in dirs:
        if not folder.exists():
            _fail(f"{folder}: no such rule folder or file", EXIT_INPUT)
    return [BUNDLED_RULES_DIR, *dirs], {BUNDLED_RULES_DIR: "rules"}


@rules.command("lint")
@click.argument("dirs", nargs=-1, type=click.Path(path_type=Path))
@click.option("--strict", is_flag=True, help="Warnings fail too.")
def rules_lint(dirs: tuple[Path, ...], strict: bool) -> None:
    """Check the bundled rules plus the rule packs DIRS: schema, vocabulary, rules that can
    never fire, rules that disagree on the same conditions, endless cycles, engine limits."""
    from .engine.lint import lint
    from .facts import vocabulary

    folders, display = _rule_dirs(dirs)
    issues = lint(folders, vocabulary(), display)
    for issue in issues:
        click.echo(issue.render())
    errors = sum(1 for i in issues if i.level == "error")
    warnings = sum(1 for i in issues if i.level == "warning")
    click.echo(f"{errors} error(s), {warnings} warning(s)")
    if errors or (strict and warnings):
        sys.exit(EXIT_INTERNAL)


@rules.command("test")
@click.argument("dirs", nargs=-1, type=click.Path(path_type=Path, file_okay=False))
@click.option("-v", "--verbose", is_flag=True, help="List every example, not only failures.")
@_ENGINE_OPTION
def rules_test(dirs: tuple[Path, ...], verbose: bool, engine: str | None) -> None:
    """Run every rule's example cases (bundled rules plus the packs DIRS) and report
    per-rule coverage. Fails when an example fails, or a rule has no example that fires it."""
    from .rule_tests import coverage_failures, run_rule_tests

    rulebase = _rulebase(tuple(dirs), engine.lower() if engine else None)
    results, coverage = run_rule_tests(rulebase)
    for r in results:
        if verbose or not r.passed:
            click.echo(f"{'PASS' if r.passed else 'FAIL'} {r.file}:{r.line} {r.rule}: {r.name}")
            for problem in r.problems:
                click.echo(f"    {problem}")
    click.echo("")
    click.echo(f"{'rule':44} {'examples':>8} {'fired':>6} {'fired by any':>12}")
    for c in coverage:
        click.echo(f"{c.rule:44} {c.examples:>8} {c.fired_by_own:>6} {c.fired_by_any:>12}")
    uncovered = coverage_failures(coverage)
    for line in uncovered:
        click.echo(line)
    failed = sum(1 for r in results if not r.passed)
    covered = sum(1 for c in coverage if c.fired_by_own)
    click.echo(f"{len(results) - failed} passed, {failed} failed; {covered}/{len(coverage)} rules fired by their examples")
    if failed or uncovered:
        sys.exit(EXIT_INTERNAL)


@rules.command("schema")
@click.option("--plain", is_flag=True, help="The generic schema, without the fact vocabulary.")
def rules_schema(plain: bool) -> None:
    """Print the JSON Schema of a rule file (for editors), with fact types, fields and values."""
    import json

    from .engine import rule_file_schema
    from .engine.schema_export import vocabulary_schema
    from .facts import vocabulary

    schema = rule_file_schema() if plain else vocabulary_schema(vocabulary())
    click.echo(json.dumps(schema, ensure_ascii=False, indent=2))


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
