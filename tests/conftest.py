"""Shared fixtures: the real bundled rule base on the real engine, and a CLI runner that
starts the installed console entry point in a subprocess.

Every engine run of the suite is cross-checked: J6DOCTOR_CROSS_CHECK=1 repeats it on the
other installed engine (durable-rules / CLIPS) and fails on the first difference
(engine/differential.py). Where only one engine is installed (Python 3.13) it is a no-op.
J6DOCTOR_ENGINE picks the engine the suite runs on (default: durable-rules where installed).

The suite keeps to itself: it never reads or writes the user's j6doctor folders. Each test
gets an empty config folder of its own (XDG_CONFIG_HOME, autouse fixture); the cache
(XDG_CACHE_HOME) is one temporary folder for the whole session, removed at its end — shared
because a compiled rule base rebuilt in every CLI subprocess of every test would cost
seconds each. Both are set in os.environ, so the CLI subprocesses, which inherit it, use them
too. At the end of the session the user's own cache and config folders are compared with
what they were at its start: a difference fails the run."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from j6doctor.config import user_config_path
from j6doctor.diagnosis import diagnose_data, load_rulebase
from j6doctor.engine.backends import available as engine_available, durable_installable
from j6doctor.user_cache import cache_dir

CROSS_CHECK_GIVEN = os.environ.get("J6DOCTOR_CROSS_CHECK")  # "0": turned off for this run
os.environ.setdefault("J6DOCTOR_CROSS_CHECK", "1")

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples" / "cases"
# A site's one-rule pack: fires on every case whose chain is open (config and CLI tests).
SITE_RULE = """\
seed: site
rules:
  - id: site.note
    title: 站点规则：每个案例都记一条
    when:
      - chain_open: {}
    then:
      - finding: {topic: site, text: 站点规则已加载}
    examples:
      - case: {}
"""
# The bundled case files; beside each one lie its expected reports (<case>.expected.json|md).
EXAMPLE_CASES = sorted(p for p in EXAMPLES.iterdir()
                       if p.suffix in (".yaml", ".yml", ".json") and ".expected." not in p.name)
SHARED = REPO.parent / "shared"

HAS_DURABLE = engine_available("durable")
if not HAS_DURABLE and durable_installable():
    # installed without the `durable` extra: the suite runs on CLIPS by choice, so no CLI run
    # adds the one-line fallback note (test_engine_choice.py checks that note)
    os.environ.setdefault("J6DOCTOR_ENGINE", "clips")
# Tests of durable-rules' own fixed tables; on Python 3.13 (CLIPS only) they are skipped with
# this reason, and their CLIPS counterparts say what the same pack does there.
durable_only = pytest.mark.skipif(not HAS_DURABLE, reason="durable-rules is not installed on this Python "
                                                         "(3.13, or no C compiler): its fixed tables do not apply")

FULL_INFO = {
    "symptom": "quantized.bc 在验证集上掉点",
    "platform": "J6M",
    "versions": {"horizon-plugin-pytorch": "3.1.2", "horizon-plugin-profiler": "3.1.2",
                 "hbdk4-compiler": "4.4.2"},
    "badcase": {"reproducible": True},
}


def ok(status: str, evidence: str = "dataset_eval") -> dict:
    return {"status": status, "evidence": evidence}


def _folder_state(folder: Path) -> dict[str, tuple[int, int]]:
    """(size, modification time) of a folder and everything in it; {} when it does not exist."""
    state = {}
    for path in (folder, *(folder.rglob("*") if folder.is_dir() else ())):
        try:
            info = path.lstat()
        except OSError:
            continue
        state[str(path)] = (info.st_size, info.st_mtime_ns)
    return state


# The user's folders as they were, and the session's cache: set up when the session starts
# (pytest_configure, before any test module is imported), not when a subprocess of a test
# imports this module for its helpers.
USER_STATE: dict[Path, dict[str, tuple[int, int]]] = {}
SESSION_CACHE: list[Path] = []


def pytest_configure(config):
    folders = (cache_dir({**os.environ, "J6DOCTOR_CACHE": "1"}), user_config_path().parent)
    USER_STATE.update({folder: _folder_state(folder) for folder in folders if folder is not None})
    SESSION_CACHE.append(Path(tempfile.mkdtemp(prefix="j6doctor-test-cache-")))
    os.environ["XDG_CACHE_HOME"] = str(SESSION_CACHE[0])
    os.environ["XDG_CONFIG_HOME"] = str(SESSION_CACHE[0] / "no-config")  # replaced per test below


@pytest.fixture(autouse=True)
def own_config_folder(tmp_path_factory, monkeypatch):
    """An empty config folder of the test's own: no user config.toml is read."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("config")))


