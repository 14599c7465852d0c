"""The error every probe raises for bad input: it names the file, the line and what was expected."""

from __future__ import annotations


class InputError(Exception):
    def __init__(self, file: str, message: str, line: int | None = None,
                 more: list[tuple[int | None, str]] | None = None):
        self.file = file
        self.message = message
        self.line = line
        self.more = more or []
        super().__init__(self.render())

    def render(self) -> str:
        lines = [_one(self.file, self.line, self.message)]
        lines += [_one(self.file, line, message) for line, message in self.more]
        return "\n".join(lines)


def _one(file: str, line: int | None, message: str) -> str:
    return f"{file}:{line}: {message}" if line else f"{file}: {message}"
