#!/usr/bin/env python3
"""j6doctor's benchmark: every measurement next to its floor, in one run, with the targets.

  1. cold start    `j6doctor diagnose CASE --format json --no-env` against a process that only
                   imports yaml and the rule engine; `j6doctor --help` against `python -c pass`;
                   then where one cold diagnosis spends its time (real calls, in a fresh process)
  2. workdir       `j6doctor diagnose --workdir DIR --format json --no-env` on generated
                   QuantAnalysis folders (compare table as csv only, or as psql txt only) of
                   1k / 20k / 100k / 1M rows, against `pandas.read_csv` of the same table
  3. rule engine   synthetic rule bases of 50 / 200 / 500 / 1,000 rules over 100 / 1,000 facts
                   (made-up vocabulary), on every installed engine: compile, cached load, run
  4. triage        `j6doctor triage` of 1,000 copies of the bundled example cases, with --out
  5. memory        RSS over 1,000 in-process diagnoses of a bundled example
  6. largest input peak RSS of `diagnose --workdir` on a file of each kind just under its size limit
  7. case library  `j6doctor cases rediagnose` of 10,000 stored cases in a pool, against a process
                   that runs the same rule base on the same stored facts one after the other
  8. real reports  accuracy on the development set of real reports (benchmarks/real_reports/),
                   in both forms: the support engineer's case file and the reporter's own words

    python benchmarks/bench_all.py                      # everything (about 10 minutes)
    python benchmarks/bench_all.py --quick --sections 1,3
    python benchmarks/bench_all.py --check              # exit 1 when a target fails
    python benchmarks/bench_all.py --update-docs        # rewrite docs/benchmarks.md from this run

How it measures. Every measured command runs as its own child of a small wrapper process,
which reports the child's wall time, CPU time (user + sys, resource.getrusage(RUSAGE_CHILDREN),
the worker processes it waits for included) and peak RSS (ru_maxrss: the largest of the
process and its descendants, not their sum). A product and its floor are run alternately
(paired, interleaved), and a ratio is the median of the per-pair ratios, so it holds when
the machine is busy; targets are checked on the CPU ratio, the wall ratio is shown beside it.

The children run as an installed copy would: PYTHONDONTWRITEBYTECODE is removed from their
environment, the package is byte-compiled (compileall) and warm-up runs come first, so no
measured run compiles sources; the compiled rule base is cached in a private temporary
XDG_CACHE_HOME (filled by the warm-up), and J6DOCTOR_* variables are cleared. Tables go to
stdout, progress to stderr; generated data lives in a temporary folder removed at the end.
"""

from __future__ import annotations

import argparse
import ast
import gc
import json
import os
import platform
import random
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
TESTS = REPO / "tests"
sys.path.insert(0, str(BENCH_DIR))
sys.path.insert(0, str(TESTS))

CASES = REPO / "examples" / "cases"
EXAMPLE_CASE = CASES / "convert_j6m.yaml"
DOCS_PAGE = REPO / "docs" / "benchmarks.md"  # written whole by --update-docs
SECTIONS = (1, 2, 3, 4, 5, 6, 7, 8, 9)
WORKDIR_SIZES = (1_000, 20_000, 100_000, 1_000_000)
WORKDIR_TARGETS = {20_000: 1.5, 100_000: 2.0, 1_000_000: 2.0}  # rows -> max CPU ratio to the floor
WORKDIR_MEMORY_TARGET = (1_000_000, 2.0)  # at this many rows, peak RSS at most this × pandas'
# CPU ratio to the floor. Issue 25: nothing patched or cached as generated code, so the aim for a
# cold diagnosis is 4x (was 2.5x with the dataclass / regex / schema-check caches).
COLD_TARGETS = {"diagnose": 4.0, "help": 2.0}
TRIAGE_COPIES, TRIAGE_TARGET_S = 1_000, 10.0
LARGEST_TARGET_BYTES = 1024 ** 3
LIBRARY_CASES = 10_000
LIBRARY_CPU_TARGET = 1.5  # rediagnose CPU (workers included) / the engine floor's
LIBRARY_RSS_TARGET = 2.0  # peak RSS of the largest process / the floor's: the library is never loaded whole
REAL_REPORT_TARGET = 0.90  # stage right and other checks, per form (issue 24)
POST_TARGET_MS = 50  # one 64 KB post read and every text rule run over it (issue 29)
HELD_OUT_REPORTS = BENCH_DIR / "real_reports_heldout"
TEXT_SHARE_TARGET = 0.10  # what the example case's symptom adds to its diagnosis (issue 29)


# ---------------------------------------------------------------------------- output
_NUMBER = re.compile(r"[-+]?[\d,]*\.?\d+(\+\d+)*( / [\d,]*\.?\d+)?( \((mean [\d.]+|truncated)\))?")


def _numeric_column(cells: list[str]) -> bool:
    """Right-align a column whose cells that start like a number are all numbers (words like
    "refused" aside)."""
    numbers = [c for c in cells if c[:1].isdigit() or c[:2].strip("+-")[:1].isdigit()]
    return bool(numbers) and all(_NUMBER.fullmatch(c) for c in numbers)


@dataclass
class Table:
    title: str
    headers: list[str]
    rows: list[list[str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def add(self, *cells: object) -> None:
        self.rows.append([str(c) for c in cells])

    def render(self, markdown: bool, level: str = "###") -> str:
        right = [_numeric_column([row[k] for row in self.rows]) for k in range(len(self.headers))]
        if markdown:
            lines = [f"{level} {self.title}", "",
                     "| " + " | ".join(self.headers) + " |",
                     "|" + "|".join(" ---: " if r else " --- " for r in right) + "|"]
            lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in self.rows]
            if self.notes:
                lines.append("")
                lines += [note + "  " if k < len(self.notes) - 1 else note for k, note in enumerate(self.notes)]
            return "\n".join(lines)
        widths = [max([len(h), *(len(row[k]) for row in self.rows)]) for k, h in enumerate(self.headers)]

        def line(cells: list[str]) -> str:
            return "  ".join(c.rjust(w) if r else c.ljust(w) for c, w, r in zip(cells, widths, right)).rstrip()

        out = [self.title, "=" * len(self.title), line(self.headers), "  ".join("-" * w for w in widths)]
        out += [line(row) for row in self.rows]
        out += self.notes
        return "\n".join(out)


@dataclass
class Target:
    name: str
    measured: str
    limit: str
    ok: bool | None  # None: could not be measured here (shown as n/a, does not fail --check)

    @property
    def result(self) -> str:
        return "n/a" if self.ok is None else "PASS" if self.ok else "FAIL"


def progress(text: str) -> None:
    print(f"[bench] {text}", file=sys.stderr, flush=True)


def secs(seconds: float) -> str:
    return f"{seconds:.3f}"


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f}"


def mb(kib: float) -> str:
    return f"{kib / 1024:.0f}"


def times(x: float) -> str:
    return f"{x:.2f}"


# ---------------------------------------------------------------------------- measuring children
# Runs one command as its child and prints what the kernel says about that child alone.
_WRAPPER = r'''
import json, resource, subprocess, sys, time
spec = json.loads(sys.argv[1])
out = open(spec["stdout"], "wb") if spec.get("stdout") else subprocess.DEVNULL
err = open(spec["stderr"], "wb") if spec.get("stderr") else subprocess.PIPE
started = time.perf_counter()
proc = subprocess.run(spec["argv"], stdout=out, stderr=err, cwd=spec.get("cwd"))
wall = time.perf_counter() - started
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
tail = (proc.stderr or b"")[-3000:].decode("utf-8", "replace")
print(json.dumps({"wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "maxrss": usage.ru_maxrss,
                  "rc": proc.returncode, "stderr": tail}))
'''


@dataclass
class Sample:
    wall: float
    cpu: float
    rss_kb: int
    rc: int
    stderr: str


class BenchError(RuntimeError):
    pass


def run_child(argv: list[str], *, stdout: Path | None = None, stderr: Path | None = None,
              cwd: Path | None = None, ok_codes: tuple[int, ...] | None = (0,)) -> Sample:
    spec = {"argv": [str(a) for a in argv], "stdout": str(stdout) if stdout else None,
            "stderr": str(stderr) if stderr else None, "cwd": str(cwd) if cwd else None}
    done = subprocess.run([sys.executable, "-c", _WRAPPER, json.dumps(spec)], capture_output=True, text=True)
    if done.returncode != 0:
        raise BenchError(f"the measuring wrapper failed: {done.stderr.strip()[-2000:]}")
    data = json.loads(done.stdout.strip().splitlines()[-1])
    rss = data["maxrss"] // 1024 if sys.platform == "darwin" else data["maxrss"]  # bytes on macOS
    sample = Sample(data["wall"], data["cpu"], rss, data["rc"], data["stderr"])
    if ok_codes is not None and sample.rc not in ok_codes:
        raise BenchError(f"{' '.join(spec['argv'])[:300]} exited {sample.rc}: {sample.stderr.strip()[-1500:]}")
    return sample


