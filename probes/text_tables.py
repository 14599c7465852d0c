"""Reading tabulate tables out of Horizon text artifacts (FORMATS.md §0.3).

Shared by the model_check, fx_graph and layer_advisor probes. Cells may contain single
spaces, so rows are never split on whitespace: column spans come from the rule line
(simple style: one dash group per column, the last column runs to the end of the line)
or from the `+` positions of the top border (psql style).

Line numbers are 1-based; a caller passes `first_line`, the file line of `lines[0]`.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from .input_error import InputError

# Guards memory only; real fx graphs of large models stay far below this.
MAX_TEXT_BYTES = 256 * 1024 * 1024

_SIMPLE_RULE = re.compile(r"^-+(?: +-+)*$")
_PSQL_BORDER = re.compile(r"^\+(?:-+\+)+$")
_PSQL_RULE = re.compile(r"^\|(?:-+\+)*-+\|$")
# Padding for wide (CJK) characters, so that a character index equals a display column.
_PAD = "\x00"


@dataclass(frozen=True)
class Row:
    line: int
    cells: tuple[str, ...]


@dataclass(frozen=True)
class Table:
    headers: tuple[str, ...]
    rows: list[Row]
    end: int          # index into `lines` just after the table

    def column(self, name: str) -> int | None:
        """Index of a header, compared case-insensitively; None when absent."""
        wanted = name.strip().lower()
        for i, header in enumerate(self.headers):
            if header.lower() == wanted:
                return i
        return None


def load_text(path: Path, display: str, what: str) -> str:
    """The file as text, or InputError for missing, empty, binary or non-UTF-8 input.

    `what` names the expected artifact in messages (e.g. "model_check_result.txt").
    """
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise InputError(display, "no such file") from None
    except IsADirectoryError:
        raise InputError(display, f"is a folder; expected the text file {what}") from None
    except OSError as exc:
        raise InputError(display, f"cannot read: {exc.strerror}") from None
    if len(raw) > MAX_TEXT_BYTES:
        raise InputError(display, f"too large for {what} ({len(raw)} bytes; limit {MAX_TEXT_BYTES})")
    if not raw.strip():
        raise InputError(display, f"empty file; expected {what}")
    if b"\x00" in raw:
        line = raw.count(b"\n", 0, raw.index(b"\x00")) + 1
        raise InputError(display, f"binary data (NUL byte); expected the text file {what}", line)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise InputError(display, f"not UTF-8 text (invalid byte at offset {exc.start}); "
                                  f"expected the text file {what}", line) from None
    return text.removeprefix("\ufeff")


def split_lines(text: str) -> list[str]:
    """Lines without terminators; only '\\n' (and a '\\r' before it) ends a line, because
    str.splitlines would also break on form feeds or U+2028 that may sit inside a cell."""
    lines = [line.removesuffix("\r") for line in text.split("\n")]
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def skip_blank(lines: list[str], i: int, end: int | None = None) -> int:
    end = len(lines) if end is None else end
    while i < end and not lines[i].strip():
        i += 1
    return i


def is_simple_start(lines: list[str], i: int) -> bool:
    """A simple table starts with a non-blank header line followed by a dash rule."""
    return (i + 1 < len(lines) and bool(lines[i].strip())
            and bool(_SIMPLE_RULE.match(lines[i + 1].rstrip())))


def is_psql_start(lines: list[str], i: int) -> bool:
    return i < len(lines) and bool(_PSQL_BORDER.match(lines[i].rstrip()))


# ---------------------------------------------------------------- simple style

def parse_simple(lines: list[str], start: int, first_line: int, display: str) -> Table:
    """A simple table whose header is lines[start]; it ends at a blank line or EOF."""
    if not is_simple_start(lines, start):
        raise InputError(display, "expected a table header followed by a rule of dashes",
                         first_line + start)
    rule = lines[start + 1].rstrip()
    spans = [(m.start(), m.end()) for m in re.finditer(r"-+", rule)]
    headers = _cut_simple(lines[start], spans)
    if headers is None:
        raise InputError(display, "table header does not line up with its dash rule",
                         first_line + start)
    rows: list[Row] = []
    i = start + 2
    while i < len(lines) and lines[i].strip():
        cells = _cut_simple(lines[i], spans)
        if cells is None:
            raise InputError(display, f"row does not line up with the {len(spans)} table "
                                      "columns (garbled or truncated)", first_line + i)
        rows.append(Row(first_line + i, cells))
        i += 1
    return Table(headers, rows, i)


def _cut_simple(line: str, spans: list[tuple[int, int]]) -> tuple[str, ...] | None:
    """Cells by span, or None when text crosses a column gap in every plausible width model."""
    line = line.rstrip()
    for candidate in _width_models(line):
        if _simple_gaps_blank(candidate, spans):
            return _slice(candidate, spans, open_end=True)
    return None


def _simple_gaps_blank(line: str, spans: list[tuple[int, int]]) -> bool:
    for (_, end), (nxt, _) in zip(spans, spans[1:]):
        if line[end:nxt].strip(" " + _PAD):
            return False
    return True


# ---------------------------------------------------------------- psql style

def parse_psql(lines: list[str], start: int, first_line: int, display: str) -> Table:
    """A psql table whose top border is lines[start]; it must end with a closing border."""
    if not is_psql_start(lines, start):
        raise InputError(display, "expected a table border like +----+----+", first_line + start)
    border = lines[start].rstrip()
    bounds = [i for i, ch in enumerate(border) if ch == "+"]
    spans = [(a + 1, b) for a, b in zip(bounds, bounds[1:])]
    if start + 2 >= len(lines) or not _PSQL_RULE.match(lines[start + 2].rstrip()):
        raise InputError(display, "expected a header row and a |---+---| rule under the "
                                  "table border (truncated table?)", first_line + start + 1)
    headers = _cut_psql(lines[start + 1], bounds, spans)
    if headers is None:
        raise InputError(display, "table header does not line up with the border",
                         first_line + start + 1)
    rows: list[Row] = []
    i = start + 3
    while True:
        if i >= len(lines) or not lines[i].strip():
            raise InputError(display, "table ends without its closing +---+ border "
                                      "(truncated file?)", first_line + min(i, len(lines) - 1))
        text = lines[i].rstrip()
        if text == border:
            return Table(headers, rows, i + 1)
        cells = _cut_psql(text, bounds, spans)
        if cells is None and i == len(lines) - 1:
            raise InputError(display, "table is cut off: incomplete last row and no closing "
                                      "+---+ border (truncated file?)", first_line + i)
        if cells is None:
            raise InputError(display, f"row does not line up with the {len(spans)} table "
                                      "columns (garbled or truncated)", first_line + i)
        rows.append(Row(first_line + i, cells))
        i += 1


def _cut_psql(line: str, bounds: list[int], spans: list[tuple[int, int]]) -> tuple[str, ...] | None:
    line = line.rstrip()
    for candidate in _width_models(line):
        if len(candidate) == bounds[-1] + 1 and all(candidate[b] == "|" for b in bounds):
            return _slice(candidate, spans, open_end=False)
    return None


# ---------------------------------------------------------------- helpers

def _width_models(line: str) -> list[str]:
    """Ways to map the line to columns: if it has wide characters, a copy where each takes
    two positions (tabulate pads by display width when wcwidth is installed), then as-is."""
    if not any(unicodedata.east_asian_width(ch) in "WF" for ch in line):
        return [line]
    wide = "".join(ch + _PAD if unicodedata.east_asian_width(ch) in "WF" else ch for ch in line)
    # Display width first: in a simple table the character model can also look aligned
    # while shifting a right-aligned number into the wrong column.
    return [wide, line]


def _slice(line: str, spans: list[tuple[int, int]], open_end: bool) -> tuple[str, ...]:
    """Cells by span; with open_end the last cell runs to the end of the line (simple style)."""
    cells = [line[a:b] for a, b in spans]
    if open_end:
        cells[-1] = line[spans[-1][0]:]
    return tuple(cell.replace(_PAD, "").strip() for cell in cells)
