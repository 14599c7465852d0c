#!/usr/bin/env python3
"""All of j6doctor's benchmarks, one table per section (plain text, or Markdown with --markdown).

  1. cold start    `j6doctor --help` as a fresh process against `python -c pass`
  2. workdir       `j6doctor diagnose --workdir` on generated QuantAnalysis folders of
                   1,000 / 10,000 / 100,000 compare rows against the pandas read floor
                   (whole processes; the approach of bench_workdir.py)
  3. rule engine   synthetic rule bases of 50 / 200 / 500 rules over 100 / 1,000 facts, with a
                   made-up vocabulary (the engine knows nothing of the domain): load + compile,
                   registration in durable-rules, run time per diagnosis, firings
  4. memory        RSS before and after 1,000 in-process diagnoses of a bundled example

    python benchmarks/bench_all.py                      # everything (a few minutes)
    python benchmarks/bench_all.py --quick --sections 1,3
    python benchmarks/bench_all.py --markdown           # tables to paste into README.md

Timings are wall-clock seconds on whatever machine runs this; progress goes to stderr, the
tables to stdout. Generated data lives in a temporary folder that is removed at the end.
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
sys.path.insert(0, str(BENCH_DIR))
sys.path.insert(0, str(REPO / "tests"))
from bench_workdir import best_of, workdir_vs_floor  # noqa: E402
from synthetic import write_workdir  # noqa: E402  (test data generator, shared with the tests)

EXAMPLE_CASE = REPO / "examples" / "cases" / "convert_j6m.yaml"


# ---------------------------------------------------------------------------- output tables
@dataclass
class Table:
    title: str
    headers: list[str]
    rows: list[list[str]] = field(default_factory=list)
    right: list[bool] | None = None  # right-align a column (numbers); default: all but the first
    notes: list[str] = field(default_factory=list)

    def add(self, *cells: object) -> None:
        self.rows.append([str(c) for c in cells])

    def _right(self) -> list[bool]:
        return self.right or [False] + [True] * (len(self.headers) - 1)

    def render(self, markdown: bool) -> str:
        right = self._right()
        if markdown:
            lines = [f"### {self.title}", "",
                     "| " + " | ".join(self.headers) + " |",
                     "|" + "|".join(" ---: " if r else " --- " for r in right) + "|"]
            lines += ["| " + " | ".join(row) + " |" for row in self.rows]
            if self.notes:
                lines.append("")
                lines += self.notes
            return "\n".join(lines)
        widths = [max(len(h), *(len(row[k]) for row in self.rows)) if self.rows else len(h)
                  for k, h in enumerate(self.headers)]

        def line(cells: list[str]) -> str:
            return "  ".join(c.rjust(w) if r else c.ljust(w)
                             for c, w, r in zip(cells, widths, right)).rstrip()

        out = [self.title, "=" * len(self.title), line(self.headers),
               "  ".join("-" * w for w in widths)]
        out += [line(row) for row in self.rows]
        out += self.notes
        return "\n".join(out)


def progress(text: str) -> None:
    print(f"[bench] {text}", file=sys.stderr, flush=True)


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f}"


def secs(seconds: float) -> str:
    return f"{seconds:.3f}"


# ---------------------------------------------------------------------------- 1. cold start
def doctor_executable() -> list[str]:
    """The installed console script beside this interpreter, else `python -m j6doctor`."""
    script = Path(sys.executable).with_name("j6doctor")
    return [str(script)] if script.exists() else [sys.executable, "-m", "j6doctor"]


def section_cold_start(args: argparse.Namespace) -> Table:
    repeat = 5 if args.quick else 20
    doctor = doctor_executable()
    shown = "j6doctor" if len(doctor) == 1 else "python -m j6doctor"
    progress(f"cold start: best of {repeat}")
    floor = best_of([sys.executable, "-c", "pass"], repeat)
    help_s = best_of([*doctor, "--help"], repeat)
    table = Table(f"1. Cold start (fresh process, best of {repeat})", ["command", "s", "over floor s"])
    table.add("python -c pass (floor)", secs(floor), "")
    table.add(f"{shown} --help", secs(help_s), secs(help_s - floor))
    if EXAMPLE_CASE.exists():  # what a user actually waits for: one diagnosis, cold
        diag_repeat = min(repeat, 5)
        diag = best_of([*doctor, "diagnose", str(EXAMPLE_CASE), "--format", "json"], diag_repeat)
        table.add(f"{shown} diagnose {EXAMPLE_CASE.name} (best of {diag_repeat})", secs(diag),
                  secs(diag - floor))
        stages = cold_diagnosis_stages(min(repeat, 3))
        for stage, seconds in stages.items():
            table.add(f"  · {stage}", secs(seconds) if seconds >= 0.0005 else "<0.001", "")
        table.notes.append("· rows: where a cold `diagnose` spends its time, measured inside a fresh "
                           "process (fastest of 3 per stage)")
    return table


# Runs in a fresh interpreter: the stages of one cold `j6doctor diagnose CASE --format json`.
_STAGES_SCRIPT = '''
import json, sys, time
t = [time.perf_counter()]
import j6doctor.cli
t.append(time.perf_counter())
import pandas
t.append(time.perf_counter())
from j6doctor.diagnose import diagnose_file, load_rulebase
from j6doctor.report import render_json
from j6doctor.engine import runtime
t.append(time.perf_counter())
rulebase = load_rulebase()
t.append(time.perf_counter())
if hasattr(runtime, "_register"):
    runtime._register(rulebase.compiled)
t.append(time.perf_counter())
diagnosis = diagnose_file(__import__("pathlib").Path(sys.argv[1]), rulebase)
t.append(time.perf_counter())
render_json(diagnosis)
t.append(time.perf_counter())
print(json.dumps([b - a for a, b in zip(t, t[1:])]))
'''
_STAGE_NAMES = ["import j6doctor.cli", "import pandas",
                "import the rest (engine, durable-rules, probes, report)",
                "load + compile the bundled rule base", "register rulesets in durable-rules",
                "diagnose (probes + rule run + verdict)", "render JSON report"]


def cold_diagnosis_stages(repeat: int) -> dict[str, float]:
    best = [float("inf")] * len(_STAGE_NAMES)
    for _ in range(repeat):
        out = subprocess.run([sys.executable, "-c", _STAGES_SCRIPT, str(EXAMPLE_CASE)], check=True,
                             capture_output=True, text=True).stdout
        best = [min(a, b) for a, b in zip(best, json.loads(out.strip().splitlines()[-1]))]
    return dict(zip(_STAGE_NAMES, best))


# ---------------------------------------------------------------------------- 2. workdir
def section_workdir(args: argparse.Namespace, tmp: Path) -> Table:
    repeat = 3 if args.quick else 5
    sizes = [1_000, 10_000] if args.quick else [1_000, 10_000, 100_000]
    table = Table(f"2. diagnose --workdir vs pandas read floor (whole processes, best of {repeat})",
                  ["compare rows", "j6doctor s", "pandas floor s", "ratio", "csv MB"])
    for rows in sizes:
        progress(f"workdir: generating {rows:,} rows")
        folder = write_workdir(tmp / f"qa_{rows}", rows)
        csv = folder / "compare_per_layer_out.csv"
        progress(f"workdir: {rows:,} rows, best of {repeat}")
        doctor, floor = workdir_vs_floor(folder, repeat)
        table.add(f"{rows:,}", secs(doctor), secs(floor), f"{doctor / floor:.2f}",
                  f"{csv.stat().st_size / 1e6:.1f}")
    table.notes.append("floor: python -c \"import pandas; pandas.read_csv(CSV, skipinitialspace=True)\"; "
                       "j6doctor: python -m j6doctor diagnose --workdir DIR --no-env --format json")
    return table


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


def section_engine(args: argparse.Namespace, tmp: Path) -> Table:
    from j6doctor.engine import RuleBase
    from j6doctor.engine import runtime

    runs = 3 if args.quick else 7
    rule_counts = [50, 200, 500]
    fact_counts = [100, 1_000]
    vocab = synthetic_vocabulary()
    facts = {n: synthetic_facts(vocab, n) for n in fact_counts}
    table = Table(f"3. Rule engine scale (synthetic rules and vocabulary; run = median of {runs})",
                  ["rules", "rulesets per stratum", "load+compile s", "register s", "facts",
                   "run ms", "firings", "derived facts", "ms / firing"])
    # Warm-up on a small rule base: imports, the durable-rules host, first-use allocations.
    RuleBase.load([write_rule_files(tmp / "rules_warmup", synthetic_rules(10, seed=99))], vocab).run(facts[fact_counts[-1]])
    for n_rules in rule_counts:
        folder = write_rule_files(tmp / f"rules_{n_rules}", synthetic_rules(n_rules))
        progress(f"engine: {n_rules} rules: load + compile")
        started = time.perf_counter()
        rulebase = RuleBase.load([folder], vocab)
        load_s = time.perf_counter() - started
        # Registration of the rulesets in durable-rules happens on the first run; time it
        # on its own when the runtime exposes it, else as first run minus a steady run.
        register_s = None
        if hasattr(runtime, "_register"):
            started = time.perf_counter()
            runtime._register(rulebase.compiled)
            register_s = time.perf_counter() - started
        shape = "+".join(str(len(s)) for s in rulebase.compiled.strata)
        rows: list[list] = []
        for k, n_facts in enumerate(fact_counts):
            progress(f"engine: {n_rules} rules x {n_facts} facts: {runs} runs")
            started = time.perf_counter()
            result = rulebase.run(facts[n_facts])
            first_s = time.perf_counter() - started
            times = []
            for _ in range(runs):
                started = time.perf_counter()
                again = rulebase.run(facts[n_facts])
                times.append(time.perf_counter() - started)
            run_s = statistics.median(times)
            if register_s is None and k == 0:
                register_s = max(0.0, first_s - run_s)
            assert len(again.firings) == len(result.firings), "runs of the same input differ"
            firings = len(result.firings)
            derived = len(result.facts) - n_facts
            note = " (truncated)" if result.truncated else ""
            rows.append([n_rules if k == 0 else "", shape if k == 0 else "",
                         secs(load_s) if k == 0 else "", secs(register_s) if k == 0 else "",
                         f"{n_facts:,}", ms(run_s), f"{firings:,}{note}", f"{derived:,}",
                         f"{run_s * 1000 / firings:.3f}" if firings else "-"])
        for row in rows:
            table.add(*row)
    table.notes.append("load+compile: RuleBase.load (YAML, schema and vocabulary checks, "
                       "stratification, engine-limit checks); register: durable-rules ruleset "
                       "compilation, once per rule base per process")
    return table


# ---------------------------------------------------------------------------- 4. memory
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
    """Run in a fresh process (see section_memory): the numbers of section 4 as data."""
    import yaml

    from j6doctor.diagnose import diagnose_data, load_rulebase

    data = yaml.safe_load(EXAMPLE_CASE.read_text(encoding="utf-8"))
    rulebase = load_rulebase()
    loaded_kb = vm_rss_kb()
    diagnose_data(data, rulebase, display=EXAMPLE_CASE.name, base=EXAMPLE_CASE.parent)
    first_kb = vm_rss_kb()
    render = None
    try:
        from j6doctor.report import render_json as render
    except ImportError:
        pass

    def one(with_report: bool) -> None:
        diagnosis = diagnose_data(data, rulebase, display=EXAMPLE_CASE.name, base=EXAMPLE_CASE.parent)
        if with_report and render is not None:
            render(diagnosis)

    rows = []
    loops = [("diagnose_data", False)]
    if render is not None:
        loops.append(("diagnose_data + render_json", True))
    for name, with_report in loops:
        progress(f"memory: {name}: warm-up, then {count:,} diagnoses")
        for _ in range(20):  # caches, lazy imports, first registration
            one(with_report)
        gc.collect()
        before, objects_before = vm_rss_kb(), len(gc.get_objects())
        times = []
        for _ in range(count):
            started = time.perf_counter()
            one(with_report)
            times.append(time.perf_counter() - started)
        gc.collect()
        after, objects_after = vm_rss_kb(), len(gc.get_objects())
        growth = (after - before) / count if before is not None and after is not None else None
        rows.append([name, f"{before / 1024:.1f}" if before else "-", f"{after / 1024:.1f}" if after else "-",
                     f"{growth:.2f}" if growth is not None else "-", f"{peak_rss_kb() / 1024:.1f}",
                     f"{objects_after - objects_before:+,}",
                     f"{statistics.median(times) * 1000:.2f} (mean {statistics.fmean(times) * 1000:.2f})"])
    return {"rows": rows, "loaded_mb": loaded_kb / 1024 if loaded_kb else None,
            "first_mb": first_kb / 1024 if first_kb else None}


def section_memory(args: argparse.Namespace) -> Table:
    """In a child process, so that what earlier sections loaded does not count."""
    count = 200 if args.quick else 1_000
    out = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--memory-child", str(count)],
                         check=True, stdout=subprocess.PIPE, text=True).stdout
    result = json.loads(out.strip().splitlines()[-1])
    table = Table(f"4. Memory: {count:,} diagnoses of {EXAMPLE_CASE.name} in one fresh process",
                  ["loop", "VmRSS before MB", "VmRSS after MB", "growth KB / diagnosis",
                   "peak RSS MB", "Python objects +", "ms / diagnosis"], rows=result["rows"])
    if result["loaded_mb"] and result["first_mb"]:
        table.notes.append(f"process RSS after importing j6doctor.diagnose and loading the bundled rule "
                           f"base: {result['loaded_mb']:.1f} MB; after the first diagnosis (lazy imports, "
                           f"ruleset registration): {result['first_mb']:.1f} MB")
    table.notes.append("before: after 20 warm-up diagnoses and gc.collect(); peak: VmHWM (high-water "
                       "RSS) of the process; Python objects: gc-tracked objects after minus before")
    return table


# ---------------------------------------------------------------------------- main
def machine_line() -> str:
    versions = []
    for package in ("durable_rules", "pandas"):
        try:
            from importlib.metadata import version
            versions.append(f"{package} {version(package)}")
        except Exception:
            pass
    import os
    return (f"Python {platform.python_version()} on {platform.system()} {platform.machine()}, "
            f"{os.cpu_count()} CPUs; " + ", ".join(versions))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--markdown", action="store_true", help="print Markdown tables")
    parser.add_argument("--quick", action="store_true",
                        help="fewer repeats, no 100,000-row set, 200 diagnoses in section 4")
    parser.add_argument("--sections", default="1,2,3,4", help="comma-separated subset of 1,2,3,4")
    parser.add_argument("--memory-child", type=int, metavar="N", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.memory_child:
        print(json.dumps(memory_rows(args.memory_child)))
        return
    try:
        wanted = [int(s) for s in args.sections.split(",") if s.strip()]
    except ValueError:
        parser.error("--sections takes numbers like 1,3")
    if not wanted or any(s not in (1, 2, 3, 4) for s in wanted):
        parser.error("--sections takes numbers among 1,2,3,4")

    print(machine_line())
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="j6doctor-bench-") as tmp_name:
        tmp = Path(tmp_name)
        for number in wanted:
            if number == 1:
                table = section_cold_start(args)
            elif number == 2:
                table = section_workdir(args, tmp)
            elif number == 3:
                table = section_engine(args, tmp)
            else:
                table = section_memory(args)
            print()
            print(table.render(args.markdown), flush=True)
    progress(f"done in {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