@dataclass
class Paired:
    floor: list[Sample]
    product: list[Sample]

    def median(self, which: str, attr: str) -> float:
        return statistics.median(getattr(s, attr) for s in getattr(self, which))

    def ratio(self, attr: str) -> float:
        """Median of the per-pair ratios product / floor."""
        return statistics.median(getattr(p, attr) / max(getattr(f, attr), 1e-9)
                                 for f, p in zip(self.floor, self.product))


def paired(floor: list[str], product: list[str], repeat: int, warmup: int = 1) -> Paired:
    """Floor and product alternately (the order swapped every pair), after `warmup` pairs."""
    for _ in range(warmup):
        run_child(floor)
        run_child(product)
    result = Paired([], [])
    for k in range(repeat):
        if k % 2 == 0:
            result.floor.append(run_child(floor))
            result.product.append(run_child(product))
        else:
            result.product.append(run_child(product))
            result.floor.append(run_child(floor))
    return result


# ---------------------------------------------------------------------------- context
@dataclass
class Context:
    args: argparse.Namespace
    tmp: Path
    doctor: list[str]
    doctor_shown: str
    engine: str
    targets: list[Target] = field(default_factory=list)

    def repeat(self, full: int, quick: int) -> int:
        if self.args.repeat:
            return self.args.repeat
        if self.args.smoke:
            return 1
        return quick if self.args.quick else full


def doctor_executable() -> tuple[list[str], str]:
    """The console script beside this interpreter (what an install puts on PATH), else
    `python -m j6doctor`; and how to show it."""
    script = Path(sys.executable).with_name("j6doctor")
    python = Path(sys.executable)
    shown = python.relative_to(REPO) if python.is_relative_to(REPO) else python
    if script.exists():
        return [str(script)], f"j6doctor, the console script beside {shown}"
    return [sys.executable, "-m", "j6doctor"], f"{shown} -m j6doctor (no console script beside it)"


def installed_like_environment(cache: Path) -> None:
    """The children's environment (they inherit os.environ): bytecode written as an installed
    copy has it, a private rule-base cache, no J6DOCTOR_* overrides."""
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    for name in [n for n in os.environ if n.startswith("J6DOCTOR_")]:
        os.environ.pop(name)
    cache.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.environ["XDG_CACHE_HOME"] = str(cache)


def package_dirs() -> list[str]:
    """The source folders of every j6doctor package (an editable install maps them)."""
    import importlib

    folders = []
    for name in ("j6doctor", "j6doctor.engine", "j6doctor.facts", "j6doctor.probes", "j6doctor.rules",
                 "j6doctor.templates", "j6doctor.store", "j6doctor.store.migrations",
                 "j6doctor.store.migrations.versions"):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        folders += [p for p in getattr(module, "__path__", []) if p not in folders]
    return folders


def warm_up(ctx: Context) -> None:
    progress("warm-up: compileall of the package, then one run of each kind of command")
    # -l: the package folders themselves, not their subfolders (rules/fixtures holds example
    # user scripts, which a __pycache__ beside them would change as work-folder inputs)
    subprocess.run([sys.executable, "-m", "compileall", "-q", "-l", "-j", "0", *package_dirs()], check=True,
                   stdout=subprocess.DEVNULL)
    folder = ctx.tmp / "warmup_workdir"
    generate_workdir(folder, 200)
    for _ in range(2):
        run_child([*ctx.doctor, "--help"])
        run_child([*ctx.doctor, "diagnose", EXAMPLE_CASE, "--format", "json", "--no-env"])
        run_child([*ctx.doctor, "diagnose", "--workdir", folder, "--format", "json", "--no-env"])
        run_child([sys.executable, "-c", engine_floor_code(ctx.engine)])
        run_child([sys.executable, "-c", "import pandas"])


def engine_floor_code(engine: str) -> str:
    return {"durable": "import yaml, durable.lang", "clips": "import yaml, clips"}[engine]


# ---------------------------------------------------------------------------- 1. cold start
def section_cold_start(ctx: Context) -> list[Table]:
    repeat = ctx.repeat(21, 7)
    table = Table(f"1. Cold start (fresh processes, median of {repeat} interleaved pairs)",
                  ["command", "wall s", "CPU s", "peak RSS MB", "× floor (CPU)", "× floor (wall)",
                   "target", "result"])
    runs = [
        ("diagnose", f"python -c \"{engine_floor_code(ctx.engine)}\" (floor)",
         [sys.executable, "-c", engine_floor_code(ctx.engine)],
         f"j6doctor diagnose {EXAMPLE_CASE.name} --format json --no-env",
         [*ctx.doctor, "diagnose", EXAMPLE_CASE, "--format", "json", "--no-env"]),
        ("help", "python -c pass (floor)", [sys.executable, "-c", "pass"],
         "j6doctor --help", [*ctx.doctor, "--help"]),
    ]
    for key, floor_shown, floor, shown, product in runs:
        progress(f"cold start: {shown}: {repeat} pairs")
        result = paired(floor, product, repeat)
        table.add(floor_shown, secs(result.median("floor", "wall")), secs(result.median("floor", "cpu")),
                  mb(result.median("floor", "rss_kb")), "", "", "", "")
        ratio, limit = result.ratio("cpu"), COLD_TARGETS[key]
        target = Target(f"cold start: {shown} / floor (CPU)", f"{ratio:.2f}×", f"≤ {limit}×", ratio <= limit)
        ctx.targets.append(target)
        table.add(shown, secs(result.median("product", "wall")), secs(result.median("product", "cpu")),
                  mb(result.median("product", "rss_kb")), times(ratio), times(result.ratio("wall")),
                  f"≤ {limit}×", target.result)
        if key == "help":
            bare = result.median("floor", "wall")
    table.notes.append(f"j6doctor = {ctx.doctor_shown}; engine floor: the engine j6doctor uses here "
                       f"({ctx.engine}, j6doctor.engine.backends.resolve)")
    return [table, cold_diagnosis_stages(ctx, bare)]


# Runs in a fresh interpreter under -X importtime: one real `j6doctor diagnose ...`, with the
# calls below wrapped by a timer when their module is imported (nothing is imported ahead of
# the product). Time is charged to the innermost wrapped call running, else to "other"; a
# marker line on stderr says which, so the parent can charge each import to its stage.
_STAGES_CHILD = r'''
import sys, time
_t0 = time.perf_counter()
_PATCHES = {
    "j6doctor.config": [("load_config", "read the configuration (j6doctor.toml)")],
    "j6doctor.commands.inputs": [("load_rules", "load the rule base (compiled, from the cache)")],
    "j6doctor.probes.case_file": [("read_case", "read and check the case file")],
    "j6doctor.diagnosis": [("diagnose", "diagnose: probes, evidence, rule run in the worker, verdict")],
    "j6doctor.report": [("render_json", "render the JSON report")],
}
_spent, _order, _stack, _last = {"import j6doctor.cli": 0.0}, ["import j6doctor.cli"], [], [_t0]
_OTHER = "other (parsing, the command's imports, glue)"

def _charge():
    now = time.perf_counter()
    stage = _stack[-1] if _stack else _OTHER
    if stage not in _spent:
        _order.append(stage)
    _spent[stage] = _spent.get(stage, 0.0) + now - _last[0]
    _last[0] = now

def _enter(stage):
    _charge(); _stack.append(stage)
    sys.stderr.write("@@stage " + stage + "\n"); sys.stderr.flush()

def _leave():
    _charge(); _stack.pop()
    sys.stderr.write("@@stage " + (_stack[-1] if _stack else _OTHER) + "\n"); sys.stderr.flush()

def _wrap(function, stage):
    def timed(*args, **kwargs):
        _enter(stage)
        try:
            return function(*args, **kwargs)
        finally:
            _leave()
    return timed

def _patch(module):
    for attribute, stage in _PATCHES.get(module.__name__, ()):
        if callable(getattr(module, attribute, None)):
            setattr(module, attribute, _wrap(getattr(module, attribute), stage))

class _Hook:
    def find_spec(self, name, path, target=None):
        if name not in _PATCHES:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        execute = spec.loader.exec_module
        def exec_module(module):
            execute(module)
            _patch(module)
        spec.loader.exec_module = exec_module
        return spec

def _report():  # registered first, so it runs after every exit handler of the product
    exiting = time.perf_counter() - _last[0]
    with open(sys.argv[1], "w", encoding="utf-8") as out:
        out.write(repr({"stages": [(s, _spent[s]) for s in _order], "exit": exiting, "code": _code[0]}))

import atexit
atexit.register(_report)
sys.meta_path.insert(0, _Hook())
_code = [0]
_enter("import j6doctor.cli")
import j6doctor.cli
_leave()
try:
    j6doctor.cli.main(sys.argv[2:])
except SystemExit as exc:
    _code[0] = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
_charge()
sys.stderr.write("@@stage exit\n"); sys.stderr.flush()
'''


