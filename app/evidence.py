"""Gather the evidence of one diagnosis: the case file, the artifact files, an evaluation
results file and the environment, each through its probe, into numbered input facts.

A file that cannot be read becomes a `probe_problem` fact and the diagnosis goes on with
the rest; nothing here decides anything about stages.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from .engine import Fact, Source
from .facts import vocabulary
from .probes import InputError
from .probes.artifacts import FoundFile, find_artifacts, looked_for, sha256_of
from .probes.case_file import Case, case_facts, normalize_platform, resolve_package, version_number
from .probes.environment import BOARD_FILE, board_from_environment, installed_versions, read_board_file
from .probes.metrics_file import Tolerance, judge, read_metrics

MAX_SIGNALS_PER_KIND = 10  # facts stay few: probes summarise (shared/engine/DURABLE_RULES.md)


@dataclass
class EvidenceOptions:
    workdirs: list[Path] = field(default_factory=list)
    metrics: Path | None = None
    tolerance: Tolerance | None = None
    use_environment: bool = True
    environ: dict[str, str] | None = None
    progress: Callable[[str], None] | None = None


class FactList:
    """Numbers input facts f1, f2, ... in the order the probes produce them."""

    def __init__(self) -> None:
        self.facts: list[Fact] = []
        self.charts: list[dict[str, Any]] = []  # per-layer series for the HTML report, not facts
        self.vocab = vocabulary()

    def add(self, type_name: str, fields: dict[str, Any], source: Source) -> Fact:
        fact = Fact(f"f{len(self.facts) + 1}", type_name, self.vocab.complete(type_name, fields), source)
        self.facts.append(fact)
        return fact

    def extend_case(self, case: Case) -> None:
        for fact in case_facts(case, start=len(self.facts) + 1):
            self.facts.append(fact)


def _file_source(found: FoundFile, line: int | None = None, key: str | None = None) -> Source:
    return Source("file", file=found.display, line=line, key=key, sha256=found.sha256)


def _problem(facts: FactList, display: str, message: str, sha256: str | None = None) -> None:
    facts.add("probe_problem", {"path": display, "message": message},
              Source("file", file=display, sha256=sha256))


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


def _metrics_settings(case: Case | None, options: EvidenceOptions) -> tuple[Path | None, Tolerance]:
    """The metrics file and tolerance: command line first, then the case's `metrics` key."""
    spec = (case.data.get("metrics") if case else None) or {}
    if isinstance(spec, str):
        spec = {"file": spec}
    tolerance = options.tolerance or Tolerance(
        value=float(spec.get("tolerance", 0.01)),
        relative=bool(spec.get("relative", True)),
        higher_is_better=bool(spec.get("higher_is_better", True)),
    )
    if options.metrics is not None:
        return options.metrics, tolerance
    if spec.get("file") and case is not None:
        return case.folder / spec["file"], tolerance
    return None, tolerance


