"""Gather the evidence of one diagnosis: the case file, the artifact files, an evaluation
results file and the environment, each through its probe, into numbered input facts.

A file that cannot be read becomes a `probe_problem` fact and the diagnosis goes on with
the rest; nothing here decides anything about stages.

Each artifact file is read once: the scan leaves hashing for later, the probes read their
files (hashed from the bytes read, artifacts.hashing_reads), and the artifact_file facts
are then put where the scan would have put them, before the facts read from the files.
The probes' tables and summaries are kept as readings (probe_output.Reading); the report
builds chart series from them when it draws any.
"""

from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from j6doctor.engine import Fact, Source
from j6doctor.facts import vocabulary
from j6doctor.probes import InputError
from j6doctor.probes.case_file import Case, case_facts, normalize_platform, resolve_package, version_number
from j6doctor.probes.probe_output import ProbeOutput, Reading
from j6doctor.probes.tolerance import Tolerance, case_tolerance

if TYPE_CHECKING:  # imported where used: a case without files needs no discovery, metrics or board
    from j6doctor.probes.artifacts import Digests, FoundFile

MAX_SIGNALS_PER_KIND = 10  # facts stay few: probes summarise (docs/engine_notes.md §8)


@dataclass
class EvidenceOptions:
    """What to collect besides the case: work folders, metrics file, tolerance, environment."""

    workdirs: list[Path] = field(default_factory=list)
    metrics: Path | None = None
    tolerance: Tolerance | None = None
    use_environment: bool = True
    environ: dict[str, str] | None = None
    progress: Callable[[str], None] | None = None
    # input facts given as they are (a rule example's `facts:`), after the case's own
    given_facts: list[tuple[str, dict[str, Any], Source]] = field(default_factory=list)


class FactList:
    """Numbers input facts f1, f2, ... in the order the probes produce them."""

    def __init__(self) -> None:
        self.facts: list[Fact] = []
        self.readings: list[Reading] = []  # the probes' tables for the report, not facts
        # a free text as the text rules read it: its tool output (read by the tool's probe) blanked
        self.read_as: dict[str, str] = {}
        self.vocab = vocabulary()

    def insert(self, at: int, add: Callable[[], None]) -> None:
        """The facts that `add` adds go at position `at`; those after it are renumbered."""
        after = self.facts[at:]
        del self.facts[at:]
        add()
        for fact in after:
            self.facts.append(dataclasses.replace(fact, id=f"f{len(self.facts) + 1}"))

    def add(self, type_name: str, fields: dict[str, Any], source: Source) -> Fact | None:
        finite = self._finite(type_name, fields, source)
        if finite is None:
            return None
        fact = Fact(f"f{len(self.facts) + 1}", type_name, self.vocab.complete(type_name, finite), source)
        self.facts.append(fact)
        return fact

    def _finite(self, type_name: str, fields: dict[str, Any], source: Source) -> dict[str, Any] | None:
        """A `nan` / `inf` read from a table (or a difference of huge values that overflows)
        is no number a rule can compare: the field is left empty and a note names the file,
        the row and the field. A fact that cannot be without the field (a required one) is
        left out, and the note says so; None then."""
        spec = self.vocab.types[type_name].fields
        bad = [k for k, v in fields.items() if k in spec and spec[k].type == "number"
               and isinstance(v, float) and not math.isfinite(v)]
        if not bad:
            return fields
        where = source.describe()
        left_out = any(spec[k].required for k in bad)
        for key in bad:
            self.add("intake_note", {"key": where, "text": f"{where}：{key} 是 {fields[key]}，不作为数值使用"
                                                           + (f"（{type_name} 不计入）" if left_out else "")},
                     source)
        return None if left_out else {k: (None if k in bad else v) for k, v in fields.items()}

    def extend_case(self, case: Case) -> None:
        for fact in case_facts(case, start=len(self.facts) + 1):
            self.facts.append(fact)

    def add_version(self, given: str, version: str, source: Source, where: str) -> None:
        """A version read from a file or the machine: the case's own statement wins; a
        different value becomes a note naming both (`where` says who reported it)."""
        package = resolve_package(given, version) or "other"
        stated = next((f for f in self.facts if f.type == "version" and f["package"] == package
                       and package != "other"), None)
        if stated is None:
            self.add("version", {"package": package, "given": given, "version": version,
                                 "number": version_number(version)}, source)
        elif stated["version"] != version:
            self.add("intake_note", {"key": stated.source.key if stated.source else "", "text":
                     f"{where}的 {given} 是 {version}，而{_stated_by(stated)}写的是 {stated['version']}："
                     f"以{_stated_by(stated)}为准"}, source)

    def add_platform(self, given: str, source: Source, where: str, note: bool = True) -> None:
        """A platform / march read from a file or the machine: fills a case without one;
        a different one becomes a note naming both (unless `note` is off: an artifact's
        march that differs is a rule's business, a march mismatch)."""
        family = normalize_platform(given)
        if family is None:
            return  # a board or march name we do not know is no evidence about the platform
        stated = next((f for f in self.facts if f.type == "platform"), None)
        if stated is None:
            enum = self.vocab.enums["platform"]
            self.add("platform", {"family": family, "series": enum.attr(family, "series"),
                                  "march": enum.attr(family, "march"), "given": given}, source)
        elif stated["family"] == "J6" and self.vocab.enums["platform"].attr(family, "series") == "J6":
            enum = self.vocab.enums["platform"]  # the file names the J6 variant the case left open
            self.add("platform", {"family": family, "series": "J6", "march": enum.attr(family, "march"),
                                  "given": given}, source)
        elif note and stated["family"] != family and stated["family"] != "other":
            self.add("intake_note", {"key": "platform", "text":
                     f"{where}的 {given} 与{_stated_by(stated)}的平台 {stated['given']} 不一致："
                     f"以{_stated_by(stated)}为准"}, source)