START_UP = "interpreter start-up and teardown (the rest of the process)"
EXIT = "exit: the product's exit handlers (worker shutdown, ...)"


def parse_importtime(stderr: str) -> dict[str, list[tuple[str, float]]]:
    """stage -> [(top-level module, cumulative seconds)] from -X importtime lines between markers."""
    stage, found = START_UP, {}
    for line in stderr.splitlines():
        if line.startswith("@@stage "):
            stage = line[len("@@stage "):]
        elif line.startswith("import time:") and line.count("|") >= 2:
            _, cumulative, name = line.split("|", 2)
            if not cumulative.strip().isdigit():
                continue  # the header line
            if len(name) - len(name.lstrip(" ")) == 1:  # top level: not imported by another import
                found.setdefault(stage, []).append((name.strip(), int(cumulative) / 1e6))
    return found


def cold_diagnosis_stages(ctx: Context, bare: float) -> Table:
    """`bare`: wall seconds of `python -c pass`, shown beside the start-up and teardown."""
    runs = 1 if ctx.args.smoke else 5
    progress(f"cold start: stages of one diagnosis, {runs} fresh processes under -X importtime")
    per_stage: dict[str, list[float]] = {}
    imports: dict[str, list[float]] = {}
    heavy: dict[str, dict[str, list[float]]] = {}
    order: list[str] = []
    for k in range(runs):
        result_file, err_file = ctx.tmp / f"stages_{k}.txt", ctx.tmp / f"stages_{k}.err"
        sample = run_child([sys.executable, "-X", "importtime", "-c", _STAGES_CHILD, result_file,
                            "diagnose", EXAMPLE_CASE, "--format", "json", "--no-env"], stderr=err_file)
        data = ast.literal_eval(result_file.read_text(encoding="utf-8"))
        if data["code"] != 0:
            raise BenchError(f"the staged diagnosis exited {data['code']}: "
                             f"{err_file.read_text(encoding='utf-8', errors='replace')[-1500:]}")
        stages = [*data["stages"], (EXIT, data["exit"])]
        stages.insert(0, (START_UP, max(0.0, sample.wall - sum(seconds for _, seconds in stages))))
        found = parse_importtime(err_file.read_text(encoding="utf-8", errors="replace"))
        for stage, seconds in stages:
            if stage not in order:
                order.append(stage)
            per_stage.setdefault(stage, []).append(seconds)
            imports.setdefault(stage, []).append(sum(s for _, s in found.get(stage, [])))
            for module, s in found.get(stage, []):
                shown = module if module.startswith("j6doctor") else module.split(".")[0]
                heavy.setdefault(stage, {}).setdefault(shown, []).append(s)
        per_stage.setdefault("whole process (wall)", []).append(sample.wall)
    order.append("whole process (wall)")
    table = Table(f"1b. Where one cold `j6doctor diagnose {EXAMPLE_CASE.name} --format json --no-env` spends "
                  f"its time (median of {runs} fresh processes)",
                  ["stage (in the order it first runs)", "ms", "of which imports ms", "heaviest imports (ms)"])
    for stage in order:
        values = per_stage[stage]
        top = sorted(((statistics.median(v + [0.0] * (len(values) - len(v))), m)
                      for m, v in heavy.get(stage, {}).items()), reverse=True)[:3]
        table.add(stage, ms(statistics.median(values)),
                  ms(statistics.median(imports[stage])) if stage in imports else "",
                  ", ".join(f"{m} {s * 1000:.0f}" for s, m in top if s >= 0.0005))
        if stage == START_UP:
            table.add("  for scale: a bare interpreter, python -c pass (table 1)", ms(bare), "", "")
    table.notes.append("Timers wrap the product's own calls (config, rule base, case, diagnose, render, write) "
                       "as their modules are imported; nothing is imported ahead of the product. Imports are "
                       "charged to the stage that triggered them (-X importtime, top-level imports only; it "
                       "adds a little overhead). `other` is the rest of the command: argument parsing, the "
                       "command's own imports, glue. Time in the engine's worker process is part of `diagnose`; "
                       "start-up is the whole process minus everything measured inside it.")
    return table


# ---------------------------------------------------------------------------- 2. workdir
def generate_workdir(folder: Path, rows: int) -> Path:
    """tests/synthetic.write_workdir in a child process (a 1M-row table needs GBs to build)."""
    code = ("import sys; from pathlib import Path; sys.path.insert(0, sys.argv[1]); "
            "from synthetic import write_workdir; write_workdir(Path(sys.argv[2]), int(sys.argv[3]))")
    subprocess.run([sys.executable, "-c", code, str(TESTS), str(folder), str(rows)], check=True)
    return folder


def split_variants(folder: Path) -> dict[str, Path]:
    """write_workdir's folder holds the compare table as csv and as psql txt: one folder with
    only the csv, one with only the txt (the sensitivity table in both)."""
    txt = folder.with_name(folder.name + "_txt")
    txt.mkdir()
    shutil.move(str(folder / "compare_per_layer_out.txt"), txt / "compare_per_layer_out.txt")
    for other in folder.iterdir():
        if other.name != "compare_per_layer_out.csv":
            shutil.copy2(other, txt / other.name)
    return {"csv": folder, "txt": txt}


def doctor_workdir(ctx: Context, folder: Path) -> list[str]:
    return [*ctx.doctor, "diagnose", "--workdir", folder, "--format", "json", "--no-env"]


def refusal(ctx: Context, folder: Path, name: str) -> str | None:
    """Run once (also the warm-up): None if the compare table was read, else j6doctor's reason."""
    out = ctx.tmp / "refusal_check.json"
    run_child(doctor_workdir(ctx, folder), stdout=out)
    report = json.loads(out.read_text(encoding="utf-8"))
    out.unlink()
    for warning in report.get("warnings", []):
        if name in warning and ("无法使用" in warning or "refus" in warning):
            return warning
    if not any(a.get("path", "").endswith(name) for a in report.get("artifacts", [])):
        return f"{name} was not recognised"
    return None


