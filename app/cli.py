# PYTHON_ARGCOMPLETE_OK  (argcomplete looks for this marker: j6doctor completes its commands)
"""Command line: `j6doctor diagnose CASE [--format md|json|html] [-o FILE]` and friends.

Exit codes (public contract, app/exit_codes.py and the README's "Exit status"): 0 a verdict
was produced (暂不能判断 included), 1 an internal error (the message asks for a report), 2 a
usage error or invalid input (the message names the file, line or key and what to do), 3
--fail-on matched, 4 `cases rediagnose` found changes, 130 Ctrl-C.

Built on argparse (standard library): `j6doctor --help` costs little more than starting
Python, and each command imports only what it uses.
"""

from __future__ import annotations

import math
import os
import stat
import sys
from pathlib import Path

import argparse

from j6doctor import __version__

from j6doctor.exit_codes import (EXIT_CHANGED, EXIT_FAIL_ON, EXIT_INPUT, EXIT_INTERNAL,  # noqa: E402
                                 EXIT_INTERRUPTED, EXIT_OK)
_VERBOSITY = [0]  # -q: -1, -v: 1
_LAST_CONFIG: list = [None]  # the config of the last _run (format default)


def _echo(text: str = "", nl: bool = True, err: bool = False) -> None:
    stream = sys.stderr if err else sys.stdout
    stream.write(text + ("\n" if nl else ""))
    if err:
        stream.flush()


def _say(text: str) -> None:
    """A note on stderr, unless -q."""
    if _VERBOSITY[0] >= 0:
        _echo(text, err=True)


def _say_verbose(text: str) -> None:
    """A detail on stderr, with -v only."""
    if _VERBOSITY[0] > 0:
        _echo(text, err=True)


def _fail(message: str, code: int) -> None:
    _echo(f"j6doctor: error: {message}", err=True)
    sys.exit(code)


def _write(text: str, output: Path | None, protected: list[Path]) -> None:
    from j6doctor.atomic_write import write_atomic

    if output is None or str(output) == "-":
        try:
            _echo(text, nl=False)
            sys.stdout.flush()
        except OSError as exc:  # a closed pipe, a full disk behind a redirection
            _fail(f"cannot write the report to standard output: {exc.strerror or exc}", EXIT_INPUT)
        return
    _check_output_path(output, protected)
    try:
        write_atomic(output, text)
    except OSError as exc:
        _fail(f"{output}: cannot write: {exc.strerror or exc}; give -o a file in an existing, writable folder",
              EXIT_INPUT)


def _check_output_path(output: Path, protected: list[Path]) -> None:
    from j6doctor.atomic_write import is_protected

    if is_protected(output, protected):
        _fail(f"{output}: refusing to overwrite a file this run read; choose another -o path", EXIT_INPUT)
    if output.is_dir():
        _fail(f"{output}: is a folder; -o takes a file path", EXIT_INPUT)
    if output.exists() and not output.is_file():
        _fail(f"{output}: not a regular file (a pipe or a device); -o takes a file path", EXIT_INPUT)


def _rulebase(rule_packs: tuple[Path, ...], engine: str | None = None, rule_files: bool = False):
    """The bundled rule base plus packs; a broken pack is the user's input error (exit 2).
    `rule_files`: a pack may also be a single rule file (`rules test`)."""
    from j6doctor.diagnose import load_rulebase
    from j6doctor.engine import EngineUnavailableError, RuleBaseErrors

    for pack in rule_packs:
        if rule_files and pack.suffix == ".yaml" and pack.is_file():
            continue
        if rule_files and not pack.is_dir():
            _fail(f"{pack}: " + ("not a rule pack folder or a rule file (*.yaml)" if pack.exists()
                                 else "no such rule pack folder or rule file")
                  + "; give a folder of *.yaml rule files or one *.yaml rule file", EXIT_INPUT)
        if not pack.is_dir():
            _fail(f"{pack}: " + ("not a folder; --rules takes a rule pack folder of *.yaml files"
                                 if pack.exists() else "no such rule pack folder; --rules takes a folder of "
                                 "*.yaml rule files"), EXIT_INPUT)
    try:
        return load_rulebase(rule_packs, engine)  # a pack may be one rule file (rule_files)
    except EngineUnavailableError as exc:
        _fail(str(exc), EXIT_INPUT)
    except RuleBaseErrors as exc:
        if rule_packs:
            _fail(f"the rule base is invalid:\n{exc}", EXIT_INPUT)
        _fail(f"the rule base is invalid:\n{exc}\n{_BUNDLED_BROKEN}", EXIT_INTERNAL)


# the bundled rules fail to load: not the user's input
_BUNDLED_BROKEN = "(the bundled rules are broken: a defect of j6doctor; please report it with this message)"
_REPORT_IT = "(a defect of j6doctor: please report it with this message and the case)"


def _run(case: Path | None, workdirs: tuple[Path, ...], metrics: Path | None, tolerance: float | None,
         absolute: bool, lower_is_better: bool, env: bool | None, rule_packs: tuple[Path, ...] = (),
         engine: str | None = None, empty_case: Path | None = None):
    """Read the inputs and diagnose; every input problem exits 2 with its message.
    `empty_case`: a case file not written yet (`ask`), diagnosed as an empty case."""
    from j6doctor.config import load_config
    from j6doctor.diagnose import diagnose_arguments
    from j6doctor.engine import EngineError, EngineLimitError, RuleBaseErrors
    from j6doctor.evidence import EvidenceOptions
    from j6doctor.probes import InputError
    from j6doctor.probes.tolerance import Tolerance
    from j6doctor.progress import Progress

    if case is None and not workdirs and empty_case is None and metrics is None:
        _fail("give a case file (or - for standard input), --workdir DIR or --metrics FILE (see --help)", EXIT_INPUT)
    if metrics is not None:
        try:
            problem = None if metrics.is_file() else ("not a regular file" if metrics.exists() else "no such file")
        except OSError as exc:  # e.g. a name too long for the file system
            problem = f"cannot read: {exc.strerror or exc}"
        if problem:
            _fail(f"{metrics}: {problem}; --metrics takes an evaluation results file (CSV / YAML / JSON rows: "
                  "artifact, metric, value)", EXIT_INPUT)
    if tolerance is not None and not (math.isfinite(tolerance) and tolerance > 0):
        _fail("--tolerance must be a finite number greater than 0", EXIT_INPUT)
    config_files: tuple[str, ...] = ()
    try:
        given = case if case is not None and str(case) != "-" else empty_case
        config = load_config(given.parent if given is not None else (workdirs[0] if workdirs else Path.cwd()))
    except InputError as exc:
        _fail(exc.render(), EXIT_INPUT)
    config_files = config.sources
    if env is None:
        env = config.environment
    for pack in config.rules:
        if not pack.is_dir():
            _fail(f"{config_files[-1]}: rules: {pack}: " + ("not a folder" if pack.exists() else "no such rule pack folder")
                  + "; rules lists rule pack folders, relative to this file", EXIT_INPUT)
    packs = tuple(dict.fromkeys((*config.rules, *rule_packs)))
    if tolerance is None:
        tolerance = config.tolerance
    absolute, lower_is_better = absolute or config.absolute, lower_is_better or config.lower_is_better
    custom = tolerance is not None or absolute or lower_is_better
    options = EvidenceOptions(
        metrics=metrics,
        tolerance=Tolerance(tolerance if tolerance is not None else 0.01, not absolute, not lower_is_better)
        if custom else None,
        use_environment=env,
    )
    rulebase = _rulebase(packs, (engine or config.engine or "").lower() or None)
    progress = Progress(enabled=False if _VERBOSITY[0] < 0 else None)
    options.progress = progress.step
    try:
        diagnosis = diagnose_arguments(case, workdirs, rulebase, options, empty_case, getattr(sys.stdin, "buffer", None))
    except InputError as exc:
        _fail(exc.render(), EXIT_INPUT)
    except RuleBaseErrors as exc:
        _fail(f"the rule base is invalid:\n{exc}\n{_REPORT_IT}", EXIT_INTERNAL)
    except EngineLimitError as exc:  # the inputs or the packs are beyond what the engine can run
        _fail(str(exc), EXIT_INPUT)
    except EngineError as exc:
        _fail(f"{exc}\n{_REPORT_IT}", EXIT_INTERNAL)
    finally:
        progress.done()
    inputs = ([case] if case and str(case) != "-" else []) + list(diagnosis.read_paths) + [Path(s) for s in config_files]
    inputs += [f for pack in packs for f in pack.rglob("*") if f.is_file()]
    _say_verbose(f"j6doctor: 配置 {', '.join(config_files) or '无'}；规则包 {', '.join(map(str, packs)) or '无'}；"
                 f"规则引擎 {diagnosis.rulebase.engine}；读取 {len(diagnosis.read_paths)} 个文件")
    _LAST_CONFIG[0] = config
    return diagnosis, inputs