def pytest_sessionfinish(session, exitstatus):
    """Remove the session's cache; fail the run if the user's j6doctor folders changed."""
    for folder in SESSION_CACHE:
        shutil.rmtree(folder, ignore_errors=True)
    changed = [str(folder) for folder, before in USER_STATE.items() if _folder_state(folder) != before]
    if changed:
        writer = session.config.get_terminal_writer()
        writer.line()
        writer.line(
            f"j6doctor test suite: the user's folders changed during the run: {', '.join(changed)} "
            "(a test wrote outside its own cache / config folders)", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(scope="session")
def rulebase():
    return load_rulebase()


def judged(rulebase, path, type_name: str, field: str) -> set:
    """What the rules conclude (a field of the derived facts of a type) when the whole
    pipeline reads one file: the probe measures, rules/54_measure_classes.yaml judges."""
    path = Path(path)
    d = diagnose_data({"artifacts": [path.name]}, rulebase, base=path.parent)
    return {f.fields[field] for f in d.run.by_type(type_name)}


def compare_judgement(rulebase, path):
    """What rules/54 makes of a compare table read through the whole pipeline: the error
    origin fact (or None), the shapes, and the triggers of the sudden break at the origin."""
    path = Path(path)
    d = diagnose_data({"artifacts": [path.name]}, rulebase, base=path.parent)
    origins = d.run.by_type("compare_origin")
    assert len(origins) <= 1, origins
    origin = origins[0].fields if origins else None
    shapes = {f.fields["shape"] for f in d.run.by_type("compare_shape")}
    triggers = {f.fields["trigger"] for f in d.run.by_type("sudden_break")
                if origin is not None and f.fields["row"] == origin["row"]}
    return origin, shapes, triggers


def origin_reading(rulebase, path) -> set:
    return judged(rulebase, path, "origin_reading", "reading")


def sensitivity_shape(rulebase, path) -> set:
    return judged(rulebase, path, "sensitivity_shape", "pattern")


@pytest.fixture(scope="session")
def diagnose(rulebase):
    def run(case: dict):
        return diagnose_data(case, rulebase)
    return run


@pytest.fixture
def cli(tmp_path):
    def run(*args: str, cwd: Path | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
        full_env = dict(os.environ)
        full_env.pop("J6DOCTOR_DEBUG", None)
        full_env.update(env or {})
        return subprocess.run(
            [sys.executable, "-m", "j6doctor", *args], cwd=cwd or tmp_path, env=full_env,
            capture_output=True, text=True, timeout=120,
        )
    return run


def write_file(folder: Path, name: str, content: str | bytes) -> Path:
    """folder/name holding `content` exactly: bytes as given, text as UTF-8 with its own line
    ends (no newline translation); the folder is created if missing."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    return path


def write_pack(folder: Path, vocabulary: str, rules: str, case: str) -> Path:
    """`folder` holding a rule pack `pack/` (its vocabulary.yaml and one rule file) and the
    case.yaml diagnosed with it."""
    write_file(folder / "pack", "vocabulary.yaml", vocabulary)
    write_file(folder / "pack", "calibration.yaml", rules)
    write_file(folder, "case.yaml", case)
    return folder


def assert_refused(read, path: Path, file: str, line: int | None, fragment: str) -> None:
    """`read(path)` refuses the file with an InputError that names `file` and `line` (None: no
    one line), says `fragment`, and reads `file:line: ...`."""
    from j6doctor.probes.input_error import InputError

    with pytest.raises(InputError) as info:
        read(path)
    error = info.value
    assert (error.file, error.line) == (file, line)
    assert fragment in error.message
    assert str(error).startswith(f"{file}:{line}: " if line else f"{file}: ")


def write_case(tmp_path: Path, text: str, name: str = "case.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def run_with_terminal_stderr(command: list[str], **kwargs) -> tuple[subprocess.CompletedProcess, str]:
    """Run `command` with its stderr on a pseudo-terminal (stdout discarded): the process
    and everything it wrote to the terminal."""
    import pty

    leader, follower = pty.openpty()
    proc = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=follower, timeout=120, **kwargs)
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:  # EIO once the other side is closed (Linux)
            break
        if not data:
            break
        chunks.append(data)
    os.close(leader)
    return proc, b"".join(chunks).decode("utf-8", "replace")


def pytest_addoption(parser):
    parser.addoption("--update", "--snapshot-update", action="store_true", dest="snapshot_update",
                     help="rewrite examples/cases/*.expected.* from the current reports (tests/test_example_snapshots.py) "
                          "instead of comparing with it")


# --------------------------------------------------------------------- markers
# The inner loop while developing: `python -m pytest -m "not slow and not fuzz and not browser"`
# (in-process tests of every module, under a minute); the full suite is what CI runs.
SLOW_MODULES = frozenset({
    "test_exhaustive", "test_cli_conventions", "test_case_library", "test_engine_differential", "test_explain_matches_engine", "test_benchmarks",
    "test_determinism", "test_cold_start_paths", "test_triage", "test_engine_wall", "test_input_bounds",
    "test_real_reports", "test_real_report_dev_set", "test_bundled_cases", "test_output_safety", "test_procedure", "test_progress",
    "test_engine_choice", "test_ask", "test_rulebase_cache", "test_vocabulary_packs", "test_rule_examples",
    "test_free_text_phrasings", "test_columnar_reading", "test_candidates_and_order",
    "test_rule_condition_coverage", "test_processes",
})
# Tests of size limits and generated trees: seconds each.
SLOW_WORDS = ("million", "bomb", "large", "thousand", "truncation", "hostile", "pack", "many_rules", "key_limit",
              "collisions")
FUZZ_MODULES = frozenset({"test_bad_inputs", "test_value_properties"})  # generated hostile inputs
RUNS_THE_COMMAND = ("cli",)  # fixtures that start `python -m j6doctor` in a subprocess


def pytest_collection_modifyitems(config, items):
    for item in items:
        module = item.module.__name__.rsplit(".", 1)[-1] if getattr(item, "module", None) else ""
        if module in FUZZ_MODULES or getattr(getattr(item, "obj", None), "is_hypothesis_test", False):
            item.add_marker(pytest.mark.fuzz)
        if (module in SLOW_MODULES or any(word in item.name for word in SLOW_WORDS)
                or any(f in getattr(item, "fixturenames", ()) for f in RUNS_THE_COMMAND)):
            item.add_marker(pytest.mark.slow)