def section_workdir(ctx: Context) -> list[Table]:
    sizes = ctx.args.sizes or [s for s in WORKDIR_SIZES if not (ctx.args.quick and s >= 1_000_000)]
    table = Table("2. diagnose --workdir vs the pandas read floor (fresh processes, median of interleaved pairs)",
                  ["compare rows", "file", "MB", "pairs", "j6doctor s (wall / CPU)", "floor s (wall / CPU)",
                   "× floor (CPU)", "× floor (wall)", "peak MB j6doctor / floor", "× peak", "target", "result"])
    for rows in sizes:
        progress(f"workdir: generating {rows:,} rows")
        base = generate_workdir(ctx.tmp / f"qa_{rows}", rows)
        folders = split_variants(base)
        csv = folders["csv"] / "compare_per_layer_out.csv"
        floor = [sys.executable, "-c", f"import pandas; pandas.read_csv({str(csv)!r})"]
        repeat = ctx.repeat(9, 3) if rows <= 20_000 else ctx.repeat(5, 3) if rows <= 100_000 else ctx.repeat(3, 3)
        for variant, folder in folders.items():
            name = f"compare_per_layer_out.{variant}"
            size = (folder / name).stat().st_size / 1e6
            limit = WORKDIR_TARGETS.get(rows)
            mem_limit = WORKDIR_MEMORY_TARGET[1] if rows == WORKDIR_MEMORY_TARGET[0] else None
            label = f"workdir {rows:,} rows, {variant}"
            progress(f"workdir: {rows:,} rows, {variant}: a check run, then {repeat} pairs")
            refused = refusal(ctx, folder, name)
            if refused is not None:
                table.add(f"{rows:,}", variant, f"{size:.1f}", 0, "refused by j6doctor", "", "", "", "", "",
                          f"≤ {limit}×" if limit else "", "FAIL" if limit or mem_limit else "")
                table.notes.append(f"{rows:,} rows, {variant}: {refused}")
                if limit:
                    ctx.targets.append(Target(f"{label} / pandas floor (CPU)", "refused", f"≤ {limit}×", False))
                if mem_limit:
                    ctx.targets.append(Target(f"{label}: peak RSS / pandas", "refused", f"≤ {mem_limit}×", False))
                continue
            result = paired(floor, doctor_workdir(ctx, folder), repeat, warmup=1 if rows <= 100_000 else 0)
            ratio = result.ratio("cpu")
            rss_ratio = result.median("product", "rss_kb") / result.median("floor", "rss_kb")
            verdicts = []
            if limit:
                t = Target(f"{label} / pandas floor (CPU)", f"{ratio:.2f}×", f"≤ {limit}×", ratio <= limit)
                ctx.targets.append(t)
                verdicts.append(("≤ " + f"{limit}×", t.result))
            if mem_limit:
                t = Target(f"{label}: peak RSS / pandas", f"{rss_ratio:.2f}×", f"≤ {mem_limit}×",
                           rss_ratio <= mem_limit)
                ctx.targets.append(t)
                verdicts.append((f"peak ≤ {mem_limit}×", t.result))
            table.add(f"{rows:,}", variant, f"{size:.1f}", repeat,
                      f"{secs(result.median('product', 'wall'))} / {secs(result.median('product', 'cpu'))}",
                      f"{secs(result.median('floor', 'wall'))} / {secs(result.median('floor', 'cpu'))}",
                      times(ratio), times(result.ratio("wall")),
                      f"{mb(result.median('product', 'rss_kb'))} / {mb(result.median('floor', 'rss_kb'))}",
                      times(rss_ratio), ", ".join(v[0] for v in verdicts), ", ".join(v[1] for v in verdicts))
        shutil.rmtree(folders["csv"])
        shutil.rmtree(folders["txt"])
    table.notes.insert(0, "floor: python -c \"import pandas; pandas.read_csv(CSV)\" on the csv of the same rows "
                          "(also for the txt variant); j6doctor: j6doctor diagnose --workdir DIR --format json "
                          "--no-env, DIR holding the compare table in one format plus the sensitivity table "
                          "(tests/synthetic.py write_workdir). 1,000 rows is informational.")
    return [table]


# ---------------------------------------------------------------------------- 3. rule engine
# A made-up, domain-agnostic vocabulary: six input types with the same shape (a name, a unit
# to join on, three enum-like fields, one number) and two derived types.
KINDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta"]
STATES = ["open", "closed", "pending", "unknown"]
LEVELS = ["low", "mid", "high", "critical"]
INPUT_TYPES = ["reading", "event", "device", "sample", "job", "ticket"]
THRESHOLDS = [10, 25, 50, 75, 90]
NUMERIC_OPS = ["gt", "ge", "lt", "le"]


def synthetic_vocabulary():
    from j6doctor.engine import Vocabulary

    def enum(values: list[str]) -> dict:
        return {"values": {v: {"label": v.upper()} for v in values}}

    input_fields = {
        "name": {"type": "str", "required": True},
        "unit": {"type": "str", "required": True},
        "kind": {"type": "enum", "enum": "kind", "default": "alpha"},
        "state": {"type": "enum", "enum": "state", "default": "unknown"},
        "level": {"type": "enum", "enum": "level", "default": "low"},
        "value": {"type": "number", "default": 0.0},
    }
    types = {t: {"origin": "input", "fields": dict(input_fields)} for t in INPUT_TYPES}
    types["flag"] = {"origin": "derived", "fields": {
        "unit": {"type": "str", "required": True},
        "kind": {"type": "enum", "enum": "kind", "default": "alpha"},
        "level": {"type": "enum", "enum": "level", "default": "low"},
        "source": {"type": "str", "required": True}}}
    types["alert"] = {"origin": "derived", "fields": {
        "unit": {"type": "str", "required": True},
        "level": {"type": "enum", "enum": "level", "default": "low"},
        "text": {"type": "str", "required": True}}}
    return Vocabulary.from_data({"enums": {"kind": enum(KINDS), "state": enum(STATES),
                                           "level": enum(LEVELS)}, "types": types})


def synthetic_rules(n_rules: int, seed: int = 7) -> list[dict]:
    """n rules of 2-3 conditions: a type with one or two equality tests on enum fields and
    one numeric comparison, then joins on the unit ({ref: a.unit}) and/or a `not:`. About a
    quarter conclude `flag` facts that other rules join on or negate (a second stratum)."""
    rng = random.Random(seed * 100_003 + n_rules)
    rules = []
    for i in range(n_rules):
        first = {"kind": rng.choice(KINDS)}
        if rng.random() < 0.6:
            first["state"] = rng.choice(STATES)
        first["value"] = {rng.choice(NUMERIC_OPS): rng.choice(THRESHOLDS)}
        when: list[dict] = [{rng.choice(INPUT_TYPES): first, "as": "a"}]
        uses_flag = False

        def join() -> dict:
            nonlocal uses_flag
            if rng.random() < 0.2:
                uses_flag = True
                return {"flag": {"unit": {"ref": "a.unit"}, "level": rng.choice(LEVELS)}, "as": "b"}
            tests: dict = {"unit": {"ref": "a.unit"}, "level": rng.choice(LEVELS)}
            if rng.random() < 0.25:
                tests["value"] = {"gt": {"ref": "a.value"}}
            return {rng.choice(INPUT_TYPES): tests, "as": "b"}

        def negation() -> dict:
            nonlocal uses_flag
            if rng.random() < 0.3:
                uses_flag = True
                return {"not": {"flag": {"unit": {"ref": "a.unit"}, "level": rng.choice(LEVELS)}}}
            return {"not": {rng.choice(INPUT_TYPES): {"unit": {"ref": "a.unit"},
                                                      "state": rng.choice(STATES)}}}

        with_join = rng.random() < 0.7
        when.append(join() if with_join else negation())
        if rng.random() < 0.5:
            when.append(negation() if with_join else join())
        if not uses_flag and rng.random() < 0.3:
            then = [{"flag": {"unit": {"ref": "a.unit"}, "kind": {"ref": "a.kind"},
                              "level": rng.choice(LEVELS), "source": f"s{i}"}}]
        else:
            then = [{"alert": {"unit": {"ref": "a.unit"}, "level": rng.choice(LEVELS),
                               "text": f"s{i}: ${{a.name}} is ${{a.state|label}}"}}]
        rules.append({"id": f"syn.r{i}", "title": f"synthetic rule {i}", "when": when, "then": then})
    return rules


def write_rule_files(folder: Path, rules: list[dict], per_file: int = 50) -> Path:
    import yaml

    folder.mkdir(parents=True, exist_ok=True)
    for start in range(0, len(rules), per_file):
        doc = {"title": f"synthetic rules {start}..", "seed": "synthetic",
               "rules": rules[start:start + per_file]}
        (folder / f"syn_{start // per_file:03d}.yaml").write_text(
            yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=120), encoding="utf-8")
    return folder