def _stated_by(fact: Fact) -> str:
    """Who stated a fact, in words: the case file, or the file that reported it."""
    if fact.source is None or fact.source.kind == "case":
        return "案例"
    if fact.source.kind == "environment":
        return "本机环境"
    return fact.source.file or "产物文件"


def _file_source(found: FoundFile, line: int | None = None, key: str | None = None) -> Source:
    return Source("file", file=found.display, line=line, key=key, sha256=found.sha256)


def _problem(facts: FactList, display: str, message: str, sha256: str | None = None,
             listed: Source | None = None) -> None:
    """A file that could not be used; `listed`: the case entry that named it (its line is
    where the user fixes it)."""
    if listed is not None:
        message += f"（案例 {listed.describe()} 列出）"
    facts.add("probe_problem", {"path": display, "message": message},
              listed or Source("file", file=display, sha256=sha256))


def _add_metric_drops(facts: FactList, tolerance: Tolerance) -> None:
    """Each abnormal case result against the nearest upstream normal result of the same
    metric: a drop within the tolerance may be the expected non-bit-exact difference."""
    results = [f for f in facts.facts if f.type == "result" and f.source is not None and f.source.kind == "case"
               and f["value"] is not None and f["metric"] and f["pos"] >= 0]
    for bad in (f for f in results if f["status"] == "abnormal"):
        upstream = [f for f in results if f["status"] == "normal" and f["pos"] < bad["pos"]
                    and f["metric"].strip().lower() == bad["metric"].strip().lower()]
        if not upstream:
            continue
        base = max(upstream, key=lambda f: f["pos"])
        drop, threshold = tolerance.drop(base["value"], bad["value"])
        facts.add("metric_drop", {
            "artifact": bad["artifact"], "baseline_artifact": base["artifact"], "metric": bad["metric"],
            "value": bad["value"], "baseline": base["value"], "drop": drop, "threshold": threshold,
            "within": drop <= threshold, "tolerance": tolerance.describe(),
        }, bad.source)


PASTED_INTO = ("symptom", "deployment_notes")  # the texts users paste tool output into


