"""The tabulate tables in Horizon text artifacts (docs/file_formats.md §0.3); reading the files
themselves is text_file.py's job.

Tables are at most MAX_TABLE_COLUMNS wide. Cells may contain single spaces, so rows are
never split on whitespace: column spans come from the rule line (simple style: one dash
group per column, the last column runs to the end of the line) or from the `+` positions of
the top border (psql style, and the pretty / grid style of hb_verifier with +---+ under the
header); `parse_simple_columns` gives a simple table by column, without an object per row.

Tables are read tolerantly, since real ones are pasted, excerpted and hand-edited: a row
that does not line up is cut at its words when that gives one cell per column (a name
longer than its header pushes the row right), else skipped; a bordered table that ends
without its closing border ends at its last row. What was skipped is in `Table.skipped`
(line and why), for the probe to pass on as a warning on the file. Only what leaves no
table to read (no header, no rule under it) is an InputError naming the file (its display
name), the line where known and what was expected. Line numbers are 1-based; a table
parser gets `first_line`, the file line of `lines[0]`.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from j6doctor.probes.input_error import InputError, Skipped, quoted

# The widest real table (compare_per_layer with same_in_*) has about 24 columns; a header of
# a million columns would cost gigabytes in cells before any check.
MAX_TABLE_COLUMNS = 512

_SIMPLE_RULE = re.compile(r"^-+(?: +-+)*$")
_PSQL_BORDER = re.compile(r"^\+(?:-+\+)+$")
_PSQL_RULE = re.compile(r"^\|(?:-+\+)*-+\|$")
# Padding for wide (CJK) characters, so that a character index equals a display column.
_PAD = "\x00"


class Row(NamedTuple):
    line: int
    cells: tuple[str, ...]


class Table(NamedTuple):
    headers: tuple[str, ...]
    rows: list[Row]
    end: int          # index into `lines` just after the table
    header_line: int  # file line of the header row, for messages about the header
    skipped: tuple[Skipped, ...] = ()  # rows not read and a missing closing border, in file order

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
    skipped: tuple[Skipped, ...] = ()  # rows not read, in file order

    def __len__(self) -> int:
        return len(self.lines)

    @classmethod
    def of(cls, table: Table) -> "ColumnTable":
        columns = tuple(list(c) for c in zip(*(r.cells for r in table.rows))) if table.rows else \
            tuple([] for _ in table.headers)
        return cls(table.headers, columns, [r.line for r in table.rows], table.end, table.header_line,
                   table.skipped)


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
    return Table(table.headers, rows, table.end, table.header_line, table.skipped)


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
    columns, dropped = _cut_simple_columns(body, spans)
    line_numbers: Sequence[int] = range(first_line + start + 2, first_line + end)
    skipped: tuple[Skipped, ...] = ()
    if dropped:
        line_numbers = [n for k, n in enumerate(line_numbers) if k not in dropped]
        skipped = tuple(Skipped(first_line + start + 2 + k, _misaligned_reason(len(spans), body[k]))
                        for k in sorted(dropped))
    return ColumnTable(headers, columns, line_numbers, end, first_line + start, skipped)


def _cut_simple_columns(body: list[str], spans: list[tuple[int, int]]) -> tuple[tuple[list[str], ...], set[int]]:
    """The cells of the (right-stripped) row lines by column, and the rows left out: those
    whose text crosses a column gap in every plausible width model and whose words do not
    give one cell per column either (cut_words)."""
    cut, dropped = _cut_rows(body, sorted(_rows_cut_alone(body, spans)), spans)
    columns = [[line[a:b].strip() for line in body] for a, b in spans[:-1]]
    columns.append([line[spans[-1][0]:].strip() for line in body])
    for k, cells in cut.items():
        for j, cell in enumerate(cells):
            columns[j][k] = cell
    if dropped:
        columns = [[cell for k, cell in enumerate(column) if k not in dropped] for column in columns]
    return tuple(columns), dropped


def _rows_cut_alone(body: list[str], spans: list[tuple[int, int]]) -> set[int]:
    """The rows that cannot be cut with all the others: a line of one width model (ASCII, or
    no wide characters) whose text keeps to the column gaps is cut for all rows at once;
    the others by _cut_rows."""
    if any(_PAD in line for line in body):
        bad = set(range(len(body)))
    else:
        bad = {k for k, line in enumerate(body) if not line.isascii() and len(_width_models(line)) > 1}
    for (_, gap_start), (gap_end, _) in zip(spans, spans[1:]):
        gaps = [line[gap_start:gap_end] for line in body]
        crossing = {g for g in set(gaps) if g.strip(" " + _PAD)}
        if crossing:
            bad.update(k for k, g in enumerate(gaps) if g in crossing)
    return bad


def _cut_rows(body: list[str], rows: list[int], spans: list[tuple[int, int]]
              ) -> tuple[dict[int, tuple[str, ...]], set[int]]:
    """The cells of the given rows, each cut on its own (its width models, else its words),
    and the rows that neither way can cut."""
    cut: dict[int, tuple[str, ...]] = {}
    dropped: set[int] = set()
    for k in rows:
        cells = _cut_simple(body[k], spans) or cut_words(body[k], len(spans))
        if cells is None:
            dropped.add(k)
        else:
            cut[k] = cells
    return cut, dropped


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


# Brackets and quotes that hold a cell's spaces ([1, 224, 224, 3], <class 'x'>, {'a': 1}).
_OPENERS = {"[": "]", "(": ")", "{": "}", "<": ">"}
_QUOTES = "'\""


def cut_words(line: str, count: int) -> tuple[str, ...] | None:
    """A row that does not line up with its table's columns (a cell wider than its column
    pushes the rest of the row right), cut into `count` cells at its words: at runs of two
    or more spaces when that gives `count` cells, else at every run of spaces; spaces inside
    brackets or quotes never cut. None when neither gives exactly `count` cells."""
    words = _words(line.strip())
    if len(words) < count:
        return None
    for minimum in (2, 1):
        cells: list[str] = [words[0][0]]
        for word, gap in words[1:]:
            if gap >= minimum:
                cells.append(word)
            else:
                cells[-1] += " " * gap + word
        if len(cells) == count:
            return tuple(cells)
    return None


def _words(text: str) -> list[tuple[str, int]]:
    """(word, spaces before it) of a line, a word running on over spaces inside brackets or
    quotes; an unclosed bracket or quote runs to the end of the line."""
    words: list[tuple[str, int]] = []
    i, n = 0, len(text)
    while i < n:
        gap = i
        while i < n and text[i] in " \t":
            i += 1
        gap = i - gap
        start, closing = i, []
        while i < n and (closing or text[i] not in " \t"):
            ch = text[i]
            if closing and ch == closing[-1]:
                closing.pop()
            elif closing and closing[-1] in _QUOTES:
                pass
            elif ch in _OPENERS:
                closing.append(_OPENERS[ch])
            elif ch in _QUOTES and (i == start or not text[i - 1].isalnum()):
                closing.append(ch)
            i += 1
        if i > start:
            words.append((text[start:i], gap))
    return words


# ---------------------------------------------------------------- bordered styles (psql, grid)

_GRID_RULE = re.compile(r"^\+(?:[-=]+\+)+$")


def parse_psql(lines: list[str], start: int, first_line: int, display: str, *, numbered: bool = False,
               multiline: bool = False, alone: bool = False) -> Table:
    """A psql table whose top border is lines[start], read up to its closing border (or up
    to its last row when the border is missing, see _parse_bordered).

    numbered: the first column holds the row number (a row without one is skipped).
    multiline: with `numbered`, a row whose number cell is empty continues the cells of the
    row above (a cell wrapped onto several lines). alone: nothing but blank lines should
    follow the table (other text there is noted as skipped)."""
    border = lines[start].rstrip() if start < len(lines) else ""
    table = _parse_bordered(lines, start, first_line, display, _PSQL_RULE, "a header row and a |---+---| rule under the "
                            "table border", lambda i: lines[i].rstrip() == border)
    if numbered:
        table = _numbered_rows(table, multiline)
    if alone:
        after = skip_blank(lines, table.end)
        if after < len(lines):
            table = Table(table.headers, table.rows, table.end, table.header_line, table.skipped + (
                Skipped(first_line + after, f"text after the table's closing border, from {quoted(lines[after].strip())} "
                                            f"to the end of the file (lines {first_line + after}-"
                                            f"{first_line + len(lines) - 1}), not read"),))
    return table


def _numbered_rows(table: Table, multiline: bool) -> Table:
    rows: list[Row] = []
    skipped = list(table.skipped)
    for row in table.rows:
        if multiline and row.cells[0] == "" and rows:
            merged = [f"{old}\n{new}" if old and new else (old or new) for old, new in zip(rows[-1].cells, row.cells)]
            rows[-1] = Row(rows[-1].line, tuple(merged))
            continue
        if not row.cells[0].isdigit():
            skipped.append(Skipped(row.line, f"expected the row number in the first column, got {quoted(row.cells[0])}"))
            continue
        rows.append(row)
    return Table(table.headers, rows, table.end, table.header_line, tuple(sorted(skipped, key=_line_of)))


def _line_of(item: Skipped) -> int:
    return item.line or 0


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
                    expected_header: str, closes, skip=lambda i: False) -> Table:
    """The shared reading of a table framed by +---+ borders: column bounds from the top
    border, the header row, the rule under it (`rule`), rows until `closes(i)`; `skip(i)`
    lines between rows are separators. A row that does not line up with the border is read
    by its '|' when it has one cell per column, else skipped; a blank line, the end of the
    file or a line that is no row (a heading, another table's border) ends a table whose
    closing border is missing (an excerpt), after the rows read so far."""
    if not is_psql_start(lines, start):
        raise InputError(display, "expected a table border like +----+----+", first_line + start)
    border = lines[start].rstrip()
    check_table_width(border.count("+") - 1, display, first_line + start)
    bounds = [i for i, ch in enumerate(border) if ch == "+"]
    spans = [(a + 1, b) for a, b in zip(bounds, bounds[1:])]
    if start + 2 >= len(lines) or not rule.match(lines[start + 2].rstrip()):
        raise InputError(display, f"expected {expected_header} (truncated table?)", first_line + start + 1)
    headers = cut_psql_row(lines[start + 1], bounds, spans, loose=True)
    if headers is None:
        raise InputError(display, "table header does not line up with the border", first_line + start + 1)
    rows: list[Row] = []
    skipped: list[Skipped] = []
    i = start + 3
    while i < len(lines) and (lines[i].lstrip()[:1] in ("|", "+") or "|" in lines[i]):
        if closes(i):
            return Table(headers, rows, i + 1, first_line + start + 1, tuple(skipped))
        if skip(i):
            i += 1
            continue
        cells = cut_psql_row(lines[i], bounds, spans, loose=True)
        if cells is None and lines[i].lstrip().startswith("+"):
            break  # a border of another table: this one ended without its own
        if cells is None:
            cut = i == len(lines) - 1
            skipped.append(Skipped(first_line + i, "row cut off where the file ends" if cut
                                   else _misaligned_reason(len(spans), lines[i])))
        else:
            rows.append(Row(first_line + i, cells))
        i += 1
    last = first_line + max(i - 1, start + 2)
    skipped.append(Skipped(last, f"the table ends without its closing +---+ border (an excerpt, or a cut "
                                 f"file?); its {len(rows)} row(s) above are read"))
    return Table(headers, rows, i, first_line + start + 1, tuple(skipped))


def cut_psql_row(line: str, bounds: list[int], spans: list[tuple[int, int]] | None = None,
                 loose: bool = False) -> tuple[str, ...] | None:
    """The cells of one |-separated row of a table whose border has '+' at `bounds`, or None
    when the row does not line up. loose: a row whose cells do not line up with the border
    (widths the writer measured differently, a hand-edited cell) is still read when it has
    exactly the table's number of '|' separators."""
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


def _misaligned_reason(columns: int, line: str) -> str:
    return (f"row {quoted(line.strip())} does not line up with the {columns} table columns and its words do not "
            "give one cell per column (garbled or truncated?)")


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