def synthetic_facts(vocab, n_facts: int, seed: int = 11) -> list:
    """n input facts cycling over the input types, about 8 facts per unit."""
    from j6doctor.engine import Fact, Source

    rng = random.Random(seed * 100_003 + n_facts)
    units = max(2, n_facts // 8)
    facts = []
    for i in range(n_facts):
        type_name = INPUT_TYPES[i % len(INPUT_TYPES)]
        fields = {"name": f"n{i}", "unit": f"u{rng.randrange(units)}", "kind": rng.choice(KINDS),
                  "state": rng.choice(STATES), "level": rng.choice(LEVELS),
                  "value": round(rng.uniform(0, 100), 1)}
        facts.append(Fact(f"f{i}", type_name, vocab.complete(type_name, fields), Source("user")))
    return facts


def _timed(function, *args, clock=time.process_time, **kwargs):
    """(value, seconds): CPU seconds of this process by default (steady on a busy machine)."""
    started = clock()
    value = function(*args, **kwargs)
    return value, clock() - started


def section_engine(ctx: Context) -> list[Table]:
    from j6doctor.engine import ENGINES, EngineError, RuleBase, available, describe_engine
    from j6doctor.engine.runtime import run as run_inline

    smoke = ctx.args.smoke
    runs = ctx.repeat(7, 3)
    rule_counts = [10] if smoke else [50, 200, 500, 1_000]
    fact_counts = [20] if smoke else [100, 1_000]
    engines = [e for e in ENGINES if available(e)]
    vocab = synthetic_vocabulary()
    facts = {n: synthetic_facts(vocab, n) for n in fact_counts}
    table = Table(f"3. Rule engine scale (synthetic rules and vocabulary; runs: median of {runs})",
                  ["engine", "rules", "rulesets per stratum", "compile s", "cached load s", "facts",
                   "first run ms", "run ms", "run in worker ms (wall)", "firings", "derived facts",
                   "ms / firing"])
    warm_folder = write_rule_files(ctx.tmp / "rules_warmup", synthetic_rules(10, seed=99))
    folders = {n: write_rule_files(ctx.tmp / f"rules_{n}", synthetic_rules(n)) for n in rule_counts}
    for engine in engines:
        # Warm-up on a small rule base: imports, the engine's host, first-use allocations, the worker.
        warm = RuleBase.load([warm_folder], vocab, engine=engine)
        run_inline(warm.compiled, vocab, facts[fact_counts[-1]])
        warm.run(facts[fact_counts[-1]])
        for n_rules in rule_counts:
            progress(f"engine: {engine}: {n_rules} rules: compile, cached load")
            name = describe_engine(engine).split(" (")[0]
            os.environ["J6DOCTOR_CACHE"] = "0"
            try:
                rulebase, compile_s = _timed(RuleBase.load, [folders[n_rules]], vocab, engine=engine)
            except EngineError as exc:  # RuleBaseErrors included: beyond what this engine can take
                table.add(name, f"{n_rules:,}", "", "refused", "", "", "", "", "", "", "", "")
                table.notes.append(f"{name}, {n_rules:,} rules: refused at load: {str(exc).splitlines()[0]}")
                continue
            finally:
                os.environ.pop("J6DOCTOR_CACHE")
            RuleBase.load([folders[n_rules]], vocab, engine=engine)  # stores it in the cache
            rulebase, cached_s = _timed(RuleBase.load, [folders[n_rules]], vocab, engine=engine)
            shape = "+".join(str(len(s)) for s in rulebase.compiled.strata)
            for k, n_facts in enumerate(fact_counts):
                progress(f"engine: {engine}: {n_rules} rules × {n_facts} facts: {runs} runs inline, "
                         f"{runs} in the worker")
                try:
                    result, first_s = _timed(run_inline, rulebase.compiled, vocab, facts[n_facts])
                    inline = [_timed(run_inline, rulebase.compiled, vocab, facts[n_facts])[1] for _ in range(runs)]
                    rulebase.run(facts[n_facts])  # the worker registers the rule base on its first run
                    worker = [_timed(rulebase.run, facts[n_facts], clock=time.perf_counter)[1] for _ in range(runs)]
                except EngineError as exc:
                    table.add(name if k == 0 else "", f"{n_rules:,}" if k == 0 else "", "", "", "", f"{n_facts:,}",
                              "failed", "", "", "", "", "")
                    table.notes.append(f"{name}, {n_rules:,} rules × {n_facts:,} facts: {str(exc).splitlines()[0]}")
                    continue
                firings = len(result.firings)
                run_s = statistics.median(inline)
                table.add(name if k == 0 else "",
                          f"{n_rules:,}" if k == 0 else "", shape if k == 0 else "",
                          secs(compile_s) if k == 0 else "", secs(cached_s) if k == 0 else "",
                          f"{n_facts:,}", ms(first_s), ms(run_s), ms(statistics.median(worker)),
                          f"{firings:,}" + (" (truncated)" if result.truncated else ""),
                          f"{len(result.facts) - n_facts:,}", f"{run_s * 1000 / firings:.3f}" if firings else "-")
    table.notes.append("Times are CPU time of this process (time.process_time), except the worker run (wall: "
                       "it runs in another process). "
                       "compile: RuleBase.load without the cache (YAML, schema and vocabulary checks, "
                       "stratification, engine-limit checks, compilation); cached load: the same from the "
                       "compiled rule base cache; first run: the engine builds its program (durable-rules "
                       "rulesets / CLIPS environments) then runs; run: in this process (runtime.run); run in "
                       "worker: RuleBase.run, what a diagnosis does (the engine's worker process). No natural "
                       "floor: informational.")
    return [table]


# ---------------------------------------------------------------------------- 4. triage
def section_triage(ctx: Context) -> list[Table]:
    copies = 20 if ctx.args.smoke else TRIAGE_COPIES
    title = f"4. Triage of {copies:,} copies of the bundled example cases"
    table = Table(title, ["command", "runs", "wall s", "CPU s", "peak RSS MB", "exit", "files in --out",
                          "ms / case (wall)", "target", "result"])
    help_run = run_child([*ctx.doctor, "triage", "--help"], ok_codes=None)
    if help_run.rc != 0:
        table.add("j6doctor triage", 0, "not available", "", "", "", "", "", f"≤ {TRIAGE_TARGET_S:g} s", "n/a")
        table.notes.append("this j6doctor has no `triage` command (`j6doctor triage --help` exited "
                           f"{help_run.rc}); nothing measured")
        ctx.targets.append(Target(f"triage of {copies:,} cases (wall)", "not available",
                                  f"≤ {TRIAGE_TARGET_S:g} s", None))
        return [table]
    cases = sorted(p for p in CASES.iterdir()  # the case files, not their expected reports
                   if p.suffix in (".yaml", ".yml", ".json") and ".expected." not in p.name)
    folder = ctx.tmp / "triage_cases"
    folder.mkdir()
    for k in range(copies):
        source = cases[k % len(cases)]
        shutil.copy2(source, folder / f"case{k:04d}_{source.name}")
    repeat = ctx.repeat(3, 1)
    samples, outputs = [], []
    warmup = 0 if ctx.args.smoke else 1  # the first run warms up (not counted) ...
    for k in range(warmup + repeat):
        out = ctx.tmp / f"triage_out_{k}"
        progress(f"triage: {copies:,} cases, run {k + 1} of {warmup + repeat}")
        sample = run_child([*ctx.doctor, "triage", folder, "--out", out], ok_codes=None)
        files = sum(1 for p in out.rglob("*") if p.is_file()) if out.exists() else 0
        shutil.rmtree(out, ignore_errors=True)
        if k < warmup and sample.wall <= 3 * TRIAGE_TARGET_S:
            continue
        samples.append(sample)  # ... unless it took so long that the repeats would not tell more
        outputs.append(files)
        if k < warmup:
            repeat = 1
            break
    wall = statistics.median(s.wall for s in samples)
    codes = sorted({s.rc for s in samples})
    worked = all(s.rc in (0, 2) for s in samples) and min(outputs) > 0
    measured = f"{wall:.2f} s" if worked else f"did not work (exit {','.join(map(str, codes))})"
    target = Target(f"triage of {copies:,} cases with --out (wall)", measured, f"≤ {TRIAGE_TARGET_S:g} s",
                    worked and wall <= TRIAGE_TARGET_S)
    ctx.targets.append(target)
    table.add("j6doctor triage DIR --out OUT", repeat, secs(wall), secs(statistics.median(s.cpu for s in samples)),
              mb(statistics.median(s.rss_kb for s in samples)), ",".join(map(str, codes)), min(outputs),
              f"{wall * 1000 / copies:.1f}", f"≤ {TRIAGE_TARGET_S:g} s", target.result)
    table.notes.append(f"DIR: {copies:,} files, the {len(cases)} bundled cases of examples/cases copied in turn; "
                       f"-j left at its default; {os.cpu_count()} CPUs here; a warm-up run first (not counted unless "
                       f"it took over {3 * TRIAGE_TARGET_S:g} s)")
    if not worked:
        table.notes.append("the run did not work (exit other than 0 / 2, or nothing written): "
                           + samples[0].stderr.strip()[-500:])
    return [table]


# ---------------------------------------------------------------------------- 5. memory
def _status_kb(key: str) -> int | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def vm_rss_kb() -> int | None:
    return _status_kb("VmRSS")


def peak_rss_kb() -> int:
    """The process's high-water RSS: VmHWM, else ru_maxrss (which the kernel updates lazily)."""
    hwm = _status_kb("VmHWM")
    if hwm is not None:
        return hwm
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak // 1024 if sys.platform == "darwin" else peak  # bytes on macOS, KiB on Linux


def memory_rows(count: int) -> dict:
    """Run in a fresh process (see section_memory): the numbers of section 5 as data."""
    import yaml

    from j6doctor.diagnosis import diagnose_data, load_rulebase
    from j6doctor.report import render_json

    data = yaml.safe_load(EXAMPLE_CASE.read_text(encoding="utf-8"))
    rulebase = load_rulebase()
    loaded_kb = vm_rss_kb()
    diagnose_data(data, rulebase, display=EXAMPLE_CASE.name, base=EXAMPLE_CASE.parent)
    first_kb = vm_rss_kb()

    def one(with_report: bool) -> None:
        diagnosis = diagnose_data(data, rulebase, display=EXAMPLE_CASE.name, base=EXAMPLE_CASE.parent)
        if with_report:
            render_json(diagnosis)

    rows = []
    for name, with_report in [("diagnose_data", False), ("diagnose_data + render_json", True)]:
        progress(f"memory: {name}: warm-up, then {count:,} diagnoses")
        for _ in range(20):  # caches, lazy imports, first registration
            one(with_report)
        gc.collect()
        before, objects_before = vm_rss_kb(), len(gc.get_objects())
        spent = []
        for _ in range(count):
            started = time.perf_counter()
            one(with_report)
            spent.append(time.perf_counter() - started)
        gc.collect()
        after, objects_after = vm_rss_kb(), len(gc.get_objects())
        growth = (after - before) / count if before is not None and after is not None else None
        rows.append([name, f"{before / 1024:.1f}" if before else "-", f"{after / 1024:.1f}" if after else "-",
                     f"{growth:.2f}" if growth is not None else "-", f"{peak_rss_kb() / 1024:.1f}",
                     f"{objects_after - objects_before:+,}",
                     f"{statistics.median(spent) * 1000:.2f} (mean {statistics.fmean(spent) * 1000:.2f})"])
    return {"rows": rows, "loaded_mb": loaded_kb / 1024 if loaded_kb else None,
            "first_mb": first_kb / 1024 if first_kb else None}


def section_memory(ctx: Context) -> list[Table]:
    """In a child process, so that what earlier sections loaded does not count."""
    count = 20 if ctx.args.smoke else 200 if ctx.args.quick else 1_000
    out = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--memory-child", str(count)],
                         check=True, stdout=subprocess.PIPE, text=True).stdout
    result = json.loads(out.strip().splitlines()[-1])
    table = Table(f"5. Memory: {count:,} diagnoses of {EXAMPLE_CASE.name} in one fresh process",
                  ["loop", "VmRSS before MB", "VmRSS after MB", "growth KB / diagnosis",
                   "peak RSS MB", "Python objects +", "ms / diagnosis"], rows=result["rows"])
    if result["loaded_mb"] and result["first_mb"]:
        table.notes.append(f"process RSS after importing j6doctor.diagnosis and loading the bundled rule "
                           f"base: {result['loaded_mb']:.1f} MB; after the first diagnosis: "
                           f"{result['first_mb']:.1f} MB")
    table.notes.append("before: after 20 warm-up diagnoses and gc.collect(); peak: VmHWM (high-water RSS) of "
                       "this process (the engine's worker process is not counted); Python objects: "
                       "gc-tracked objects after minus before. Informational.")
    return [table]