def _render(diagnosis, fmt: str) -> str:
    from j6doctor.report import render_html, render_json, render_markdown

    return {"json": render_json, "html": render_html, "md": render_markdown}[fmt](diagnosis)


def _format(fmt: str | None) -> str:
    """The format asked for, else the config's, else Markdown."""
    return fmt or _LAST_CONFIG[0].format or "md"


def _check_fail_on(stage: str, fail_on: list[str] | None) -> None:
    """`--fail-on`: the report is written; the exit status says the verdict was one of these."""
    if fail_on and stage in fail_on:
        _say(f"j6doctor: 结论为 {stage}（--fail-on），退出码 {EXIT_FAIL_ON}")
        sys.exit(EXIT_FAIL_ON)


def _library(given: str | None):
    """The case library of --store (or `store` in the config), opened and migrated; None
    without one."""
    given = given or (_LAST_CONFIG[0].store if _LAST_CONFIG[0] is not None else None)
    if not given:
        return None
    from j6doctor.store.keep import library
    from j6doctor.store.library import StoreError

    try:
        return library(given)
    except StoreError as exc:
        _fail(str(exc), EXIT_INPUT)


def diagnose(fmt: str | None, output: Path | None, fail_on: list[str] | None = None, store: str | None = None,
             **inputs) -> None:
    diagnosis, protected = _run(**inputs)
    library = _keep(diagnosis, store)
    _write(_render(diagnosis, _format(fmt)), output, protected + _store_files(library))
    _check_fail_on(diagnosis.verdict.stage, fail_on)


def _store_files(library) -> list[Path]:
    """The files of a SQLite case library: never an output (-o)."""
    return [library.file] if library is not None and library.file is not None else []


def _keep(diagnosis, store: str | None):
    """With a case library (--store, or the config's): the similar past cases go into the
    diagnosis's report, and the diagnosis into the library. The library, or None."""
    library = _library(store)
    if library is None:
        return None
    from j6doctor.store.keep import keep

    recorded = _store_call(keep, diagnosis, library)
    _say_verbose(f"j6doctor: 案例库 {library.given}：案例 #{recorded.case_id}"
                 f"{'（新）' if recorded.new_case else f'（第 {recorded.times} 次）'}")
    return library


def next_step(output: Path | None, **inputs) -> None:
    from j6doctor.next_step_script import render_next_step

    from j6doctor.next_step_script import script_stage

    diagnosis, protected = _run(**inputs)
    if script_stage(diagnosis) is None:
        _say(f"j6doctor: {diagnosis.verdict.stage_label}：没有可运行的排查脚本，写出的是报告中的下一步（手动执行）")
    _write(render_next_step(diagnosis), output, protected)


def explain(why_not_stage: str | None, fmt: str | None, output: Path | None, **inputs) -> None:
    from j6doctor.explain_report import explain_data, render_explain_json, render_explain_markdown, stage_choices

    if why_not_stage is not None and why_not_stage not in stage_choices():
        _fail(f"--why-not: {_unknown_stage(why_not_stage, stage_choices())}", EXIT_INPUT)
    diagnosis, protected = _run(**inputs)
    data = explain_data(diagnosis, why_not_stage)
    text = render_explain_json(data) if _format(fmt) == "json" else render_explain_markdown(diagnosis, data)
    _write(text, output, protected)


def inspect(paths: list[Path], fmt: str, output: Path | None) -> None:
    from j6doctor.inspect_files import inspect_paths, render_inspect_json, render_inspect_markdown

    missing = [p for p in paths if not p.exists()]
    if missing:
        _fail(f"{missing[0]}: no such file or folder; inspect takes artifact files or folders", EXIT_INPUT)
    data = inspect_paths(list(paths), Path.cwd())
    text = render_inspect_json(data) if fmt == "json" else render_inspect_markdown(data)
    _write(text, output, list(paths) + [Path.cwd() / f["path"] for f in data["files"]])


def ask(case: Path, workdirs: list[Path], env: bool | None, output: Path | None, fmt: str | None = None,
        metrics: Path | None = None, rule_packs: list[Path] | tuple[Path, ...] = (), store: str | None = None) -> None:
    from j6doctor.ask import EndOfAnswers, ask_session, read_answer

    _check_ask_case(case)
    if case.suffix.lower() not in (".yaml", ".yml", ".json"):
        _fail(f"{case}: a case file ends in .yaml, .yml or .json", EXIT_INPUT)
    if not case.exists() and not case.parent.is_dir():  # said before the questions, not after the answers
        _fail(f"{case}: the folder {case.parent} does not exist; create it or give another CASE path", EXIT_INPUT)
    stdin = getattr(sys.stdin, "buffer", None)
    encoding = getattr(sys.stdin, "encoding", None) or "utf-8"
    if encoding.lower().replace("_", "-") in ("ascii", "ansi-x3.4-1968", "us-ascii"):
        encoding = "utf-8"  # a C / POSIX locale: answers are still typed in UTF-8

    def say(text: str) -> None:  # the dialogue goes to stderr: stdout is the report
        _echo(text, err=True)

    try:  # answers piped in are not echoed: each prompt then ends its own line
        prompt_nl = not sys.stdin.isatty()
    except (AttributeError, ValueError, OSError):  # no stdin, or a closed one
        prompt_nl = True

    def answer(question: str) -> str:
        _echo(question, nl=prompt_nl, err=True)
        if stdin is None:  # a text-only stream (embedding): nothing to decode
            line = sys.stdin.readline()
            if not line:
                raise EndOfAnswers()
            return line.rstrip("\r\n")
        return read_answer(stdin, encoding, say, lambda: _echo(question, nl=prompt_nl, err=True))

    inputs: list[Path] = []

    def diagnose_case(exists: bool):
        diagnosis, protected = _run(case if exists else None, tuple(workdirs), metrics, None, False, False, env,
                                    tuple(rule_packs), empty_case=None if exists else case)
        inputs[:] = protected
        return diagnosis

    if store:
        _library(store)  # an unusable store is said before the first question, not after the answers
    try:
        diagnosis = ask_session(case, diagnose_case, answer, say)
    except OSError as exc:  # the answers cannot be written into CASE
        _fail(f"{case}: cannot write: {exc.strerror or exc}; give a CASE path in a writable folder", EXIT_INPUT)
    say("")
    library = _keep(diagnosis, store)  # the case as completed by the answers
    _write(_render(diagnosis, _format(fmt)), output, inputs + _store_files(library))


