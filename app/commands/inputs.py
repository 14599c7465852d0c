"""What the commands that diagnose share: the rule base (bundled rules plus packs), and one
diagnosis of CASE / --workdir / --metrics under the config of the case's folder. Every
problem of the user's input is a Refusal with exit 2 naming the file and what to do."""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any, NamedTuple

from j6doctor.commands.console import Console, Refusal
from j6doctor.exit_codes import EXIT_INPUT, EXIT_INTERNAL

# the bundled rules fail to load: not the user's input
BUNDLED_BROKEN = "(the bundled rules are broken: a defect of j6doctor; please report it with this message)"
REPORT_IT = "(a defect of j6doctor: please report it with this message and the case)"


def _check_packs(rule_packs: tuple[Path, ...], rule_files: bool) -> None:
    from j6doctor.engine.rule_files import RULE_FILE_SUFFIXES
    from j6doctor.probes.artifacts import not_a_rule_pack, not_found

    for pack in rule_packs:
        if rule_files and pack.suffix.lower() in RULE_FILE_SUFFIXES and pack.is_file():
            continue
        if rule_files and not pack.is_dir():
            raise Refusal(f"{pack}: " + ("not a rule pack folder or a rule file (*.yaml, *.yml)" if pack.exists()
                                         else not_found(pack, "rule pack folder or rule file"))
                          + "; give a folder of *.yaml / *.yml rule files or one such file")
        problem = not_a_rule_pack(pack)
        if problem:
            raise Refusal(f"{pack}: {problem}")


def load_rules(rule_packs: tuple[Path, ...], engine: str | None = None, rule_files: bool = False):
    """The bundled rule base plus packs; a broken pack is the user's input error (exit 2),
    broken bundled rules a defect (exit 3). `rule_files`: a pack may also be a single rule
    file (`rules test`)."""
    from j6doctor.diagnosis import load_rulebase
    from j6doctor.engine import EngineUnavailableError, RuleBaseErrors

    _check_packs(rule_packs, rule_files)
    try:
        return load_rulebase(rule_packs, engine)
    except EngineUnavailableError as exc:
        raise Refusal(str(exc)) from None
    except RuleBaseErrors as exc:
        if rule_packs:
            raise Refusal(f"the rule base is invalid:\n{exc}") from None
        raise Refusal(f"the rule base is invalid:\n{exc}\n{BUNDLED_BROKEN}", EXIT_INTERNAL) from None


class Inputs(NamedTuple):
    """What a diagnosing command was given to read, and how to judge it."""

    case: Path | None
    workdirs: tuple[Path, ...] = ()
    metrics: Path | None = None
    tolerance: float | None = None
    absolute: bool = False
    lower_is_better: bool = False
    env: bool | None = None
    rule_packs: tuple[Path, ...] = ()
    engine: str | None = None
    empty_case: Path | None = None  # a case file not written yet (`ask`), diagnosed as an empty case

    @classmethod
    def from_args(cls, args) -> "Inputs":
        return cls(args.case, tuple(args.workdirs), args.metrics, args.tolerance, args.absolute,
                   args.lower_is_better, args.env, tuple(args.rule_packs), args.engine)


class Diagnosed(NamedTuple):
    diagnosis: Any
    protected: list[Path]  # every file the run read: never an -o target
    config: Any  # the j6doctor.toml settings that applied (format, store defaults)


def _check_inputs(inputs: Inputs) -> None:
    if inputs.case is None and not inputs.workdirs and inputs.empty_case is None and inputs.metrics is None:
        raise Refusal("give a case file (or - for standard input), --workdir DIR or --metrics FILE (see --help)")
    metrics = inputs.metrics
    if metrics is not None:
        from j6doctor.probes.artifacts import not_found

        try:
            problem = None if metrics.is_file() else ("not a regular file" if metrics.exists()
                                                      else not_found(metrics, "file"))
        except OSError as exc:  # e.g. a name too long for the file system
            problem = f"cannot read: {exc.strerror or exc}"
        if problem:
            raise Refusal(f"{metrics}: {problem}; --metrics takes an evaluation results file (CSV / YAML / JSON "
                          "rows: artifact, metric, value)")
    if inputs.tolerance is not None and not (math.isfinite(inputs.tolerance) and inputs.tolerance > 0):
        raise Refusal("--tolerance must be a finite number greater than 0")