# ---------------------------------------------------------------------------- 6. largest inputs
def section_largest(ctx: Context) -> list[Table]:
    from bench_largest_inputs import GENERATORS, limit_of

    kinds = ctx.args.kinds.split(",") if ctx.args.kinds else list(GENERATORS)
    unknown = [k for k in kinds if k not in GENERATORS]
    if unknown:
        raise BenchError(f"--kinds: unknown {', '.join(unknown)}; known: {', '.join(GENERATORS)}")
    floor = run_child([*ctx.doctor, "--help"]).rss_kb
    table = Table("6. Largest accepted input of each kind: one `diagnose --workdir` run each",
                  ["kind", "limit MiB", "file MiB", "peak RSS MiB", "× --help", "wall s", "CPU s", "read"])
    worst, worst_kind = 0, ""
    for kind in kinds:
        name, generate, spec = GENERATORS[kind]
        limit = limit_of(spec)
        folder = ctx.tmp / f"largest_{kind}"
        folder.mkdir()
        path = folder / name
        progress(f"largest inputs: {kind}: generating {limit / 2**20:.0f} MiB, then one run")
        try:
            path.write_text(generate(limit), encoding="utf-8")
        except Exception as exc:  # a generator that no longer fits the format: say so, go on
            table.add(kind, f"{limit / 2**20:.0f}", "", "", "", "", "", f"not generated: {exc}")
            continue
        report = ctx.tmp / "largest_report.json"
        sample = run_child(doctor_workdir(ctx, folder), stdout=report)
        warnings = json.loads(report.read_text(encoding="utf-8")).get("warnings", [])
        refused = [w for w in warnings if name in w and "无法使用" in w]
        if sample.rss_kb * 1024 > worst:
            worst, worst_kind = sample.rss_kb * 1024, kind
        table.add(kind, f"{limit / 2**20:.0f}", f"{path.stat().st_size / 2**20:.1f}", mb(sample.rss_kb),
                  f"{sample.rss_kb / floor:.1f}", secs(sample.wall), secs(sample.cpu), "refused" if refused else "read")
        if refused:
            table.notes.append(f"{kind}: {refused[0]}")
        shutil.rmtree(folder)
    ctx.targets.append(Target("largest accepted input of any kind: peak RSS", f"{worst / 2**20:.0f} MiB ({worst_kind})",
                              f"< {LARGEST_TARGET_BYTES / 2**20:.0f} MiB", worst < LARGEST_TARGET_BYTES))
    table.notes.append(f"each file just under its reader's size limit (benchmarks/bench_largest_inputs.py); "
                       f"× --help: against the peak RSS of `j6doctor --help` ({floor / 1024:.0f} MiB)")
    return [table]


# ---------------------------------------------------------------------------- 7. case library
# The floor: the rule base run on every stored case's facts, one case after the other, in one
# process with the engine inline; what no rediagnose can avoid.
_LIBRARY_FLOOR = r'''
import json, os, sqlite3, sys
os.environ["J6DOCTOR_ENGINE_PROCESS"] = "inline"
from j6doctor.diagnosis import load_rulebase
from j6doctor.engine import Fact, Source
rulebase = load_rulebase([], sys.argv[2])
connection = sqlite3.connect(sys.argv[1])
for (facts_json,) in connection.execute("SELECT facts_json FROM cases ORDER BY id"):
    rulebase.run([Fact(f["id"], f["type"], f["fields"], Source(**f["source"]) if f["source"] else None)
                  for f in json.loads(facts_json)])
'''


def library_store(ctx: Context, count: int) -> tuple[Path, Sample]:
    """A SQLite case library of `count` distinct cases: the bundled examples triaged into a
    store, exported, copied (tests/synthetic.library_copies) and imported (the import measured)."""
    from synthetic import library_copies

    seed = ctx.tmp / "library_seed.db"
    run_child([*ctx.doctor, "triage", CASES, "--store", seed, "-q"], ok_codes=(0, 2))
    exported = ctx.tmp / "library_seed.jsonl"
    run_child([*ctx.doctor, "cases", "export", "--store", seed, "-o", exported])
    lines = exported.read_text(encoding="utf-8").splitlines()
    copies = ctx.tmp / "library_copies.jsonl"
    with copies.open("w", encoding="utf-8") as out:
        out.writelines(library_copies(lines, count))
    store = ctx.tmp / f"library_{count}.db"
    progress(f"case library: importing {count:,} cases")
    imported = run_child([*ctx.doctor, "cases", "import", copies, "--store", store])
    copies.unlink()
    return store, imported


