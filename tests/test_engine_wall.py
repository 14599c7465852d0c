"""Issue 11, "the engine behind a wall" and "static limits": what a rule pack cannot do to
the tool, proved with real durable-rules runs and real CLI subprocesses (no mocks).

- The engine runs in a long-lived worker process with a wall-clock timeout
  (J6DOCTOR_ENGINE_TIMEOUT) and a memory cap (J6DOCTOR_ENGINE_MEMORY_MB): a runaway join, a
  memory blow-up or a crash of the worker becomes exit 2 with a message naming the pack and
  what to simplify, never a hang, a signal or a traceback; the next diagnosis gets a fresh
  worker; one worker serves many diagnoses and answers exactly as the in-process engine does.
- Rule bases that would hang durable-rules while it builds them (long `in` lists on one
  field, `in` lists expanded in joins, 5,000-value `not_in`, 3,000-letter `contains`) and rule
  files that cannot be read safely (FIFO, device, link to a device, over 4 MiB) are refused
  before registration, by `rules lint` (rule, file:line, count) and by `diagnose --rules`.
- Thresholds written in exponent form load as numbers and compare right in the engine.
"""

from __future__ import annotations

import json
import os
import re
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import EXAMPLES, EXAMPLE_CASES, HAS_DURABLE
from j6doctor.diagnosis import diagnose_file, load_rulebase
from j6doctor.engine import EngineLimitError, RuleBase, RuleBaseErrors
from j6doctor.facts import vocabulary
from j6doctor.report import render_json

CLI_TIMEOUT = 30  # seconds a CLI run may take before it counts as a hang
QUICK = 15  # seconds within which a refusal must come (each takes under one)
WORKER_NAME = "j6doctor-engine"  # engine/worker.py names its process so

TRIPLE_JOIN = """\
seed: t
rules:
  - id: site.triple
    title: three tried fixes that differ (fires for every ordered triple, unless the case says "big")
    when:
      - tried_fix: {}
        as: a
      - tried_fix: {text: {ne: {ref: a.text}}}
        as: b
      - tried_fix: {text: {ne: {ref: b.text}}}
        as: c
      - symptom: {text: {ne: big}}
    then:
      - finding: {topic: t, text: "${a.text} ${b.text} ${c.text}"}
  - id: site.quad
    title: four tried fixes that differ in turn, with a compare table no case here has (nothing
      fires, so the firing budget never ends the run; 100 fixes are ~100 million partial matches)
    when:
      - tried_fix: {}
        as: a
      - tried_fix: {text: {ne: {ref: a.text}}}
        as: b
      - tried_fix: {text: {ne: {ref: b.text}}}
        as: c
      - tried_fix: {text: {ne: {ref: c.text}}}
      - compare_summary: {}
    then:
      - finding: {topic: t, text: "${a.text} ${b.text} ${c.text}"}
"""

# Each round doubles a finding's text: memory runs out long before the depth cap (64).
DOUBLING_TEXT = """\
seed: t
rules:
  - id: site.seed
    title: every tried fix starts a finding
    when:
      - tried_fix: {}
        as: t
    then:
      - finding: {topic: loop, text: "${t.text}"}
  - id: site.grow
    title: doubles the finding's text every round
    when:
      - finding: {topic: loop}
        as: f
    then:
      - finding: {topic: loop, text: "${f.text}${f.text}"}
"""


# ------------------------------------------------------------------------------ helpers

