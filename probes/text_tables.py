"""The tabulate tables in Horizon text artifacts (docs/file_formats.md §0.3); reading the files
themselves is text_file.py's job.

Tables are at most MAX_TABLE_COLUMNS wide. Cells may contain single spaces, so rows are
never split on whitespace: column spans come from the rule line (simple style: one dash
group per column, the last column runs to the end of the line) or from the `+` positions of
the top border (psql style, and the pretty / grid style of hb_verifier with +---+ under the
header); `parse_simple_columns` gives a simple table by column, without an object per row.

Every failure is an InputError naming the file (its display name), the line where known
and what was expected. Line numbers are 1-based; a table parser gets `first_line`, the
file line of `lines[0]`.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from j6doctor.probes.input_error import InputError

# The widest real table (compare_per_layer with same_in_*) has about 24 columns; a header of
# a million columns would cost gigabytes in cells before any check.
MAX_TABLE_COLUMNS = 512

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
    header_line: int  # file line of the header row, for messages about the header

    def column(self, name: str) -> int | None:
        """Index of a header, compared case-insensitively; None when absent."""
        wanted = name.strip().lower()
        for i, header in enumerate(self.headers):
            if header.lower() == wanted:
                return i
        return None


@dataclass(frozen=True)
class ColumnTable:
    """A table by column (parse_simple_columns): columns[j][k] is the cell of column j in row
    k, lines[k] the row's file line; no object per row."""
    headers: tuple[str, ...]
    columns: tuple[list[str], ...]
    lines: Sequence[int]
    end: int          # index into `lines` just after the table
    header_line: int  # file line of the header row, for messages about the header

    def __len__(self) -> int:
        return len(self.lines)

    @classmethod
    def of(cls, table: Table) -> "ColumnTable":
        columns = tuple(list(c) for c in zip(*(r.cells for r in table.rows))) if table.rows else \
            tuple([] for _ in table.headers)
        return cls(table.headers, columns, [r.line for r in table.rows], table.end, table.header_line)


# ---------------------------------------------------------------- tables

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


def parse_number(text: str) -> float | None:
    """A tabulate `g`-formatted cell (`5.021e-05`, `0`, `1`, `inf`, `nan`) as a float, else None."""
    try:
        return float(text)
    except ValueError:
        return None


# ---------------------------------------------------------------- simple style

def parse_simple(lines: list[str], start: int, first_line: int, display: str,
                 what: str = "the table") -> Table:
    """A simple table whose header is lines[start]; it ends at a blank line or EOF.

    `what` names the table in the message for a missing dash rule."""
    table = parse_simple_columns(lines, start, first_line, display, what)
    rows = [Row(line, cells) for line, cells in zip(table.lines, zip(*table.columns))]
    return Table(table.headers, rows, table.end, table.header_line)


def parse_simple_columns(lines: list[str], start: int, first_line: int, display: str,
                         what: str = "the table") -> ColumnTable:
    """parse_simple, by column: each column is cut from every row at once, and only a line
    with wide characters is looked at on its own (_cut_simple's width models)."""
    if not is_simple_start(lines, start):
        # No line to point at when the file ends where the header should be.
        raise InputError(display, f"expected a header line and a dash rule line under it for "
                                  f"{what} (file truncated or not a tabulate table?)",
                         first_line + start if start < len(lines) else None)
    rule = lines[start + 1].rstrip()
    check_table_width(rule.count(" -") + 1, display, first_line + start)
    spans = [(m.start(), m.end()) for m in re.finditer(r"-+", rule)]
    headers = _cut_simple(lines[start], spans)
    if headers is None:
        raise InputError(display, "table header does not line up with its dash rule",
                         first_line + start)
    end = start + 2
    while end < len(lines) and lines[end].strip():
        end += 1
    body = [line.rstrip() for line in lines[start + 2:end]]
    columns = _cut_simple_columns(body, spans, display, first_line + start + 2)
    return ColumnTable(headers, columns, range(first_line + start + 2, first_line + end), end,
                       first_line + start)


