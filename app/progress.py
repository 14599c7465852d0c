"""Progress for long runs (large artifact folders): one rewritten status line on a
terminal's stderr, nothing at all when stderr is not a terminal (pipes, CI, files)."""

from __future__ import annotations

import sys
import time
from typing import TextIO

from j6doctor.terminal_text import visible

MIN_INTERVAL = 0.1  # seconds between redraws: hashing thousands of files must not be slowed by printing


class Progress:
    def __init__(self, stream: TextIO | None = None, enabled: bool | None = None):
        # the status line is j6doctor's own terminal control: written past the escaping of
        # control characters from inputs (app/terminal_text.py)
        stream = stream or sys.stderr
        self.stream = getattr(stream, "unescaped", stream)
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self.count = 0
        self.last = 0.0
        self.shown = False

    def step(self, what: str) -> None:
        self.count += 1
        self.show(f"[j6doctor] {self.count} 个文件：{what}")

    def show(self, text: str, force: bool = False) -> None:
        """Rewrite the status line with `text` (at most every MIN_INTERVAL unless `force`)."""
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self.last < MIN_INTERVAL and not force:
            return
        self.last = now
        self.stream.write("\r\x1b[K" + visible(text[:120]))  # a file name may hold control characters
        self.stream.flush()
        self.shown = True

    def done(self) -> None:
        if self.enabled and self.shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
