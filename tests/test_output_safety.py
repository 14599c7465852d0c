"""Issue 11, "never overwrite an input / files that cannot hurt": real CLI runs in
subprocesses on real files in tmp_path, no mocks of project code.

Every run must end with exit 0 (a warning in the report) or exit 2 (a message on stderr
naming the file and what to fix) — never exit 3 (an internal error), never a traceback, never a hang (every
subprocess has a timeout). Inputs are compared byte for byte, with mtime and inode, before
and after.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from j6doctor.exit_codes import EXIT_INTERNAL

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples" / "cases"
TIMEOUT = 90  # seconds; a run takes ~1 s, the margin is for a loaded machine
BOARD_VARIABLES = ("BOARD_TYPE", "HORIZON_BOARD_TYPE", "J6_BOARD_TYPE", "BOARD", "MARCH", "HORIZON_MARCH")
HASH_BYTES = 64 * 1024 * 1024  # what the report must say was hashed of a huge file
WORKERS = max(2, min(6, (os.cpu_count() or 2) * 2))
_PYCACHE: list[Path] = []  # bytecode and rule base cache folders for the children, outside every project


@pytest.fixture(scope="module", autouse=True)
def _bytecode_cache(tmp_path_factory):
    """The children compile j6doctor once into a cache of their own (PYTHONDONTWRITEBYTECODE
    would make each of the ~100 runs of this file compile every module again)."""
    _PYCACHE[:] = [tmp_path_factory.mktemp("pycache"), tmp_path_factory.mktemp("rulebase-cache")]
    yield
    _PYCACHE.clear()


# ----------------------------------------------------------------------------- helpers


def _environ(home: Path) -> dict[str, str]:
    """The child's environment: no debug tracebacks, no board variables, and a home / XDG
    folder of its own, so this machine's user config never enters the run."""
    env = dict(os.environ)
    env.pop("J6DOCTOR_DEBUG", None)
    for name in BOARD_VARIABLES:
        env.pop(name, None)
    env["HOME"] = str(home)
    if _PYCACHE:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(_PYCACHE[0])
    env["XDG_CONFIG_HOME"] = str(home / "xdg")
    if _PYCACHE:  # the compiled rule base cache lives in the user's cache folder, not a project's
        env["XDG_CACHE_HOME"] = str(_PYCACHE[1])
    return env


def j6doctor(*args: str, cwd: Path, env: dict[str, str], timeout: float = TIMEOUT,
             stdout=subprocess.PIPE) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "j6doctor", *args], check=False, cwd=cwd, env=env, stdout=stdout,
                          stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, timeout=timeout)


def assert_clean(proc: subprocess.CompletedProcess, *codes: int, what: str = "") -> None:
    """Exit code among `codes`, and nothing that looks like a crash on stderr."""
    detail = f"{what}\nexit {proc.returncode}\nstderr: {proc.stderr[-3000:]}"
    assert proc.returncode in codes, detail
    assert proc.returncode != EXIT_INTERNAL, detail
    assert "Traceback" not in proc.stderr, detail
    assert "internal error" not in proc.stderr, detail
    assert "Exception ignored" not in proc.stderr, detail


def snapshot(root: Path) -> dict[str, tuple]:
    """Every entry under root, links not followed: kind, inode, mtime and content (bytes of
    a regular file, target of a link). Folders carry their mtime too, so a temporary file
    created and removed inside one shows as a change."""
    entries: dict[str, tuple] = {}
    for current, dirs, files in os.walk(root, followlinks=False):
        for name in sorted(dirs) + sorted(files):
            path = Path(current) / name
            info = os.lstat(path)
            rel = path.relative_to(root).as_posix()
            if stat.S_ISLNK(info.st_mode):
                entries[rel] = ("link", os.readlink(path))
            elif stat.S_ISREG(info.st_mode):
                entries[rel] = ("file", info.st_ino, info.st_mtime_ns, info.st_size, path.read_bytes())
            elif stat.S_ISDIR(info.st_mode):
                entries[rel] = ("dir", info.st_ino, info.st_mtime_ns)
            else:  # a FIFO: never opened here
                entries[rel] = ("other", info.st_ino, stat.S_IFMT(info.st_mode))
    return entries


def assert_unchanged(before: dict[str, tuple], after: dict[str, tuple]) -> None:
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    assert not changed, f"files created, changed or removed: {changed}"