def _add_metrics(facts: FactList, path: Path, display: str, tolerance: Tolerance, sha256: str | None) -> None:
    try:
        rows = read_metrics(path, display)
    except InputError as exc:
        _problem(facts, display, exc.render(), sha256)
        return
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
    stated = {f["package"]: f for f in facts.facts if f.type == "version" and f["package"] != "other"}
    for installed in installed_versions():
        package = resolve_package(installed.package, installed.version) or "other"
        source = Source("environment", key=f"importlib.metadata:{installed.package}")
        case_fact = stated.get(package)
        if case_fact is None:
            facts.add("version", {"package": package, "given": installed.package, "version": installed.version,
                                  "number": version_number(installed.version)}, source)
        elif case_fact["version"] != installed.version:
            facts.add("intake_note", {"key": case_fact.source.key if case_fact.source else "", "text":
                      f"本机环境安装的 {installed.package} 是 {installed.version}，而案例写的是 {case_fact['version']}："
                      "以案例为准（本机环境不代表报告者的环境）"}, source)
    settings = board_from_environment(options.environ)
    if base is not None and (base / BOARD_FILE).is_file():
        try:
            settings = read_board_file(base / BOARD_FILE, BOARD_FILE.as_posix()) + settings
        except InputError as exc:
            _problem(facts, BOARD_FILE.as_posix(), exc.render())
    case_platform = next((f for f in facts.facts if f.type == "platform"), None)
    for setting in settings:
        family = normalize_platform(setting.value)
        if family is None:
            continue  # a board name we do not know is no evidence about the platform
        source = (Source("environment", key=setting.origin) if setting.origin.startswith("env:")
                  else Source("environment", file=setting.origin, line=setting.line))
        if case_platform is None:
            enum = vocabulary().enums["platform"]
            facts.add("platform", {"family": family, "series": enum.attr(family, "series"),
                                   "march": enum.attr(family, "march"), "given": setting.value}, source)
        elif case_platform["family"] != family:
            facts.add("intake_note", {"key": "platform", "text":
                      f"本机环境的板子类型 {setting.value}（{setting.origin}）与案例写的平台 {case_platform['given']} "
                      "不一致：以案例为准（本机环境不代表报告者的环境）"}, source)
        break  # the first setting wins; the others repeat it


@dataclass
class Evidence:
    facts: list[Fact]
    charts: list[dict[str, Any]]


def collect(case: Case | None, options: EvidenceOptions) -> Evidence:
    from .artifact_readers import read_artifacts

    facts = FactList()
    if case is not None:
        facts.extend_case(case)
        _add_metric_drops(facts, _metrics_settings(case, options)[1])
    base = case.folder if case is not None else (options.workdirs[0] if options.workdirs else None)
    paths: list[Path] = []
    display_of: dict[Path, str] = {}
    if case is not None:
        for raw in (case.data.get("artifacts") or []) + (case.data.get("scripts") or []):
            paths.append(case.folder / raw)
            display_of[case.folder / raw] = raw
        for raw in case.data.get("scripts") or []:
            target = case.folder / raw
            if target.is_file() and not raw.lower().endswith(".py"):
                _problem(facts, raw, "scripts lists Python files (.py); this one was not checked")
    paths.extend(options.workdirs)
    found: list[FoundFile] = []
    if paths:
        scan = (lambda shown: options.progress(f"扫描 {shown}")) if options.progress else None
        found, problems, summaries = find_artifacts(paths, base or Path.cwd(), display_of, scan)
        for display, message in problems:
            _problem(facts, display, message)
        for summary in summaries:
            facts.add("scan_summary", {
                "path": summary.display, "files": summary.files, "recognised": summary.recognised,
                "unrecognised": "、".join(summary.unrecognised) or "无", "looked_for": "、".join(looked_for()),
            }, Source("file", file=summary.display))
    for item in found:
        if item.kind == "metrics":
            continue  # an evaluation results file is read below, as the metrics file
        facts.add("artifact_file", {"kind": item.kind, "path": item.display, "size": item.size,
                                    "sha256": item.sha256, "by": item.by}, _file_source(item))
    read_artifacts(found, facts, _problem, MAX_SIGNALS_PER_KIND, options.progress)

    metrics_path, tolerance = _metrics_settings(case, options)
    if metrics_path is None:
        metrics_path = next((f.path for f in found if f.kind == "metrics"), None)
    if metrics_path is not None:
        display = _display(metrics_path, base)
        try:
            exists = metrics_path.is_file()
        except OSError as exc:  # e.g. a name too long for the file system
            _problem(facts, display, f"cannot read: {exc.strerror}")
            exists = None
        if exists:
            _add_metrics(facts, metrics_path, display, tolerance, sha256_of(metrics_path))
        elif exists is False:
            _problem(facts, display, "no such metrics file")
    if options.use_environment:
        _add_environment(facts, base, options)
    return Evidence(facts.facts, facts.charts)


def _display(path: Path, base: Path | None) -> str:
    if base is not None:
        try:
            return path.resolve().relative_to(base.resolve()).as_posix()
        except ValueError:
            pass
    return path.as_posix()