def _load_config(inputs: Inputs):
    """The config of the case's folder (else the first --workdir's, else the current one)."""
    from j6doctor.config import load_config
    from j6doctor.probes import InputError

    given = inputs.case if inputs.case is not None and str(inputs.case) != "-" else inputs.empty_case
    try:
        return load_config(given.parent if given is not None else
                           (inputs.workdirs[0] if inputs.workdirs else Path.cwd()))
    except InputError as exc:
        raise Refusal(exc.render()) from None


def _packs(config, rule_packs: tuple[Path, ...]) -> tuple[Path, ...]:
    """The config's packs, then those given with --rules."""
    from j6doctor.probes.artifacts import not_found

    for pack in config.rules:
        if not pack.is_dir():
            raise Refusal(f"{config.sources[-1]}: rules: {pack}: "
                          + ("not a folder" if pack.exists() else not_found(pack, "rule pack folder"))
                          + "; rules lists rule pack folders, relative to this file")
    return tuple(dict.fromkeys((*config.rules, *rule_packs)))


def _evidence_options(inputs: Inputs, config):
    from j6doctor.evidence import EvidenceOptions
    from j6doctor.probes.tolerance import Tolerance

    tolerance = inputs.tolerance if inputs.tolerance is not None else config.tolerance
    absolute = inputs.absolute or config.absolute
    lower_is_better = inputs.lower_is_better or config.lower_is_better
    custom = tolerance is not None or absolute or lower_is_better
    return EvidenceOptions(
        metrics=inputs.metrics,
        tolerance=Tolerance(tolerance if tolerance is not None else 0.01, not absolute, not lower_is_better)
        if custom else None,
        use_environment=config.environment if inputs.env is None else inputs.env,
    )


def _diagnose(inputs: Inputs, rulebase, options, console: Console):
    """The diagnosis, with a progress line on a terminal; engine and input errors refused."""
    from j6doctor.diagnosis import diagnose_arguments
    from j6doctor.engine import EngineError, EngineLimitError, RuleBaseErrors
    from j6doctor.probes import InputError
    from j6doctor.progress import Progress

    progress = Progress(console.err, enabled=False if console.verbosity < 0 else None)
    options.progress = progress.step
    try:
        return diagnose_arguments(inputs.case, inputs.workdirs, rulebase, options, inputs.empty_case,
                                  getattr(sys.stdin, "buffer", None))
    except InputError as exc:
        raise Refusal(exc.render()) from None
    except RuleBaseErrors as exc:
        raise Refusal(f"the rule base is invalid:\n{exc}\n{REPORT_IT}", EXIT_INTERNAL) from None
    except EngineLimitError as exc:  # the inputs or the packs are beyond what the engine can run
        raise Refusal(str(exc), EXIT_INPUT) from None
    except EngineError as exc:
        raise Refusal(f"{exc}\n{REPORT_IT}", EXIT_INTERNAL) from None
    finally:
        progress.done()


def diagnose_inputs(inputs: Inputs, console: Console) -> Diagnosed:
    """Read the inputs and diagnose; every input problem is refused (exit 2) with its message."""
    _check_inputs(inputs)
    config = _load_config(inputs)
    packs = _packs(config, inputs.rule_packs)
    options = _evidence_options(inputs, config)
    rulebase = load_rules(packs, (inputs.engine or config.engine or "").lower() or None)
    diagnosis = _diagnose(inputs, rulebase, options, console)
    case = inputs.case
    protected = ([case] if case and str(case) != "-" else []) + list(diagnosis.read_paths)
    protected += [Path(s) for s in config.sources]
    protected += [f for pack in packs for f in pack.rglob("*") if f.is_file()]
    console.say_verbose(f"j6doctor: 配置 {', '.join(config.sources) or '无'}；规则包 "
                        f"{', '.join(map(str, packs)) or '无'}；规则引擎 {diagnosis.rulebase.engine}；"
                        f"读取 {len(diagnosis.read_paths)} 个文件")
    return Diagnosed(diagnosis, protected, config)


def report_format(fmt: str | None, config) -> str:
    """The format asked for, else the config's, else Markdown."""
    return fmt or config.format or "md"


def render_report(diagnosis, fmt: str, detail: bool = False) -> str:
    """The report in `fmt`; `detail` (-v): the Markdown report with the engine's bookkeeping."""
    from j6doctor.report import render_html, render_json, render_markdown

    if fmt == "md":
        return render_markdown(diagnosis, detail)
    return {"json": render_json, "html": render_html}[fmt](diagnosis)
