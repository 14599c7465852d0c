"""Issue 26, processes: every process j6doctor starts is reaped by the process that started
it — the engine child by `diagnose`, the pool processes and their engine children by
`triage` and `cases rediagnose` — when the command ends normally and when it is interrupted
(Ctrl-C: SIGINT to the whole job; `kill`: SIGTERM to the command's process only).

Each command runs under a watcher that is a child subreaper (Linux prctl
PR_SET_CHILD_SUBREAPER): a process whose parent ends without reaping it is handed to the
watcher instead of init, so an orphan cannot go unseen. After the command ends, anything
left in the watcher's tree, or reaped by the watcher, is a process its own parent did not
reap."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import EXAMPLES, EXAMPLE_CASES
from test_engine_wall import TRIPLE_JOIN

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a child subreaper is Linux only")

WATCHER = r'''
import ctypes, json, os, signal, subprocess, sys, time

spec = json.loads(sys.argv[1])
libc = ctypes.CDLL(None, use_errno=True)
if libc.prctl(36, 1, 0, 0, 0) != 0:  # PR_SET_CHILD_SUBREAPER: orphans below come to this process
    raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")
me = os.getpid()
# Ctrl-C as on a terminal: a job started in the background of a script (`cmd &`, as CI runs
# other interpreters' suites) inherits SIGINT ignored, and an ignored signal stays ignored
# across exec; set to default here, the command below starts with Python's own handler.
signal.signal(signal.SIGINT, signal.SIG_DFL)


def parent_of() -> dict:
    table = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat", encoding="utf-8", errors="replace") as stream:
                    stat = stream.read()
            except OSError:
                continue
            table[int(name)] = int(stat[stat.rindex(")") + 2:].split()[1])
    return table


def below(root: int) -> list:
    table, found, todo = parent_of(), [], [root]
    while todo:
        kids = [pid for pid, parent in table.items() if parent == todo[-1]]
        todo.pop()
        found += kids
        todo += kids
    return found


proc = subprocess.Popen(spec["argv"], cwd=spec["cwd"], env=spec["env"], stdout=subprocess.DEVNULL,
                        stderr=subprocess.PIPE, start_new_session=True)
interrupted = False
if spec["signal"]:
    deadline = time.monotonic() + 60
    while proc.poll() is None and len(below(proc.pid)) < spec["busy"] and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(spec["settle"])
    if proc.poll() is None:
        number = getattr(signal, spec["signal"])
        if spec["whole_job"]:
            os.killpg(proc.pid, number)  # what Ctrl-C on a terminal sends: every process of the job
        else:
            os.kill(proc.pid, number)  # what `kill PID` sends
        interrupted = True
try:
    _, err = proc.communicate(timeout=120)
except subprocess.TimeoutExpired:
    os.killpg(proc.pid, signal.SIGKILL)
    _, err = proc.communicate()
left, deadline = set(), time.monotonic() + 3
while True:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            pid = 0
        if not pid:
            break
        left.add(pid)  # an orphan that ended here: its own parent never reaped it
    alive = below(me)
    if not alive or time.monotonic() > deadline:
        break
    time.sleep(0.05)
for pid in alive:
    left.add(pid)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
print(json.dumps({"rc": proc.returncode, "interrupted": interrupted, "left": sorted(left),
                  "stderr": err.decode("utf-8", "replace")[-3000:]}))
'''


def watch(args: list[str], cwd: Path, *, signal: str | None = None, whole_job: bool = True, busy: int = 1,
          settle: float = 0.3, env: dict | None = None) -> dict:
    """Run `python -m j6doctor ARGS` under the watcher; with `signal`, sent once the command
    has `busy` processes below it (its pool and engine children at work), `settle` seconds
    later."""
    full_env = {k: v for k, v in os.environ.items() if k != "J6DOCTOR_DEBUG"}
    full_env.update(env or {})
    spec = {"argv": [sys.executable, "-m", "j6doctor", *args], "cwd": str(cwd), "env": full_env,
            "signal": signal, "whole_job": whole_job, "busy": busy, "settle": settle}
    done = subprocess.run([sys.executable, "-c", WATCHER, json.dumps(spec)], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def assert_nothing_left(result: dict, rc: int, interrupted: bool = False) -> None:
    assert result["interrupted"] == interrupted, "the command ended before it could be interrupted"
    assert result["rc"] == rc, result["stderr"]
    assert "Traceback" not in result["stderr"], result["stderr"]
    assert result["left"] == [], f"processes not reaped by their parent: {result['left']}; {result['stderr']}"


def cases_folder(tmp_path: Path, count: int) -> Path:
    folder = tmp_path / "cases"
    folder.mkdir()
    examples = [p for p in EXAMPLE_CASES if p.suffix == ".yaml"]
    for i in range(count):
        shutil.copy(examples[i % len(examples)], folder / f"c{i:04d}_{examples[i % len(examples)].name}")
    return folder


def slow_diagnosis(tmp_path: Path) -> list[str]:
    pack = tmp_path / "pack"
    pack.mkdir()
    (pack / "slow.yaml").write_text(TRIPLE_JOIN, encoding="utf-8")  # its join keeps the engine busy for seconds
    case = tmp_path / "case.yaml"
    case.write_text("symptom: big\ntried:\n" + "".join(f'  - "fix number {i}"\n' for i in range(100)),
                    encoding="utf-8")
    return ["diagnose", str(case), "--no-env", "--rules", str(pack)]


# Neither limit may end the slow join before the signal does (it grows ~1 GB a second).
SLOW_ENGINE = {"J6DOCTOR_ENGINE_TIMEOUT": "120", "J6DOCTOR_ENGINE_MEMORY_MB": "6144"}


# ------------------------------------------------------------------ ended normally

def test_diagnose_reaps_its_engine_child(tmp_path):
    assert_nothing_left(watch(["diagnose", str(EXAMPLES / "convert_j6m.yaml"), "--no-env"], tmp_path), 0)


def test_triage_reaps_its_pool_and_their_engine_children(tmp_path):
    cases_folder(tmp_path, 12)
    result = watch(["triage", "cases", "-j", "2", "--out", "out", "--no-progress"], tmp_path)
    assert_nothing_left(result, 0)
    assert len(list((tmp_path / "out").glob("0*.html"))) == 12


def test_triage_in_one_process_reaps_its_engine_child(tmp_path):
    cases_folder(tmp_path, 3)
    assert_nothing_left(watch(["triage", "cases", "-j", "1", "--no-progress"], tmp_path), 0)


@pytest.fixture(scope="module")
def library_export(tmp_path_factory) -> list[str]:
    """The bundled cases as a case-library export (`j6doctor cases export`), one line each."""
    folder = tmp_path_factory.mktemp("library")
    seed = str(folder / "seed.db")
    cases = [str(p) for p in EXAMPLE_CASES if p.suffix == ".yaml"]
    subprocess.run([sys.executable, "-m", "j6doctor", "triage", *cases, "--store", seed, "--no-progress"],
                   cwd=folder, capture_output=True, check=True, timeout=300)
    export = folder / "seed.jsonl"
    subprocess.run([sys.executable, "-m", "j6doctor", "cases", "export", "--store", seed, "-o", str(export)],
                   cwd=folder, capture_output=True, check=True, timeout=300)
    return export.read_text(encoding="utf-8").splitlines()


def library(folder: Path, export: list[str], count: int) -> str:
    """A case library of `count` distinct copies of the exported cases."""
    from synthetic import library_copies

    from j6doctor.store.library import open_library

    path = str(folder / "library.db")
    opened = open_library(path)
    assert opened.import_jsonl(library_copies(export, count), "copies.jsonl") == (count, 0)
    opened.engine.dispose()
    return path


def test_rediagnose_in_one_process_reaps_its_engine_child(tmp_path, library_export):
    store = library(tmp_path, library_export, 20)
    assert_nothing_left(watch(["cases", "rediagnose", "--store", store, "--jobs", "1"], tmp_path), 0)


def test_rediagnose_reaps_its_pool(tmp_path, library_export):
    from j6doctor.store.rediagnose import CHUNK

    store = library(tmp_path, library_export, 2 * CHUNK + 5)  # three chunks: a pool of two
    assert_nothing_left(watch(["cases", "rediagnose", "--store", store, "--jobs", "2"], tmp_path), 0)


# ------------------------------------------------------------------ interrupted

@pytest.mark.parametrize("signal, whole_job, rc", [("SIGINT", True, 130), ("SIGTERM", False, -15)])
def test_an_interrupted_diagnosis_reaps_its_busy_engine_child(tmp_path, signal, whole_job, rc):
    result = watch(slow_diagnosis(tmp_path), tmp_path, signal=signal, whole_job=whole_job, busy=1, settle=1.0,
                   env=SLOW_ENGINE)
    assert_nothing_left(result, rc, interrupted=True)


@pytest.mark.parametrize("signal, whole_job, rc", [("SIGINT", True, 130), ("SIGTERM", False, -15)])
def test_an_interrupted_triage_reaps_every_process(tmp_path, signal, whole_job, rc):
    cases_folder(tmp_path, 400)
    result = watch(["triage", "cases", "-j", "2", "--out", "out", "--no-progress"], tmp_path, signal=signal,
                   whole_job=whole_job, busy=4)  # two pool processes, each with its engine child
    assert_nothing_left(result, rc, interrupted=True)
    assert not (tmp_path / "out" / "summary.json").exists()


@pytest.mark.parametrize("signal, whole_job, rc", [("SIGINT", True, 130), ("SIGTERM", False, -15)])
def test_an_interrupted_triage_in_one_process_reaps_its_busy_engine_child(tmp_path, signal, whole_job, rc):
    _, case, *options = slow_diagnosis(tmp_path)
    result = watch(["triage", case, "-j", "1", "--no-progress", *options], tmp_path, signal=signal, whole_job=whole_job, busy=1, settle=1.0, env=SLOW_ENGINE)
    assert_nothing_left(result, rc, interrupted=True)


@pytest.mark.parametrize("signal, whole_job, rc", [("SIGINT", True, 130), ("SIGTERM", False, -15)])
def test_an_interrupted_rediagnose_reaps_its_pool(tmp_path, library_export, signal, whole_job, rc):
    from j6doctor.store.rediagnose import CHUNK

    store = library(tmp_path, library_export, 4 * CHUNK)
    result = watch(["cases", "rediagnose", "--store", store, "--jobs", "2"], tmp_path, signal=signal,
                   whole_job=whole_job, busy=2, settle=0.2)
    assert_nothing_left(result, rc, interrupted=True)
