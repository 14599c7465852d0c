"""Progress on a terminal, silence otherwise."""

from __future__ import annotations

import subprocess
import sys

from conftest import run_with_terminal_stderr
from synthetic import write_workdir
from j6doctor.progress import Progress


class Tty:
    def __init__(self):
        self.text = ""

    def isatty(self):
        return True

    def write(self, text):
        self.text += text

    def flush(self):
        pass


def test_progress_object():
    tty = Tty()
    progress = Progress(tty)
    progress.step("扫描 qa/compare_per_layer_out.csv")
    progress.done()
    assert "[j6doctor] 1 个文件：扫描 qa/compare_per_layer_out.csv" in tty.text and tty.text.endswith("\r\x1b[K")
    quiet = Progress(Tty(), enabled=False)
    quiet.step("x")
    quiet.done()
    assert quiet.stream.text == ""


def test_cli_shows_progress_only_on_a_terminal(tmp_path):
    work = write_workdir(tmp_path / "qa", 3000)
    command = [sys.executable, "-m", "j6doctor", "diagnose", "--workdir", str(work), "--no-env", "--format", "json",
               "-o", str(tmp_path / "out.json")]
    piped = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert piped.returncode == 0 and piped.stderr == ""
    proc, shown = run_with_terminal_stderr(command)
    assert proc.returncode == 0
    assert "[j6doctor] 1 个文件：扫描 compare_per_layer_out.csv" in shown
