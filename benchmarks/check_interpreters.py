#!/usr/bin/env python3
"""Install j6doctor into a fresh venv on every supported Python this machine has, and say
how long it took and which rule engine it picked; optionally run the test suite there.

    python benchmarks/check_interpreters.py                    # 3.10-3.13: install + one diagnosis
    python benchmarks/check_interpreters.py --versions 3.10,3.13
    python benchmarks/check_interpreters.py --durable          # with the durable-rules extra
    python benchmarks/check_interpreters.py --tests --exclude 3.11 --jobs 2   # what .ci/run does

Interpreters are looked up as pyenv versions (`$PYENV_ROOT/versions/3.X.*`, newest patch),
then as `python3.X` on PATH. A supported version that is not on the machine is reported as
missing and makes the exit status 1 (never silently skipped).

The install is `pip install 'j6doctor[test]'` into a new venv from one wheel of the working
tree, with no C compiler (CC and CXX are /bin/false): it must succeed without one, run on
CLIPS and say so in one line where durable-rules could be installed. `--durable` adds the
extra (then a compiler is needed, and durable-rules runs on 3.10-3.12). `--tests` runs the
inner loop of the suite there (the in-process tests; the default interpreter's full run, on
both engines, covers the rest); `--tests full` runs all of it. Progress goes to stderr, the
table and the test output of a failed run to stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SUPPORTED = ("3.10", "3.11", "3.12", "3.13")
CASE = REPO / "examples" / "cases" / "convert_j6m.yaml"


@dataclass
class Outcome:
    version: str
    interpreter: str = ""
    install_s: float | None = None
    engine: str = ""
    tests: str = ""
    problem: str = ""
    log: str = ""


def find_interpreter(version: str) -> str | None:
    root = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions"
    if root.is_dir():
        found = [p for p in root.iterdir()
                 if re.fullmatch(re.escape(version) + r"\.\d+", p.name) and (p / "bin" / "python").exists()]
        if found:
            newest = max(found, key=lambda p: tuple(int(n) for n in p.name.split(".")))
            return str(newest / "bin" / "python")
    return shutil.which(f"python{version}")


def _run(args: list[str], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(args, capture_output=True, text=True, **kwargs)


def build_wheel(workdir: Path) -> Path:
    """One wheel of the working tree (pure Python: every interpreter installs it), built from a
    copy so that parallel installs never share a build folder in the tree."""
    source = workdir / "source"
    shutil.copytree(REPO, source, ignore=shutil.ignore_patterns(".venv", ".git", "build", "*.egg-info",
                                                                 "__pycache__", ".pytest_cache"))
    built = _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(workdir / "dist"), str(source)])
    if built.returncode != 0:
        raise SystemExit(f"building the wheel failed:\n{built.stdout}{built.stderr}")
    return next((workdir / "dist").glob("j6doctor-*.whl"))


INNER_LOOP = ["-m", "not slow and not fuzz and not browser"]
NO_COMPILER = {"CC": "/bin/false", "CXX": "/bin/false"}
FALLBACK_NOTE = "the rule engine is CLIPS; durable-rules (the default engine) is not installed here"


def _fallback_expected(python: str) -> bool:
    """durable-rules could be installed on this interpreter (CPython 3.10-3.12, not Windows)."""
    probe = _run([python, "-c", "import sys; print(sys.version_info < (3, 13) and sys.platform != 'win32')"])
    return probe.stdout.strip() == "True"


def check(version: str, tests: str | None, workdir: Path, wheel: Path, durable: bool = False) -> Outcome:
    out = Outcome(version)
    python = find_interpreter(version)
    if python is None:
        out.problem = "missing: no pyenv version and no python" + version + " on PATH"
        return out
    out.interpreter = python
    venv = workdir / f"venv{version}"
    print(f"[{version}] fresh venv with {python}", file=sys.stderr)
    started = time.perf_counter()
    made = _run([python, "-m", "venv", str(venv)])
    if made.returncode != 0:
        out.problem, out.log = "venv failed", made.stderr
        return out
    extras = "test,durable" if durable else "test"
    pip = _run([str(venv / "bin" / "pip"), "install", "-q", f"j6doctor[{extras}] @ {wheel.as_uri()}"], cwd=workdir,
               env=os.environ if durable else {**os.environ, **NO_COMPILER})
    out.install_s = time.perf_counter() - started
    if pip.returncode != 0:
        out.problem, out.log = "pip install failed", pip.stdout + pip.stderr
        return out
    # Its own cache and config folders: the check leaves the user's home as it was (and a
    # suite running beside it sees no change there).
    own = {**os.environ, "XDG_CACHE_HOME": str(workdir / f"cache{version}"),
           "XDG_CONFIG_HOME": str(workdir / f"config{version}")}
    diagnosis = _run([str(venv / "bin" / "j6doctor"), "diagnose", str(CASE), "--format", "json", "--no-env"],
                     cwd=workdir, env=own)
    if diagnosis.returncode != 0:
        out.problem, out.log = f"diagnose exited {diagnosis.returncode}", diagnosis.stderr
        return out
    out.engine = json.loads(diagnosis.stdout)["rulebase"]["engine"]
    noted = FALLBACK_NOTE in diagnosis.stderr
    if noted != (out.engine == "clips" and _fallback_expected(python)):
        out.problem = "the one-line engine note is " + ("printed" if noted else "missing") + f" on {out.engine}"
        out.log = diagnosis.stderr
        return out
    if tests:
        print(f"[{version}] test suite (engine {out.engine})", file=sys.stderr)
        started = time.perf_counter()
        # The default interpreter's run cross-checks every engine call on both engines; here
        # tests/test_engine_differential.py compares them, and the rest runs once.
        environ = {**own, "J6DOCTOR_CROSS_CHECK": os.environ.get("J6DOCTOR_CROSS_CHECK", "0")}
        selection = INNER_LOOP if tests == "inner" else []
        suite = _run([str(venv / "bin" / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider", *selection],
                     cwd=REPO, env=environ)
        summary = (suite.stdout.strip().splitlines() or ["(no output)"])[-1]
        out.tests = f"{summary} [{time.perf_counter() - started:.0f} s]"
        if suite.returncode != 0:
            out.problem, out.log = "tests failed", suite.stdout[-20000:] + suite.stderr[-5000:]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--versions", default=",".join(SUPPORTED), help="comma-separated, default 3.10-3.13")
    parser.add_argument("--exclude", default="", help="versions not to check (e.g. the one already tested)")
    parser.add_argument("--tests", nargs="?", const="inner", choices=("inner", "full"),
                        help="also run the tests in each venv: the inner loop (default) or the full suite")
    parser.add_argument("--durable", action="store_true", help="install the durable-rules extra too")
    parser.add_argument("--jobs", type=int, default=1, help="interpreters checked at once")
    args = parser.parse_args(argv)
    excluded = {v.strip() for v in args.exclude.split(",") if v.strip()}
    versions = [v.strip() for v in args.versions.split(",") if v.strip() and v.strip() not in excluded]
    with tempfile.TemporaryDirectory(prefix="j6doctor-pythons-") as tmp:
        wheel = build_wheel(Path(tmp))
        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            outcomes = list(pool.map(lambda v: check(v, args.tests, Path(tmp), wheel, args.durable), versions))
    print(f"{'python':8} {'install':>9} {'engine':8} {'tests':44} problem")
    for o in outcomes:
        install = f"{o.install_s:.1f} s" if o.install_s is not None else "-"
        print(f"{o.version:8} {install:>9} {o.engine or '-':8} {o.tests or '-':44} {o.problem}")
    for o in outcomes:
        if o.log:
            print(f"\n--- {o.version}: {o.problem} ---\n{o.log}")
    return 1 if any(o.problem for o in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())