def section_real_reports(ctx: Context) -> list[Table]:
    """Accuracy, not speed: the development set of real reports in both forms (in this process:
    the numbers do not depend on the machine)."""
    import real_report_accuracy as accuracy

    table = Table("8. real reports: accuracy on the development set (benchmarks/real_reports/)",
                  ["form", "reports", "stage right", "other checks"])
    for form in accuracy.FORMS:
        progress(f"real reports: {form}")
        right, reports, met, checks = accuracy.totals(accuracy.run(form))
        table.add(form, reports, f"{right}/{reports} = {right / reports:.0%}", f"{met}/{checks} = {met / checks:.0%}")
        ctx.targets.append(Target(f"real reports, {form}: stage right", f"{right / reports:.0%}",
                                  f"≥ {REAL_REPORT_TARGET:.0%}", right / reports >= REAL_REPORT_TARGET))
        ctx.targets.append(Target(f"real reports, {form}: other checks", f"{met / checks:.0%}",
                                  f"≥ {REAL_REPORT_TARGET:.0%}", met / checks >= REAL_REPORT_TARGET))
    table.notes.append("case: the case file a support engineer would write; words: the reporter's own words "
                       "alone as the symptom. `python benchmarks/real_report_accuracy.py -v` lists what each "
                       "report misses.")
    held = Table("8b. real reports held out (benchmarks/real_reports_heldout/: labelled before j6doctor ran)",
                 ["form", "reports", "stage right", "other checks"])
    for form in accuracy.FORMS:
        progress(f"held-out reports: {form}")
        right, reports, met, checks = accuracy.totals(accuracy.run(form, HELD_OUT_REPORTS))
        held.add(form, reports, f"{right}/{reports} = {right / reports:.0%}",
                 f"{met}/{checks} = {met / checks:.0%}" if checks else "—")
        ctx.targets.append(Target(f"held-out reports, {form}: stage right", f"{right / reports:.0%}",
                                  f"≥ {REAL_REPORT_TARGET:.0%}", right / reports >= REAL_REPORT_TARGET))
    held.notes.append("measured, not tuned against: see benchmarks/real_reports_heldout/README.md for what each "
                      "batch has and has not been seen by")
    return [table, held]


def _posts() -> dict[str, str]:
    """Two 64 KB posts from bundled inputs: the reporters' words of the development set with
    the real tool logs of the format fixtures pasted between them (as users paste), and the
    words alone (dense prose, every sentence a statement)."""
    import yaml

    words = [yaml.safe_load(p.read_text(encoding="utf-8"))["words"] for p in sorted(accuracy_reports().glob("*.yaml"))]
    logs = [p.read_text(encoding="utf-8", errors="replace")
            for p in sorted((TESTS / "fixtures" / "formats" / "real").glob("*/*.log"))]
    size = 64 * 1024

    def filled(pieces) -> str:
        out, i = [], 0
        while sum(map(len, out)) < size:
            out.append(pieces(i))
            i += 1
        return "\n\n".join(out)[:size]

    return {"words and pasted logs": filled(lambda i: words[i % len(words)] + "\n```\n" + logs[i % len(logs)] + "\n```"),
            "words only (dense prose)": filled(lambda i: words[i % len(words)])}


def accuracy_reports() -> Path:
    return BENCH_DIR / "real_reports"


def reading_numbers(repeat: int) -> dict:
    """Run in a fresh child process (`--reading-child`), as a diagnosis runs: one reading of
    each 64 KB post and every text rule over it, as a diagnosis reads it (the pasted tool
    output its probes read found and left to them), against a floor that only splits the same
    text into words; and a diagnosis with and without the example's symptom."""
    import yaml

    from j6doctor.diagnosis import diagnose_data, load_rulebase
    from j6doctor.engine.backends import resolve
    from j6doctor.engine.facts import Fact, Source
    from j6doctor.engine.text_reader import read
    from j6doctor.engine.text_rules import Readings, find_matches, texts_of
    from j6doctor.probes.code_blocks import prose
    from j6doctor.probes.pasted_output import read_blocks

    rulebase = load_rulebase(engine=resolve(None))
    index = rulebase.vocab.text.index
    posts = []
    for name, post in _posts().items():
        fact = Fact(id="f1", type="symptom", fields={"text": post}, source=Source("case", key="symptom"))
        floors, reads, totals = [], [], []
        for _ in range(repeat):
            started = time.perf_counter()
            len(re.findall(r"\w+", post.lower()))
            floors.append(time.perf_counter() - started)
            started = time.perf_counter()
            # (app/evidence.py: the text rules read the words around a tool's pasted output)
            reading = read(prose(post, read_blocks(post)), index)
            reads.append(time.perf_counter() - started)
            shared = Readings(rulebase.vocab.text, {post: reading})
            inputs = texts_of(rulebase.compiled.text_fields, [fact])
            for compiled in rulebase.compiled.text_rules:
                find_matches(compiled, inputs, shared)
            totals.append(time.perf_counter() - started)
        posts.append({"name": name, "characters": len(post), "terms": len(reading.tags),
                      "floor": statistics.median(floors), "read": statistics.median(reads),
                      "total": statistics.median(totals)})
    case = yaml.safe_load(EXAMPLE_CASE.read_text(encoding="utf-8"))
    bare = {k: v for k, v in case.items() if k != "symptom"}
    for data in (case, bare):  # warm-up: the first diagnosis of a process pays its lazy imports
        diagnose_data(data, display=EXAMPLE_CASE.name, base=EXAMPLE_CASE.parent, rulebase=rulebase)
    with_text, without = [], []
    for _ in range(repeat):
        for data, into in ((case, with_text), (bare, without)):
            started = time.perf_counter()
            diagnose_data(data, display=EXAMPLE_CASE.name, base=EXAMPLE_CASE.parent, rulebase=rulebase)
            into.append(time.perf_counter() - started)
    return {"posts": posts, "with_text": statistics.median(with_text), "without": statistics.median(without)}


def section_reading(ctx: Context) -> list[Table]:
    """In a child process, so that what earlier sections left in memory does not slow it
    (a diagnosis reads a post in a process of its own)."""
    repeat = 3 if ctx.args.smoke else ctx.repeat(15, 5)
    out = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--reading-child", str(repeat)],
                         check=True, stdout=subprocess.PIPE, text=True).stdout
    result = json.loads(out.strip().splitlines()[-1])
    table = Table(f"9. Reading a pasted post (in a fresh process, median of {repeat})",
                  ["text", "characters", "terms", "floor ms", "read ms", "read + text rules ms", "× floor",
                   "target", "result"])
    for post in result["posts"]:
        total = post["total"]
        target = Target(f"64 KB post ({post['name']}): read + text rules", f"{total * 1000:.0f} ms",
                        f"≤ {POST_TARGET_MS} ms", total * 1000 <= POST_TARGET_MS)
        ctx.targets.append(target)
        table.add(post["name"], f"{post['characters']:,}", f"{post['terms']:,}", ms(post["floor"]),
                  ms(post["read"]), ms(total), times(total / post["floor"]), f"≤ {POST_TARGET_MS} ms",
                  target.result)
    with_text, without = result["with_text"], result["without"]
    share = with_text / without - 1
    ctx.targets.append(Target(f"{EXAMPLE_CASE.name}: the symptom's text / the run without it", f"+{share:.0%}",
                              f"≤ +{TEXT_SHARE_TARGET:.0%}", share <= TEXT_SHARE_TARGET))
    table.notes.append("read: the post as a diagnosis reads it, its code blocks that a tool's probe reads (pasted "
                       "logs) found and blanked (app/evidence.py), the rest read once")
    table.notes.append(f"floor: the text lowered and split into words (re.findall), in the same process; "
                       f"{EXAMPLE_CASE.name} diagnosed there with its symptom {ms(with_text)} ms, without it "
                       f"{ms(without)} ms (+{share:.0%})")
    return [table]