def _check_ask_case(case: Path) -> None:
    """CASE of `ask` is the file the answers are written into: not standard input (which
    carries the answers), not a folder (said with the file to give instead)."""
    if str(case) == "-":
        _fail("ask writes the answers into the case file, so CASE cannot be standard input (standard input "
              "carries the answers); give the case file, e.g. `j6doctor ask case.yaml` (created if absent)",
              EXIT_INPUT)
    try:
        is_folder = case.is_dir()
    except (OSError, ValueError):  # a name too long, a NUL byte: said where the file is used
        return
    if not is_folder:
        return
    found = [case / name for name in ("case.yaml", "case.yml", "case.json") if (case / name).is_file()]
    if found:
        _fail(f"{case}: is a folder; ask writes the answers into a case file: give {found[0]}"
              f" (`j6doctor ask {found[0]} --workdir {case}` also scans the folder's artifacts)", EXIT_INPUT)
    _fail(f"{case}: is a folder; ask writes the answers into a case file: give one to create in it, e.g. "
          f"`j6doctor ask {case / 'case.yaml'} --workdir {case}` (--workdir scans the folder's artifacts)",
          EXIT_INPUT)


def _rule_dirs(dirs: list[Path]):
    from j6doctor.rules import BUNDLED_RULES_DIR

    for folder in dirs:
        if not folder.exists():
            _fail(f"{folder}: no such rule folder or file; give a rule pack folder (or a rule file)", EXIT_INPUT)
    return [BUNDLED_RULES_DIR, *dirs], {BUNDLED_RULES_DIR: "rules"}


def rules_lint(dirs: list[Path], strict: bool, pattern: str | None = None) -> None:
    from j6doctor.engine.errors import VocabularyError
    from j6doctor.engine.lint import lint
    from j6doctor.engine.rule_loader import load_rule_dirs
    from j6doctor.facts import with_packs

    folders, display = _rule_dirs(dirs)
    try:
        vocab = with_packs([d for d in dirs if d.is_dir()], {d: str(d) for d in dirs})
    except (OSError, VocabularyError) as exc:
        _fail(str(exc), EXIT_INPUT)
    issues = lint(folders, vocab, display)
    rules = None
    matcher = _id_matcher(pattern)
    if matcher is not None:  # the whole base is checked; the matching rules' messages are shown
        rules = load_rule_dirs(folders, vocab, display)[0]
        if rules and not any(matcher(r.id) for r in rules):
            _fail(f"-k {pattern}: no rule id matches (see `j6doctor rules list`)", EXIT_INPUT)
        issues = [i for i in issues if i.rule is None or matcher(i.rule)]
    for issue in issues:
        _echo(issue.render())
    errors = sum(1 for i in issues if i.level == "error")
    if not errors:  # the rules load: their examples' fixtures must be there too
        from j6doctor.rule_tests import missing_fixtures

        for rule, example, problem in missing_fixtures(rules if rules is not None
                                                       else load_rule_dirs(folders, vocab, display)[0]):
            if matcher is None or matcher(rule.id):
                _echo(f"{rule.file}:{example.line}: error: rule {rule.id}: example {example.name!r}: {problem}")
                errors += 1
    warnings = sum(1 for i in issues if i.level == "warning")
    _echo(f"{errors} error(s), {warnings} warning(s)")
    if errors or (strict and warnings):
        sys.exit(EXIT_INTERNAL)


def _id_matcher(pattern: str | None):
    """-k PATTERN: a glob (with * ? [) or a part of the rule id."""
    if pattern is None:
        return None
    if any(c in pattern for c in "*?["):
        from fnmatch import fnmatchcase

        return lambda rule_id: fnmatchcase(rule_id, pattern)
    return lambda rule_id: pattern in rule_id


def rules_test(dirs: list[Path], verbose: bool, engine: str | None, pattern: str | None = None,
               fmt: str = "text", min_coverage: float | None = None, show_coverage: bool = False,
               everything: bool = False, output: Path | None = None) -> None:
    from j6doctor.rule_tests import condition_coverage, coverage_failures, render_junit, run_rule_tests

    rulebase = _rulebase(tuple(dirs), engine, rule_files=True)
    matcher = _id_matcher(pattern)
    packs = {str(d.resolve()) for d in dirs if d.is_dir()}
    files = {str(d) for d in dirs if not d.is_dir()}  # a single rule file: its rules are shown under its path
    protected = [f for d in dirs for f in (d.rglob("*") if d.is_dir() else [d]) if f.is_file()]  # -o: never a rule file
    in_packs = (lambda rule: rule.file in files or any(str(Path(rule.folder).resolve()) == p for p in packs)) \
        if dirs and not everything else (lambda rule: True)
    selected = {r.id for r in rulebase.rules if in_packs(r) and (matcher is None or matcher(r.id))}
    results, coverage = run_rule_tests(rulebase, selected.__contains__)
    if pattern is not None and not coverage:
        _fail(f"-k {pattern}: no rule id matches (see `j6doctor rules list`)", EXIT_INPUT)
    failed = sum(1 for r in results if not r.passed)
    uncovered = coverage_failures(coverage)
    decided, conditions = condition_coverage(coverage)
    percent = 100.0 * decided / conditions if conditions else 100.0
    below = min_coverage is not None and percent < min_coverage
    if fmt == "json":
        import json

        text = json.dumps({
            "passed": len(results) - failed, "failed": failed,
            "examples": [{"rule": r.rule, "name": r.name, "file": r.file, "line": r.line, "passed": r.passed,
                          "problems": r.problems} for r in results],
            "rules": [{"rule": c.rule, "file": c.file, "line": c.line, "examples": c.examples,
                       "fired_by_own": c.fired_by_own, "fired_by_any": c.fired_by_any,
                       "conditions": len(c.conditions), "decided": len(c.decided),
                       "undecided": [{"line": line, "condition": words} for line, words in c.undecided]}
                      for c in coverage],
            "uncovered_rules": uncovered,
            "condition_coverage": {"decided": decided, "conditions": conditions, "percent": round(percent, 1)},
        }, ensure_ascii=False, indent=2) + "\n"
        _write(text, output, protected)
    elif fmt == "junit":
        _write(render_junit(results, coverage), output, protected)
    else:
        lines = []
        for r in results:
            if verbose or not r.passed:
                lines.append(f"{'PASS' if r.passed else 'FAIL'} {r.file}:{r.line} {r.rule}: {r.name}")
                lines += [f"    {problem}" for problem in r.problems]
        lines += ["", f"{'rule':44} {'examples':>8} {'fired':>6} {'fired by any':>12} {'decided':>8}"]
        lines += [f"{c.rule:44} {c.examples:>8} {c.fired_by_own:>6} {c.fired_by_any:>12} "
                  f"{len(c.decided):>3}/{len(c.conditions):<4}" for c in coverage]
        if show_coverage:
            lines += ["", "conditions no example decides (every other condition holds, this one does not):"]
            lines += [f"  {c.file}:{line}: {c.rule}: {words}" for c in coverage for line, words in c.undecided]
        lines += uncovered
        lines.append(f"{len(results) - failed} passed, {failed} failed; "
                     f"{sum(1 for c in coverage if c.fired_by_own)}/{len(coverage)} rules fired by their examples; "
                     f"conditions decided by an example: {decided}/{conditions} ({percent:.1f}%)")
        if below:
            lines.append(f"condition coverage {percent:.1f}% is below --min-coverage {min_coverage:g}%")
        _write("\n".join(lines) + "\n", output, protected)
    if failed or uncovered or below:
        sys.exit(EXIT_INTERNAL)