def _add_pasted_output(facts: FactList) -> None:
    """Tool output pasted into the symptom or the deployment notes, read as the tool's file
    would be (probes/pasted_output.py); the text rules read the words around it (a log's
    lines are the tool's, not the user's statements), and a pasted Python traceback as the
    user's call and the exception it raised, the frames between them blanked
    (probes/python_traceback.py)."""
    # (tool output is lines: a text of one or two lines is not searched, nor the readers imported)
    texts = [(_key_of(f), f["text"], f.source) for f in facts.facts
             if f.type in PASTED_INTO and isinstance(f.fields.get("text"), str) and f["text"].count("\n") >= 2]
    if not texts:
        return
    from j6doctor.probes.code_blocks import prose
    from j6doctor.probes.pasted_output import add_pasted_output
    from j6doctor.probes.python_traceback import frames_blanked

    def problem(display: str, message: str, source: Source) -> None:
        facts.add("intake_note", {"key": display, "text": f"{display}：{message}——粘贴的内容未读取"}, source)

    taken = add_pasted_output(texts, ProbeOutput(facts, MAX_SIGNALS_PER_KIND, facts.readings), problem)
    for _, text, _ in texts:
        read = frames_blanked(prose(text, taken[text]) if text in taken else text)
        if read != text:
            facts.read_as[text] = read


def _key_of(fact: Fact) -> str:
    """The case key a fact's text was written under (its type where the source names none)."""
    return fact.source.key if fact.source is not None and fact.source.key else fact.type


def _add_said_scores(facts: FactList, tolerance: Tolerance) -> None:
    """The scores a free text of the case gives its models (probes/said_scores.py), each other
    score measured with the case's tolerance against its reference (_references), where both
    are written the same way (a percentage or a fraction)."""
    from j6doctor.probes.said_scores import chain_place as position, lower_is_better, scores

    prose = facts.vocab.text.context.prose

    for fact in list(facts.facts):
        for field_name in (f.split(".", 1)[1] for f in prose if f.split(".", 1)[0] == fact.type):
            text = fact.fields.get(field_name)
            if not isinstance(text, str) or not text.strip():
                continue
            found = scores(text)
            if len(found) < 2:
                continue
            key = _key_of(fact)
            # (scores told in an error rise as they get worse: "EPE：qat.pt 1.82，qat.bc 2.61")
            told_in = tolerance._replace(higher_is_better=False) if lower_is_better(text) else tolerance
            root, pairs = _references(found, position)
            facts.add("score_reference", {"mention": root.mention, "value": root.value, "quote": root.quote,
                                          "field": key}, fact.source)
            drops = [_score_drop(score, reference, root, told_in, key) for score, reference in pairs
                     if score.percent == reference.percent]
            # (each drop beside the largest of the text: a small loss next to a far larger one is the
            # ordinary loss of a step, the rules say how much smaller)
            largest = max((d["times"] for d in drops if d["times"] is not None), default=None)
            for fields in drops:
                facts.add("score_drop", {**fields, "times_max": largest, "share": _share(fields["times"], largest),
                                         "root_share": _share(fields["root_times"], largest)}, fact.source)


def _share(times: float | None, largest: float | None) -> float | None:
    """A drop as a share of the text's largest one (both in tolerances; none where nothing fell)."""
    return round(times / largest, 3) if times is not None and largest is not None and largest > 0 else None


def _score_drop(score, reference, root, tolerance: Tolerance, key: str) -> dict[str, Any]:
    """The fields of one score_drop: the score against its reference, and against the text's
    reference (a loss further up is carried down the chain)."""
    drop, threshold = tolerance.drop(reference.value, score.value)
    root_drop, root_threshold = tolerance.drop(root.value, score.value)
    return {"mention": score.mention, "reference": reference.mention, "value": score.value,
            "reference_value": reference.value, "drop": drop, "threshold": threshold,
            "within": drop <= threshold, "times": round(drop / threshold, 3) if threshold > 0 else None,
            "root_times": round(root_drop / root_threshold, 3)
            if root_threshold > 0 and score.percent == root.percent else None,
            "quote": score.quote, "field": key}


