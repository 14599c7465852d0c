"""Where a command's output goes: the report on stdout (or -o FILE), notes and errors on
stderr, as -q / -v allow. Built once per run by app/cli.py and passed to the command."""

from __future__ import annotations

from pathlib import Path
from typing import TextIO

from j6doctor.exit_codes import EXIT_INPUT


class Refusal(Exception):
    """A command stops: app/cli.py says `j6doctor: error: <message>` and exits `code`."""

    def __init__(self, message: str, code: int = EXIT_INPUT):
        super().__init__(message)
        self.message = message
        self.code = code


class Console:
    def __init__(self, out: TextIO, err: TextIO, verbosity: int = 0):
        self.out = out  # the report, the listing (a terminal gets control characters escaped)
        self.err = err  # notes, the dialogue of `ask`, errors
        self.verbosity = verbosity  # -q: -1, -v: 1

    def echo(self, text: str = "", nl: bool = True) -> None:
        self.out.write(text + ("\n" if nl else ""))

    def tell(self, text: str, nl: bool = True) -> None:
        """On stderr whatever -q says: the dialogue of `ask`, errors."""
        self.err.write(text + ("\n" if nl else ""))
        self.err.flush()

    def say(self, text: str) -> None:
        """A note on stderr, unless -q."""
        if self.verbosity >= 0:
            self.tell(text)

    def say_verbose(self, text: str) -> None:
        """A detail on stderr, with -v only."""
        if self.verbosity > 0:
            self.tell(text)

    def write(self, text: str, output: Path | None, protected: list[Path]) -> None:
        """The result to -o FILE (replaced whole, never a file this run read) or stdout."""
        from j6doctor.atomic_write import write_atomic

        if output is None or str(output) == "-":
            try:
                self.echo(text, nl=False)
                self.out.flush()
            except OSError as exc:  # a closed pipe, a full disk behind a redirection
                raise Refusal(f"cannot write the report to standard output: {exc.strerror or exc}") from None
            return
        check_output_path(output, protected)
        try:
            write_atomic(output, text)
        except OSError as exc:
            raise Refusal(f"{output}: cannot write: {exc.strerror or exc}; give -o a file in an existing, "
                          "writable folder") from None


def check_output_path(output: Path, protected: list[Path]) -> None:
    from j6doctor.atomic_write import is_protected

    if is_protected(output, protected):
        raise Refusal(f"{output}: refusing to overwrite a file this run read; choose another -o path")
    if output.is_dir():
        raise Refusal(f"{output}: is a folder; -o takes a file path")
    if output.exists() and not output.is_file():
        raise Refusal(f"{output}: not a regular file (a pipe or a device); -o takes a file path")
