"""The error every probe raises for bad input: it names the file, the line and what was expected;
and what a reader skipped of a file it could otherwise read (Skips)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import NamedTuple


# A message quotes the input it refuses; a megabyte-long cell or line must not become a
# megabyte-long message.
MAX_MESSAGE_CHARS = 1000


def bounded(message: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    if len(message) <= limit:
        return message
    return f"{message[:limit]}... ({len(message) - limit} more characters)"


def quoted(text: str, limit: int = 80) -> str:
    """The start of a refused line or cell, for a message: its repr, cut at `limit`."""
    return repr(text[:limit] + ("..." if len(text) > limit else "")) if text else "nothing"


class InputError(Exception):
    def __init__(self, file: str, message: str, line: int | None = None,
                 more: list[tuple[int | None, str]] | None = None):
        self.file = file
        self.message = bounded(message)
        self.line = line
        self.more = [(at, bounded(text)) for at, text in more or []]
        super().__init__(self.render())

    def render(self) -> str:
        lines = [_one(self.file, self.line, self.message)]
        lines += [_one(self.file, line, message) for line, message in self.more]
        return "\n".join(lines)


def _one(file: str, line: int | None, message: str) -> str:
    return f"{file}:{line}: {message}" if line else f"{file}: {message}"


# A file can hold a million garbled lines; the first ones say what is wrong, the rest are counted.
MAX_SKIPS_KEPT = 100


class Skipped(NamedTuple):
    """A part of a file that a reader went past: its 1-based line (None: no one line) and why.
    Real files are pasted, excerpted and hand-edited: a reader reads what it can and says
    what it skipped, rather than refusing the whole file for one odd line."""

    line: int | None
    reason: str


@dataclass
class Skips:
    """The parts of one file a reader skipped, in file order: the first MAX_SKIPS_KEPT kept,
    the others counted."""

    kept: list[Skipped] = field(default_factory=list)
    more: int = 0

    def add(self, line: int | None, reason: str) -> None:
        if len(self.kept) < MAX_SKIPS_KEPT:
            self.kept.append(Skipped(line, bounded(reason)))
        else:
            self.more += 1

    def add_error(self, error: InputError) -> None:
        """An InputError a reader would have refused the file for, taken as a skipped part."""
        self.add(error.line, error.message)

    def extend(self, skipped: Iterable[Skipped]) -> None:
        for item in skipped:
            self.add(item.line, item.reason)

    def in_file_order(self) -> None:
        """Sorts what was kept by line; notes on the file as a whole (no line) last."""
        self.kept.sort(key=lambda item: (item.line is None, item.line or 0))

    def __len__(self) -> int:
        return len(self.kept) + self.more

    def __bool__(self) -> bool:
        return bool(self.kept) or self.more > 0
