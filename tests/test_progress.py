"""Progress on a terminal, silence otherwise."""

from __future__ import annotations

import os
import pty
import subprocess
import sys

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
    leader, follower = pty.openpty()
    proc = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=follower, timeout=120)
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    os.close(leader)
    shown = b"".join(chunks).decode("utf-8", "replace")
    assert proc.returncode == 0
    assert "[j6doctor] 1 个文件：扫描 compare_per_layer_out.csv" in shown