def _references(found: list, position) -> tuple[Any, list[tuple[Any, Any]]]:
    """The text's reference score and, for each other score, the one it is measured against.
    The reference is the score of a model before the chain (the float model: chain -1)
    wherever it is written; else the first score where its name has no place on the chain
    ("onnx" depends on the flow), else the most upstream one. Each other model is measured against the
    nearest model upstream of it on the chain given a score ("浮点 0.452，qat.bc 0.449，
    quantized.bc 0.447，hbm 0.30": the hbm against quantized.bc), else against the reference (a
    name whose artifact depends on the flow, "onnx", has no place on the chain)."""
    placed = [score for score in found if position(score.mention) is not None]
    root = next((score for score in placed if position(score.mention) < 0), None)
    if root is None:
        root = found[0] if position(found[0].mention) is None else min(placed, key=lambda score: position(score.mention))
    pairs = []
    for score in found:
        if score is root:
            continue
        at = position(score.mention)
        upstream = [other for other in placed if at is not None and position(other.mention) < at]
        pairs.append((score, max(upstream, key=lambda other: position(other.mention)) if upstream else root))
    return root, pairs


def _metrics_settings(case: Case | None, options: EvidenceOptions) -> tuple[Path | None, Tolerance, str]:
    """The metrics file, the tolerance and who named the file: command line first, then the
    case's `metrics` key ("" when none did: a file found in a work folder)."""
    spec = (case.data.get("metrics") if case else None) or {}
    key: tuple[str, ...] = ("metrics",)
    if isinstance(spec, str):
        spec = {"file": spec}
    else:
        key = ("metrics", "file")
    tolerance = options.tolerance or case_tolerance(spec)
    if options.metrics is not None:
        return options.metrics, tolerance, "--metrics"
    if spec.get("file") and case is not None:
        return case.folder / spec["file"], tolerance, case.source(*key).describe()
    return None, tolerance, ""


def _metrics_problem(facts: FactList, error: InputError, named: str, sha256: str | None = None) -> None:
    """A metrics file that cannot be read: the run's input error (exit 2) when the user named
    it (`named`: --metrics, or the case entry), else a warning like any unusable file."""
    if named:
        raise InputError(error.file, f"{error.message}（评测结果文件由 {named} 指定）", error.line, error.more)
    _problem(facts, error.file, error.render(), sha256)


def _add_metrics(facts: FactList, path: Path, display: str, tolerance: Tolerance, digests: Digests,
                 named: str = "") -> None:
    from j6doctor.probes.metrics_file import judge, read_metrics

    try:
        rows = read_metrics(path, display)
    except InputError as exc:
        _metrics_problem(facts, exc, named, _sha256(digests, path))
        return
    sha256 = _sha256(digests, path)
    judgements, notes = judge(rows, tolerance)
    chain = vocabulary().enums["artifact"]
    for j in judgements:
        source = Source("file", file=display, line=j.row.line or None, key=f"{j.artifact}.{j.row.metric}", sha256=sha256)
        facts.add("result", {
            "artifact": j.artifact, "status": j.status, "evidence": j.evidence,
            "metric": j.row.metric, "value": j.row.value, "pos": chain.attr(j.artifact, "chain", -1),
        }, source)
        facts.add("metric_judgement", {
            "path": display, "artifact": j.artifact, "metric": j.row.metric, "value": j.row.value,
            "baseline": j.baseline, "drop": j.drop, "threshold": j.threshold, "status": j.status,
            "tolerance": tolerance.describe(),
        }, source)
    for note in notes:
        _problem(facts, display, note, sha256)


