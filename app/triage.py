"""`j6doctor triage PATH...`: diagnose many cases and work folders in one run.

What a PATH is:

- a file is a case file (`.yaml` / `.yml` / `.json`), diagnosed as `diagnose FILE` does
  (the artifacts it lists are read relative to its folder); any other file, or a path
  that does not exist, is an input error row;
- a folder is expanded, recursively and in sorted order:
  - every case file in it is a case. A `.yaml` / `.json` file is no case when it is
    recognised as an artifact (metrics file, compile / bc_editor config, quant_info) or its
    top-level keys are mostly foreign to a case (a hb_mapper conversion yaml, a CI file):
    those are skipped, and listed as skipped (`classify`). A Markdown file (a README, a
    post) is listed as skipped too: a post is a case when given by name;
  - a folder holding a case file is that case's ticket folder: it and its subfolders are
    read through the case (its `artifacts:`), never diagnosed again as a work folder;
  - a folder with no case file anywhere in it is one work-folder diagnosis (like
    `diagnose --workdir DIR`): the PATH itself when it holds no case file at all, else
    each largest subfolder that holds recognised artifacts and no case file;
  - the expansion is bounded (files looked at, depth, items); a bound that is hit is a
    warning and exit code 2 — the rest was not diagnosed;
- an item named twice (a file, and the folder holding it) is diagnosed once.

Rows come out in input order (PATH order, then sorted path order inside a folder) whatever
order the pool finishes them in. An item that cannot be read is a row with the message
`diagnose` prints for it, and the run goes on. Exit code: 0 every item was diagnosed, 2
some item had an input error (or a bound was hit, or the run itself was refused: an
invalid rule pack, a missing engine, an unusable --out), 1 an internal error in an item.
Nothing in the output depends on the number of processes, the time or the machine (unless
--env is asked for): paths are shown as given.

The pool (app/process_pool.py): `jobs` processes (default: every core this process may
use), forked where the platform can fork (the rule base, modules and templates loaded once,
before the fork), spawned elsewhere (each process then loads them once). Each pool process
runs the rule engine in its own engine worker process (engine/worker.py: the wall-clock and
memory wall of `diagnose` holds for every case). Items go out in chunks, each with the run's
Settings; per-case reports are rendered and written by the pool process that diagnosed the
case, the summary files by the parent. Interrupted (Ctrl-C, SIGTERM), the run stops at once
and every process it started is ended and reaped.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
import stat
import sys
import unicodedata
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, TextIO
from urllib.parse import quote

from j6doctor.exit_codes import EXIT_FAIL_ON, EXIT_INPUT, EXIT_INTERNAL, EXIT_OK
from j6doctor.progress import Progress
from j6doctor.terminal_text import terminal_columns

if TYPE_CHECKING:
    from j6doctor.verdict_model import Verdict

CASE_SUFFIXES = (".yaml", ".yml", ".json")
FORMATS = ("md", "html", "json")  # per-case report formats written under --out
DEFAULT_FORMATS = ("html",)  # the page index.html links; json / md on request (formats=)
EXTENSIONS = {"md": "md", "html": "html", "json": "json"}
SUMMARY_FILES = ("summary.csv", "summary.json", "index.html")
TOOL = "j6doctor triage"

# Expansion bounds: a folder of tickets is large; a home directory or a disk is not a
# folder of tickets.
MAX_ITEMS = 10_000
MAX_EXPAND_FILES = 200_000  # files looked at while expanding all the PATHs together
MAX_EXPAND_DEPTH = 12
MAX_SKIPPED_LISTED = 200  # skipped files named in summary.json (the count is always exact)
MAX_ERRORS_SHOWN = 20  # error messages repeated on stderr (every row shows its own)
HEAD_BYTES = 4096
MAX_SNIFF_JSON = 1024 * 1024  # a JSON file up to this size is parsed to read its top-level keys

STATUS_LABELS = {"ok": "已诊断", "input_error": "输入错误", "internal_error": "内部错误"}
KIND_LABELS = {"case": "案例", "workdir": "工作目录"}


# ---------------------------------------------------------------------------------------
# Expansion of the PATHs


@dataclass(frozen=True)
class Item:
    kind: str  # "case" | "workdir"
    path: Path  # as given, joined with the relative path found under it
    display: str  # the same, with '/' separators: what the rows show
    error: str | None = None  # an input error known before diagnosis (a missing path)
    name: str = ""  # what its report files are named after: the path below the PATH given


@dataclass
class Expansion:
    items: list[Item] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path, why), bounded
    skipped_count: int = 0
    warnings: list[str] = field(default_factory=list)
    bound_hit: bool = False
    files_seen: int = 0
    max_files: int = MAX_EXPAND_FILES


_YAML_KEY = re.compile(r"""^(?:"([^"\n]*)"|'([^'\n]*)'|([^\s#'"?:{}\[\]\-|>!&*%@`,][^:#\n]*?))[ \t]*:(?:[ \t]|$)""",
                       re.MULTILINE)
_JSON_KEY = re.compile(r'"((?:[^"\\\n]|\\.)*)"\s*:')


def _case_keys() -> frozenset[str]:
    from j6doctor.probes.case_file import case_schema

    return frozenset(k.lower() for k in case_schema()["properties"])


def _top_level_keys(path: Path, head: bytes, size: int) -> list[str] | None:
    """The top-level keys a YAML / JSON file shows (None: cannot tell, e.g. empty or broken)."""
    text = head.decode("utf-8", errors="replace").removeprefix("\ufeff")
    if path.suffix.lower() == ".json":
        if size <= MAX_SNIFF_JSON:
            try:
                data = json.loads(path.read_bytes())
            except (OSError, ValueError):
                data = None
            else:
                return [str(k) for k in data] if isinstance(data, dict) else None
        keys = [m.group(1) for m in _JSON_KEY.finditer(text)]
        return keys or None
    keys = [next(g for g in m.groups() if g is not None) for m in _YAML_KEY.finditer(text)]
    return keys or None


def _head(path: Path) -> bytes | None:
    """The first bytes of a regular file (a pipe or a device is never opened: it could
    block), or None."""
    try:
        if not stat.S_ISREG(path.stat().st_mode):
            return None
        with path.open("rb") as handle:
            return handle.read(HEAD_BYTES)
    except OSError:
        return None


# A verdict this tool wrote (`diagnose --format json`, an example's expected report) starts
# with its schema version and the tool's name; it names case keys but is no case.
_OUR_VERDICT = re.compile(rb'\A\s*\{\s*"schema_version"\s*:\s*"[^"]*"\s*,\s*"tool"\s*:\s*\{\s*"name"\s*:\s*"j6doctor"')


def classify(path: Path) -> tuple[str, str]:
    """What a `.yaml` / `.yml` / `.json` file met in a folder is: ("case", ""), or
    ("artifact", kind) or ("other", why) — the last two are not diagnosed as cases.

    A case is a file whose top-level keys are mostly case keys (a typo among them still
    makes it a case, whose row then names the typo), or whose keys cannot be seen (empty,
    broken: its row says what is wrong). A file recognised as an artifact (metrics file,
    compile / bc_editor config, quant_info) and a file of mostly other keys (a hb_mapper
    conversion yaml: model_parameters, input_parameters, calibration_parameters,
    compiler_parameters; a CI file) are not cases."""
    from j6doctor.probes.artifacts import identify

    head = _head(path)
    if head is None:
        return "case", ""  # not a regular file, unreadable: its row says what is wrong with it
    if _OUR_VERDICT.search(head):
        return "other", "j6doctor 的 JSON 诊断结果（如 examples/cases 中的 *.expected.json），不是案例"
    keys = _top_level_keys(path, head, path.stat().st_size)
    known = _case_keys()
    ours = sum(1 for k in keys or () if k.strip().lower() in known)
    if keys is not None and ours and ours >= len(keys) - ours:
        return "case", ""
    kind, _ = identify(path.name, head)
    if kind is not None:
        return "artifact", kind
    if keys is not None:
        return "other", "没有案例字段（顶层键：" + "、".join(keys[:5]) + ("…" if len(keys) > 5 else "") + "）" \
            if not ours else "多数顶层键不是案例字段（" + "、".join(keys[:5]) + ("…" if len(keys) > 5 else "") + "）"
    return "case", ""


def _is_artifact(path: Path) -> bool:
    from j6doctor.probes.artifacts import identify

    if path.suffix.lower() in CASE_SUFFIXES:
        return classify(path)[0] == "artifact"
    head = _head(path)
    return head is not None and identify(path.name, head)[0] is not None


def _same_dir(a: os.stat_result, b: os.stat_result | None) -> bool:
    return b is not None and (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


Folder = tuple[str, ...]  # a folder's path below the PATH given, as parts


@dataclass
class _FolderScan:
    """What a walk of one PATH found (paths relative to it as parts)."""

    cases: list[Folder] = field(default_factory=list)  # case files, as the folder parts + the name
    case_dirs: set[Folder] = field(default_factory=set)  # folders holding a case file
    other_files: dict[Folder, list[Path]] = field(default_factory=dict)  # per folder: maybe artifacts
    folders: list[Folder] = field(default_factory=list)  # every folder walked, in walk order


def _expand_folder(root: Path, expansion: Expansion, exclude: os.stat_result | None) -> list[Item]:
    scan = _scan_folder(root, expansion, exclude)
    if not scan.case_dirs:
        return [Item("workdir", root, root.as_posix(), name=root.name or root.as_posix())]
    items = [(parts, Item("case", root / Path(*parts), (root / Path(*parts)).as_posix(), name="/".join(parts)))
             for parts in scan.cases]
    items += [(folder, item) for folder, item in _work_folders(root, scan, expansion)]
    items.sort(key=lambda pair: pair[0])
    return [item for _, item in items]


def _scan_folder(root: Path, expansion: Expansion, exclude: os.stat_result | None) -> _FolderScan:
    """Walk `root` (sorted, each folder once, the --out folder and _SKIP_DIRS left out),
    within the depth and file bounds (a bound hit is a warning on `expansion`)."""
    from j6doctor.probes.artifacts import _SKIP_DIRS

    scan = _FolderScan()
    seen: set[tuple[int, int]] = set()
    for current, dirs, files in os.walk(root, followlinks=True):
        here = Path(current)
        rel = here.relative_to(root).parts
        try:
            info = here.stat()
        except OSError:
            dirs[:] = []
            continue
        if (info.st_dev, info.st_ino) in seen or _same_dir(info, exclude):
            dirs[:] = []  # a symlink loop, or the --out folder: not expanded
            continue
        seen.add((info.st_dev, info.st_ino))
        scan.folders.append(rel)
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS)
        if len(rel) >= MAX_EXPAND_DEPTH and dirs:
            expansion.warnings.append(f"{(root / Path(*rel)).as_posix()}: folders deeper than {MAX_EXPAND_DEPTH} "
                                      "levels were not expanded; give them as PATHs of their own")
            expansion.bound_hit = True
            dirs[:] = []
        if not _scan_files(root, rel, sorted(files), scan, expansion):
            expansion.warnings.append(
                f"{root.as_posix()}: more than {expansion.max_files} files looked at; the rest was not expanded "
                "(give its subfolders as separate PATHs)")
            expansion.bound_hit = True
            break
    return scan


def _scan_files(root: Path, rel: Folder, names: list[str], scan: _FolderScan, expansion: Expansion) -> bool:
    """Sort the files of one folder into cases, skipped files and maybe-artifacts; False
    when the bound on files looked at is reached."""
    here = root / Path(*rel)
    for name in names:
        if expansion.files_seen >= expansion.max_files:
            return False
        expansion.files_seen += 1
        path = here / name
        if name.lower().endswith(CASE_SUFFIXES):
            what, why = classify(path)
        elif name.lower().endswith(MARKDOWN_SUFFIXES):
            what, why = "other", _markdown_why(path)
        else:
            what, why = "artifact", ""
        if what == "case":
            scan.cases.append(rel + (name,))
            scan.case_dirs.add(rel)
        elif what == "other":
            expansion.skipped_count += 1
            if len(expansion.skipped) < MAX_SKIPPED_LISTED:
                expansion.skipped.append(((root / Path(*rel, name)).as_posix(), why))
        else:
            scan.other_files.setdefault(rel, []).append(path)
    return True


MARKDOWN_SUFFIXES = (".md", ".markdown")
_OUR_REPORT = b"# j6doctor "  # the first line of a Markdown report this tool wrote


def _markdown_why(path: Path) -> str:
    """Why a Markdown file met in a folder is not diagnosed: a post saved as Markdown is a
    case only when given by name (a folder's README is no case)."""
    head = _head(path) or b""
    if head.lstrip(b"\xef\xbb\xbf").startswith(_OUR_REPORT):
        return "j6doctor 的 Markdown 诊断报告（如 examples/cases 中的 *.expected.md），不是案例"
    return "Markdown 文本（帖子或说明）：在文件夹里不作为案例；要诊断一篇帖子，按文件名给出它（j6doctor triage 帖子.md）"


def _work_folders(root: Path, scan: _FolderScan, expansion: Expansion) -> Iterable[tuple[Folder, Item]]:
    """Beside folders with case files: each largest folder holding recognised artifacts
    and no case file is a work-folder item; artifacts loose beside case folders are a
    warning (not diagnosed)."""
    above_cases = {d[:i] for d in scan.case_dirs for i in range(len(d) + 1)}
    for folder in scan.folders:
        if any(folder[:i] in scan.case_dirs for i in range(len(folder) + 1)):
            continue  # a ticket folder (or below one): read through its case
        if folder in above_cases:
            loose = [p for p in scan.other_files.get(folder, []) if _is_artifact(p)]
            if loose:
                expansion.warnings.append(
                    f"{(root / Path(*folder)).as_posix()}: {len(loose)} artifact file(s) beside folders with case "
                    f"files were not diagnosed (e.g. {loose[0].name}); list them under a case's `artifacts:` or "
                    "move them into a folder of their own")
        elif folder and folder[:-1] in above_cases and _holds_artifacts(scan, folder):
            path = root / Path(*folder)
            yield folder, Item("workdir", path, path.as_posix(), name="/".join(folder))


def _holds_artifacts(scan: _FolderScan, folder: Folder) -> bool:
    return any(_is_artifact(p) for d, files in scan.other_files.items() if d[:len(folder)] == folder
               for p in files)


def expand(paths: Iterable[Path], exclude: Path | None = None, max_files: int = MAX_EXPAND_FILES,
           max_items: int = MAX_ITEMS) -> Expansion:
    """The items to diagnose, in order (see the module docstring); `exclude` (the --out
    folder) is never expanded. At most `max_files` files are looked at and `max_items`
    items kept; a bound that is hit is a warning and sets `bound_hit`."""
    expansion = Expansion(max_files=max_files)
    try:
        excluded = exclude.stat() if exclude is not None else None
    except OSError:
        excluded = None
    seen: set[tuple[str, str]] = set()
    for given in paths:
        given = Path(given)
        shown = given.as_posix()
        try:
            is_dir = given.is_dir()
            exists = is_dir or given.exists() or given.is_symlink()
        except OSError as exc:
            found = [Item("case", given, shown, f"{shown}: cannot read: {exc.strerror}", given.name)]
        else:
            if is_dir:
                found = _expand_folder(given, expansion, excluded)
            elif exists or given.suffix.lower() in CASE_SUFFIXES:
                found = [Item("case", given, shown, name=given.name)]  # read_case names what is wrong with it
            else:
                found = [Item("case", given, shown, f"{shown}: no such file or folder; give a case file "
                                                   "(.yaml, .yml, .json) or a folder of cases", given.name)]
        for item in found:
            key = (item.kind, os.path.realpath(item.path))
            if key in seen:
                continue  # given twice (a file and its folder): diagnosed once
            seen.add(key)
            expansion.items.append(item)
    if len(expansion.items) > max_items:
        expansion.warnings.append(f"{len(expansion.items)} items found; only the first {max_items} were diagnosed "
                                  "(run triage on fewer PATHs at a time)")
        expansion.bound_hit = True
        del expansion.items[max_items:]
    return expansion


# ---------------------------------------------------------------------------------------
# One item, in a pool process


@dataclass(frozen=True)
class Settings:
    rule_packs: tuple[Path, ...] = ()
    engine: str | None = None
    env: bool | None = None
    formats: tuple[str, ...] = DEFAULT_FORMATS
    out: Path | None = None
    protected: tuple[Path, ...] = ()  # files given on the command line: never written over
    store: str | None = None  # the case library every diagnosis is recorded in (--store)


class _ItemError(Exception):
    def __init__(self, status: str, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


def _start_pool_process(settings: Settings) -> None:
    """A pool process (app/process_pool.py) before its first chunk: forked, it must not use
    the parent's database connections (it opens its own); spawned, it loads the rule base
    once, before the first case."""
    if "j6doctor.store.keep" in sys.modules:
        sys.modules["j6doctor.store.keep"].forget_connections()
    try:
        from j6doctor.diagnosis import load_rulebase

        load_rulebase(settings.rule_packs, settings.engine)
    except Exception:  # noqa: BLE001 - the first case reports the same error as its row
        pass


def _config(folder: Path):
    """The settings for an item in `folder` (load_config: j6doctor.toml found upward, the
    user file) and its `environment` setting for triage."""
    return _config_of(os.path.abspath(folder))


@lru_cache(maxsize=None)
def _config_of(folder: str):
    """_config, read once per folder and process."""
    from j6doctor.config import load_config

    config = load_config(Path(folder))
    return config, _environment_setting(config)


def _environment_setting(config) -> bool:
    """`environment` where a j6doctor.toml / pyproject.toml / user config sets it (the
    project file over the user file, as load_config merges them), else False: triage
    diagnoses other people's cases, which this machine's packages say nothing about."""
    from j6doctor.config import _read

    value = False
    for source in config.sources:
        path = Path(source)
        table = ("tool", "j6doctor") if path.name == "pyproject.toml" else ()
        data = _read(path, table) or {}
        if isinstance(data.get("environment"), bool):
            value = data["environment"]
    return value


def _diagnose(item: Item, settings: Settings):
    """The item's Diagnosis, with the error handling of `diagnose` (app/cli.py `_run`)."""
    from j6doctor.diagnosis import diagnose, load_rulebase
    from j6doctor.engine import EngineError, EngineLimitError, EngineUnavailableError, RuleBaseErrors
    from j6doctor.evidence import EvidenceOptions
    from j6doctor.probes import InputError
    from j6doctor.probes.artifacts import require_folder
    from j6doctor.probes.case_file import read_case

    if item.error is not None:
        raise _ItemError("input_error", item.error)
    try:
        config, configured_env = _config(item.path.parent if item.kind == "case" else item.path)
    except InputError as exc:
        raise _ItemError("input_error", exc.render()) from None
    env = configured_env if settings.env is None else settings.env
    engine = (settings.engine or config.engine or "").lower() or None
    try:
        rulebase = load_rulebase(settings.rule_packs, engine)
    except EngineUnavailableError as exc:
        raise _ItemError("input_error", str(exc)) from None
    except RuleBaseErrors as exc:
        raise _ItemError("input_error" if settings.rule_packs else "internal_error",
                         f"the rule base is invalid:\n{exc}") from None
    options = EvidenceOptions(use_environment=env)
    try:
        if item.kind == "workdir":
            options.workdirs = [require_folder(item.path)]
            case = None
        else:
            case = read_case(item.path)
        return diagnose(case, rulebase, options=options)
    except InputError as exc:
        raise _ItemError("input_error", exc.render()) from None
    except RuleBaseErrors as exc:
        raise _ItemError("internal_error", f"the rule base is invalid:\n{exc}") from None
    except EngineLimitError as exc:
        raise _ItemError("input_error", str(exc)) from None
    except EngineError as exc:
        raise _ItemError("internal_error", str(exc)) from None


def first_finding(verdict: Verdict) -> str:
    """The one line a summary shows for a verdict: its first finding, else its first
    warning (marked ⚠), else the first 关键发现 a rule filled, else nothing."""
    if verdict.findings:
        return verdict.findings[0].text
    if verdict.warnings:
        return "⚠ " + verdict.warnings[0]
    if verdict.key_findings:
        return verdict.key_findings[0].text
    return ""


def _empty_row(index: int, item: Item) -> dict[str, Any]:
    return {"n": index + 1, "path": item.display, "kind": item.kind, "status": "ok", "stage": None,
            "stage_label": None, "candidates": [], "missing": [], "missing_labels": [], "first_finding": "",
            "warnings": [], "engine": None, "error": None, "reports": {}}


def _write_reports(diagnosis, stem: str, settings: Settings, row: dict[str, Any]) -> None:
    from j6doctor.atomic_write import is_protected, write_atomic
    from j6doctor.report import render_html, render_json, render_markdown

    renderers = {"md": render_markdown, "html": render_html, "json": render_json}
    read = [item for item in diagnosis.read_paths] + list(settings.protected)
    if diagnosis.case is not None and diagnosis.case.path is not None:
        read.append(diagnosis.case.path)
    for fmt in settings.formats:
        name = f"{stem}.{EXTENSIONS[fmt]}"
        target = settings.out / name
        if target.exists() and is_protected(target, read):
            raise _ItemError("input_error", f"{target.as_posix()}: refusing to overwrite a file this run read; "
                                            "choose another --out folder")
        try:
            write_atomic(target, renderers[fmt](diagnosis))
        except OSError as exc:
            raise _ItemError("input_error", f"{target.as_posix()}: cannot write: {exc.strerror or exc}; "
                                            "give a writable --out folder") from None
        row["reports"][fmt] = name


def run_item(index: int, item: Item, stem: str | None, settings: Settings) -> dict[str, Any]:
    """Diagnose one item; its summary row (never raises for the item's own problems)."""
    row = _empty_row(index, item)
    try:
        diagnosis = _diagnose(item, settings)
        verdict = diagnosis.verdict
        row.update({
            "stage": verdict.stage, "stage_label": verdict.stage_label,
            "candidates": [{"stage": c.stage, "label": c.label} for c in verdict.candidates],
            "missing": list(verdict.missing),
            "missing_labels": [m.label for m in verdict.missing_detail],
            "first_finding": first_finding(verdict),
            "warnings": list(verdict.warnings),
            "engine": diagnosis.rulebase.engine,
        })
        if settings.store is not None:
            _keep(diagnosis, settings.store, row)
        if settings.out is not None and stem is not None:
            _write_reports(diagnosis, stem, settings, row)
    except _ItemError as exc:
        row.update({"status": exc.status, "error": exc.message})
    except MemoryError:
        row.update({"status": "internal_error", "error": "internal error: out of memory"})
    except Exception as exc:  # noqa: BLE001 - one item's bug must not end the run
        if os.environ.get("J6DOCTOR_DEBUG"):
            import traceback

            traceback.print_exc()
        row.update({"status": "internal_error",
                    "error": f"internal error: {type(exc).__name__}: {exc} (a defect of j6doctor: set "
                             "J6DOCTOR_DEBUG=1 for a traceback and please report it)"})
    return row


def _keep(diagnosis, store: str, row: dict[str, Any]) -> None:
    """Record the diagnosis in the case library (each pool process opens its own connection)."""
    import sqlalchemy

    from j6doctor.store.keep import keep, library
    from j6doctor.store.library import StoreError, failure

    try:
        row["case_id"] = keep(diagnosis, library(store)).case_id
    except StoreError as exc:
        raise _ItemError("input_error", str(exc)) from None
    except sqlalchemy.exc.SQLAlchemyError as exc:  # a full disk, a server gone mid-way
        raise _ItemError("input_error", str(failure(store, exc))) from None


def _run_chunk(chunk: list[tuple[int, Item, str | None]], settings: Settings) -> list[dict[str, Any]]:
    return [run_item(index, item, stem, settings) for index, item, stem in chunk]


# ---------------------------------------------------------------------------------------
# Progress on a terminal


class ProgressBar(Progress):
    """done / total with a bar, on the status line of app/progress.py (a terminal's stderr
    only)."""

    WIDTH = 24

    def __init__(self, total: int, stream: TextIO | None = None, enabled: bool | None = None):
        super().__init__(stream, enabled)
        self.enabled = self.enabled and total > 0
        self.total = total

    def update(self, done: int, what: str = "") -> None:
        filled = int(self.WIDTH * done / self.total) if self.total else 0
        bar = "█" * filled + "░" * (self.WIDTH - filled)
        text = f"[j6doctor] 批量诊断 {bar} {done}/{self.total}"
        if what:
            text += f" {what}"
        self.show(_fit(text, 118), force=done >= self.total)


# ---------------------------------------------------------------------------------------
# The run


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def _slug(display: str) -> str:
    parts = [p for p in Path(display).parts if p not in ("/", ".", "..") and not p.endswith(":\\")]
    if parts and parts[-1].lower().endswith(CASE_SUFFIXES):
        parts[-1] = parts[-1].rsplit(".", 1)[0]
    text = unicodedata.normalize("NFC", "_".join(parts))
    text = "".join(c if c.isalnum() or c in "-_." else "_" for c in text)
    text = re.sub(r"_+", "_", text).strip("._-")
    return text[-60:].lstrip("._-") or "item"


def report_stems(items: list[Item]) -> list[str]:
    """`<n>-<name>` of each item's reports: numbered in order (so unique), padded to the
    count's width, the name from its path in letters, digits, `-`, `_` and `.` only."""
    width = max(3, len(str(len(items))))
    return [f"{i + 1:0{width}d}-{_slug(item.name or item.display)}" for i, item in enumerate(items)]


def _chunks(work: list, jobs: int) -> list[list]:
    """Items in chunks: few enough messages, small enough that no process idles long at
    the end (16 items are a quarter of a second)."""
    size = max(1, min(16, math.ceil(len(work) / (jobs * 8))))
    return [work[i:i + size] for i in range(0, len(work), size)]


def _run_items(work: list[tuple[int, Item, str | None]], jobs: int, settings: Settings,
               bar: ProgressBar) -> list[dict[str, Any]]:
    """The rows of every item, in this process (one job or one item) or in a pool."""
    if jobs == 1 or len(work) <= 1:
        rows = []
        for entry in work:
            rows.append(run_item(*entry, settings=settings))
            bar.update(len(rows), entry[1].display)
        return rows
    return _run_pool(work, jobs, settings, bar)


def _run_pool(work: list[tuple[int, Item, str | None]], jobs: int, settings: Settings,
              bar: ProgressBar) -> list[dict[str, Any]]:
    from concurrent.futures import FIRST_COMPLETED, wait

    from j6doctor.process_pool import ProcessPool

    rows: list[dict[str, Any]] = []
    with ProcessPool(jobs, _start_pool_process, (settings,)) as executor:
        pending = {executor.submit(_run_chunk, chunk, settings): chunk for chunk in _chunks(work, jobs)}
        while pending:
            finished, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in finished:
                chunk = pending.pop(future)
                rows.extend(_chunk_rows(future, chunk))
                bar.update(len(rows), chunk[-1][1].display)
    return rows


def _chunk_rows(future, chunk: list[tuple[int, Item, str | None]]) -> list[dict[str, Any]]:
    """The rows a pool process sent for a chunk; internal-error rows if it died."""
    from concurrent.futures.process import BrokenProcessPool

    try:
        return future.result()
    except BrokenProcessPool as exc:
        rows = []
        for index, item, _ in chunk:
            row = _empty_row(index, item)
            row.update({"status": "internal_error",
                        "error": f"internal error: a pool process died ({exc}); diagnose this item "
                                 "alone with `j6doctor diagnose`"})
            rows.append(row)
        return rows


def _prepare_out(out: Path, protected: list[Path], stems: list[str], formats: tuple[str, ...]) -> str | None:
    """Create --out; remove the per-case reports an earlier triage listed there that this
    run does not write. An error message, or None."""
    from j6doctor.atomic_write import is_protected

    try:
        if out.exists() and not out.is_dir():
            return f"{out.as_posix()}: not a folder; --out takes a folder"
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return f"{out.as_posix()}: cannot create the folder: {exc.strerror or exc}; give a writable --out folder"
    for name in SUMMARY_FILES:
        if (out / name).exists() and is_protected(out / name, protected):
            return f"{(out / name).as_posix()}: refusing to overwrite a file given as input; choose another --out"
    keep = {f"{stem}.{EXTENSIONS[f]}" for stem in stems for f in formats}
    for name in _earlier_reports(out):
        target = out / name
        if name not in keep and target.is_file() and not is_protected(target, protected):
            target.unlink(missing_ok=True)
    return None


def _earlier_reports(out: Path) -> list[str]:
    """The per-case report files the summary.json of an earlier triage in `out` lists."""
    try:
        previous = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    if not isinstance(previous, dict) or previous.get("tool") != TOOL:
        return []
    rows = [row for row in previous.get("items") or [] if isinstance(row, dict)]
    names = [name for row in rows if isinstance(row.get("reports"), dict) for name in row["reports"].values()]
    return [name for name in names if isinstance(name, str) and re.fullmatch(r"\d+-[^/\\]+\.(md|html|json)", name)]


class _Refused(Exception):
    """The run cannot start (bad arguments, an invalid rule pack, an unusable --out): the
    message, and the exit code."""

    def __init__(self, message: str, code: int = EXIT_INPUT):
        super().__init__(message)
        self.message = message
        self.code = code


def triage_main(paths: list[Path], out: Path | None = None, jobs: int | None = None,
                rule_packs: tuple[Path, ...] = (), engine: str | None = None, env: bool | None = None,
                progress: bool = True, *, formats: tuple[str, ...] | None = None,
                stdout: TextIO | None = None, stderr: TextIO | None = None,
                fail_on: list[str] | None = None, store: str | None = None) -> int:
    """Diagnose every item the PATHs name; print the summary table on stdout, the errors
    and warnings on stderr; with `out`, write the per-case reports (`formats`: any of
    "html", "json", "md"; default html), summary.csv, summary.json and index.html there.

    `jobs`: pool processes (None: every core this process may use). `env`: read this
    machine's package versions and board type (None: `environment` in j6doctor.toml when
    set there, else off — the cases are other people's). `progress`: a progress bar on
    stderr when it is a terminal (never otherwise). Returns the exit code."""
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    paths = [Path(p) for p in paths]
    rule_packs = tuple(Path(p) for p in rule_packs)
    engine = engine.lower() if engine else None
    try:
        formats = _check_arguments(paths, jobs, formats, rule_packs)
        rulebase = _load_rules(rule_packs, engine)
        _check_out(out, paths)
        expansion = expand(paths, out)
        stems = report_stems(expansion.items)
        explicit = [p for p in paths if p.is_file()]
        if out is not None:
            _refuse_if(_prepare_out(out, explicit, stems, formats))
        _warm_up(formats if out is not None else ())
        _open_store(store)
    except _Refused as exc:
        stderr.write(f"j6doctor: error: {exc.message}\n")
        return exc.code
    settings = Settings(rule_packs, engine, env, formats, out, tuple(explicit), store)
    from j6doctor.facts import using

    with using(rulebase.vocab):  # the table and summaries in the rule base's words (a pack's stages)
        return _triage(settings, expansion, stems, jobs, progress, stdout, stderr, fail_on)


def _triage(settings: Settings, expansion, stems, jobs: int | None, progress: bool, stdout: TextIO,
            stderr: TextIO, fail_on: list[str] | None) -> int:
    out = settings.out
    work = [(i, item, stems[i]) for i, item in enumerate(expansion.items)]
    bar = ProgressBar(len(work), stderr, None if progress else False)
    try:
        rows = _run_items(work, min(jobs or default_jobs(), max(1, len(work))), settings, bar)
    finally:
        bar.done()
    rows.sort(key=lambda r: r["n"])
    printed = _print_table(rows, stdout, stderr)
    code = _exit_code(rows, expansion) or (EXIT_OK if printed else EXIT_INPUT)
    _print_problems(rows, expansion, stderr)
    if out is not None:
        problem = write_summaries(out, rows, expansion, settings.formats, code)
        if problem:
            stderr.write(f"j6doctor: error: {problem}\n")
            return EXIT_INPUT
        stderr.write(f"j6doctor: wrote {out.as_posix()}/index.html, summary.csv, summary.json and "
                     f"{sum(len(r['reports']) for r in rows)} report(s)\n")
    return _fail_on(code, rows, fail_on, stderr)


def _refuse_if(problem: str | None) -> None:
    if problem:
        raise _Refused(problem)


def _check_arguments(paths: list[Path], jobs: int | None, formats: tuple[str, ...] | None,
                     rule_packs: tuple[Path, ...]) -> tuple[str, ...]:
    """The report formats to write; _Refused for arguments no run can start from."""
    if not paths:
        raise _Refused("give at least one case file or folder (see --help)")
    if jobs is not None and jobs < 1:
        raise _Refused("--jobs must be at least 1")
    formats = tuple(dict.fromkeys(formats)) if formats else DEFAULT_FORMATS
    unknown = [f for f in formats if f not in FORMATS]
    if unknown:
        raise _Refused(f"--format: unknown format {unknown[0]!r}; allowed: {', '.join(FORMATS)}")
    from j6doctor.probes.artifacts import not_a_rule_pack

    for pack in rule_packs:
        problem = not_a_rule_pack(pack)
        if problem:
            raise _Refused(f"{pack}: {problem}")
    return formats


def _load_rules(rule_packs: tuple[Path, ...], engine: str | None):
    """Load the rule base once, before the pool forks: every pool process starts with it."""
    from j6doctor.diagnosis import load_rulebase
    from j6doctor.engine import EngineUnavailableError, RuleBaseErrors

    try:
        return load_rulebase(rule_packs, engine)
    except EngineUnavailableError as exc:
        raise _Refused(str(exc)) from None
    except RuleBaseErrors as exc:
        if rule_packs:
            raise _Refused(f"the rule base is invalid:\n{exc}") from None
        raise _Refused(f"the rule base is invalid:\n{exc}\n(the bundled rules are broken: a defect of j6doctor; "
                       "please report it with this message)", EXIT_INTERNAL) from None


def _check_out(out: Path | None, paths: list[Path]) -> None:
    """--out is a folder (or nothing yet), and none of the input folders."""
    if out is None:
        return
    if out.exists() and not out.is_dir():
        raise _Refused(f"{out.as_posix()}: not a folder; --out takes a folder")
    if out.is_dir():
        from j6doctor.atomic_write import same_file

        for given in paths:
            if given.is_dir() and same_file(given, out):
                raise _Refused(f"{out.as_posix()}: --out is the input folder {given.as_posix()}; choose a folder "
                               "of its own (a subfolder is fine: it is not read as input)")


def _open_store(store: str | None) -> None:
    """Open (and migrate) the case library once here: the pool processes then find it ready."""
    if store is None:
        return
    from j6doctor.store.keep import library
    from j6doctor.store.library import StoreError

    try:
        library(store)
    except StoreError as exc:
        raise _Refused(str(exc)) from None


def _print_table(rows: list[dict[str, Any]], stdout: TextIO, stderr: TextIO) -> bool:
    """The summary table on stdout; False (said on stderr) when it cannot be written."""
    try:
        stdout.write(render_table(rows, _terminal_width(stdout)))
        stdout.flush()
    except OSError as exc:  # a closed pipe (`| head`), a full disk behind a redirection
        _silence(stdout)
        stderr.write(f"j6doctor: error: cannot write the table to standard output: {exc.strerror or exc}\n")
        return False
    return True


def _print_problems(rows: list[dict[str, Any]], expansion: Expansion, stderr: TextIO) -> None:
    """The items' errors (the first MAX_ERRORS_SHOWN), the expansion's warnings and what it
    skipped, on stderr."""
    failed = [row for row in rows if row["error"]]
    for row in failed[:MAX_ERRORS_SHOWN]:
        message = row["error"]
        if not message.startswith(row["path"]):
            message = f"{row['path']}: {message}"
        stderr.write(f"j6doctor: error: {message}\n")
    if len(failed) > MAX_ERRORS_SHOWN:
        stderr.write(f"j6doctor: error: ... and {len(failed) - MAX_ERRORS_SHOWN} more item(s) with errors: "
                     "their rows say why\n")
    for warning in expansion.warnings:
        stderr.write(f"j6doctor: warning: {warning}\n")
    if expansion.skipped_count:
        named = ", ".join(p for p, _ in expansion.skipped[:3])
        stderr.write(f"j6doctor: note: {expansion.skipped_count} .yaml/.json/.md file(s) are not case files and "
                     f"were skipped (e.g. {named}); summary.json lists them, each with why\n")


def _fail_on(code: int, rows: list[dict[str, Any]], fail_on: list[str] | None, stderr: TextIO) -> int:
    """EXIT_FAIL_ON when every item was diagnosed and one concluded a stage --fail-on names."""
    if code or not fail_on:
        return code
    hit = [row["path"] for row in rows if row["stage"] in fail_on]
    if not hit:
        return code
    stderr.write(f"j6doctor: {len(hit)} case(s) concluded {' / '.join(fail_on)} (--fail-on), e.g. {hit[0]}\n")
    return EXIT_FAIL_ON


def _silence(stream: TextIO) -> None:
    """After a write to a closed pipe: point the stream at /dev/null, so that the flush at
    exit does not fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        pass


def _warm_up(formats: tuple[str, ...]) -> None:
    """Import and compile what every pool process needs before the pool forks, so that
    each starts with it (copied, not redone): the report modules and their templates."""
    from j6doctor import charts, explain_report, report  # noqa: F401
    from j6doctor.evidence import collect  # noqa: F401
    from j6doctor.probes import artifacts, environment, metrics_file  # noqa: F401  (evidence imports them when used)
    from j6doctor.templates import report_environment

    for fmt in formats:
        if fmt in ("md", "html"):
            report_environment().get_template(f"report.{fmt}.j2")


def _exit_code(rows: list[dict[str, Any]], expansion: Expansion) -> int:
    if any(r["status"] == "internal_error" for r in rows):
        return EXIT_INTERNAL
    if any(r["status"] == "input_error" for r in rows) or expansion.bound_hit:
        return EXIT_INPUT
    return EXIT_OK


# ---------------------------------------------------------------------------------------
# Output: the terminal table, CSV, JSON, HTML


def _char_width(c: str) -> int:
    if unicodedata.combining(c):
        return 0
    return 2 if unicodedata.east_asian_width(c) in ("W", "F") else 1


def _width(text: str) -> int:
    if text.isascii():  # paths and stage names mostly: one column a character
        return len(text)
    return sum(_char_width(c) for c in text)


def _fit(text: str, width: int) -> str:
    """Cut to `width` display columns (CJK characters count two), with … when cut."""
    if _width(text) <= width:
        return text
    out, used = [], 0
    for c in text:
        w = _char_width(c)
        if used + w > width - 1:
            break
        out.append(c)
        used += w
    return "".join(out) + "…"


def _pad(text: str, width: int) -> str:
    return text + " " * max(0, width - _width(text))


def _terminal_width(stream: TextIO) -> int | None:
    """Columns of the terminal stdout is, or None (a pipe or a file: lines are not cut)."""
    try:
        if not stream.isatty():
            return None
    except (AttributeError, ValueError):
        return None
    return terminal_columns()


def _cells(row: dict[str, Any]) -> list[str]:
    if row["status"] != "ok":
        lines = (row["error"] or "").splitlines() or [""]
        more = f"（另 {len(lines) - 1} 行）" if len(lines) > 1 else ""
        return [str(row["n"]), row["path"], STATUS_LABELS[row["status"]], "", "", lines[0] + more]
    return [str(row["n"]), row["path"], row["stage_label"], " ".join(c["stage"] for c in row["candidates"]),
            ",".join(row["missing"]), row["first_finding"].replace("\n", " ")]


TABLE_HEADER = ["#", "案例", "阶段", "候选阶段", "缺少", "首要发现"]
_CAPS = [6, 48, 26, 40, 40]  # widest cell per column on a terminal (the last takes the rest)


def render_table(rows: list[dict[str, Any]], width: int | None = None) -> str:
    """The summary as aligned text; with `width` (a terminal), cells are cut to fit it."""
    table = [TABLE_HEADER] + [_cells(r) for r in rows]
    widths = [max(_width(r[i]) for r in table) for i in range(len(TABLE_HEADER) - 1)]
    if width is not None:
        widths = [min(w, cap) for w, cap in zip(widths, _CAPS)]
        floors = [_width(h) for h in TABLE_HEADER[:-1]]  # no column narrower than its header
        while sum(widths) + 2 * len(widths) + 10 > width:  # the last column keeps 10 columns
            shrinkable = [i for i in (1, 3, 4, 2) if widths[i] > max(floors[i], 8)]
            if not shrinkable:
                break
            widest = max(shrinkable, key=lambda i: widths[i])
            widths[widest] -= 1
    lines = []
    for cells in table:
        fixed = [_pad(_fit(c, w), w) for c, w in zip(cells, widths)]
        last = cells[-1]
        if width is not None:
            last = _fit(last, max(10, width - sum(widths) - 2 * len(widths)))
        lines.append("  ".join(fixed + [last]).rstrip())
    counts = summary_counts(rows)
    lines.append("")
    lines.append(f"共 {counts['total']} 项：已诊断 {counts['diagnosed']}，输入错误 {counts['input_errors']}，"
                 f"内部错误 {counts['internal_errors']}")
    if counts["by_stage"]:
        lines.append("按阶段：" + "，".join(f"{s['label']} {s['count']}" for s in counts["by_stage"]))
    return "\n".join(lines) + "\n"


def summary_counts(rows: list[dict[str, Any]]) -> dict[str, Any]:
    from j6doctor.facts import enum_values, label

    by_stage = {}
    for row in rows:
        if row["status"] == "ok":
            by_stage[row["stage"]] = by_stage.get(row["stage"], 0) + 1
    order = list(enum_values("stage"))
    return {
        "total": len(rows),
        "diagnosed": sum(1 for r in rows if r["status"] == "ok"),
        "input_errors": sum(1 for r in rows if r["status"] == "input_error"),
        "internal_errors": sum(1 for r in rows if r["status"] == "internal_error"),
        "by_stage": [{"stage": s, "label": label("stage", s), "count": by_stage[s]}
                     for s in sorted(by_stage, key=lambda s: (order.index(s) if s in order else len(order), s))],
    }


CSV_COLUMNS = ["n", "path", "kind", "status", "stage", "stage_label", "candidates", "missing", "first_finding",
               "error", "report"]


def render_csv(rows: list[dict[str, Any]], formats: tuple[str, ...]) -> str:
    """UTF-8 with a byte-order mark (spreadsheet programs then read the Chinese labels);
    lists are joined with spaces; `report` is the per-case report the index links."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")
    writer.writerow(CSV_COLUMNS)
    for row in rows:
        writer.writerow([_inert_cell(cell) for cell in (
            row["n"], row["path"], row["kind"], row["status"], row["stage"] or "", row["stage_label"] or "",
            " ".join(c["stage"] for c in row["candidates"]), " ".join(row["missing"]), row["first_finding"],
            row["error"] or "", _main_report(row) or "",
        )])
    return "\ufeff" + buffer.getvalue()


# A cell a spreadsheet program would run as a formula (OWASP "CSV injection"): a file name or a
# message beginning with one of these is written with a leading apostrophe, shown as text.
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _inert_cell(value: Any) -> Any:
    if isinstance(value, str) and value.startswith(_FORMULA_STARTS):
        return "'" + value
    return value


def _main_report(row: dict[str, Any]) -> str | None:
    for fmt in ("html", "md", "json"):
        if fmt in row["reports"]:
            return row["reports"][fmt]
    return None


def render_summary_json(rows: list[dict[str, Any]], expansion: Expansion, formats: tuple[str, ...],
                        code: int) -> str:
    from j6doctor import __version__

    data = {
        "tool": TOOL,
        "version": __version__,
        "exit_code": code,
        "counts": summary_counts(rows),
        "formats": list(formats),
        "items": rows,
        "warnings": list(expansion.warnings),
        "skipped": [{"path": p, "why": why} for p, why in expansion.skipped],
        "skipped_count": expansion.skipped_count,
    }
    return json.dumps(data, ensure_ascii=False, indent=2) + "\n"


def render_index(rows: list[dict[str, Any]], expansion: Expansion, formats: tuple[str, ...], code: int) -> str:
    """The self-contained HTML index (templates/triage_index.html.j2, every value escaped)."""
    from j6doctor import __version__
    from j6doctor.templates import report_environment

    format_labels = {"html": "HTML", "md": "Markdown", "json": "JSON"}
    view = []
    for row in rows:
        view.append({
            **row,
            "kind_label": KIND_LABELS.get(row["kind"], row["kind"]),
            "status_label": STATUS_LABELS[row["status"]],
            "main": quote(_main_report(row) or ""),
            "links": [{"href": quote(row["reports"][f]), "label": format_labels[f]}
                      for f in ("html", "md", "json") if f in row["reports"]],
        })
    return report_environment().get_template("triage_index.html.j2").render(
        version=__version__, rows=view, counts=summary_counts(rows), warnings=expansion.warnings,
        skipped=expansion.skipped, skipped_count=expansion.skipped_count, exit_code=code)


def write_summaries(out: Path, rows: list[dict[str, Any]], expansion: Expansion, formats: tuple[str, ...],
                    code: int) -> str | None:
    from j6doctor.atomic_write import write_atomic

    texts = {
        "summary.csv": render_csv(rows, formats),
        "summary.json": render_summary_json(rows, expansion, formats, code),
        "index.html": render_index(rows, expansion, formats, code),
    }
    for name, text in texts.items():
        try:
            write_atomic(out / name, text)
        except OSError as exc:
            return f"{(out / name).as_posix()}: cannot write: {exc.strerror or exc}; give a writable --out folder"
    return None