def run_cli(*args: str, cwd: Path, env: dict | None = None,
            timeout: float = CLI_TIMEOUT) -> tuple[subprocess.CompletedProcess, float]:
    """`python -m j6doctor ARGS` in a subprocess; the result and the seconds it took. A run
    past `timeout` is a hang: the test fails (the child is killed by subprocess.run)."""
    full_env = dict(os.environ)
    for name in ("J6DOCTOR_DEBUG", "J6DOCTOR_ENGINE_PROCESS", "J6DOCTOR_ENGINE_TIMEOUT",
                 "J6DOCTOR_ENGINE_MEMORY_MB"):
        full_env.pop(name, None)
    full_env.update(env or {})
    start = time.monotonic()
    try:
        proc = subprocess.run([sys.executable, "-m", "j6doctor", *args], check=False, cwd=cwd, env=full_env,
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail(f"j6doctor {' '.join(args)} did not return within {timeout} s (hang)")
    return proc, time.monotonic() - start


def run_clis(*commands: tuple[tuple[str, ...], dict]) -> list[tuple[subprocess.CompletedProcess, float]]:
    """Several run_cli calls at once (independent commands of one test: lint and diagnose)."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(len(commands)) as pool:
        futures = [pool.submit(run_cli, *args, **kwargs) for args, kwargs in commands]
        return [f.result() for f in futures]


def write_pack(tmp_path: Path, text: str, name: str = "pack.yaml", folder: str = "pack") -> Path:
    pack = tmp_path / folder
    pack.mkdir(exist_ok=True)
    (pack / name).write_text(text, encoding="utf-8")
    return pack


def tried_case(tmp_path: Path, count: int, name: str = "case.yaml", symptom: str | None = None) -> Path:
    """A case with `count` distinct `tried:` entries (100 is the case file's maximum); a case
    of more than 20 says "big", which site.triple leaves alone (its firings would use up the
    budget and end the run before site.quad's joins grow)."""
    symptom = symptom or ("big" if count > 20 else "x")
    lines = [f"symptom: {symptom}", "tried:"] + [f'  - "fix number {i}"' for i in range(count)]
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def assert_clean_failure(proc: subprocess.CompletedProcess, code: int = 2) -> None:
    """Exit `code` with a j6doctor message: no traceback, not killed by a signal, no report."""
    assert proc.returncode == code, (proc.returncode, proc.stderr[-3000:])
    assert proc.returncode >= 0, f"killed by signal {-proc.returncode}"
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr[-3000:]
    assert proc.stderr.startswith("j6doctor: error: "), proc.stderr[-3000:]
    assert proc.stdout == "", "a failed diagnosis printed a report"


def worker_processes() -> list:
    """The engine children running now (engine/worker.py's handles: pid, is_alive, kill, join)."""
    from j6doctor.engine.worker import live_children

    return [p for p in live_children() if p.name == WORKER_NAME]


def the_worker():
    (worker,) = worker_processes()
    return worker


@pytest.fixture
def worker_mode(monkeypatch):
    """Run RuleBase.run in the shared worker process (whatever the caller's environment says)."""
    monkeypatch.delenv("J6DOCTOR_ENGINE_PROCESS", raising=False)


# ======================================================================= 1. wall-clock timeout

def test_three_way_self_join_over_100_tried_fixes_hits_the_timeout(tmp_path):
    """100 `tried` entries joined three ways are about a million matches: durable-rules would
    run for minutes with the GIL held. Under J6DOCTOR_ENGINE_TIMEOUT=3 the CLI ends with exit
    2 within seconds, naming the pack's rule (file:line) and what to simplify."""
    write_pack(tmp_path, TRIPLE_JOIN, "triple.yaml")
    tried_case(tmp_path, 100)
    proc, took = run_cli("diagnose", "case.yaml", "--rules", "pack", "--no-env", cwd=tmp_path,
                         env={"J6DOCTOR_ENGINE_TIMEOUT": "3", "J6DOCTOR_ENGINE_MEMORY_MB": "8192"})
    assert_clean_failure(proc)  # the join grows ~1 GB a second: a memory cap it cannot reach in 3 s
    message = proc.stderr
    assert "did not finish within 3 s" in message
    assert "the rule base rules, pack" in message  # the bundled rules plus the pack, as given
    assert "site.quad (pack/triple.yaml:15: 4 conditions on tried_fix joined with each other)" in message
    assert "simplify those rules" in message and "J6DOCTOR_ENGINE_TIMEOUT raises the limit" in message
    assert took < 30, f"took {took:.1f} s with a 3 s engine timeout"


def test_the_same_join_on_a_small_case_finishes_under_the_default_limits(tmp_path):
    """The wall is no false alarm: 10 tried fixes (720 ordered triples) diagnose normally,
    under the default time and memory limits."""
    write_pack(tmp_path, TRIPLE_JOIN, "triple.yaml")
    tried_case(tmp_path, 10)
    proc, took = run_cli("diagnose", "case.yaml", "--rules", "pack", "--no-env", "--format", "json",
                         cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    fired = [f for f in json.loads(proc.stdout)["findings"] if f.get("rule") == "site.triple"]
    assert len(fired) == 10 * 9 * 8, len(fired)  # durable-rules binds distinct facts to one rule's patterns
    assert took < CLI_TIMEOUT


# ========================================================================= 2. memory cap

@pytest.mark.parametrize("memory_mb", [128, 300])
def test_memory_cap_is_exit_2_with_a_message(tmp_path, memory_mb):
    """A pack whose findings double their text every round exhausts any cap within seconds.
    Wherever the allocation fails (in the engine, or inside a rule's action, which used to be
    reported as "a rule action failed: MemoryError", exit 1) it is exit 2 naming the cap and
    the pack, with no signal and no traceback."""
    write_pack(tmp_path, DOUBLING_TEXT, "grow.yaml")
    tried_case(tmp_path, 10)
    proc, took = run_cli("diagnose", "case.yaml", "--rules", "pack", "--no-env", cwd=tmp_path,
                         env={"J6DOCTOR_ENGINE_MEMORY_MB": str(memory_mb), "J6DOCTOR_ENGINE_TIMEOUT": "25"})
    assert_clean_failure(proc)
    assert f"the rule engine ran out of its {memory_mb} MB on the rule base rules, pack" in proc.stderr
    assert "simplify it" in proc.stderr and "J6DOCTOR_ENGINE_MEMORY_MB raises the limit" in proc.stderr
    assert "a rule action failed" not in proc.stderr
    assert took < 25, f"took {took:.1f} s"


def test_a_normal_diagnosis_is_far_below_the_memory_cap(tmp_path):
    """A bundled example passes under the default cap (2048 MB) and under a cap of 128 MB:
    the default is nowhere near what a normal diagnosis needs."""
    args = ("diagnose", str(EXAMPLES / "convert_j6m.yaml"), "--no-env", "--format", "json")
    (default, _), (low, _) = run_clis((args, {"cwd": tmp_path}),
                                      (args, {"cwd": tmp_path, "env": {"J6DOCTOR_ENGINE_MEMORY_MB": "128"}}))
    assert default.returncode == 0 and low.returncode == 0, (default.stderr[-2000:], low.stderr[-2000:])
    assert json.loads(default.stdout)["stage"] == json.loads(low.stdout)["stage"] == "convert"
    assert default.stdout == low.stdout


def test_the_cap_counts_from_what_the_forked_worker_inherits(tmp_path):
    """A process that maps 3 GB before its first diagnosis (as a test runner or a notebook
    with many threads' stacks and BLAS buffers does on a many-core machine) still diagnoses
    under the default cap: the worker is forked from it, and its cap is headroom above the
    inherited mappings, not an absolute size below them."""
    script = ("import mmap, sys\n"
              "reserved = mmap.mmap(-1, 3 << 30)  # mapped, never touched: address space, no memory\n"
              "from j6doctor.cli import main\n"
              "main(sys.argv[1:])\n")
    args = ["diagnose", str(EXAMPLES / "convert_j6m.yaml"), "--no-env", "--format", "json"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("J6DOCTOR_ENGINE")}
    proc = subprocess.run([sys.executable, "-c", script, *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and json.loads(proc.stdout)["stage"] == "convert", proc.stderr[-2000:]


# ================================================================ 3. a crash of the worker

def test_a_worker_killed_mid_diagnosis_raises_and_the_next_diagnosis_works(tmp_path, worker_mode):
    """The worker is killed while it runs a long join (SIGKILL, through the worker's
    process handle): that diagnosis raises EngineLimitError at once (not after the 60 s timeout), and the
    next one runs in a fresh worker with the same answer as before."""
    example = EXAMPLES / "convert_j6m.yaml"
    before = render_json(diagnose_file(example))
    worker = the_worker()
    heavy = load_rulebase([write_pack(tmp_path, TRIPLE_JOIN, "triple.yaml")])
    case = tried_case(tmp_path, 100)
    killer = threading.Timer(1.0, worker.kill)
    killer.start()
    start = time.monotonic()
    try:
        with pytest.raises(EngineLimitError) as info:
            diagnose_file(case, heavy)
    finally:
        killer.cancel()
    took = time.monotonic() - start
    assert took < QUICK, f"a dead worker was noticed only after {took:.1f} s"
    message = str(info.value)
    shown = "durable-rules" if heavy.engine == "durable" else heavy.engine
    assert f"the rule engine ({shown}, C code) crashed on the rule base rules, " in message
    assert str(tmp_path / "pack") in message and "j6doctor rules lint" in message
    worker.join(5)
    assert not worker.is_alive()

    after = render_json(diagnose_file(example))
    fresh = the_worker()
    assert fresh.pid != worker.pid and fresh.is_alive()
    assert after == before


def test_a_worker_killed_between_diagnoses_is_replaced(worker_mode):
    example = EXAMPLES / "board_integration.yaml"
    before = render_json(diagnose_file(example))
    worker = the_worker()
    worker.kill()
    worker.join(5)
    assert render_json(diagnose_file(example)) == before
    assert the_worker().pid != worker.pid


def test_a_timed_out_worker_is_replaced_and_the_run_raises_the_project_error(tmp_path):
    """An EngineWorker of its own with a 2 s limit (engine/worker.py's API): the heavy run
    raises EngineLimitError (the CLI's exit 2) in about 2 s and its process is killed; the
    next run of the same rule base gets a new process and the same answer as before."""
    from j6doctor.engine.worker import EngineWorker, Limits
    from j6doctor.evidence import EvidenceOptions, collect
    from j6doctor.probes.case_file import read_case

    def input_facts(case: Path):
        return collect(read_case(case), EvidenceOptions(use_environment=False)).facts

    heavy = load_rulebase([write_pack(tmp_path, TRIPLE_JOIN, "triple.yaml")])
    small, big = input_facts(tried_case(tmp_path, 5)), input_facts(tried_case(tmp_path, 100, "big.yaml"))
    others = {p.pid for p in worker_processes()}  # e.g. the shared worker
    worker = EngineWorker(Limits(timeout=2, memory_mb=2048))
    try:
        first = worker.run(heavy.compiled, heavy.vocab, small)
        (first_pid,) = {p.pid for p in worker_processes()} - others
        start = time.monotonic()
        with pytest.raises(EngineLimitError, match="did not finish within 2 s") as info:
            worker.run(heavy.compiled, heavy.vocab, big)
        assert time.monotonic() - start < QUICK
        assert "most likely site.quad" in str(info.value)
        assert first_pid not in {p.pid for p in worker_processes()}, "the stuck worker was left running"
        again = worker.run(heavy.compiled, heavy.vocab, small)
        assert {p.pid for p in worker_processes()} - others - {first_pid}
        assert [(f.type, f.fields) for f in again.facts] == [(f.type, f.fields) for f in first.facts]
        assert sum(1 for f in again.facts if f.type == "finding" and f["topic"] == "t") == 5 * 4 * 3
    finally:
        worker.stop()


# ===================================================== 4. one long-lived worker, many runs

def test_one_worker_serves_a_batch_and_answers_as_the_inline_engine(tmp_path, monkeypatch, worker_mode):
    """20 diagnoses of the bundled examples (and, interleaved, a pack's rule base) in one
    process: one worker process serves them all (no process start per case), and every
    answer equals the in-process engine's (J6DOCTOR_ENGINE_PROCESS=inline)."""
    cases = EXAMPLE_CASES
    assert len(cases) >= 20
    cases = cases[:20]
    small_pack = load_rulebase([write_pack(tmp_path, TRIPLE_JOIN, "triple.yaml")])
    small_case = tried_case(tmp_path, 5)

    diagnose_file(cases[0])  # the worker is up
    pid = the_worker().pid
    in_worker, pids = [], set()
    start = time.monotonic()
    for case in cases:
        in_worker.append(render_json(diagnose_file(case)))
        pids.update(p.pid for p in worker_processes())
    pack_in_worker = render_json(diagnose_file(small_case, small_pack))
    pids.update(p.pid for p in worker_processes())
    in_worker.append(render_json(diagnose_file(cases[0])))  # the bundled rule base again
    batch = time.monotonic() - start
    assert pids == {pid}, f"the batch used worker processes {sorted(pids)}"
    assert the_worker().is_alive()
    assert batch < 20, f"21 diagnoses took {batch:.1f} s"

    monkeypatch.setenv("J6DOCTOR_ENGINE_PROCESS", "inline")
    inline = [render_json(diagnose_file(case)) for case in cases]
    inline.append(render_json(diagnose_file(cases[0])))
    assert in_worker == inline
    assert render_json(diagnose_file(small_case, small_pack)) == pack_in_worker
    assert '"rule": "site.triple"' in pack_in_worker  # the pack's rule did fire in the worker
    assert pids == {p.pid for p in worker_processes()}  # inline runs started no process


# ==================================================================== 5. static limits

def _rule(rid: str, conditions: list[str]) -> str:
    return (f"  - id: {rid}\n    title: {rid}\n    when:\n"
            + "".join(f"      - {c}\n" for c in conditions)
            + "    then: [{finding: {topic: t, text: x}}]\n")


def _values(prefix: str, count: int) -> str:
    return "[" + ", ".join(f"{prefix}{i}" for i in range(count)) + "]"


def _join_rule(rid: str, conditions: int, values: int) -> str:
    """`conditions` conditions that compare with the first one, each with an `in` list."""
    return _rule(rid, ["{result: {}, as: a}"] + [
        f"{{result: {{metric: {{in: {_values(f'c{k}_', values)}}}, value: {{gt: {{ref: a.value}}}}}}}}"
        for k in range(conditions)])


def _file(*rules: str) -> str:
    return "seed: t\nrules:\n" + "".join(rules)


# label -> (rule file text, line of the error, rule id, fragments of the message and hint)
LIMIT_PACKS = {
    "in-list-512": (
        _file(_rule("site.many", [f"result: {{metric: {{in: {_values('m', 512)}}}}}"])), 3, "site.many",
        ["counting every value of `in` lists (most of them in site.many (512)); durable-rules hangs at 512",
         "hint: test a coarser field (compute a category upstream) instead of listing hundreds of values"]),
    "two-rules-300-each": (
        _file(_rule("site.first", [f"result: {{metric: {{in: {_values('a', 300)}}}}}"]),
              _rule("site.second", [f"result: {{metric: {{in: {_values('b', 300)}}}}}"])), 3, "site.first",
        ["(most of them in site.first (300), site.second (300)); durable-rules hangs at 512",
         "hint: test a coarser field"]),
    "join-4x30": (
        _file(_join_rule("site.join4", 4, 30)), 3, "site.join4",
        ["make 810000 engine rules (limit 64)", "hint: move the `in` test to a condition without refs"]),
    "join-6x20": (
        _file(_join_rule("site.join6", 6, 20)), 3, "site.join6",
        ["make 64000000 engine rules (limit 64)", "hint: move the `in` test to a condition without refs"]),
    "not_in-5000": (
        _file(_rule("site.notin", [f"result: {{metric: {{not_in: {_values('n', 5000)}}}}}"])), 6, "site.notin",
        ["`not_in` takes at most 50 values; this one has 5000", "hint: test a coarser field"]),
    "contains-3000": (
        _file(_rule("site.contains", ["symptom: {text: {contains: " + "a" * 3000 + "}}"])), 6, "site.contains",
        ["`contains` takes at most 200 characters; this one has 3000", "hint: test for a shorter, distinctive word"]),
}


# durable-rules' fixed tables (and its expansion of `in` tests in joins): CLIPS has neither,
# so on CLIPS these packs load and run; `rules lint` reports them on every engine.
DURABLE_TABLES = {"in-list-512", "two-rules-300-each", "join-4x30", "join-6x20"}


def _counts(label: str) -> int:
    return {"in-list-512": 512, "two-rules-300-each": 600, "join-4x30": 810000, "join-6x20": 64000000,
            "not_in-5000": 5000, "contains-3000": 3000}[label]


@pytest.mark.parametrize("label", list(LIMIT_PACKS))
def test_lint_and_diagnose_refuse_the_pack_naming_rule_file_line_and_count(tmp_path, label):
    """`rules lint pack` reports the limit with the rule, its file:line in the pack and the
    count the engine would build (exit 1: lint found errors); `diagnose --rules pack` refuses
    the pack before registering anything (exit 2), with the same message; both at once."""
    text, line, rule_id, fragments = LIMIT_PACKS[label]
    write_pack(tmp_path, text)
    (tmp_path / "case.yaml").write_text("symptom: x\n", encoding="utf-8")
    engine = ("--engine", "durable") if label in DURABLE_TABLES and HAS_DURABLE else ()
    (lint, lint_took), (proc, took) = run_clis(
        (("rules", "lint", "pack"), {"cwd": tmp_path}),
        (("diagnose", "case.yaml", "--rules", "pack", "--no-env", *engine), {"cwd": tmp_path}))

    assert lint.returncode == 1, lint.stdout[-3000:]  # lint: 1 when it found errors
    assert "Traceback" not in lint.stderr + lint.stdout
    errors = [l for l in lint.stdout.splitlines() if ": error: " in l]
    assert errors and all(l.startswith("pack/pack.yaml:") for l in errors), errors  # never rules/...
    assert errors[0].startswith(f"pack/pack.yaml:{line}: error: rule {rule_id}: "), errors
    for fragment in fragments:
        assert fragment in lint.stdout, lint.stdout[-3000:]
    numbers = [int(n) for n in re.findall(r"\d+", errors[0].split(f"rule {rule_id}: ", 1)[1])]
    assert max(numbers) >= _counts(label), errors[0]  # the count the engine would build
    assert len(lint.stdout) < 4000, "the message repeats the whole rule"
    assert lint_took < QUICK, f"lint took {lint_took:.1f} s"

    if label in DURABLE_TABLES and not HAS_DURABLE:  # CLIPS only here: the pack runs
        assert proc.returncode == 0, proc.stderr[-2000:]
        return
    assert_clean_failure(proc)
    assert proc.stderr.startswith("j6doctor: error: the rule base is invalid:\n"
                                  f"pack/pack.yaml:{line}: rule {rule_id}: "), proc.stderr[:500]
    assert not re.search(r"^rules/", proc.stderr, re.MULTILINE), proc.stderr  # the bundled files are not blamed
    for fragment in fragments:
        assert fragment.replace("hint: ", "") in proc.stderr, proc.stderr[-3000:]
    assert len(proc.stderr) < 4000
    assert took < QUICK, f"diagnose took {took:.1f} s"


@pytest.mark.parametrize("label", list(LIMIT_PACKS))
def test_the_python_api_refuses_the_pack_at_load(tmp_path, label):
    """RuleBase.load refuses before anything reaches the engine (no worker is asked)."""
    text, line, rule_id, _ = LIMIT_PACKS[label]
    pack = write_pack(tmp_path, text)
    if label in DURABLE_TABLES and not HAS_DURABLE:
        assert RuleBase.load([pack], vocabulary(), {pack: "pack"}).engine == "clips"  # no such tables there
        return
    start = time.monotonic()
    with pytest.raises(RuleBaseErrors) as info:
        RuleBase.load([pack], vocabulary(), {pack: "pack"}, engine="durable" if label in DURABLE_TABLES else None)
    assert time.monotonic() - start < QUICK
    (error,) = info.value.errors
    assert (error.file, error.line, error.rule_id) == ("pack/pack.yaml", line, rule_id)


# Rule files that cannot be read safely: refused by what they are, before a byte is read.

def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _dev_zero(path: Path) -> None:
    try:
        os.mknod(path, stat.S_IFCHR | 0o644, os.makedev(1, 5))  # a copy of /dev/zero
    except PermissionError:
        pytest.skip("creating a device node needs privileges")


def _link_to_dev_zero(path: Path) -> None:
    path.symlink_to("/dev/zero")


def _over_4_mib(path: Path) -> None:
    path.write_text("seed: t\nrules: []\n" + "#" * (4 * 1024 * 1024) + "\n", encoding="utf-8")


NOT_A_RULE_FILE = {
    "fifo": (_fifo, "not a regular file (a folder, pipe or device); expected a YAML rule file"),
    "dev-zero": (_dev_zero, "not a regular file (a folder, pipe or device); expected a YAML rule file"),
    "symlink-to-dev-zero": (_link_to_dev_zero, "not a regular file (a folder, pipe or device)"),
    "over-4-MiB": (_over_4_mib, "too large (4194323 bytes; limit 4194304); expected a YAML rule file"),
}


@pytest.mark.parametrize("label,beside_a_good_file",
                         [(label, False) for label in NOT_A_RULE_FILE] + [("fifo", True), ("symlink-to-dev-zero", True)],
                         ids=[f"alone-{label}" for label in NOT_A_RULE_FILE] + ["beside-a-good-file-fifo",
                                                                               "beside-a-good-file-symlink"])
def test_unreadable_rule_files_in_a_pack_are_named_by_lint_and_diagnose(tmp_path, label, beside_a_good_file):
    """In a pack folder, a `*.yaml` that is a FIFO (reading it would block), a device or a
    link to one (it would never end) or over 4 MiB is refused with its name - it used to be
    skipped without a word ("no *.yaml rule files in this folder", or silently dropped
    beside other files)."""
    make, fragment = NOT_A_RULE_FILE[label]
    pack = tmp_path / "pack"
    pack.mkdir()
    make(pack / "pack.yaml")
    if beside_a_good_file:
        (pack / "a_good.yaml").write_text(_file(_rule("site.good", ["symptom: {}"])), encoding="utf-8")
    (tmp_path / "case.yaml").write_text("symptom: x\n", encoding="utf-8")

    engine = ("--engine", "durable") if label in DURABLE_TABLES and HAS_DURABLE else ()
    (lint, lint_took), (proc, took) = run_clis(
        (("rules", "lint", "pack"), {"cwd": tmp_path}),
        (("diagnose", "case.yaml", "--rules", "pack", "--no-env", *engine), {"cwd": tmp_path}))
    assert lint.returncode == 1 and "Traceback" not in lint.stderr, lint.stdout[-2000:]
    assert f"pack/pack.yaml: error: {fragment}" in lint.stdout, lint.stdout[-2000:]
    assert "no *.yaml rule files" not in lint.stdout
    assert lint_took < QUICK

    assert_clean_failure(proc)
    assert f"the rule base is invalid:\npack/pack.yaml: {fragment}" in proc.stderr, proc.stderr[-2000:]
    assert took < QUICK


def test_lint_given_unreadable_files_directly(tmp_path):
    """`rules lint FILE...` (lint takes files too): /dev/zero itself, a FIFO, a link to
    /dev/zero and a huge file, in one run: each named at once, never a blocked or endless read."""
    targets = {"dev-zero": Path("/dev/zero")}
    for label in ("fifo", "symlink-to-dev-zero", "over-4-MiB"):
        targets[label] = tmp_path / f"{label}.yaml"
        NOT_A_RULE_FILE[label][0](targets[label])
    proc, took = run_cli("rules", "lint", *map(str, targets.values()), cwd=tmp_path)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stdout[-2000:]
    for label, target in targets.items():
        fragment = NOT_A_RULE_FILE[label][1]
        assert f"{target}: error: {fragment}" in proc.stdout, (label, proc.stdout)
    assert took < QUICK


# ============================================================ 6. exponent-form thresholds

EXPONENT_PACK = """\
seed: t
rules:
  - id: site.lt
    title: under 1e-05
    when: [{result: {value: {lt: 1e-05}}, as: r}]
    then: [{finding: {topic: exp, text: "lt ${r.artifact}"}}]
  - id: site.le
    title: at most 1e-05
    when: [{result: {value: {le: 1e-05}}, as: r}]
    then: [{finding: {topic: exp, text: "le ${r.artifact}"}}]
  - id: site.eq
    title: exactly 1e-05
    when: [{result: {value: 1e-05}, as: r}]
    then: [{finding: {topic: exp, text: "eq ${r.artifact}"}}]
  - id: site.gt
    title: over 1.0e+300
    when: [{result: {value: {gt: 1.0e+300}}, as: r}]
    then: [{finding: {topic: exp, text: "gt ${r.artifact}"}}]
  - id: site.ge
    title: at least 1.0e+300
    when: [{result: {value: {ge: 1.0e+300}}, as: r}]
    then: [{finding: {topic: exp, text: "ge ${r.artifact}"}}]
  - id: site.in
    title: one of 5E-7 and 2.5e+3
    when: [{result: {value: {in: [5E-7, 2.5e+3]}}, as: r}]
    then: [{finding: {topic: exp, text: "in ${r.artifact}"}}]
"""

EXPONENT_CASE = """\
results:
  qat_pt: {status: normal, value: 9.5e-06}
  qat_bc: {status: normal, value: 1e-05}
  quantized_bc: {status: abnormal, value: 2.0e+300}
  hbm: {status: abnormal, value: 1e+300}
  hbm_x86: {status: abnormal, value: 1.1e-05}
  board: {status: abnormal, value: 2500}
"""

EXPONENT_EXPECTED = {
    "lt qat_pt",                               # 9.5e-06 < 1e-05; 1e-05 itself is not
    "le qat_pt", "le qat_bc",
    "eq qat_bc",
    "gt quantized_bc",                         # 2e300 > 1e300; 1e300 itself is not
    "ge quantized_bc", "ge hbm",
    "in board",                                # 2500 == 2.5e+3
}


def test_exponent_thresholds_load_as_numbers(tmp_path):
    pack = write_pack(tmp_path, EXPONENT_PACK)
    rb = RuleBase.load([pack], vocabulary(), {pack: "pack"})
    values = {r.id: t.value for r in rb.rules if r.id.startswith("site.") for c in r.when for t in c.tests}
    assert values == {"site.lt": 1e-05, "site.le": 1e-05, "site.eq": 1e-05, "site.gt": 1e300,
                      "site.ge": 1e300, "site.in": [5e-07, 2500.0]}
    assert all(isinstance(v, float) for v in values.values() if not isinstance(v, list))


def test_exponent_thresholds_compare_right_in_the_cli(tmp_path):
    write_pack(tmp_path, EXPONENT_PACK)
    (tmp_path / "case.yaml").write_text(EXPONENT_CASE, encoding="utf-8")
    (lint, _), (proc, _) = run_clis(
        (("rules", "lint", "pack"), {"cwd": tmp_path}),
        (("diagnose", "case.yaml", "--rules", "pack", "--no-env", "--format", "json"), {"cwd": tmp_path}))
    assert lint.returncode == 0 and ": error:" not in lint.stdout, lint.stdout[-2000:]
    assert proc.returncode == 0, proc.stderr[-3000:]
    found = {f["text"] for f in json.loads(proc.stdout)["findings"] if f.get("topic") == "exp"}
    assert found == EXPONENT_EXPECTED


def test_exponent_thresholds_compare_the_same_in_the_worker_and_inline(tmp_path, monkeypatch, worker_mode):
    rb = load_rulebase([write_pack(tmp_path, EXPONENT_PACK)])
    case = tmp_path / "case.yaml"
    case.write_text(EXPONENT_CASE, encoding="utf-8")

    def found() -> set[str]:
        return {f["text"] for f in diagnose_file(case, rb).run.by_type("finding") if f["topic"] == "exp"}

    in_worker = found()
    monkeypatch.setenv("J6DOCTOR_ENGINE_PROCESS", "inline")
    assert in_worker == found() == EXPONENT_EXPECTED


def test_engine_worker_ends_when_its_parent_is_killed():
    """A process killed abruptly (SIGKILL, the out-of-memory killer) leaves no engine
    worker behind: the forked worker holds no copy of the parent's end of its pipe, so the
    parent's death is an end of input for it."""
    if not hasattr(os, "fork"):
        pytest.skip("the engine worker is forked only where fork exists")
    code = ("from j6doctor.diagnosis import load_rulebase\n"
            "import j6doctor.engine.worker as w, time\n"
            "load_rulebase().warm_up()\n"
            "print(w.shared_worker()._process.pid, flush=True)\n"
            "time.sleep(120)\n")
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                              env={k: v for k, v in os.environ.items() if k != "J6DOCTOR_ENGINE_PROCESS"})
    worker = int(parent.stdout.readline())
    os.kill(parent.pid, 9)
    parent.wait(10)
    deadline = time.monotonic() + QUICK
    while time.monotonic() < deadline:
        try:
            os.kill(worker, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    os.kill(worker, 9)
    pytest.fail("the engine worker outlived its killed parent")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="the forked engine child")
def test_a_c_engine_dying_out_of_memory_is_the_memory_cap_not_a_crash(monkeypatch, capfd, rulebase):
    """Under the memory cap CLIPS can fail an allocation in its C code: it writes
    `[MEMORY1] Out of memory.` on stderr and exits. The child's stderr is the worker's to read:
    the run ends with the memory-cap message, and the C text never reaches the user's terminal.
    (The child's serve loop is replaced by what CLIPS does at that point; fork carries it over.)"""
    from j6doctor.engine import worker as worker_module
    from j6doctor.engine.worker import EngineWorker, Limits

    def clips_out_of_memory(conn, memory_mb):
        os.write(2, b"\n[MEMORY1] Out of memory.\n")
        sys.exit(1)  # CLIPS calls exit(1)

    def other_crash(conn, memory_mb):
        os.write(2, b"Segmentation fault in some C code\n")
        os.kill(os.getpid(), signal.SIGKILL)  # a crash: the process ends by a signal

    facts = diagnose_file(EXAMPLES / "convert_j6m.yaml", rulebase).facts
    for serve, expected in ((clips_out_of_memory, "the rule engine ran out of its 128 MB on the rule base"),
                            (other_crash, "C code) crashed on the rule base")):
        monkeypatch.setattr(worker_module, "_serve", serve)
        worker = EngineWorker(Limits(timeout=30, memory_mb=128))
        try:
            with pytest.raises(EngineLimitError, match=re.escape(expected)):
                worker.run(rulebase.compiled, rulebase.vocab, facts)
        finally:
            worker.stop()
        said = capfd.readouterr().err
        assert "MEMORY1" not in said and "Segmentation" not in said
