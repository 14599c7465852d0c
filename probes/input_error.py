"""The error every probe raises for bad input: it names the file, the line and what was expected."""

from __future__ import annotations


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
