"""Terminal safety (issue 26): control characters that come from the inputs (a symptom with
`\\e[2J`, a window title `\\e]0;...\\a`, a file name with an escape) are shown as visible
escapes when the output is a terminal, and left as they are on a pipe or in a file (the
same bytes `-o` writes). Real runs of the console entry point on a pseudo-terminal (pty)."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
import termios
import threading
from pathlib import Path

import pytest

from conftest import REPO, write_case
from j6doctor.terminal_text import visible

pytestmark = pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal (POSIX)")

# what a case, a log or a file name may carry: clear screen, set the window title, a C1 CSI, DEL
HOSTILE = "清屏\x1b[2J 标题\x1b]0;pwned\x07 C1\x9b31m DEL\x7f 尾"
CASE = ('symptom: "板端掉点 清屏\\e[2J 标题\\e]0;pwned\\a C1\\x9b31m DEL\\x7f 尾"\n'
        "platform: J6M\nresults:\n  qat_pt: {status: normal, evidence: dataset_eval}\n")


COMPARE_TABLE = REPO / "rules" / "fixtures" / "gradual" / "compare_per_layer_out.csv"


def _environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("J6DOCTOR_DEBUG", "COLUMNS")}
    env["PYTHONIOENCODING"] = "utf-8"
    return env


def _read_all(fd: int, into: list[bytes]) -> None:
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # EIO: every end of the terminal's slave side is closed
            return
        if not chunk:
            return
        into.append(chunk)


def run(args: list[str], cwd: Path, terminal: tuple[str, ...] = ()) -> tuple[int, bytes, bytes]:
    """`j6doctor ARGS` with the streams named in `terminal` ("stdout", "stderr") on one
    pseudo-terminal, the others on pipes: (exit code, stdout bytes, stderr bytes)."""
    master, slave = pty.openpty()
    attributes = termios.tcgetattr(slave)
    attributes[1] &= ~termios.OPOST  # no \n -> \r\n: the bytes written are the bytes read
    termios.tcsetattr(slave, termios.TCSANOW, attributes)
    streams = {name: slave if name in terminal else subprocess.PIPE for name in ("stdout", "stderr")}
    proc = subprocess.Popen([sys.executable, "-m", "j6doctor", *args], cwd=cwd, env=_environment(),
                            stdin=subprocess.DEVNULL, **streams)
    os.close(slave)
    seen: list[bytes] = []
    reader = threading.Thread(target=_read_all, args=(master, seen))
    reader.start()
    out, err = proc.communicate(timeout=120)
    reader.join(timeout=30)
    os.close(master)
    shown = b"".join(seen)
    return proc.returncode, shown if "stdout" in terminal else out, shown if "stderr" in terminal else err


def test_visible_escapes_c0_del_and_c1_but_not_newline_and_tab():
    assert visible(HOSTILE) == "清屏\\x1b[2J 标题\\x1b]0;pwned\\x07 C1\\x9b31m DEL\\x7f 尾"
    assert visible("行一\n\t行二\r\x00") == "行一\n\t行二\\x0d\\x00"
    assert visible("plain ü 中文 \u00a0") == "plain ü 中文 \u00a0"  # printable text is untouched
    # a right-to-left override reorders what the terminal shows ("evil.yaml" shown as "lmay.live")
    assert visible("file \u202elmay.live\u2069 \u200f") == "file \\u202elmay.live\\u2069 \u200f"


def test_a_report_on_a_terminal_shows_the_symptom_escapes_and_a_pipe_gets_them_raw(tmp_path):
    write_case(tmp_path, CASE)
    args = ["diagnose", "case.yaml", "--no-env"]
    code, piped, _ = run(args, tmp_path)
    assert code == 0 and "\x1b[2J".encode() in piped and "\x9b".encode() in piped  # a pipe: the report as it is
    code, shown, _ = run(args, tmp_path, terminal=("stdout",))
    assert code == 0
    assert b"\x1b" not in shown and b"\x07" not in shown and b"\x7f" not in shown
    assert "\x9b".encode() not in shown
    text = shown.decode("utf-8")
    assert "清屏\\x1b[2J 标题\\x1b]0;pwned\\x07 C1\\x9b31m DEL\\x7f 尾" in text
    assert text == visible(piped.decode("utf-8"))  # nothing else changed: the same report, escaped


def test_a_report_written_with_o_is_the_bytes_of_the_pipe_whatever_the_terminal(tmp_path):
    write_case(tmp_path, CASE)
    code, piped, _ = run(["diagnose", "case.yaml", "--no-env"], tmp_path)
    assert code == 0
    code, shown, _ = run(["diagnose", "case.yaml", "--no-env", "-o", "report.md"], tmp_path, ("stdout", "stderr"))
    assert code == 0 and shown == b""
    assert (tmp_path / "report.md").read_bytes() == piped


def test_json_and_html_on_a_terminal_carry_no_raw_control_character(tmp_path):
    write_case(tmp_path, CASE)
    for fmt in ("json", "html"):
        code, shown, _ = run(["diagnose", "case.yaml", "--no-env", "--format", fmt], tmp_path, ("stdout",))
        assert code == 0, fmt
        assert b"\x1b" not in shown and b"\x07" not in shown and b"\x7f" not in shown, fmt
        assert "\x9b".encode() not in shown, fmt


def test_an_error_on_a_terminal_shows_a_file_name_escaped(tmp_path):
    name = "报告\x1b]0;pwned\x07.yaml"
    code, _, shown = run(["diagnose", name, "--no-env"], tmp_path, ("stderr",))
    assert code == 2
    assert shown.decode("utf-8") == "j6doctor: error: 报告\\x1b]0;pwned\\x07.yaml: no such file; " \
                                    "expected a YAML or JSON case file\n"
    code, _, piped = run(["diagnose", name, "--no-env"], tmp_path)
    assert code == 2 and name.encode() in piped  # a pipe (a log file): the name as it is


def test_the_progress_line_keeps_its_own_control_and_escapes_a_file_name(tmp_path):
    folder = tmp_path / "work" / "层\x1b[2J对比"  # a folder name with an escape, around a file the scan reads
    folder.mkdir(parents=True)
    (folder / "compare_per_layer_out.csv").write_bytes(COMPARE_TABLE.read_bytes())
    code, _, shown = run(["diagnose", "--workdir", "work", "--no-env"], tmp_path, ("stderr",))
    assert code == 0
    assert shown.startswith(b"\r\x1b[K[j6doctor] ")  # the status line: j6doctor's own terminal control
    assert b"\x1b[2J" not in shown and "层\\x1b[2J对比".encode() in shown
    assert shown.replace(b"\r\x1b[K", b"").count(b"\x1b") == 0


def test_triage_on_a_terminal_shows_the_case_path_escaped(tmp_path):
    cases = tmp_path / "cases"
    cases.mkdir()
    write_case(cases, CASE, "a\x1b[2Jb.yaml")
    code, shown, _ = run(["triage", "cases", "--no-progress"], tmp_path, ("stdout",))
    assert code == 0
    assert b"\x1b" not in shown and "a\\x1b[2Jb".encode() in shown
