"""The case library under faults (issue 32): commands that only read it write nothing in it
or beside it and create no library; a library on a read-only medium is read, and writing to
it is refused with its name; another program's SQLite database is never written into; a full
disk (a file-size limit in the child process) is refused naming the library or the report,
and the user's files stay as they were; a stored report shows no raw HTML. Real SQLite
files, real child processes."""

from __future__ import annotations

import json
import os
import resource
import shlex
import shutil
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import EXAMPLES

CASE = EXAMPLES / "convert_j6m.yaml"
OTHER_CASE = EXAMPLES / "qat_training.yaml"


def _env(cache: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("J6DOCTOR_")}
    env["XDG_CACHE_HOME"] = str(cache)
    return env


def _j6doctor(args: list, cwd: Path, cache: Path, limit: int | None = None,
              prefix: list[str] | None = None) -> subprocess.CompletedProcess:
    """j6doctor in a child process; `limit`: the largest file it may write, in bytes (a
    full disk: a write past it fails with EFBIG instead of killing the process)."""

    def file_size_limit() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    command = [*(prefix or []), sys.executable, "-m", "j6doctor", *map(str, args)]
    return subprocess.run(command, cwd=cwd, env=_env(cache), capture_output=True, text=True, timeout=300,
                          preexec_fn=file_size_limit if limit is not None else None)


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


@pytest.fixture(scope="module")
def library(tmp_path_factory) -> tuple[Path, Path]:
    """(a folder holding cases.db with one diagnosis and nothing else, the rule-base cache)."""
    folder = tmp_path_factory.mktemp("library")
    cache = tmp_path_factory.mktemp("cache")
    proc = _j6doctor(["diagnose", CASE, "--store", "cases.db", "-q", "-o", "report.md", "--no-env"], folder, cache)
    assert proc.returncode == 0, proc.stderr
    (folder / "report.md").unlink()
    (folder / "cases.db.lock").unlink()
    assert sorted(p.name for p in folder.iterdir()) == ["cases.db"]
    return folder, cache


def _copy(library: tuple[Path, Path], tmp_path: Path) -> Path:
    folder = tmp_path / "lib"
    shutil.copytree(library[0], folder)
    return folder


READS = [["cases", "list"], ["cases", "show", "1"], ["cases", "stats"], ["cases", "search", "mAP"],
         ["cases", "export"], ["cases", "rediagnose", "-j", "1"]]


@pytest.mark.parametrize("command", READS, ids=lambda c: " ".join(c[1:2]))
def test_a_command_that_reads_the_library_writes_nothing_in_it_or_beside_it(library, tmp_path, command):
    folder = _copy(library, tmp_path)
    before = _files(folder)
    proc = _j6doctor([*command, "--store", "cases.db"], folder, library[1])
    assert proc.returncode == 0, proc.stderr
    assert "convert_j6m" in proc.stdout or "1 个案例" in proc.stdout or "重新诊断 1 个案例" in proc.stdout
    assert _files(folder) == before  # no lock file, no WAL left, not one byte of the library changed


@pytest.mark.parametrize("content", [None, b""], ids=["missing", "empty"])
def test_reading_a_library_that_is_not_there_creates_none(tmp_path, library, content):
    if content is not None:
        (tmp_path / "cases.db").write_bytes(content)
    proc = _j6doctor(["cases", "list", "--store", "cases.db"], tmp_path, library[1])
    assert proc.returncode == 2
    assert proc.stderr.startswith("j6doctor: error: cases.db: no case library there yet")
    assert [p.name for p in tmp_path.iterdir()] == ([] if content is None else ["cases.db"])
    if content is not None:
        assert (tmp_path / "cases.db").read_bytes() == content