def _add_environment(facts: FactList, base: Path | None, options: EvidenceOptions) -> None:
    """The machine j6doctor runs on fills only what the case leaves out; where it disagrees
    with the case, the case wins and the report says so (a support engineer's machine is
    not the reporter's)."""
    from j6doctor.probes.environment import BOARD_FILE, board_from_environment, installed_versions, read_board_file

    for installed in installed_versions():
        facts.add_version(installed.package, installed.version,
                          Source("environment", key=f"importlib.metadata:{installed.package}"), "本机环境安装")
    settings = board_from_environment(options.environ)
    if base is not None and (base / BOARD_FILE).is_file():
        try:
            settings = read_board_file(base / BOARD_FILE, BOARD_FILE.as_posix()) + settings
        except InputError as exc:
            _problem(facts, BOARD_FILE.as_posix(), exc.render())
    for setting in settings:
        if normalize_platform(setting.value) is None:
            continue  # a board name we do not know is no evidence about the platform
        source = (Source("environment", key=setting.origin) if setting.origin.startswith("env:")
                  else Source("environment", file=setting.origin, line=setting.line))
        facts.add_platform(setting.value, source, f"本机环境的板子类型（{setting.origin}）")
        break  # the first setting wins; the others repeat it


def _sha256(digests: Digests, path: Path) -> str | None:
    try:
        return digests.of(path)
    except OSError:
        return None


@dataclass
class Evidence:
    """The facts collected for one diagnosis, the probes' readings for the report and the files read."""

    facts: list[Fact]
    readings: list[Reading]
    read_paths: list[Path] = field(default_factory=list)  # every file read: never an output
    read_as: dict[str, str] = field(default_factory=dict)  # FactList.read_as


def collect(case: Case | None, options: EvidenceOptions) -> Evidence:
    facts = FactList()
    metrics_path, tolerance, metrics_named = _metrics_settings(case, options)
    if case is not None:
        facts.extend_case(case)
        _add_metric_drops(facts, tolerance)
        _add_said_scores(facts, tolerance)
        _add_pasted_output(facts)
    for type_name, fields, source in options.given_facts:
        facts.add(type_name, fields, source)
    base = case.folder if case is not None else (options.workdirs[0] if options.workdirs else None)
    paths, display_of, listed = _listed_paths(case, facts)
    paths.extend(options.workdirs)
    found = _scan(facts, paths, base, display_of, listed, options) if paths else []
    at = len(facts.facts)  # the artifact_file facts, once the files are read and hashed
    if metrics_path is None:
        metrics_path = next((f.path for f in found if f.kind == "metrics"), None)
    unread: dict[str, str] = {}
    if found or metrics_path is not None:  # else nothing to read: the readers are not imported
        unread = _read_files(facts, found, metrics_path, tolerance, base, options, metrics_named)
    facts.insert(at, lambda: _add_artifact_files(facts, found, unread))
    if options.use_environment:
        _add_environment(facts, base, options)
    read = [f.path for f in found] + ([metrics_path] if metrics_path is not None else [])
    if options.use_environment and base is not None:
        from j6doctor.probes.environment import BOARD_FILE

        read.append(base / BOARD_FILE)
    return Evidence(facts.facts, facts.readings, read + [p for p in paths if _is_file(p)], facts.read_as)


def _is_file(path: Path) -> bool:
    """Path.is_file, with a path the file system refuses (a name too long) as no file: the
    scan names such a path as a problem of its own."""
    try:
        return path.is_file()
    except OSError:
        return False


def _listed_paths(case: Case | None, facts: FactList) -> tuple[list[Path], dict[Path, str], dict[str, Source]]:
    """The paths the case lists under artifacts, scripts and badcase.path, how each is shown,
    and the case entry of each (artifacts.0, scripts.1, badcase.path); a listed script that is
    no Python file is a problem."""
    paths: list[Path] = []
    display_of: dict[Path, str] = {}
    listed: dict[str, Source] = {}
    if case is None:
        return paths, display_of, listed
    entries = [(raw, (key, index)) for key in ("artifacts", "scripts")
               for index, raw in enumerate(case.data.get(key) or [])]
    badcase = case.data.get("badcase")
    if isinstance(badcase, dict) and badcase.get("path"):  # read like a listed artifact (badcase.pt / .txt)
        entries.append((badcase["path"], ("badcase", "path")))
    for raw, key in entries:
        paths.append(case.folder / raw)
        display_of[case.folder / raw] = raw
        listed.setdefault(raw, case.source(*key))
    for raw in case.data.get("scripts") or []:
        if _is_file(case.folder / raw) and not raw.lower().endswith(".py"):
            _problem(facts, raw, "scripts lists Python files (.py); this one was not checked")
    return paths, display_of, listed


