"""Text for a terminal: control characters that came from the inputs are shown, not obeyed.

A case's symptom, a file name or a log line may hold escape sequences (`\\x1b[2J` clears the
screen, `\\x1b]0;...\\x07` retitles the window). On a terminal every C0 control character
except newline and tab, DEL and every C1 control character is written as a visible escape
(`\\x1b`, `\\x07`, `\\x7f`, `\\x9b`), so the rest of a sequence prints as plain text. The
Unicode bidirectional controls (U+202A-U+202E, U+2066-U+2069), which reorder what a line
shows, are written as `\\u202e`.

Only a terminal gets escapes. A pipe or a file receives the text unchanged: redirected or
piped, a report is the same bytes `-o` writes (the program or viewer reading it decides how
to show them). j6doctor's own terminal control (the progress line of app/progress.py) is
written to `EscapedTerminal.unescaped`.
"""

from __future__ import annotations

import os
import re
import sys
from typing import TextIO

# C0 without \t (0x09) and \n (0x0a), DEL, C1, the bidirectional embeddings, overrides and isolates
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def visible(text: str) -> str:
    """`text` with its control characters (but newline and tab) written as `\\xNN`."""
    return _CONTROL.sub(_escape, text)


def _escape(match: re.Match) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


class EscapedTerminal:
    """A text stream to a terminal: what is written shows its control characters escaped."""

    def __init__(self, stream: TextIO):
        self.unescaped = stream

    def write(self, text: str) -> int:
        self.unescaped.write(visible(text))
        return len(text)

    def flush(self) -> None:
        self.unescaped.flush()

    def isatty(self) -> bool:
        return True

    def fileno(self) -> int:
        return self.unescaped.fileno()

    @property
    def encoding(self) -> str | None:
        return getattr(self.unescaped, "encoding", None)


def for_terminal(stream: TextIO) -> TextIO:
    """`stream` itself, or an EscapedTerminal around it when it is a terminal."""
    try:
        terminal = stream.isatty()
    except (AttributeError, ValueError, OSError):  # no stream, or a closed one
        terminal = False
    return EscapedTerminal(stream) if terminal else stream  # type: ignore[return-value]


def terminal_columns() -> int:
    """shutil.get_terminal_size().columns: $COLUMNS, else the terminal on stdout, else 80. A
    terminal that reports 0 columns (a fresh pseudo-terminal, a serial console) counts as
    unknown on every Python (3.10's shutil took the 0 as the width)."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns if columns > 0 else 80