# ----------------------------------------------------------------------------- the project

CASE = """\
# a convert problem; the platform comes from .horizon/.env.board (the environment probe)
symptom: "quantized.bc 在验证集上 mAP 从 41.2 掉到 36.0"
versions: {horizon-plugin-pytorch: "3.1.2", horizon-plugin-profiler: "3.1.2", hbdk4-compiler: "4.4.2"}
results:
  qat_pt:       {status: normal, evidence: dataset_eval, metric: mAP, value: 41.2}
  qat_bc:       {status: normal, evidence: dataset_eval, metric: mAP, value: 41.0}
  quantized_bc: {status: abnormal, evidence: dataset_eval, metric: mAP, value: 36.0}
badcase: {reproducible: true}
"""

PACK_RULE = """\
title: site rules
seed: 2. Convert 问题
rules:
  - id: site.safety_hint
    title: convert → a site hint
    when:
      - chain_stage: {stage: convert}
    then:
      - next_step:
          order: 30
          text: "site pack hint"
"""

# relative path (from the project root) -> content; every one is read by the base command
INPUTS = {
    "case.yaml": CASE,
    "pack/site.yaml": PACK_RULE,
    "m.csv": "artifact,metric,value\nqat_pt,mAP,41.2\nqat_bc,mAP,41.0\nquantized_bc,mAP,36.0\n",
    "w/metrics.csv": "artifact,metric,value\nqat_pt,mAP,41.2\nquantized_bc,mAP,36.0\n",
    ".horizon/.env.board": "BOARD_TYPE=J6M\n",
    "j6doctor.toml": "environment = true\n",
    "w/model.hbm": "HBM\x00model",
    "w/train.py": "import torch\nprint('train')\n",
    "xdg/j6doctor/config.toml": "environment = false\n",  # the user config; the project file wins
}
USER_CONFIG = "xdg/j6doctor/config.toml"  # not in the list: two spellings only, to save time
# the base command of each target: the --metrics file replaces the work folder's metrics.csv,
# so that one is refused in a run that actually reads it as the metrics file
FULL = ("case.yaml", "--workdir", "w", "--rules", "pack", "--metrics", "m.csv")
WITHOUT_METRICS = ("case.yaml", "--workdir", "w", "--rules", "pack")
SPELLINGS = ("relative", "dot", "absolute", "dotdot", "symlink", "hardlink")


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    """root/ holds the project (XDG config under root/xdg, so HOME is root too)."""
    root = tmp_path_factory.mktemp("project")
    for rel, text in INPUTS.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    (root / "a").mkdir()  # for the a/../x spelling
    aliases = root / "aliases"  # links to the inputs, outside every scanned folder
    aliases.mkdir()
    for rel in INPUTS:
        flat = rel.replace("/", "_")
        (aliases / f"{flat}.sym").symlink_to(root / rel)
        os.link(root / rel, aliases / f"{flat}.hard")
    (root / "out").mkdir()
    return root


def spelled(root: Path, rel: str, how: str) -> str:
    flat = rel.replace("/", "_")
    return {"relative": rel, "dot": f"./{rel}", "absolute": str(root / rel), "dotdot": f"a/../{rel}",
            "symlink": f"aliases/{flat}.sym", "hardlink": f"aliases/{flat}.hard"}[how]


def base_args(rel: str) -> tuple[str, ...]:
    return WITHOUT_METRICS if rel == "w/metrics.csv" else FULL


def test_the_base_command_reads_every_input(project):
    """Sanity: the run the refusals are checked on reads each protected file, and an -o
    path that is no input is written."""
    env = _environ(project)
    before = snapshot(project)
    out = project / "out" / "fresh.json"
    try:
        proc = j6doctor("diagnose", *FULL, "--format", "json", "-o", str(out), cwd=project, env=env)
        assert_clean(proc, 0)
        report = json.loads(out.read_text(encoding="utf-8"))
    finally:
        out.unlink(missing_ok=True)
    text = json.dumps(report, ensure_ascii=False)
    assert {a["path"] for a in report["artifacts"]} >= {"w/model.hbm", "w/train.py"}
    assert "site pack hint" in text  # the --rules pack
    assert "m.csv" in text  # the --metrics file
    # the board file was read, so the project's j6doctor.toml (environment = true) beat the
    # user config (environment = false)
    assert any(t.get("source", {}).get("file") == ".horizon/.env.board" for t in report["trace"])
    proc = j6doctor("diagnose", *WITHOUT_METRICS, "--format", "json", cwd=project, env=env)
    assert_clean(proc, 0)
    assert "w/metrics.csv" in proc.stdout  # the work folder's metrics file, read as the metrics file
    after = snapshot(project)
    # only out/ saw a file come and go
    assert_unchanged({k: v for k, v in before.items() if k != "out"}, {k: v for k, v in after.items() if k != "out"})