def _scan(facts: FactList, paths: list[Path], base: Path | None, display_of: dict[Path, str],
          listed: dict[str, Source], options: EvidenceOptions) -> list[FoundFile]:
    """The files found under the paths, with a fact for each problem, note and folder summary."""
    from j6doctor.probes.artifacts import find_artifacts, looked_for

    scan = (lambda shown: options.progress(f"扫描 {shown}")) if options.progress else None
    notes: list[tuple[str, str]] = []
    found, problems, summaries = find_artifacts(paths, base or Path.cwd(), display_of, scan, notes, hash_now=False)
    for display, message in problems:
        _problem(facts, display, message, listed=listed.get(display))
    for display, message in notes:
        facts.add("intake_note", {"key": display, "text": f"{display} {message}"}, Source("file", file=display))
    for summary in summaries:
        facts.add("scan_summary", {
            "path": summary.display, "files": summary.files, "recognised": summary.recognised,
            "unrecognised": "、".join(summary.unrecognised) or "无", "looked_for": "、".join(looked_for()),
        }, Source("file", file=summary.display))
    return found


def _read_files(facts: FactList, found: list[FoundFile], metrics_path: Path | None, tolerance: Tolerance,
                base: Path | None, options: EvidenceOptions, metrics_named: str = "") -> dict[str, str]:
    """The artifacts found and the metrics file, each hashed from the bytes its reader read;
    returns the found files left unread on purpose, with why."""
    from j6doctor.probes import registry
    from j6doctor.probes.artifacts import hashing_reads

    def problem(item: FoundFile, error: InputError) -> None:
        _problem(facts, item.display, (f"第 {error.line} 行：" if error.line else "") + error.message, item.sha256)

    with hashing_reads(found) as digests:
        out = ProbeOutput(facts, MAX_SIGNALS_PER_KIND, facts.readings)
        registry.add_facts(found, out, problem, options.progress)
        if metrics_path is not None:
            display = _display(metrics_path, base)
            try:
                exists = metrics_path.is_file()
            except OSError as exc:  # e.g. a name too long for the file system
                _metrics_problem(facts, InputError(display, f"cannot read: {exc.strerror}"), metrics_named)
                exists = None
            if exists:
                _add_metrics(facts, metrics_path, display, tolerance, digests, metrics_named)
            elif exists is False:
                _metrics_problem(facts, InputError(display, _not_a_metrics_file(metrics_path)), metrics_named)
    return out.unread


def _add_artifact_files(facts: FactList, found: list[FoundFile], unread: dict[str, str]) -> None:
    for item in found:
        if item.kind == "metrics":
            continue  # an evaluation results file is read as the metrics file
        try:
            sha256 = item.sha256  # hashed when read, else now
        except OSError as exc:
            _problem(facts, item.display, f"cannot read: {exc.strerror}")
            continue
        facts.add("artifact_file", {"kind": item.kind, "path": item.display, "size": item.size,
                                    "sha256": sha256, "by": item.by, "hashed": item.hashed,
                                    "unread": unread.get(item.display, "")}, _file_source(item))


def _not_a_metrics_file(path: Path) -> str:
    """Why a metrics path that is no regular file cannot be read: missing is not the same
    as a folder, a pipe or a device."""
    try:
        if path.is_dir():
            return "is a folder; expected a metrics file (CSV / YAML / JSON)"
        if path.exists():
            return "not a regular file (a pipe or a device); expected a metrics file (CSV / YAML / JSON)"
        if path.is_symlink():
            return "symlink loop or symlink to a file that does not exist"
    except OSError as exc:
        return f"cannot read: {exc.strerror}"
    return "no such metrics file"


def _display(path: Path, base: Path | None) -> str:
    if base is not None:
        try:
            # realpath: a symlink loop is shown as given (Path.resolve raises on one before 3.13)
            return Path(os.path.realpath(path)).relative_to(os.path.realpath(base)).as_posix()
        except ValueError:
            pass
    return path.as_posix()