def _cut_simple_columns(body: list[str], spans: list[tuple[int, int]], display: str,
                        first_line: int) -> tuple[list[str], ...]:
    """The cells of the (right-stripped) row lines by column; InputError for the first line
    whose text crosses a column gap in every plausible width model."""
    # A line of one width model (ASCII, or no wide characters) is cut here for all rows at
    # once; the others by _cut_simple.
    if any(_PAD in line for line in body):
        own = set(range(len(body)))
    else:
        own = {k for k, line in enumerate(body) if not line.isascii() and len(_width_models(line)) > 1}
    bad = set(own)
    for (_, gap_start), (gap_end, _) in zip(spans, spans[1:]):
        gaps = [line[gap_start:gap_end] for line in body]
        crossing = {g for g in set(gaps) if g.strip(" " + _PAD)}
        if crossing:
            bad.update(k for k, g in enumerate(gaps) if g in crossing)
    cut: dict[int, tuple[str, ...]] = {}
    for k in sorted(bad):
        cells = _cut_simple(body[k], spans)
        if cells is None:
            raise _misaligned(display, len(spans), first_line + k)
        cut[k] = cells
    columns = [[line[a:b].strip() for line in body] for a, b in spans[:-1]]
    columns.append([line[spans[-1][0]:].strip() for line in body])
    for k, cells in cut.items():
        for j, cell in enumerate(cells):
            columns[j][k] = cell
    return tuple(columns)


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


# ---------------------------------------------------------------- bordered styles (psql, grid)

_GRID_RULE = re.compile(r"^\+(?:[-=]+\+)+$")


def parse_psql(lines: list[str], start: int, first_line: int, display: str, *, numbered: bool = False,
               multiline: bool = False, alone: bool = False, loose: bool = False) -> Table:
    """A psql table whose top border is lines[start]; it must end with a closing border.

    numbered: the first column holds the row number. multiline: with `numbered`, a row whose
    number cell is empty continues the cells of the row above (a cell wrapped onto several
    lines). alone: nothing but blank lines may follow the table. loose: a row whose cells do
    not line up with the border (widths the writer measured differently) is still read when
    it has exactly the table's number of '|' separators."""
    border = lines[start].rstrip() if start < len(lines) else ""
    table = _parse_bordered(lines, start, first_line, display, _PSQL_RULE, "a header row and a |---+---| rule under the "
                            "table border", lambda i: lines[i].rstrip() == border, loose=loose)
    if numbered:
        table = _numbered_rows(table, display, multiline)
    if alone:
        for i in range(table.end, len(lines)):
            if lines[i].strip():
                raise InputError(display, "expected the end of the file after the closing border", first_line + i)
    return table


def _numbered_rows(table: Table, display: str, multiline: bool) -> Table:
    rows: list[Row] = []
    for row in table.rows:
        if multiline and row.cells[0] == "" and rows:
            merged = [f"{old}\n{new}" if old and new else (old or new) for old, new in zip(rows[-1].cells, row.cells)]
            rows[-1] = Row(rows[-1].line, tuple(merged))
            continue
        if not row.cells[0].isdigit():
            raise InputError(display, f"expected the row number in the first column, got {row.cells[0]!r}", row.line)
        rows.append(row)
    return Table(table.headers, rows, table.end, table.header_line)


def parse_grid(lines: list[str], start: int, first_line: int, display: str) -> Table:
    """A table in tabulate's `pretty` / `grid` style (hb_verifier): a +---+ border above and
    below the header row (`+===+` below it in `grid`), rows of |-separated cells, optional
    +---+ lines between rows, and a closing border not followed by another row."""
    def closes(i: int) -> bool:
        return bool(_GRID_RULE.match(lines[i].rstrip())) and (
            i + 1 >= len(lines) or not lines[i + 1].lstrip().startswith("|"))
    return _parse_bordered(lines, start, first_line, display, _GRID_RULE, "a header row and a +---+ border "
                           "under it", closes, skip=lambda i: bool(_GRID_RULE.match(lines[i].rstrip())))