def rules_new(pack: Path, rule_id: str, title: str | None) -> None:
    from j6doctor.rule_scaffold import new_rule_file

    try:
        path = new_rule_file(pack, rule_id, title)
    except ValueError as exc:
        _fail(str(exc), EXIT_INPUT)
    except OSError as exc:
        _fail(f"{pack}: cannot write: {exc.strerror or exc}; give a writable rule pack folder", EXIT_INPUT)
    _echo(f"wrote {path}: its example does not fire the rule yet, so `j6doctor rules test {pack}` fails\n"
          f"until the conditions and the example case are written (see docs/AUTHORING.md)")


def rules_list(dirs: list[Path], fmt: str, pattern: str | None = None) -> None:
    import json

    from j6doctor.rule_catalog import listing, render_listing

    matcher = _id_matcher(pattern)
    entries = [e for e in listing(_rulebase(tuple(dirs))) if matcher is None or matcher(e["id"])]
    _echo(json.dumps(entries, ensure_ascii=False, indent=2) if fmt == "json" else render_listing(entries))


def rules_show(rule_id: str, dirs: list[Path], fmt: str) -> None:
    import json

    from j6doctor.rule_catalog import detail, find, render_detail

    rulebase = _rulebase(tuple(dirs))
    rule, _ = find(rulebase, rule_id)
    if rule is None:
        import difflib

        close = difflib.get_close_matches(rule_id, [r.id for r in rulebase.rules], n=3, cutoff=0.6)
        hint = (f"; did you mean {', '.join(close)}?" if close else
                f"; `j6doctor rules list` lists every rule id (`rules list -k {rule_id}`: the ids containing it)")
        _fail(f"no rule with id {rule_id!r}{hint}", EXIT_INPUT)
    found = detail(rulebase, rule)
    _echo(json.dumps(found, ensure_ascii=False, indent=2) if fmt == "json" else render_detail(found))


def rules_schema(plain: bool) -> None:
    import json

    from j6doctor.engine import rule_file_schema
    from j6doctor.engine.schema_export import vocabulary_schema
    from j6doctor.facts import vocabulary

    schema = rule_file_schema() if plain else vocabulary_schema(vocabulary())
    _echo(json.dumps(schema, ensure_ascii=False, indent=2))


def schema(what: str, rule_packs: tuple[Path, ...]) -> None:
    """The JSON Schema of the verdict, of a case file or of a rule file (with the packs'
    vocabulary where it matters: their enum values and fact types)."""
    import json

    if rule_packs:
        _rulebase(rule_packs)  # loads and activates the packs' vocabulary (or exits with why)
    if what == "verdict":
        from j6doctor.verdict_schema import verdict_schema

        document = verdict_schema()
    elif what == "case":
        from j6doctor.probes.written_case_schema import written_case_schema

        document = {"$schema": "https://json-schema.org/draft/2020-12/schema", "title": "j6doctor case file",
                    "description": "case.yaml / case.json as written, shorthands and aliases included "
                                   "(docs/CONTRACT.md)", **written_case_schema()}
    else:
        from j6doctor.engine.schema_export import vocabulary_schema
        from j6doctor.facts import vocabulary

        document = vocabulary_schema(vocabulary())
    _echo(json.dumps(document, ensure_ascii=False, indent=2))


# ---------------------------------------------------------------------------- the parser
def _path_type(kind: str):
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


def _case_path(text: str) -> Path:
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


def _formats(text: str) -> tuple[str, ...]:
    chosen = tuple(dict.fromkeys(part.strip().lower() for part in text.split(",") if part.strip()))
    unknown = [f for f in chosen if f not in ("html", "json", "md")]
    if unknown or not chosen:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a comma list of html, json and md")
    return chosen