def _refusal_runs(root: Path) -> list[tuple[str, tuple[str, ...]]]:
    runs = []
    for rel in INPUTS:
        for how in (("absolute", "symlink") if rel == USER_CONFIG else SPELLINGS):  # every input, every spelling
            runs.append((f"diagnose -o {rel} ({how})", ("diagnose", *base_args(rel), "-o", spelled(root, rel, how))))
    for shift, command in ((1, "next-step"), (3, "explain")):  # every input and every spelling, rotated
        for index, rel in enumerate(r for r in INPUTS if r != USER_CONFIG):
            how = SPELLINGS[(index + shift) % len(SPELLINGS)]
            runs.append((f"{command} -o {rel} ({how})", (command, *base_args(rel), "-o", spelled(root, rel, how))))
    for index, rel in enumerate(("w/model.hbm", "w/train.py", "w/metrics.csv")):  # inspect reads what it lists
        how = SPELLINGS[(index * 2) % len(SPELLINGS)]
        runs.append((f"inspect -o {rel} ({how})", ("inspect", "w", "-o", spelled(root, rel, how))))
    return runs


def test_output_refuses_every_file_the_run_read_under_every_spelling(project):
    """diagnose / next-step / explain / inspect -o: each input file under each spelling
    (relative, ./x, absolute, a/../x, a symlink to it, a hard link to it) is refused with
    exit 2 and a message naming the path; nothing in the project changes — not a byte, not
    an mtime, not an inode, no temporary file left or even created."""
    env = _environ(project)
    before = snapshot(project)
    runs = _refusal_runs(project)
    with ThreadPoolExecutor(WORKERS) as pool:
        results = list(pool.map(lambda run: (run[0], run[1], j6doctor(*run[1], cwd=project, env=env)), runs))
    failures = []
    for what, args, proc in results:
        target = args[-1]
        if not (proc.returncode == 2 and f"{Path(target)}: refusing to overwrite a file this run read" in proc.stderr
                and "choose another -o path" in proc.stderr and "Traceback" not in proc.stderr):
            failures.append(f"{what}: exit {proc.returncode}: {proc.stderr.strip()[-500:]}")
        elif proc.stdout:
            failures.append(f"{what}: refused, but printed the report anyway")
    assert not failures, "\n".join(failures)
    assert_unchanged(before, snapshot(project))
    assert len(results) == (len(INPUTS) - 1) * (len(SPELLINGS) + 2) + 2 + 3


# ----------------------------------------------------------------------------- concurrency