def _parse_bordered(lines: list[str], start: int, first_line: int, display: str, rule: re.Pattern,
                    expected_header: str, closes, skip=lambda i: False, loose: bool = False) -> Table:
    """The shared reading of a table framed by +---+ borders: column bounds from the top
    border, the header row, the rule under it (`rule`), rows until `closes(i)`; `skip(i)`
    lines between rows are separators."""
    if not is_psql_start(lines, start):
        raise InputError(display, "expected a table border like +----+----+", first_line + start)
    border = lines[start].rstrip()
    check_table_width(border.count("+") - 1, display, first_line + start)
    bounds = [i for i, ch in enumerate(border) if ch == "+"]
    spans = [(a + 1, b) for a, b in zip(bounds, bounds[1:])]
    if start + 2 >= len(lines) or not rule.match(lines[start + 2].rstrip()):
        raise InputError(display, f"expected {expected_header} (truncated table?)", first_line + start + 1)
    headers = cut_psql_row(lines[start + 1], bounds, spans, loose)
    if headers is None:
        raise InputError(display, "table header does not line up with the border", first_line + start + 1)
    rows: list[Row] = []
    i = start + 3
    while True:
        if i >= len(lines) or not lines[i].strip():
            raise InputError(display, "table ends without its closing +---+ border "
                                      "(truncated file?); expected a closing border after the last row",
                             first_line + min(i, len(lines) - 1))
        if closes(i):
            return Table(headers, rows, i + 1, first_line + start + 1)
        if skip(i):
            i += 1
            continue
        cells = cut_psql_row(lines[i], bounds, spans, loose)
        if cells is None and i == len(lines) - 1:
            raise InputError(display, "table is cut off: incomplete last row and no closing "
                                      "+---+ border (truncated file?); expected complete rows and a closing border",
                             first_line + i)
        if cells is None:
            raise _misaligned(display, len(spans), first_line + i)
        rows.append(Row(first_line + i, cells))
        i += 1


def cut_psql_row(line: str, bounds: list[int], spans: list[tuple[int, int]] | None = None,
                 loose: bool = False) -> tuple[str, ...] | None:
    """The cells of one |-separated row of a table whose border has '+' at `bounds`, or None
    when the row does not line up (see parse_psql for `loose`)."""
    line = line.rstrip()
    if spans is None:
        spans = [(a + 1, b) for a, b in zip(bounds, bounds[1:])]
    for candidate in _width_models(line):
        if len(candidate) == bounds[-1] + 1 and all(candidate[b] == "|" for b in bounds):
            return _slice(candidate, spans, open_end=False)
    if loose:
        parts = line.split("|")
        if line.startswith("|") and line.endswith("|") and len(parts) == len(bounds) + 1:
            return tuple(p.strip() for p in parts[1:-1])
    return None


# ---------------------------------------------------------------- helpers

def check_table_width(columns: int, display: str, line: int | None, what: str = "table") -> None:
    """InputError for a table wider than any tool writes, before its cells are cut."""
    if columns > MAX_TABLE_COLUMNS:
        raise InputError(display, f"{what} has {columns} columns (limit {MAX_TABLE_COLUMNS}); "
                                  "not a table a Horizon tool writes (garbled or joined lines?)", line)


def _misaligned(display: str, columns: int, line: int) -> InputError:
    return InputError(display, f"row does not line up with the {columns} table columns "
                               "(garbled or truncated); expected '| ... |' cells aligned with the border", line)


def _width_models(line: str) -> list[str]:
    """Ways to map the line to columns: if it has wide characters, a copy where each takes
    two positions (tabulate pads by display width when wcwidth is installed), then as-is."""
    if line.isascii() or not any(unicodedata.east_asian_width(ch) in "WF" for ch in line):
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