def _finite_float(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """Descriptions keep their paragraphs; option help shows its default."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: int | None = None):
        # argparse builds a formatter for every add_argument; without a width each one imports
        # shutil (and its compression modules) for shutil.get_terminal_size: the same lookup here
        super().__init__(prog, indent_increment, max_help_position,
                         _terminal_columns() - 2 if width is None else width)

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if action.default not in (None, False, argparse.SUPPRESS) and "%(default)" not in text \
                and action.option_strings and not isinstance(action.default, (list, tuple)):
            text += "  [default: %(default)s]"
        return text


def _terminal_columns() -> int:
    """shutil.get_terminal_size().columns: $COLUMNS, else the terminal on stdout, else 80."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns if columns > 0 else 80


_ENGINE_HELP = ("Rule engine: durable (durable-rules) or clips (CLIPS via clipspy). Default: `engine` in "
                "j6doctor.toml, else J6DOCTOR_ENGINE, else durable-rules where it is installed, else CLIPS.")


def _add_engine(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--engine", type=str.lower, choices=["durable", "clips"], default=None, help=_ENGINE_HELP)


def _add_inputs(parser: argparse.ArgumentParser) -> None:
    """The options every command that diagnoses shares: what to read, and how to judge it."""
    parser.add_argument("case", nargs="?", metavar="CASE", type=_case_path,
                        help="The case file (case.yaml / case.json); - reads it from standard input. "
                             "May be omitted when --workdir or --metrics is given.")
    parser.add_argument("--workdir", dest="workdirs", action="append", default=[], metavar="DIR",
                        type=_path_type("folder"),
                        help="Folder of artifacts to scan (repeatable); CASE may then be omitted.")
    parser.add_argument("--metrics", type=_path_type("file"), metavar="FILE",
                        help="Evaluation results (CSV / YAML / JSON rows: artifact, metric, value[, dataset, frames]); "
                             "CASE may then be omitted.")
    parser.add_argument("--tolerance", type=_finite_float, metavar="X",
                        help="Allowed drop from the qat.pt baseline (default 0.01).")
    parser.add_argument("--absolute", action="store_true",
                        help="The tolerance is in metric units, not relative to the baseline.")
    parser.add_argument("--lower-is-better", action="store_true",
                        help="The metric is an error: larger values are worse.")
    parser.add_argument("--env", action=argparse.BooleanOptionalAction, default=None,
                        help="Read (or not) the installed package versions and board type of this machine to fill "
                             "what the case leaves out (default: on, or `environment` in j6doctor.toml).")
    parser.add_argument("--rules", dest="rule_packs", action="append", default=[], metavar="PACK",
                        type=_path_type("folder"),
                        help="Extra rule pack folder (repeatable); its rules add to or override bundled ones by id.")
    _add_engine(parser)


def _unknown_stage(stage: str, allowed: list[str]) -> str:
    """"unknown stage 'convrt' (did you mean 'convert'?); allowed: …" """
    import difflib

    close = difflib.get_close_matches(stage, allowed, n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return f"unknown stage {stage!r}{hint}; allowed: {', '.join(allowed)}"


def _stage_list(text: str) -> list[str]:
    from j6doctor.facts import enum_values

    stages = [part.strip() for part in text.replace(",", " ").split() if part.strip()]
    allowed = list(enum_values("stage"))
    unknown = [stage for stage in stages if stage not in allowed]
    if unknown or not stages:
        raise argparse.ArgumentTypeError(_unknown_stage(unknown[0], allowed) if unknown else "name at least one stage")
    return stages


def _complete_stages(prefix: str = "", **_kwargs) -> list[str]:
    """argcomplete's candidates for a STAGE option: the stages of the vocabulary (read only
    when completing), after the ones already listed before a comma (`convert,co<TAB>`)."""
    from j6doctor.facts import enum_values

    cut = prefix.rfind(",") + 1
    given, tail = prefix[:cut], prefix[cut:]
    listed = set(given.split(","))
    return [given + stage for stage in enum_values("stage") if stage.startswith(tail) and stage not in listed]


def _stages(action: argparse.Action) -> argparse.Action:
    """A STAGE option: completed with the stage values, not file names."""
    action.completer = _complete_stages  # type: ignore[attr-defined]
    return action


def _add_fail_on(parser: argparse.ArgumentParser) -> None:
    _stages(parser.add_argument(
        "--fail-on", dest="fail_on", type=_stage_list, action="extend", metavar="STAGE",
        help=f"Exit {EXIT_FAIL_ON} (after writing the report) when the verdict is one of these "
             "stages, e.g. --fail-on undetermined or --fail-on convert,compile (repeatable)."))


def _add_store(parser: argparse.ArgumentParser, required: bool = False) -> None:
    parser.add_argument("--store", metavar="PATH|URL", required=False,
                        help="The case library: a SQLite file (created if absent) or postgresql://user@host/db "
                             "(default: `store` in j6doctor.toml)." + (" Required here unless the config names one."
                                                                        if required else
                                                                        " Records the diagnosis and lists similar past "
                                                                        "cases in the report."))


def _add_case_filters(parser: argparse.ArgumentParser) -> None:
    _stages(parser.add_argument("--stage", help="The latest verdict's stage."))
    _stages(parser.add_argument("--candidate", help="A stage among the latest verdict's candidates."))
    parser.add_argument("--platform", help="The platform family (J6M, X5, ...).")
    parser.add_argument("--flow", choices=["qat", "ptq"])
    parser.add_argument("--finding", help="Text of a finding or its topic.")
    parser.add_argument("--op-type", dest="op_type", help="Op type of the first divergent layer (Conv2d, add, ...).")
    parser.add_argument("--missing", help="An info-gate item the verdict lists as missing.")
    parser.add_argument("--since", metavar="DATE", help="Recorded on or after this date (YYYY-MM-DD).")
    parser.add_argument("--until", metavar="DATE", help="Recorded before this date (YYYY-MM-DD).")
    parser.add_argument("--format", dest="fmt", choices=["text", "json"], default="text")
    _add_store(parser, required=True)
    parser.set_defaults(run=cases_list)


_VERBOSE_HELP = "Also say on stderr which config files, rule packs and engine were used."


def _verbosity(verbose_help: str = _VERBOSE_HELP) -> list[argparse.ArgumentParser]:
    """-q / -v, as a parent parser of the top level and of every (sub)command: they may be
    given anywhere (`j6doctor -q diagnose CASE`, `j6doctor diagnose CASE -q`). Neither has a
    default at any level, so a level that does not give one leaves the other's value; the
    last one given wins (a subcommand's after the top level's)."""
    parent = argparse.ArgumentParser(add_help=False, formatter_class=_Formatter)
    group = parent.add_mutually_exclusive_group()
    group.add_argument("-q", "--quiet", dest="verbosity", action="store_const", const=-1, default=argparse.SUPPRESS,
                       help="Only errors on stderr: no progress line, no notes.")
    group.add_argument("-v", "--verbose", dest="verbosity", action="store_const", const=1, default=argparse.SUPPRESS,
                       help=verbose_help)
    return [parent]


def _add_output(parser: argparse.ArgumentParser, what: str = "the report") -> None:
    parser.add_argument("-o", "--output", type=_path_type("file"), metavar="FILE",
                        help=f"Write {what} to this file instead of standard output (- is standard output).")


def _exit_status_text() -> str:
    """The exit codes of app/exit_codes.py, each with the comment beside it there: the help
    lists what the module says, so the two cannot drift apart."""
    import re

    from j6doctor import exit_codes

    try:
        source = Path(exit_codes.__file__).read_text(encoding="utf-8")
    except (OSError, TypeError, ValueError):  # no source next to the module: the names alone
        source = ""
    notes = dict(re.findall(r"^(EXIT_\w+)\s*=\s*\d+\s*#\s*(.+?)\s*$", source, re.MULTILINE))
    codes = sorted((value, name) for name, value in vars(exit_codes).items()
                   if name.startswith("EXIT_") and isinstance(value, int))
    return "exit status:\n" + "\n".join(
        f"  {value:<5}{notes.get(name) or name[len('EXIT_'):].lower().replace('_', ' ')}" for value, name in codes)


class _TopParser(argparse.ArgumentParser):
    """The top-level parser: its help ends with the exit codes, read only when it is shown."""

    def format_help(self) -> str:
        self.epilog = _exit_status_text()
        return super().format_help()


def build_parser() -> argparse.ArgumentParser:
    parser = _TopParser(
        prog="j6doctor", formatter_class=_Formatter, parents=_verbosity(),
        description="j6doctor — locate where a horizon_plugin_pytorch J6 model loses accuracy between\n"
                    "qat.pt, qat.export.pt, qat.bc, quantized.bc, hbm and the board, with the evidence chain.")
    parser.add_argument("--version", action="version", version=f"j6doctor, version {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")

    def command(name: str, summary: str, description: str) -> argparse.ArgumentParser:
        return commands.add_parser(name, help=summary, description=description, formatter_class=_Formatter,
                                   parents=_verbosity())

    def subcommand(sub, name: str, verbose_help: str = _VERBOSE_HELP, **kwargs) -> argparse.ArgumentParser:
        return sub.add_parser(name, formatter_class=_Formatter, parents=_verbosity(verbose_help), **kwargs)

    p = command("diagnose", "Diagnose a case and/or work folders: which stage, and why.",
                "Diagnose CASE (case.yaml / case.json) and/or the artifacts under --workdir:\n"
                "which stage, and why.")
    _add_inputs(p)
    p.add_argument("--format", dest="fmt", choices=["md", "json", "html"], default=None,
                   help="Chinese Markdown report, the JSON verdict of the public contract, or a "
                        "self-contained HTML page (default: `format` in j6doctor.toml, else md).")
    _add_output(p)
    _add_fail_on(p)
    _add_store(p)
    p.set_defaults(run=diagnose)

    p = command("next-step", "Write the concluded stage's next step as a runnable Python script.",
                "Write the concluded stage's next step as a runnable Python script (imports and call\n"
                "order of the documented APIs; your paths filled in, FILL IN where the case lacks them).")
    _add_inputs(p)
    _add_output(p, "the script")
    p.set_defaults(run=next_step)

    p = command("explain", "The evidence chain of the verdict, rule by rule.",
                "The evidence chain of the verdict: every derived fact with its rule, rule file and\n"
                "line, down to the input facts and their sources (case key, file, line, sha256).")
    _add_inputs(p)
    _stages(p.add_argument("--why-not", dest="why_not_stage", metavar="STAGE",
                           help="Also explain why the verdict is not STAGE: the rules that would conclude it, "
                                "their failed conditions, and the evidence that would change the answer."))
    p.add_argument("--format", dest="fmt", choices=["md", "json"], default=None)
    _add_output(p)
    p.set_defaults(run=explain)

    p = command("inspect", "What each probe reads from files and folders, without a diagnosis.",
                "What each probe reads from FILE / DIR (recursively): the kind each file is recognised\n"
                "as — by its content, or only by its name — and the data extracted, without a diagnosis.")
    p.add_argument("paths", nargs="+", type=Path, metavar="PATH")
    p.add_argument("--format", dest="fmt", choices=["md", "json"], default="md")
    _add_output(p, "the result")
    p.set_defaults(run=inspect)

    p = command("ask", "Ask for the missing information, write it into the case, then diagnose.",
                "Ask for the missing information that would change the judgement (info gate order,\n"
                "with the reason), write the answers into CASE (created with the first answer; existing\n"
                "content and comments are kept), then diagnose. An empty answer skips; end of input stops\n"
                "asking; Ctrl-C saves the answers given so far and exits 130. The questions go to stderr,\n"
                "the final report to stdout (or -o).")
    p.add_argument("case", nargs="?", default=Path("case.yaml"), type=Path, metavar="CASE",
                   help="The case file the answers are written into (created with the first answer). "
                        "[default: case.yaml]")
    p.add_argument("--workdir", dest="workdirs", action="append", default=[], metavar="DIR",
                   type=_path_type("folder"), help="Folder of artifacts to scan (repeatable).")
    p.add_argument("--env", action=argparse.BooleanOptionalAction, default=None,
                   help="Read (or not) this machine's package versions and board type (default: config, else on).")
    p.add_argument("--rules", dest="rule_packs", action="append", default=[], metavar="PACK",
                   type=_path_type("folder"),
                   help="Extra rule pack folder (repeatable); its rules and vocabulary decide what is asked.")
    p.add_argument("--metrics", type=_path_type("file"), metavar="FILE",
                   help="Evaluation results (CSV / YAML / JSON rows: artifact, metric, value[, dataset, frames]).")
    p.add_argument("--format", dest="fmt", choices=["md", "json", "html"], default=None,
                   help="The final report: Chinese Markdown, the JSON verdict or an HTML page "
                        "(default: `format` in j6doctor.toml, else md).")
    _add_output(p, "the final report")
    _add_store(p)
    p.set_defaults(run=ask)

    p = command("triage", "Diagnose many cases and work folders at once, with a summary table.",
                "Diagnose many cases and/or work folders in a process pool and summarise them: one row\n"
                "per case (stage, candidates, missing, first finding), on the terminal and, with --out,\n"
                "as summary.csv, summary.json and index.html linking one report per case.\n\n"
                "A PATH that is a file is a case; a folder is searched for case files (each one a case)\n"
                "and for folders of artifacts without a case file (each one a work-folder diagnosis).\n"
                "Exit 0 when every case was diagnosed, 2 when any could not be read (its row says why).")
    p.add_argument("paths", nargs="+", type=Path, metavar="PATH")
    p.add_argument("--out", type=_path_type("folder"), metavar="DIR",
                   help="Write summary.csv, summary.json, index.html and one report per case here.")
    p.add_argument("--format", dest="formats", type=_formats, default=("html",), metavar="FORMATS",
                   help="The per-case reports written with --out: a comma list of html, json and md.  "
                        "[default: html]")
    p.add_argument("-j", "--jobs", type=int, metavar="N", help="Worker processes (default: all cores).")
    p.add_argument("--env", action=argparse.BooleanOptionalAction, default=None,
                   help="Read (or not) this machine's package versions and board type (default: config, else off "
                        "for triage: the cases are other people's).")
    p.add_argument("--rules", dest="rule_packs", action="append", default=[], metavar="PACK",
                   type=_path_type("folder"), help="Extra rule pack folder (repeatable).")
    _add_engine(p)
    p.add_argument("--no-progress", dest="progress", action="store_false",
                   help="No progress bar (it is shown only on a terminal anyway).")
    _add_fail_on(p)
    _add_store(p)
    p.set_defaults(run=triage)

    p = command("schema", "Print the JSON Schema of the verdict, a case file or a rule file.",
                "Print a JSON Schema: `verdict` (the JSON verdict of `diagnose --format json`, with its\n"
                "schema_version), `case` (case.yaml / case.json) or `rule` (a rule file, with the fact\n"
                "vocabulary folded in). With --rules, the packs' vocabulary is included.")
    p.add_argument("what", choices=["verdict", "case", "rule"], metavar="{verdict,case,rule}")
    p.add_argument("--rules", dest="rule_packs", action="append", default=[], metavar="PACK",
                   type=_path_type("folder"), help="Rule pack folder whose vocabulary to include (repeatable).")
    p.set_defaults(run=schema)

    p = command("cases", "The case library: list, show, search, resolve, stats, rediagnose, export, import.",
                "The case library that `diagnose --store` and `triage --store` fill: every diagnosis kept\n"
                "(SQLite file or PostgreSQL URL), past cases found by similarity, rule changes checked\n"
                "against all stored cases (`rediagnose`, exit 4 when a verdict would change).")
    sub = p.add_subparsers(dest="cases_command", metavar="COMMAND", title="commands")
    p.set_defaults(run=None, parser=p)
    q = subcommand(sub, "list", help="The stored cases with their latest verdict.")
    _add_case_filters(q)
    q = subcommand(sub, "search", help="Cases whose title or case text contains TEXT.")
    q.add_argument("text", metavar="TEXT")
    _add_case_filters(q)
    q = subcommand(sub, "show", help="A stored case's report (or --format json: its verdict).")
    q.add_argument("case_id", type=int, metavar="ID")
    q.add_argument("--format", dest="fmt", choices=["md", "json"], default="md")
    _add_store(q, required=True)
    q.set_defaults(run=cases_show)
    q = subcommand(sub, "resolve", help="Record a case's confirmed root cause.")
    q.add_argument("case_id", type=int, metavar="ID")
    _stages(q.add_argument("--stage", required=True, type=lambda t: _stage_list(t)[0], metavar="STAGE"))
    q.add_argument("--note", default="", metavar="TEXT")
    _add_store(q, required=True)
    q.set_defaults(run=cases_resolve)
    q = subcommand(sub, "stats",
                   help="Agreement of verdicts with confirmed root causes, per stage and rule-base version.")
    q.add_argument("--format", dest="fmt", choices=["text", "json"], default="text")
    _add_store(q, required=True)
    q.set_defaults(run=cases_stats)
    q = subcommand(sub, "rediagnose",
                   help="Re-run every stored case on the current (or a candidate) rule base; exit 4 if any changes.",
                   description="Re-run every stored case from its stored input facts (no original files needed)\n"
                               "on the bundled rules plus --rules PACKs, and list each case whose stage,\n"
                               "candidates, missing items or mistakes would change, with the rules behind the\n"
                               "old and the new verdict. Exit 4 when any would change.")
    q.add_argument("--rules", dest="rule_packs", action="append", default=[], metavar="PACK",
                   type=_path_type("folder"), help="Candidate rule pack folder (repeatable).")
    q.add_argument("--diff", action="store_true", help="Also show the candidates / missing / mistakes that change.")
    q.add_argument("-j", "--jobs", type=int, metavar="N", help="Worker processes (default: all cores).")
    q.add_argument("--format", dest="fmt", choices=["text", "json"], default="text")
    _add_engine(q)
    _add_store(q, required=True)
    q.set_defaults(run=cases_rediagnose)
    q = subcommand(sub, "export", help="The library as JSON Lines (one case per line).")
    _add_output(q, "the lines")
    _add_store(q, required=True)
    q.set_defaults(run=cases_export)
    q = subcommand(sub, "import", help="Add the cases of an export (JSON Lines).")
    q.add_argument("file", type=_path_type("file"), metavar="FILE")
    _add_store(q, required=True)
    q.set_defaults(run=cases_import)

    p = command("rules", "Work on the rule base: new, lint, test, list, show, schema.",
                "Work on the rule base: start a rule (new), check it (lint), run each rule's example\n"
                "cases (test), list the rules or show one (list, show), print the rule-file schema (schema).")
    sub = p.add_subparsers(dest="rules_command", metavar="COMMAND", title="commands")
    p.set_defaults(run=None, parser=p)
    q = subcommand(sub, "lint", help="Check rule files; exit 1 on errors.",
                   description="Check the bundled rules plus the PACKs (rule pack folders or single rule files):\n"
                               "schema, vocabulary, rules that can never fire, rules that disagree on the same\n"
                               "conditions, endless cycles, engine limits. With -k, the whole rule base is still\n"
                               "checked, and the messages of the matching rules (and those that name no rule:\n"
                               "file-level problems) are shown and counted.")
    q.add_argument("dirs", nargs="*", type=Path, metavar="PACK",
                   help="A rule pack folder, or a single rule file (*.yaml).")
    q.add_argument("--strict", action="store_true", help="Warnings fail too.")
    q.add_argument("-k", dest="pattern", metavar="PATTERN",
                   help="Only the messages of the rules whose id contains PATTERN (or matches it as a glob: "
                        "*, ?, [...]), and those that name no rule.")
    q.set_defaults(run=rules_lint)
    q = subcommand(sub, "test", help="Run every rule's examples; show coverage.",
                   verbose_help="List every example, not only failures (and say which config, packs and engine).",
                   description="Run the example cases of the rules of the PACKs (rule pack folders, or single\n"
                               "*.yaml rule files); of every bundled rule when no PACK is given, or with --all.\n"
                               "Report per-rule coverage: examples that fire the rule, and conditions an example\n"
                               "decides (every other condition holds, this one does not). Fails when an example\n"
                               "fails, a rule has no example that fires it, or condition coverage is below\n"
                               "--min-coverage.")
    q.add_argument("dirs", nargs="*", type=Path, metavar="PACK",
                   help="A rule pack folder, or a single rule file (*.yaml): its rules and their examples.")
    q.add_argument("-k", dest="pattern", metavar="PATTERN",
                   help="Only the rules whose id contains PATTERN (or matches it as a glob: *, ?, [...]).")
    q.add_argument("--all", dest="everything", action="store_true",
                   help="With PACKs: also run the bundled rules' examples (default: the packs' rules only).")
    q.add_argument("--format", dest="fmt", choices=["text", "json", "junit"], default="text",
                   help="text for people, json for tools, junit (XML) for CI test reports.")
    q.add_argument("--coverage", dest="show_coverage", action="store_true",
                   help="List every condition (when: line or not: guard) that no example decides.")
    q.add_argument("--min-coverage", type=_finite_float, metavar="PCT",
                   help="Fail when less than PCT %% of the conditions are decided by an example.")
    _add_output(q, "the result")
    _add_engine(q)
    q.set_defaults(run=rules_test)
    q = subcommand(sub, "new", help="Start a rule: a rule file with a failing example.",
                   description="Write PACK/<ID>.yaml: one rule with a placeholder condition and an example that\n"
                               "does not fire it yet, so that `rules test PACK` fails until both are written.")
    q.add_argument("pack", type=Path, metavar="PACK")
    q.add_argument("rule_id", metavar="ID")
    q.add_argument("--title", help="The rule's title (what it recognises).")
    q.set_defaults(run=rules_new)
    q = subcommand(sub, "list", help="List the rules: id, title, seed section, file:line.",
                   description="List the bundled rules plus those of the packs DIRS, in rule-base order.")
    q.add_argument("dirs", nargs="*", type=_path_type("folder"), metavar="DIR")
    q.add_argument("-k", dest="pattern", metavar="PATTERN",
                   help="Only the rules whose id contains PATTERN (or matches it as a glob: *, ?, [...]).")
    q.add_argument("--format", dest="fmt", choices=["text", "json"], default="text")
    q.set_defaults(run=rules_list)
    q = subcommand(sub, "show", help="Show one rule: conditions, conclusions, examples, "
                   "the rules around it.",
                   description="Show the rule ID (bundled, or from the packs DIRS): its title, seed section and\n"
                               "file, its conditions in words, its conclusions, its examples, the rules that\n"
                               "conclude what it reads and the rules that read what it concludes.")
    q.add_argument("rule_id", metavar="ID")
    q.add_argument("dirs", nargs="*", type=_path_type("folder"), metavar="DIR")
    q.add_argument("--format", dest="fmt", choices=["text", "json"], default="text")
    q.set_defaults(run=rules_show)
    q = subcommand(sub, "schema", help="Print the JSON Schema of a rule file.",
                   description="Print the JSON Schema of a rule file (for editors), with fact types, fields and values.")
    q.add_argument("--plain", action="store_true", help="The generic schema, without the fact vocabulary.")
    q.set_defaults(run=rules_schema)
    return parser


def triage(paths: list[Path], out: Path | None, formats: tuple[str, ...], jobs: int | None, env: bool | None,
           rule_packs: list[Path], engine: str | None, progress: bool, fail_on: list[str] | None = None,
           store: str | None = None) -> None:
    from j6doctor.config import load_config
    from j6doctor.probes import InputError
    from j6doctor.triage import triage_main

    if jobs is not None and jobs < 1:
        _fail("--jobs must be 1 or more", EXIT_INPUT)
    if store is None:
        try:
            store = load_config(Path.cwd()).store
        except InputError as exc:
            _fail(exc.render(), EXIT_INPUT)
    sys.exit(triage_main(paths, out, jobs, tuple(rule_packs), engine, env, progress and _VERBOSITY[0] >= 0,
                         formats=formats, fail_on=fail_on, store=store))


def _open_store(store: str | None):
    from j6doctor.config import load_config
    from j6doctor.probes import InputError

    if not store:
        try:
            _LAST_CONFIG[0] = load_config(Path.cwd())
        except InputError as exc:
            _fail(exc.render(), EXIT_INPUT)
    library = _library(store)
    if library is None:
        _fail("give the case library with --store PATH|URL (or `store` in j6doctor.toml)", EXIT_INPUT)
    return library


def _store_call(function, *args):
    import sqlalchemy

    from j6doctor.store.library import StoreError

    try:
        return function(*args)
    except StoreError as exc:
        _fail(str(exc), EXIT_INPUT)
    except sqlalchemy.exc.SQLAlchemyError as exc:  # the database went away or refused mid-way
        reason = (str(getattr(exc, "orig", None) or exc).strip().splitlines() or [type(exc).__name__])[0]
        _fail(f"the case library failed: {reason[:300]}; check that the database "
              "is reachable and writable, then run the command again", EXIT_INPUT)


def cases_list(store: str | None, fmt: str, text: str | None = None, **filters) -> None:
    from j6doctor.store.commands import list_text

    library = _open_store(store)
    _echo(list_text(_store_call(lambda: library.rows(text=text, **filters)), fmt), nl=False)


def cases_show(store: str | None, case_id: int, fmt: str) -> None:
    from j6doctor.store.commands import show_text

    library = _open_store(store)
    _echo(_store_call(show_text, library, case_id, fmt), nl=False)


def cases_resolve(store: str | None, case_id: int, stage: str, note: str) -> None:
    library = _open_store(store)
    _store_call(library.resolve, case_id, stage, note)
    _say(f"j6doctor: 案例 #{case_id} 的根因记为 {stage}")


def cases_stats(store: str | None, fmt: str) -> None:
    from j6doctor.store.commands import stats_text

    _echo(stats_text(_open_store(store), fmt), nl=False)


def cases_rediagnose(store: str | None, rule_packs: list[Path], diff: bool, jobs: int | None, fmt: str,
                     engine: str | None) -> None:
    from j6doctor.store.commands import rediagnose_text
    from j6doctor.store.rediagnose import rediagnose

    if jobs is not None and jobs < 0:
        _fail("--jobs must be 0 (all cores) or more", EXIT_INPUT)
    library = _open_store(store)
    _rulebase(tuple(rule_packs), engine)  # a broken pack is said here, once, with its file and line
    count, changes = _store_call(rediagnose, library, tuple(str(p) for p in rule_packs), engine, jobs)
    _echo(rediagnose_text(count, changes, fmt, diff), nl=False)
    if changes:
        sys.stdout.flush()
        sys.exit(EXIT_CHANGED)


def cases_export(store: str | None, output: Path | None) -> None:
    """The lines go out as they are read (a large library is never held in memory); a file
    is replaced only once the export is complete."""
    import io

    from j6doctor.atomic_write import writing_atomic

    library = _open_store(store)
    if output is None or str(output) == "-":
        try:
            count = _store_call(library.export_jsonl, sys.stdout)
            sys.stdout.flush()
        except OSError as exc:  # a closed pipe, a full disk behind a redirection
            _fail(f"cannot write the export to standard output: {exc.strerror or exc}", EXIT_INPUT)
    else:
        _check_output_path(output, _store_files(library))
        try:
            with writing_atomic(output) as stream:
                text = io.TextIOWrapper(stream, encoding="utf-8", newline="\n")
                count = _store_call(library.export_jsonl, text)
                text.flush()
                text.detach()  # the binary stream is closed by writing_atomic
        except OSError as exc:
            _fail(f"{output}: cannot write: {exc.strerror or exc}; give -o a file in an existing, writable folder",
                  EXIT_INPUT)
    _say(f"j6doctor: 导出 {count} 个案例")


def cases_import(store: str | None, file: Path) -> None:
    library = _open_store(store)
    try:
        with open(file, "rb") as lines:  # decoded line by line: an error names its line
            added, known = _store_call(library.import_jsonl, lines, str(file))
    except OSError as exc:
        _fail(f"{file}: cannot read: {exc.strerror or exc}; expected a JSON Lines file of `j6doctor cases export`",
              EXIT_INPUT)
    _say(f"j6doctor: 导入 {added} 个新案例，{known} 个已在案例库中")


def _complete(parser: argparse.ArgumentParser) -> None:
    """Shell completion through argcomplete when it is installed and the shell asks for it
    (it sets _ARGCOMPLETE); otherwise nothing is imported."""
    if "_ARGCOMPLETE" in os.environ:
        try:
            import argcomplete
        except ImportError:
            return
        argcomplete.autocomplete(parser)


def _dispatch(argv: list[str] | None) -> None:
    parser = build_parser()
    _complete(parser)
    args = vars(parser.parse_args(argv))
    run = args.pop("run", None)
    if run is None:  # `j6doctor` or `j6doctor rules` alone: its help, as click did
        (args.get("parser") or parser).print_help()
        return
    _VERBOSITY[0] = args.pop("verbosity", 0) or 0
    if run is rules_test:  # its -v also lists every example
        args["verbose"] = _VERBOSITY[0] > 0
    args.pop("command", None)
    args.pop("rules_command", None)
    args.pop("cases_command", None)
    args.pop("parser", None)
    for name in ("workdirs", "rule_packs"):
        if name in args and run is not triage and run is not ask:
            args[name] = tuple(args[name])
    run(**args)


def main(argv: list[str] | None = None, *, exit_fast: bool = True) -> None:
    """The console script. After a successful command the process ends at once (output
    flushed, files closed, the engine worker ended and reaped): tearing down every module
    would cost a cold run a tenth of its time. `exit_fast=False` returns instead (in-process
    callers)."""
    try:
        _dispatch(argv)
        if exit_fast:
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            except OSError as exc:  # a closed pipe, a full disk behind a redirection
                _fail(f"cannot write the report to standard output: {exc.strerror or exc}", EXIT_INPUT)
            if "j6doctor.engine.worker" in sys.modules:
                sys.modules["j6doctor.engine.worker"].close_shared_worker()
            from j6doctor import dataclass_code

            dataclass_code.save()  # os._exit runs no atexit handler
            os._exit(EXIT_OK)
    except SystemExit:
        raise
    except KeyboardInterrupt:
        _echo("j6doctor: interrupted", err=True)
        sys.exit(EXIT_INTERRUPTED)
    except Exception as exc:  # last line of defence: no traceback unless asked for
        if os.environ.get("J6DOCTOR_DEBUG"):
            import traceback

            traceback.print_exc()
        _echo(f"j6doctor: internal error: {type(exc).__name__}: {exc} "
              "(a defect of j6doctor: set J6DOCTOR_DEBUG=1 for a traceback and please report it)", err=True)
        sys.exit(EXIT_INTERNAL)