def test_concurrent_output_to_one_new_file(tmp_path):
    """24 processes write -o to the same new file at once: all exit 0, the file is exactly
    one complete report (the bytes of a single run), and no temporary file is left."""
    env = _environ(tmp_path / "home")
    case = tmp_path / "case.yaml"
    case.write_bytes((EXAMPLES / "convert_j6m.yaml").read_bytes())
    reference = j6doctor("diagnose", "case.yaml", "--no-env", cwd=tmp_path, env=env)
    assert_clean(reference, 0)
    assert reference.stdout.strip()
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    target = out_dir / "report.md"
    command = [sys.executable, "-m", "j6doctor", "diagnose", "case.yaml", "--no-env", "-o", str(target)]
    processes = [subprocess.Popen(command, cwd=tmp_path, env=env, stdin=subprocess.DEVNULL,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(24)]
    outcomes = []
    try:
        for process in processes:
            stdout, stderr = process.communicate(timeout=TIMEOUT * 2)
            outcomes.append((process.returncode, stdout, stderr))
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait()
    bad = [(code, err[-400:]) for code, _, err in outcomes if code != 0 or err.strip()]
    assert not bad, f"{len(bad)} of 24 runs failed: {bad[:3]}"
    assert all(out == "" for _, out, _ in outcomes)
    assert sorted(p.name for p in out_dir.iterdir()) == ["report.md"], "temporary files left behind"
    assert target.read_text(encoding="utf-8") == reference.stdout
    assert case.read_bytes() == (EXAMPLES / "convert_j6m.yaml").read_bytes()


# ----------------------------------------------------------------------------- outputs that cannot be written


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full on this system")
@pytest.mark.parametrize("command", ["diagnose", "explain", "next-step"])
def test_full_standard_output_is_exit_2_with_a_message(tmp_path, command):
    """`j6doctor diagnose CASE > /dev/full`: exit 2 and "cannot write the report to standard
    output: No space left on device", not an internal error."""
    (tmp_path / "case.yaml").write_bytes((EXAMPLES / "convert_j6m.yaml").read_bytes())
    with open("/dev/full", "w") as full:
        proc = j6doctor(command, "case.yaml", "--no-env", cwd=tmp_path, env=_environ(tmp_path / "home"), stdout=full)
    assert_clean(proc, 2)
    assert "cannot write the report to standard output" in proc.stderr
    assert "No space left on device" in proc.stderr


def test_closed_standard_output_is_exit_2_with_a_message(tmp_path):
    """Standard output a pipe whose reader is gone: exit 2 with "Broken pipe", nothing more."""
    (tmp_path / "case.yaml").write_bytes((EXAMPLES / "convert_j6m.yaml").read_bytes())
    reader, writer = os.pipe()
    os.close(reader)
    try:
        proc = j6doctor("diagnose", "case.yaml", "--no-env", cwd=tmp_path, env=_environ(tmp_path / "home"),
                        stdout=writer)
    finally:
        os.close(writer)
    assert_clean(proc, 2)
    assert proc.stderr.strip() == "j6doctor: error: cannot write the report to standard output: Broken pipe"


def test_output_paths_that_are_no_regular_file(tmp_path):
    """-o naming /dev/full, a link to /dev/zero, a FIFO (opening it would block), a folder,
    or a file in a folder that does not exist: exit 2 with a message naming the path and
    what -o takes, without blocking and without touching anything."""
    env = _environ(tmp_path / "home")
    (tmp_path / "case.yaml").write_bytes((EXAMPLES / "convert_j6m.yaml").read_bytes())
    os.mkfifo(tmp_path / "pipe.md")
    (tmp_path / "zero.md").symlink_to("/dev/zero")
    (tmp_path / "folder").mkdir()
    before = snapshot(tmp_path)
    targets = {
        "pipe.md": "not a regular file (a pipe or a device); -o takes a file path",
        "zero.md": "not a regular file (a pipe or a device); -o takes a file path",
        "missing/report.md": "cannot write: No such file or directory",
        "folder": "is a directory",  # refused by the option type before the run
    }
    if os.path.exists("/dev/full"):
        targets["/dev/full"] = "not a regular file (a pipe or a device); -o takes a file path"
    with ThreadPoolExecutor(WORKERS) as pool:
        procs = dict(zip(targets, pool.map(
            lambda t: j6doctor("diagnose", "case.yaml", "--no-env", "-o", t, cwd=tmp_path, env=env, timeout=60),
            targets)))
    for target, expected in targets.items():
        proc = procs[target]
        assert_clean(proc, 2, what=target)
        assert target.split("/")[-1] in proc.stderr and expected in proc.stderr, (target, proc.stderr)
    assert_unchanged(before, snapshot(tmp_path))


# ----------------------------------------------------------------------------- symlinks and non-regular files


def _warnings(proc: subprocess.CompletedProcess) -> list[str]:
    return json.loads(proc.stdout)["warnings"]


def _one(warnings: list[str], *words: str) -> str:
    found = [w for w in warnings if all(word in w for word in words)]
    assert found, f"no warning with {words} in {json.dumps(warnings, ensure_ascii=False, indent=1)}"
    return found[0]


@pytest.fixture
def linked_tree(tmp_path) -> Path:
    """store/ holds the real files; w/ is a work folder of links and odd entries."""
    store, work = tmp_path / "store", tmp_path / "w"
    store.mkdir()
    work.mkdir()
    (store / "real.hbm").write_bytes(b"HBM\x00linked model")
    (store / "real_script.py").write_text("import os\nprint('linked script')\n", encoding="utf-8")
    (store / "listed.hbm").write_bytes(b"HBM\x00listed model")
    (work / "linked.hbm").symlink_to("../store/real.hbm")
    (work / "linked_script.py").symlink_to(store / "real_script.py")
    (work / "self_loop.hbm").symlink_to("self_loop.hbm")
    (work / "loop_a.hbm").symlink_to("loop_b.hbm")
    (work / "loop_b.hbm").symlink_to("loop_a.hbm")
    (work / "dangling.hbm").symlink_to("nothing_here.hbm")
    os.mkfifo(work / "fifo.hbm")
    os.mkfifo(work / "metrics.csv")  # a pipe under the name of the metrics file
    (work / "zero.hbm").symlink_to("/dev/zero")
    (work / "back").symlink_to(".")  # a folder link back to the work folder itself
    links = tmp_path / "links"
    links.mkdir()
    (links / "listed.hbm").symlink_to("../store/listed.hbm")
    (links / "loop.hbm").symlink_to("loop.hbm")
    (links / "dangling.hbm").symlink_to("gone.hbm")
    (links / "listed_script.py").symlink_to("../store/real_script.py")
    return tmp_path


def test_symlinks_and_special_files_in_a_work_folder(linked_tree):
    """A symlinked artifact and a symlinked script are read and reported as having come
    through a link; a link loop (to itself, or two links) says "loop", never "does not
    exist"; a dangling link says its target does not exist; a FIFO (also one named
    metrics.csv) and a link to /dev/zero are skipped as not regular files without blocking;
    a folder link back to the work folder is noted as a loop. Exit 0, nothing changed."""
    root = linked_tree
    before = snapshot(root)
    started = time.monotonic()
    proc = j6doctor("diagnose", "--workdir", "w", "--no-env", "--format", "json", cwd=root,
                    env=_environ(root / "home"), timeout=60)
    assert time.monotonic() - started < 60
    assert_clean(proc, 0)
    report = json.loads(proc.stdout)
    warnings = report["warnings"]
    paths = {a["path"]: a for a in report["artifacts"]}
    assert paths["linked.hbm"]["kind"] == "hbm"
    assert paths["linked.hbm"]["sha256"] == hashlib.sha256(b"HBM\x00linked model").hexdigest()
    assert paths["linked_script.py"]["kind"] == "script"
    assert str(root / "store" / "real.hbm") in _one(warnings, "linked.hbm", "符号链接")
    assert str(root / "store" / "real_script.py") in _one(warnings, "linked_script.py", "符号链接")
    for name in ("self_loop.hbm", "loop_a.hbm", "loop_b.hbm"):
        message = _one(warnings, name, "无法使用")
        assert "loop" in message and "does not exist" not in message and "no such" not in message, message
    assert "does not exist" in _one(warnings, "dangling.hbm", "无法使用")
    for name in ("fifo.hbm", "metrics.csv", "zero.hbm"):
        assert "not a regular file" in _one(warnings, name, "无法使用")
    assert "/dev/zero" in _one(warnings, "zero.hbm", "符号链接")
    _one(warnings, "back", "循环")
    for name in ("self_loop.hbm", "dangling.hbm", "fifo.hbm", "zero.hbm", "metrics.csv"):
        assert name not in paths
    # the Markdown report says the same
    proc = j6doctor("diagnose", "--workdir", "w", "--no-env", cwd=root, env=_environ(root / "home"), timeout=60)
    assert_clean(proc, 0)
    assert "linked.hbm 是符号链接，读取的是它指向的" in proc.stdout
    assert_unchanged(before, snapshot(root))


def test_symlinks_and_folders_listed_in_a_case(linked_tree):
    """A case listing a symlinked artifact and script explicitly: read and noted as links;
    a listed loop says loop; a listed dangling link says its target does not exist; a listed
    FIFO is skipped; a listed folder is scanned (artifacts may name folders). Exit 0."""
    root = linked_tree
    (root / "case.yaml").write_text(
        "platform: J6M\n"
        "artifacts: [links/listed.hbm, links/loop.hbm, links/dangling.hbm, w/fifo.hbm, store]\n"
        "scripts: [links/listed_script.py]\n", encoding="utf-8")
    before = snapshot(root)
    proc = j6doctor("diagnose", "case.yaml", "--no-env", "--format", "json", cwd=root,
                    env=_environ(root / "home"), timeout=60)
    assert_clean(proc, 0)
    report = json.loads(proc.stdout)
    warnings = report["warnings"]
    paths = {a["path"] for a in report["artifacts"]}
    assert "links/listed.hbm" in paths
    assert str(root / "store" / "listed.hbm") in _one(warnings, "links/listed.hbm", "符号链接")
    assert str(root / "store" / "real_script.py") in _one(warnings, "links/listed_script.py", "符号链接")
    loop = _one(warnings, "links/loop.hbm", "无法使用")
    assert "loop" in loop and "dangling" not in loop and "does not exist" not in loop, loop
    dangling = _one(warnings, "links/dangling.hbm", "无法使用")
    assert "does not exist" in dangling and "loop" not in dangling, dangling
    assert "not a regular file" in _one(warnings, "w/fifo.hbm", "无法使用")
    assert "store/real.hbm" in paths  # the listed folder was scanned
    assert_unchanged(before, snapshot(root))


def test_folders_and_pipes_where_a_file_is_expected(linked_tree):
    """--metrics naming a folder, a FIFO or /dev/zero, the case argument naming a folder or a
    FIFO, --workdir naming a file: exit 2 naming the option / file and what is wrong, never
    blocking. The case's `metrics:` naming a folder: exit 2 too, naming the folder and the
    case line that named it."""
    root = linked_tree
    env = _environ(root / "home")
    (root / "case.yaml").write_bytes((EXAMPLES / "convert_j6m.yaml").read_bytes())
    (root / "case_metrics_folder.yaml").write_text("platform: J6M\nmetrics: {file: store}\n", encoding="utf-8")
    os.mkfifo(root / "pipe.yaml")
    os.mkfifo(root / "pipe.csv")
    before = snapshot(root)
    exit_2 = {
        ("case.yaml", "--metrics", "store"): ("--metrics", "store", "is a directory"),
        ("store",): ("CASE", "store", "is a folder", "--workdir store"),
        ("pipe.yaml",): ("pipe.yaml", "not a regular file"),
        ("case.yaml", "--workdir", "case.yaml"): ("--workdir", "case.yaml", "is a file"),
        ("case.yaml", "--metrics", "pipe.csv"): ("pipe.csv", "not a regular file", "--metrics takes"),
        ("case.yaml", "--metrics", "/dev/zero"): ("/dev/zero", "not a regular file", "--metrics takes"),
        ("case_metrics_folder.yaml",): ("store: is a folder; expected a metrics file",
                                        "由 case_metrics_folder.yaml:2 metrics.file 指定"),
    }
    runs = list(exit_2)
    with ThreadPoolExecutor(WORKERS) as pool:
        procs = dict(zip(runs, pool.map(
            lambda args: j6doctor("diagnose", *args, "--no-env", "--format", "json", cwd=root, env=env, timeout=60),
            runs)))
    for args, words in exit_2.items():
        assert_clean(procs[args], 2, what=str(args))
        assert all(word in procs[args].stderr for word in words), (args, procs[args].stderr)
    assert_unchanged(before, snapshot(root))


def test_metrics_that_is_no_regular_file_is_not_called_missing(linked_tree):
    root = linked_tree
    os.mkfifo(root / "pipe.csv")
    proc = j6doctor("diagnose", "--workdir", "store", "--metrics", "pipe.csv", "--no-env", "--format", "json",
                    cwd=root, env=_environ(root / "home"), timeout=60)
    assert_clean(proc, 2)
    assert "no such" not in proc.stderr and "pipe.csv: not a regular file" in proc.stderr, proc.stderr


# ----------------------------------------------------------------------------- huge sparse file


def test_sparse_20_gb_model_is_hashed_over_a_bounded_prefix(tmp_path):
    """A sparse 20 GB model.hbm: done in seconds; the JSON gives the full size, `hashed` =
    64 MiB and the digest of those 64 MiB; the Markdown report says only they were hashed."""
    work = tmp_path / "w"
    work.mkdir()
    huge = work / "model.hbm"
    with huge.open("wb") as handle:
        handle.write(b"HBM")
    os.truncate(huge, 20 * 1024 ** 3)
    if huge.stat().st_blocks * 512 > 64 * 1024 * 1024:
        pytest.skip("this file system does not keep sparse files sparse")
    env = _environ(tmp_path / "home")
    started = time.monotonic()
    proc = j6doctor("diagnose", "--workdir", "w", "--no-env", "--format", "json", cwd=tmp_path, env=env, timeout=60)
    elapsed = time.monotonic() - started
    assert_clean(proc, 0)
    assert elapsed < 20, f"{elapsed:.1f} s for a sparse 20 GB file"
    (entry,) = [a for a in json.loads(proc.stdout)["artifacts"] if a["path"] == "model.hbm"]
    assert entry["size"] == 20 * 1024 ** 3
    assert entry["hashed"] == HASH_BYTES
    prefix = hashlib.sha256(b"HBM")
    prefix.update(bytes(HASH_BYTES - 3))
    assert entry["sha256"] == prefix.hexdigest()
    proc = j6doctor("diagnose", "--workdir", "w", "--no-env", cwd=tmp_path, env=env, timeout=60)
    assert_clean(proc, 0)
    assert "只算前 64 MiB" in proc.stdout
    assert huge.stat().st_size == 20 * 1024 ** 3


# ----------------------------------------------------------------------------- case bounds

# Runs the command given in argv[2:], then writes the peak resident size (KiB on Linux) of
# its process tree to argv[1]; stdout / stderr pass through.
_MEASURE = """\
import resource, subprocess, sys
code = subprocess.call(sys.argv[2:])
with open(sys.argv[1], "w") as out:
    out.write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))
sys.exit(code)
"""


def _big_case(path: Path, key: str, count: int) -> None:
    with path.open("w", encoding="utf-8") as handle:
        handle.write("platform: J6M\n")
        if key == "versions":
            handle.write("versions:\n")
            handle.writelines(f"  pkg{i}: '1.{i}'\n" for i in range(count))
        else:
            handle.write(f"{key}:\n")
            item = {"tried": "t{}", "artifacts": "a{}.hbm", "scripts": "s{}.py"}[key]
            handle.writelines(f"  - {item.format(i)}\n" for i in range(count))


BOUNDS = [  # key, entries, what the message must say
    ("tried", 150_000, "tried: 150000 entries; at most 100"),
    ("artifacts", 120_000, "artifacts: 120000 entries; at most 200"),
    ("scripts", 16_000, "scripts: 16000 entries; at most 200"),
    ("versions", 5_000, "versions"),
]


@pytest.mark.skipif(sys.platform != "linux", reason="ru_maxrss in KiB is Linux")
def test_case_bounds_are_quick_small_and_named(tmp_path):
    """150,000 `tried`, 120,000 `artifacts`, 16,000 `scripts` entries, 5,000 versions, and a
    case over the size limit: each exits 2 within seconds with a message naming the file,
    the key and the limit; peak memory of the child stays well under 1 GiB."""
    env = _environ(tmp_path / "home")
    runs = []
    for key, count, expected in BOUNDS:
        name = f"{key}.yaml"
        _big_case(tmp_path / name, key, count)
        runs.append((name, expected))
    oversized = tmp_path / "oversized.yaml"
    with oversized.open("w", encoding="utf-8") as handle:  # 5 MiB: one long comment after a valid key
        handle.write("platform: J6M\n# " + "x" * (5 * 1024 * 1024) + "\n")
    runs.append(("oversized.yaml", "too large (5242897 bytes; limit 4194304)"))
    assert 1_000_000 < (tmp_path / "tried.yaml").stat().st_size < 2_500_000

    def measure(name: str) -> tuple[subprocess.CompletedProcess, float, int]:
        rss_file = tmp_path / f"{name}.rss"
        started = time.monotonic()
        proc = subprocess.run([sys.executable, "-c", _MEASURE, str(rss_file), sys.executable, "-m", "j6doctor",
                               "diagnose", name, "--no-env"], check=False, cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=60, stdin=subprocess.DEVNULL)
        return proc, time.monotonic() - started, int(rss_file.read_text())

    before = snapshot(tmp_path)
    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(measure, [name for name, _ in runs]))
    for (name, expected), (proc, elapsed, rss_kib) in zip(runs, results):
        assert_clean(proc, 2, what=name)
        assert f"{name}" in proc.stderr and expected in proc.stderr, (name, proc.stderr[-500:])
        assert elapsed < 30, f"{name}: {elapsed:.1f} s"
        assert rss_kib < 512 * 1024, f"{name}: peak {rss_kib // 1024} MiB"
    assert_unchanged(before, {k: v for k, v in snapshot(tmp_path).items() if not k.endswith(".rss")})