def section_library(ctx: Context) -> list[Table]:
    count = 40 if ctx.args.smoke else 2_000 if ctx.args.quick else LIBRARY_CASES
    store, imported = library_store(ctx, count)
    floor = [sys.executable, "-c", _LIBRARY_FLOOR, store, ctx.engine]
    product = [*ctx.doctor, "cases", "rediagnose", "--store", store, "--engine", ctx.engine]
    progress(f"case library: rediagnose of {count:,} cases against the engine floor")
    result = paired(floor, product, ctx.repeat(1, 1), warmup=0)
    cpu_ratio = result.ratio("cpu")
    rss_ratio = result.median("product", "rss_kb") / result.median("floor", "rss_kb")
    cpu_target = Target(f"cases rediagnose of {count:,} cases / engine floor (CPU)", f"{cpu_ratio:.2f}×",
                        f"≤ {LIBRARY_CPU_TARGET}×", cpu_ratio <= LIBRARY_CPU_TARGET)
    rss_target = Target(f"cases rediagnose of {count:,} cases: peak RSS / engine floor's", f"{rss_ratio:.2f}×",
                        f"≤ {LIBRARY_RSS_TARGET}×", rss_ratio <= LIBRARY_RSS_TARGET)
    ctx.targets += [cpu_target, rss_target]
    table = Table(f"7. Case library: rediagnose of {count:,} stored cases (SQLite) vs the engine floor",
                  ["command", "pairs", "wall s", "CPU s", "peak RSS MB", "ms / case (wall)", "× floor (CPU)",
                   "× floor (wall)", "× peak", "result"])
    table.add("engine floor", len(result.floor), secs(result.median("floor", "wall")),
              secs(result.median("floor", "cpu")), mb(result.median("floor", "rss_kb")),
              ms(result.median("floor", "wall") / count), "", "", "", "")
    table.add("j6doctor cases rediagnose", len(result.product), secs(result.median("product", "wall")),
              secs(result.median("product", "cpu")), mb(result.median("product", "rss_kb")),
              ms(result.median("product", "wall") / count), times(cpu_ratio), times(result.ratio("wall")),
              times(rss_ratio), "PASS" if cpu_target.ok and rss_target.ok else "FAIL")
    table.add(f"j6doctor cases import ({count:,} lines)", 1, secs(imported.wall), secs(imported.cpu),
              mb(imported.rss_kb), ms(imported.wall / count), "", "", "", "")
    table.notes.append(f"the store: the bundled example cases triaged into a store, exported and copied to {count:,} "
                       "distinct cases (their files renamed), imported; rediagnose with -j at its default "
                       f"({os.cpu_count()} CPUs here); engine floor: python reading every case's facts_json with "
                       "sqlite3 and running the same rule base on them, one case after the other, engine inline; "
                       "peak RSS is the largest single process (ru_maxrss), workers included")
    return [table]


# ---------------------------------------------------------------------------- main
def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_line(engine: str) -> str:
    from importlib.metadata import version

    from j6doctor.engine import describe_engine

    try:
        pandas = f", pandas {version('pandas')}"
    except Exception:
        pandas = ""
    return (f"{cpu_model()}, {os.cpu_count()} CPUs, {platform.system()} {platform.machine()}; "
            f"Python {platform.python_version()}; engine: {describe_engine(engine)}{pandas}")


def state_line(ctx: Context) -> str:
    mode = "smoke" if ctx.args.smoke else "quick" if ctx.args.quick else "full"
    return (f"{mode} run; j6doctor = {ctx.doctor_shown}; children run installed-like: "
            "PYTHONDONTWRITEBYTECODE removed, package byte-compiled (compileall) and warm-up runs first, "
            "compiled rule base cached (private temporary XDG_CACHE_HOME), J6DOCTOR_* cleared; "
            "CPU = user + sys of the child and the processes it waits for")


def scrub_paths(table: Table, tmp: Path) -> None:
    """No machine-specific paths in the tables: the temporary folder is $TMP, the repository's
    own files are relative to it."""
    def scrub(text: str) -> str:
        return text.replace(str(tmp), "$TMP").replace(str(REPO) + os.sep, "")
    table.title = scrub(table.title)
    table.rows = [[scrub(c) for c in row] for row in table.rows]
    table.notes = [scrub(n) for n in table.notes]


def targets_table(targets: list[Target]) -> Table:
    table = Table("Targets", ["target", "measured", "target", "result"])
    for t in targets:
        table.add(t.name, t.measured, t.limit, t.result)
    return table


DOCS_INTRO = """\
# Benchmarks

Generated by `python benchmarks/bench_all.py --update-docs` from the run below: do not edit
by hand, run it again.

`python benchmarks/bench_all.py` measures every number next to its floor in one run and
checks the targets: cold start against a process that only imports yaml and the engine (and
`--help` against `python -c pass`), `diagnose --workdir` on generated QuantAnalysis folders
against `pandas.read_csv` of the same table, rule-engine scale on every installed engine,
`triage` of 1,000 cases, memory over 1,000 diagnoses, and the largest accepted input of each
kind. Options: `--quick` (fewer repeats, no 1M rows), `--sections 1,2,...`, `--markdown`,
`--check` (exit 1 when a target fails), `--update-docs` (rewrites this page from the run's
own tables). Times are medians of interleaved runs of product and floor; ratios are
medians of per-pair CPU-time ratios (user + sys), so they hold on a busy machine."""


def docs_page(ctx: Context, tables: list[Table]) -> str:
    parts = [DOCS_INTRO, "",
             f"Last run ({date.today().isoformat()}, `bench_all.py{' --quick' if ctx.args.quick else ''}`):",
             "", f"{machine_line(ctx.engine)}  ", state_line(ctx)]
    for table in [*tables, targets_table(ctx.targets)]:
        parts += ["", table.render(markdown=True, level="####")]
    return "\n".join(parts)


def update_docs(page: str) -> None:
    DOCS_PAGE.write_text(page + "\n", encoding="utf-8")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true",
                        help="fewer repeats, no 1,000,000-row workdir, 200 diagnoses in section 5")
    parser.add_argument("--sections", default=",".join(map(str, SECTIONS)),
                        help="comma-separated subset of " + ",".join(map(str, SECTIONS)))
    parser.add_argument("--markdown", action="store_true", help="print the tables as Markdown")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target fails")
    parser.add_argument("--update-docs", action="store_true",
                        help="rewrite docs/benchmarks.md from this run (all sections)")
    parser.add_argument("--sizes", help="section 2: comma-separated compare-table row counts "
                                        f"(default {','.join(map(str, WORKDIR_SIZES))})")
    parser.add_argument("--repeat", type=int, help="pairs / runs per measurement (overrides the defaults)")
    parser.add_argument("--kinds", help="section 6: comma-separated input kinds (default: all)")
    parser.add_argument("--smoke", action="store_true", help=argparse.SUPPRESS)  # tiny everything (tests)
    parser.add_argument("--memory-child", type=int, metavar="N", help=argparse.SUPPRESS)
    parser.add_argument("--reading-child", type=int, metavar="N", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    try:
        args.sections = [int(s) for s in args.sections.split(",") if s.strip()]
        args.sizes = [int(s.replace("_", "")) for s in args.sizes.split(",")] if args.sizes else None
    except ValueError:
        parser.error("--sections and --sizes take comma-separated numbers, like 1,3")
    if not args.sections or any(s not in SECTIONS for s in args.sections):
        parser.error("--sections takes numbers among " + ",".join(map(str, SECTIONS)))
    if args.smoke and not args.sizes:
        args.sizes = [200]
    if args.update_docs and (sorted(args.sections) != list(SECTIONS) or args.smoke or args.sizes or args.kinds):
        parser.error("--update-docs rewrites the whole page: run every section with the default sizes and kinds")
    if args.repeat is not None and args.repeat < 1:
        parser.error("--repeat must be 1 or more")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.memory_child:
        print(json.dumps(memory_rows(args.memory_child)))
        return 0
    if args.reading_child:
        print(json.dumps(reading_numbers(args.reading_child)))
        return 0
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="j6doctor-bench-") as tmp_name:
        tmp = Path(tmp_name)
        installed_like_environment(tmp / "cache")
        from j6doctor.engine.backends import resolve

        doctor, shown = doctor_executable()
        ctx = Context(args, tmp, doctor, shown, resolve(None))
        print(machine_line(ctx.engine))
        print(state_line(ctx), flush=True)
        warm_up(ctx)
        sections = {1: section_cold_start, 2: section_workdir, 3: section_engine, 4: section_triage,
                    5: section_memory, 6: section_largest, 7: section_library, 8: section_real_reports,
                    9: section_reading}
        tables: list[Table] = []
        for number in args.sections:
            try:
                produced = sections[number](ctx)
            except Exception as exc:  # one broken section must not lose the others' numbers
                progress(f"section {number} failed: {type(exc).__name__}: {exc}")
                failed = Table(f"{number}. {sections[number].__name__}: did not run", ["error"])
                failed.add(f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:300])
                ctx.targets.append(Target(f"section {number} ran", "error", "runs", False))
                produced = [failed]
            for table in produced:
                scrub_paths(table, tmp)
                tables.append(table)
                print()
                print(table.render(args.markdown), flush=True)
        print()
        print(targets_table(ctx.targets).render(args.markdown), flush=True)
        if args.update_docs:
            update_docs(docs_page(ctx, tables))
            progress(f"{DOCS_PAGE.relative_to(REPO)}: rewritten")
    failed = [t for t in ctx.targets if t.ok is False]
    progress(f"done in {time.perf_counter() - started:.0f} s; {len(failed)} target(s) failed")
    return 1 if args.check and failed else 0


if __name__ == "__main__":
    sys.exit(main())