def _read_only_prefix(folder: Path) -> list[str] | None:
    """A command prefix that runs a child with `folder` read-only even for root (a read-only
    bind mount in a private mount namespace); None where this machine cannot make one."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return None
    quoted = shlex.quote(str(folder))
    prefix = [unshare, "-m", "sh", "-c", f"mount --bind -o ro {quoted} {quoted} && exec \"$@\"", "sh"]
    probe = subprocess.run([*prefix, "sh", "-c", f"! touch {quoted}/probe 2>/dev/null"], capture_output=True)
    return prefix if probe.returncode == 0 and not (folder / "probe").exists() else None


@pytest.fixture
def read_only(library, tmp_path):
    """(folder, command prefix): a copy of the library that the child cannot write."""
    folder = _copy(library, tmp_path)
    if os.geteuid() != 0:
        (folder / "cases.db").chmod(0o444)
        folder.chmod(0o555)
        yield folder, []
        folder.chmod(0o755)
        return
    prefix = _read_only_prefix(folder)
    if prefix is None:
        pytest.skip("running as root without a way to make a read-only mount (unshare / mount)")
    yield folder, prefix


@pytest.mark.parametrize("command", READS, ids=lambda c: " ".join(c[1:2]))
def test_a_library_on_a_read_only_medium_is_read(read_only, library, command):
    folder, prefix = read_only
    before = _files(folder)
    proc = _j6doctor([*command, "--store", "cases.db"], folder, library[1], prefix=prefix)
    assert proc.returncode == 0, proc.stderr
    assert _files(folder) == before


@pytest.mark.parametrize("command", [["diagnose", CASE, "-o", "-"], ["cases", "resolve", "1", "--stage", "convert"]],
                         ids=["diagnose --store", "cases resolve"])
def test_writing_to_a_read_only_library_is_refused_with_its_name(read_only, library, command):
    folder, prefix = read_only
    before = _files(folder)
    proc = _j6doctor([*command, "--store", "cases.db", "--no-env"] if command[0] == "diagnose"
                     else [*command, "--store", "cases.db"], folder, library[1], prefix=prefix)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("j6doctor: error: cases.db: ")
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr
    assert _files(folder) == before


def test_another_programs_sqlite_database_is_never_written_into(tmp_path, library):
    other = tmp_path / "inventory.sqlite"
    with sqlite3.connect(other) as connection:
        connection.execute("CREATE TABLE parts (name TEXT)")
        connection.execute("INSERT INTO parts VALUES ('board')")
    connection.close()
    before = other.read_bytes()
    for command in (["diagnose", CASE, "--no-env", "-o", "report.md"], ["cases", "list"]):
        proc = _j6doctor([*command, "--store", other.name], tmp_path, library[1])
        assert proc.returncode == 2
        assert "inventory.sqlite: is a SQLite database of something else (tables: parts)" in proc.stderr
    assert other.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["inventory.sqlite"]  # no report, no side file


def _rows(folder: Path) -> list:
    with sqlite3.connect(f"file:{folder / 'cases.db'}?mode=ro", uri=True) as connection:
        return connection.execute("SELECT id, title, content_hash FROM cases ORDER BY id").fetchall()


def test_a_full_disk_while_recording_is_refused_naming_the_library(library, tmp_path):
    folder = _copy(library, tmp_path)
    (folder / "report.md").write_text("the report of yesterday\n", encoding="utf-8")
    cases_before = _rows(folder)
    proc = _j6doctor(["diagnose", OTHER_CASE, "--store", "cases.db", "-o", "report.md", "--no-env"], folder,
                     library[1], limit=4096)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("j6doctor: error: cases.db: ")
    assert "has room" in proc.stderr  # the disk, not the file, is said to be the problem
    assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr
    assert (folder / "report.md").read_text(encoding="utf-8") == "the report of yesterday\n"
    assert _rows(folder) == cases_before  # the library lost nothing and gained no half case
    again = _j6doctor(["cases", "list", "--store", "cases.db"], folder, library[1])
    assert again.returncode == 0 and "convert_j6m.yaml" in again.stdout


def test_a_full_disk_while_writing_the_report_keeps_the_old_report(library, tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "report.md").write_text("the report of yesterday\n", encoding="utf-8")
    proc = _j6doctor(["diagnose", CASE, "-o", "out/report.md", "--no-env"], tmp_path, library[1], limit=2000)
    assert proc.returncode == 2
    assert proc.stderr.startswith("j6doctor: error: out/report.md: cannot write: File too large")
    assert _files(tmp_path / "out") == {"report.md": "the report of yesterday\n".encode()}  # no temporary left


def test_a_stored_report_with_raw_html_shows_none(library, tmp_path):
    folder = _copy(library, tmp_path)
    exported = _j6doctor(["cases", "export", "--store", "cases.db"], folder, library[1])
    assert exported.returncode == 0, exported.stderr
    line = json.loads(exported.stdout)
    line["diagnoses"][0]["report_md"] = "# 报告\n\n<script>alert(1)</script>\n<img src=x onerror=alert(2)>\n\\\\<b>x\n"
    (folder / "import.jsonl").write_text(json.dumps(line, ensure_ascii=False) + "\n", encoding="utf-8")
    imported = _j6doctor(["cases", "import", "import.jsonl", "--store", "new.db"], folder, library[1])
    assert imported.returncode == 0, imported.stderr
    shown = _j6doctor(["cases", "show", "1", "--store", "new.db"], folder, library[1])
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout == "# 报告\n\n\\<script>alert(1)\\</script>\n\\<img src=x onerror=alert(2)>\n\\\\\\<b>x\n"


@pytest.mark.parametrize("name", ["lib?mode=memory.db", "lib#1.db", "lib%41.db"])
def test_a_library_is_the_file_named_even_with_url_characters(tmp_path, library, name):
    other = tmp_path / "lib"
    other.write_bytes(b"not mine to touch")
    proc = _j6doctor(["diagnose", CASE, "--store", name, "--no-env", "-o", "report.md"], tmp_path, library[1])
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / name).read_bytes().startswith(b"SQLite format 3\x00")
    assert other.read_bytes() == b"not mine to touch" and not (tmp_path / "libA.db").exists()
    listed = _j6doctor(["cases", "list", "--store", name], tmp_path, library[1])
    assert listed.returncode == 0 and "convert_j6m.yaml" in listed.stdout


def test_another_programs_alembic_database_is_not_taken_for_a_library(tmp_path, library):
    other = tmp_path / "app.sqlite"
    with sqlite3.connect(other) as connection:
        connection.execute("CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL)")
        connection.execute("INSERT INTO alembic_version VALUES ('3f2a')")
        connection.execute("CREATE TABLE users (name TEXT)")
    connection.close()
    before = other.read_bytes()
    proc = _j6doctor(["diagnose", CASE, "--store", other.name, "--no-env", "-o", "-"], tmp_path, library[1])
    assert proc.returncode == 2
    assert "app.sqlite: is a SQLite database of something else (tables: alembic_version, users)" in proc.stderr
    assert other.read_bytes() == before
