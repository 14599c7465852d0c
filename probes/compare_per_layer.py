"""compare_per_layer_out.csv / .txt (docs/file_formats.md §2, §3) → CompareTable, and
the per-layer summary of docs/file_formats.md §13 (where the table leaves the healthy
state, and by how much; rules/54_measure_classes.yaml judges which step is the origin).

Reads every known layout: vB (16 columns), the older wide23 and the v3.3 guess (`dtype`,
upper-case metric names, `advice`). Knows the format and nothing about rules. Any bad input
raises InputError naming the file, the line and what was expected.

Columnar: a table is held as one array per column (numpy), and the summary is computed over
the arrays. A table of up to STDLIB_MAX_BYTES (tens of thousands of rows, what real runs
write) is cut by the standard library's csv reader and its numbers read by Python's float();
a larger one by pandas' C reader (each number the value float() gives its text), which
costs a quarter of a second to import and pays off only on hundreds of thousands of rows.
A CompareRow object is made only for a row that is asked for (a break, the worst row, a row
a sensitivity op joins to), or for all of them by `CompareTable.rows`. The fast
reading checks what it relies on (every row's field count, the psql row layout, plain
numbers) and leaves anything else to the exact reading, the row-by-row one.

Tolerant, since real tables are pasted, excerpted and hand-edited: a csv row with the wrong
number of fields, a txt row that does not line up, a missing closing border, a number cell
that is no number and a line longer than MAX_LINE_BYTES are skipped (the cell read as blank)
and named in `CompareTable.skipped`; the rest is read. A file with no readable header, or
with a header and no readable row, is refused (InputError).
"""

from __future__ import annotations

import csv
import io
import itertools
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path

from j6doctor.facts import threshold
from j6doctor.probes.input_error import InputError, Skips, quoted
from j6doctor.probes.text_file import decode_text, read_bytes_without_long_lines, split_lines
from j6doctor.probes.text_tables import check_table_width, cut_psql_row, is_psql_start, parse_psql, skip_blank


class _LazyModule:
    """pandas costs ~0.25 s to import: load it (and numpy) when a compare table is read, not
    when j6doctor starts (most diagnoses read no table)."""

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attr: str):
        import importlib

        value = getattr(importlib.import_module(self._name), attr)
        setattr(self, attr, value)  # later look-ups are plain attribute reads
        return value


pd = _LazyModule("pandas")
np = _LazyModule("numpy")
# Up to this size a table is read without pandas (about 45,000 vB csv rows, 25,000 psql rows).
STDLIB_MAX_BYTES = 8 * 1024 * 1024

__all__ = [
    "metric_row_for",
    "ATOL_SURGE_FACTOR", "COSINE_HEALTHY", "FUSED_GROUP_MAX", "MAX_BREAKS", "QSCALE_DIFF_SURGE",
    "Break", "CompareRow", "CompareSummary", "CompareTable", "RangeMeasures", "is_function_op", "is_healthy",
    "read_compare_per_layer", "summarize",
]

# --- thresholds (docs/file_formats.md §13.1-13.3) -------------------------------------
# The values live in facts/vocabulary.yaml (enum `threshold`, each with its meaning); why
# this probe uses each one is said here.
# A metric row is healthy when its Cosine is at least this (blank Cosine does not count
# against it) and every metric it has is finite.
COSINE_HEALTHY = threshold("cosine_healthy")
# Where a table leaves the healthy state is located here; whether that step is a sudden
# break (and so the error origin) or the end of a gradual decline is judged by
# rules/54_measure_classes.yaml from the step's measures (Break). A row whose Atol reaches
# this many times the largest Atol of the healthy rows before it is located too, though its
# Cosine may still look healthy.
ATOL_SURGE_FACTOR = threshold("atol_surge_factor")
# Healthy fake-quant rounding error is ~0.5-2 quantisation steps; more than this many steps
# means clipping or propagated error. A row above it is not healthy.
QSCALE_DIFF_SURGE = threshold("qscale_diff_surge")
# At most this many break candidates are handed to the rules (the first ones in the table).
MAX_BREAKS = 32
_FLOAT_MAX = 1.7976931348623157e308
# Clamp or rounding is no judgement of this probe either: it measures each break's ranges
# (RangeMeasures) and rules/54_measure_classes.yaml classifies them.
# A fused group has at most 4 ops (e.g. conv-bn-add-relu), so at most 3 cleared prefix rows.
FUSED_GROUP_MAX = threshold("fused_group_max")

_QUANT_LIMITS = {"qint8": (-128, 127), "qint16": (-32768, 32767),
                 "qint32": (-2147483648, 2147483647)}
_SAME_IN = ("same_in_qatbc_qdiff", "same_in_intbc_qdiff")
# header name (lower-case) -> CompareRow field
_FIELD_OF_HEADER = {
    "mod_name": "mod_name", "base_op_type": "base_op_type", "analy_op_type": "analy_op_type",
    "shape": "shape", "quant_dtype": "dtype", "dtype": "dtype", "qscale": "qscale",
    "cosine": "cosine", "l1": "l1", "atol": "atol", "max_qscale_diff": "max_qscale_diff",
    "base_model_min": "base_min", "analy_model_min": "analy_min",
    "base_model_max": "base_max", "analy_model_max": "analy_max",
    "base_model_mean": "base_mean", "analy_model_mean": "analy_mean",
    "advice": "advice", _SAME_IN[0]: _SAME_IN[0], _SAME_IN[1]: _SAME_IN[1],
}
_REQUIRED_HEADERS = ("mod_name", "base_op_type", "analy_op_type", "shape", "quant_dtype",
                     "qscale", "Cosine", "L1", "Atol", "max_qscale_diff", "base_model_min",
                     "analy_model_min", "base_model_max", "analy_model_max",
                     "base_model_mean", "analy_model_mean")
_TEXT_FIELDS = ("mod_name", "base_op_type", "analy_op_type")
_OPTIONAL_TEXT_FIELDS = ("shape", "dtype", "advice")
_NUMBER_FIELDS = ("qscale", "cosine", "l1", "atol", "max_qscale_diff", "base_min",
                  "analy_min", "base_max", "analy_max", "base_mean", "analy_mean") + _SAME_IN
_WIDE23_ONLY = {"mse", "kl", "sqnr", "rtol", "base_model_var", "analy_model_var",
                "max_atol_diff"}
_MISSING = ("", "None")
_WHAT = "a UTF-8 text table (compare_per_layer_out.csv/.txt)"
# Real tables have a row per layer output (tens of thousands at most, a few MB); the limit
# leaves room for a million rows in either layout (csv about 180 MB, psql txt about 310 MB).
MAX_TEXT_BYTES = 320 * 1024 * 1024
# A real row is a few kilobytes at most (a module path, two op-name strings, numbers; a txt
# line pads each cell to its column's widest). A longer line (a 17 MB field, a 200 MB dumped
# line) is no row a profiler writes: it is left out while the file is read in blocks, and
# named, before parsing it could take gigabytes. A field cannot be longer than its line.
MAX_LINE_BYTES = 64 * 1024
_HBIR_SUFFIX = re.compile(r"\[[^\[\]]+\]$")
_IDENTITY = "torch.nn.modules.linear.Identity"  # analysis op of a fused-away bn / relu


@dataclass(frozen=True)
class CompareRow:
    index: int                 # 0-based data row number
    line: int                  # 1-based line in the file
    mod_name: str
    base_op_type: str
    analy_op_type: str
    shape: str | None          # with commas; None when blank/None
    dtype: str | None          # quant_dtype / dtype column
    qscale: float | None
    cosine: float | None
    l1: float | None
    atol: float | None
    max_qscale_diff: float | None
    base_min: float | None
    analy_min: float | None
    base_max: float | None
    analy_max: float | None
    base_mean: float | None
    analy_mean: float | None
    advice: str | None = None
    # hbir runs only (docs/file_formats.md §2 columns 17-18); None elsewhere
    same_in_qatbc_qdiff: float | None = None
    same_in_intbc_qdiff: float | None = None

    @property
    def has_metrics(self) -> bool:
        return self.cosine is not None or self.atol is not None


_ROW_FIELDS = tuple(f for f in CompareRow.__dataclass_fields__ if f not in ("index", "line"))


def _text_cell(value: object) -> str:
    return str(value).strip()


def _optional_cell(value: object) -> str | None:
    text = str(value).strip()
    return None if text in _MISSING else text


def _shape_cell(value: object) -> str | None:
    # The csv writer escapes the shape's commas as '*' (docs/file_formats.md §3).
    text = _optional_cell(value)
    return text.replace("*", ",") if text else text


class _Cells:
    """A text column as read (cells not stripped): an object array."""

    def __init__(self, values):
        self.values = values

    def __len__(self) -> int:
        return len(self.values)

    def __getitem__(self, i: int) -> str:
        return self.values[i]

    def __iter__(self):
        return iter(self.values)

    def distinct(self) -> set:
        return set(self.values)

    def stripped(self) -> list[str]:
        return [str(cell).strip() for cell in self.values]

    def find(self, text: str, stripped: list[str] | None = None) -> int | None:
        """The first row whose cell, stripped, is `text` (`stripped`: the stripped cells, when
        already made)."""
        try:
            return (stripped if stripped is not None else self.stripped()).index(text)
        except ValueError:
            return None

    def isin(self, cells: list[str]):
        """Per row: the cell is one of `cells` (as read)."""
        if len(cells) <= 4:
            return np.logical_or.reduce([self.values == cell for cell in cells])
        wanted = set(cells)
        return np.fromiter((value in wanted for value in self.values), dtype=bool, count=len(self.values))


class _ByteCells(_Cells):
    """A text column of an aligned psql table: each row's bytes between the column's two '|'
    (a view into a block of the table's text columns), decoded when asked for."""

    def __init__(self, block, start: int, stop: int):
        self.block, self.start, self.stop = block, start, stop
        self._column = None
        self._printable: bool | None = None

    def __len__(self) -> int:
        return len(self.block)

    def __getitem__(self, i: int) -> str:
        return self.block[i, self.start:self.stop].tobytes().decode("utf-8")

    def column(self):
        """The cells as a fixed-width bytes array (no NUL byte can be in them)."""
        if self._column is None:
            width = self.stop - self.start
            self._column = np.ascontiguousarray(self.block[:, self.start:self.stop]).view(f"S{width}").ravel()
        return self._column

    def __iter__(self):
        return iter([cell.decode("utf-8") for cell in self.column().tolist()])

    def distinct(self) -> set:
        return {cell.decode("utf-8") for cell in np.unique(self.column()).tolist()}

    def _spaces_only(self) -> bool:
        """No byte but printable ASCII in the column: its only whitespace is ' '."""
        if self._printable is None:
            cells = self.block[:, self.start:self.stop]
            self._printable = bool(((cells >= 32) & (cells < 127)).all())
        return self._printable

    def stripped(self) -> list[str]:
        if self._spaces_only():  # str.strip() is then bytes.strip(b" ")
            return [cell.strip(b" ").decode("ascii") for cell in self.column().tolist()]
        return [cell.decode("utf-8").strip() for cell in self.column().tolist()]

    def find(self, text: str, stripped: list[str] | None = None) -> int | None:
        """_Cells.find without decoding every cell, when the column is printable ASCII: the
        rows whose text between the padding spaces has the length of `text` are compared."""
        if stripped is not None or not text or not self._spaces_only():
            return super().find(text, stripped)
        target = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
        cells = self.block[:, self.start:self.stop]
        width = cells.shape[1]
        if len(target) > width:
            return None
        filled = cells != 32
        first = np.argmax(filled, axis=1)
        last = width - 1 - np.argmax(filled[:, ::-1], axis=1)
        rows = np.flatnonzero(filled.any(axis=1) & (last - first + 1 == len(target)))
        if not len(rows):
            return None
        match = (cells[rows[:, None], first[rows][:, None] + np.arange(len(target))] == target).all(axis=1)
        found = np.flatnonzero(match)
        return int(rows[found[0]]) if len(found) else None

    def isin(self, cells: list[str]):
        return np.isin(self.column(), [cell.encode("utf-8") for cell in cells])


class _BlockReader:
    """A file-like reading the bytes of a numpy array (pandas reads it chunk by chunk, so the
    block is not copied whole)."""

    def __init__(self, array):
        self._view = memoryview(array).cast("B")
        self._at = 0

    def read(self, size: int = -1) -> bytes:
        end = len(self._view) if size is None or size < 0 else min(self._at + size, len(self._view))
        chunk = self._view[self._at:end].tobytes()
        self._at = end
        return chunk

    def __iter__(self):
        return iter(())


class CompareTable:
    """A compare table held by column: `numbers(field)` gives a number column as (float64
    values, missing mask) — missing is a blank or None cell, nan where missing — and the text
    columns keep their cells as read (stripped when used). `row(i)` makes one CompareRow;
    `rows` makes all of them, on first use only."""

    def __init__(self, display: str, layout: str, columns: list[str], ragged_rows: int = 0,
                 size: int = 0, text: dict | None = None, numbers: dict | None = None,
                 lines: Sequence[int] = (), csv_shapes: bool = False, skipped: Skips | None = None):
        self.display = display
        self.skipped = skipped if skipped is not None else Skips()  # what the reader went past
        self.layout = layout               # "vB" | "wide23" | "v3.3"
        self.columns = columns             # header names as in the file (no blank index column)
        self.ragged_rows = ragged_rows     # csv rows whose field count differs from the header
        self._size = size
        self._text = text or {}            # field -> _Cells, one per row, as read (absent field: None)
        self._numbers = numbers or {}      # field -> (values, missing) (absent field: all None)
        self._lines = lines                # 1-based file line of each row
        self._csv_shapes = csv_shapes
        self._distinct: dict[str, set] = {}

    def __len__(self) -> int:
        return self._size

    def __repr__(self) -> str:
        return f"CompareTable({self.display!r}, {self.layout!r}, {len(self.columns)} columns, {self._size} rows)"

    # --- columns -----------------------------------------------------------------------

    def numbers(self, field: str):
        """(values, missing) of a number column, or None when the table has no such column."""
        return self._numbers.get(field)

    def raw_text(self, field: str) -> _Cells | None:
        """The cells of a text column as read (not stripped), or None when absent."""
        return self._text.get(field)

    @cached_property
    def names(self) -> list[str]:
        """The name of every row (row_name: its mod_name, or its op and row number)."""
        if not self._size:
            return []
        names = self._text["mod_name"].stripped()
        if "" in names:
            ops = self._text["base_op_type"]
            names = [name or row_name("", str(ops[i]), i) for i, name in enumerate(names)]
        return names

    def name(self, i: int) -> str:
        """The name of row i, as `names` has it (without decoding every name of a large table)."""
        names = self.__dict__.get("names")
        if names is not None:
            return names[i]
        name = str(self._text["mod_name"][i]).strip()
        return name or row_name("", str(self._text["base_op_type"][i]), i)

    def find_name(self, name: str) -> int | None:
        """The first row whose mod_name is `name`."""
        if not self._size:
            return None
        return self._text["mod_name"].find(name, self.__dict__.get("names"))

    @cached_property
    def has_metrics(self):
        """Per row: Cosine or Atol present (CompareRow.has_metrics)."""
        return ~(self._missing("cosine") & self._missing("atol"))

    def distinct(self, field: str) -> set:
        """The different cells of a text column, as read (not stripped)."""
        found = self._distinct.get(field)
        if found is None:
            cells = self._text.get(field)
            found = self._distinct[field] = cells.distinct() if cells is not None else set()
        return found

    def _missing(self, field: str):
        column = self._numbers.get(field)
        return column[1] if column is not None else np.ones(self._size, dtype=bool)

    def line(self, i: int) -> int:
        return int(self._lines[i])

    # --- rows --------------------------------------------------------------------------

    def _cell(self, field: str, i: int):
        if field in self._numbers:
            values, missing = self._numbers[field]
            return None if missing[i] else float(values[i])
        raw = self._text.get(field)
        if field in _TEXT_FIELDS:
            return _text_cell(raw[i])
        if raw is None:
            return None
        return (_shape_cell if field == "shape" and self._csv_shapes else _optional_cell)(raw[i])

    def row(self, i: int) -> CompareRow:
        if not 0 <= i < self._size:
            raise IndexError(i)
        row = CompareRow(i, self.line(i), *(self._cell(f, i) for f in _ROW_FIELDS))
        return row if row.mod_name else replace(row, mod_name=row_name("", row.base_op_type, i))

    @cached_property
    def rows(self) -> list[CompareRow]:
        n = self._size
        if not n:
            return []
        cells = []
        for field in _ROW_FIELDS:
            if field in self._numbers:
                values, missing = self._numbers[field]
                column = values.tolist()
                for i in np.flatnonzero(missing).tolist():
                    column[i] = None
            elif field == "mod_name":
                column = self.names
            elif field in _TEXT_FIELDS:
                column = [_text_cell(v) for v in self._text[field]]
            elif self._text.get(field) is None:
                column = [None] * n
            else:
                convert = _shape_cell if field == "shape" and self._csv_shapes else _optional_cell
                column = [convert(v) for v in self._text[field]]
            cells.append(column)
        lines = [int(v) for v in self._lines]
        # Positional construction in declaration order: much faster than keywords.
        return [CompareRow(*row) for row in zip(range(n), lines, *cells)]


@dataclass(frozen=True)
class Break:
    """A metric row where the table leaves the healthy state (the metric row before it is
    healthy, or it is the first one), with the size of that step. Rules judge which break is
    sudden, and the first sudden one is the error origin."""

    row: CompareRow
    upstream: CompareRow | None
    fused_group: tuple[str, ...]
    healthy: bool                   # the row itself passes is_healthy (an Atol-only break)
    cosine_fall: float | None       # upstream Cosine (1.0 for none) − this Cosine
    cosine_nonfinite: bool
    atol_ratio: float | None        # Atol / the largest Atol of the healthy rows before it
    atol_nonfinite: bool
    qscale_ratio: float | None      # max_qscale_diff / the largest healthy one before it
    qscale_nonfinite: bool
    ranges: RangeMeasures


@dataclass(frozen=True)
class RangeMeasures:
    """How the analysis output range of a row sits against the baseline's (docs/file_formats.md
    §13.3), as fractions of the baseline span and in quantisation steps; None where the row
    gives no finite range. Rules read clamp vs rounding from these."""

    high_narrowing: float | None = None   # (baseline max − analysis max) / baseline span
    low_narrowing: float | None = None    # (analysis min − baseline min) / baseline span
    deviation: float | None = None        # the larger |difference| of the two bounds / span
    high_limit_steps: float | None = None  # |analysis max − integer max × qscale| / qscale
    low_limit_steps: float | None = None   # |analysis min − integer min × qscale| / qscale
    has_int_limits: bool = False          # a per-tensor integer output: the limits are known


@dataclass
class CompareSummary:
    rows: int
    metric_rows: int
    analysis_type: str         # "fake_quant" | "hbir" | "unknown"
    breaks: list[Break]        # the first MAX_BREAKS rows leaving the healthy state
    degraded_rows: int         # metric rows that are not healthy
    decline_start: CompareRow | None  # where the falling Cosine run into the first degraded row begins
    decline_rows: int          # rows in that run, the degraded row included
    worst: CompareRow | None
    first_cosine_below: CompareRow | None
    function_call_rows: list[str]


class _NotVouched(Exception):
    """The fast reading cannot vouch for this file: read it the exact way."""


# --- reading ---------------------------------------------------------------------------

def read_compare_per_layer(path: Path, display: str | None = None) -> CompareTable:
    """Read compare_per_layer_out.csv (by suffix) or the psql .txt (anything else)."""
    path = Path(path)
    display = display or path.name
    raw, long_lines = read_bytes_without_long_lines(path, display, _WHAT, MAX_TEXT_BYTES, MAX_LINE_BYTES)
    skips = Skips()
    for line, length in long_lines:
        skips.add(line, f"a line of {length} bytes, over the {MAX_LINE_BYTES} bytes of any row a profiler "
                        "writes (a garbled field or a dumped line?); not read")
    raw = _checked_bytes(raw, display)
    if long_lines and long_lines[0][0] < _first_content_line(raw):
        line, length = long_lines[0]   # the table's first line (its header or border): nothing can be read
        raise InputError(display, f"line {line} is {length} bytes long, over the {MAX_LINE_BYTES} bytes of any "
                                  "line a profiler writes (garbled or joined lines?); expected "
                                  "a compare_per_layer_out header", line)
    try:
        table = _read_csv(raw, display, skips) if path.suffix.lower() == ".csv" else _read_psql(raw, display, skips)
    except InputError as error:
        if not long_lines:
            raise
        line, length = long_lines[0]
        raise InputError(display, f"{error.message} (line {line}, {length} bytes long, was not read)",
                         error.line) from None
    if not len(table) and skips:
        first = skips.kept[0]
        raise InputError(display, f"no readable row: {first.reason}", first.line)
    skips.in_file_order()
    return table


_BOM = b"\xef\xbb\xbf"
# str.strip()'s whitespace among ASCII characters
_ASCII_SPACE = b" \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f"


def _checked_bytes(raw: bytes, display: str) -> bytes:
    """The file's bytes once they are known to be UTF-8 text without NUL bytes (decode_text's
    errors otherwise), without a leading BOM, every line ending a plain '\\n' (a lone '\\r'
    ends a line too, as this reader has always accepted). A pure-ASCII file is not decoded."""
    if raw.find(b"\x00") >= 0 or not raw.isascii():
        decode_text(raw, display, _WHAT)  # raises for NUL and non-UTF-8 bytes; the text is not kept
    if raw.startswith(_BOM):
        raw = raw[len(_BOM):]
    if b"\r" in raw:
        raw = raw.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    return raw


def _first_content_line(raw: bytes) -> int:
    """The 1-based line of the first line that is not blank (one past the end when none is)."""
    stripped = raw.lstrip(_ASCII_SPACE)
    return raw.count(b"\n", 0, len(raw) - len(stripped)) + 1


def _blank(line: bytes) -> bool:
    """A line of nothing but whitespace (str.strip()'s whitespace, Unicode included)."""
    rest = line.strip(_ASCII_SPACE)
    return not rest or (not rest.isascii() and not rest.decode("utf-8").strip())


def _content_end(raw: bytes) -> int:
    """Where the text ends once the trailing blank lines are dropped (files may or may not end
    with a newline); 0 for a file of blank lines."""
    end = len(raw)
    while end > 0:
        nl = raw.rfind(b"\n", 0, end)
        if not _blank(raw[nl + 1:end]):
            return end
        end = max(nl, 0)
    return 0


def _layout(columns: list[str]) -> str:
    lower = {c.lower() for c in columns}
    if lower & _WIDE23_ONLY:
        return "wide23"
    v33_signs = ("advice" in lower or ("dtype" in lower and "quant_dtype" not in lower)
                 or "COSINE" in columns or "ATOL" in columns)
    return "v3.3" if v33_signs else "vB"


def _field_positions(columns: list[str], display: str, line: int) -> dict[str, int]:
    """Map CompareRow fields to header positions; the first occurrence of a name wins."""
    positions: dict[str, int] = {}
    for pos, name in enumerate(columns):
        field = _FIELD_OF_HEADER.get(name.strip().lower())
        if field and field not in positions:
            positions[field] = pos
    missing = [h for h in _REQUIRED_HEADERS if _FIELD_OF_HEADER[h.lower()] not in positions]
    if missing:
        raise InputError(display, "not a compare_per_layer_out header: expected the columns "
                                  f"{', '.join(_REQUIRED_HEADERS)} (quant_dtype or dtype, metric "
                                  f"names in any case); missing {', '.join(missing)}", line=line)
    return positions


def _float_options() -> dict:
    """pandas before 3.1 reads floats exactly only with float_precision="round_trip" (Python's
    own strtod); from 3.1 every mode is fast_float (exact) and the keyword is deprecated."""
    match = re.match(r"(\d+)\.(\d+)", pd.__version__)
    version = (int(match.group(1)), int(match.group(2))) if match else (0, 0)
    return {} if version >= (3, 1) else {"float_precision": "round_trip"}


# The cells a csv number column reads as nan (na_values): blank and None (missing), and
# "nan" as Python writes it, which pandas' C reader refuses (pandas 3.1) or reads like a
# blank cell (pandas 2): a cell read as nan is told missing or not from its text. pandas
# reads "inf" itself; it also takes any cell whose number is an NA value's as NA, so "inf"
# is no NA value in a csv ("1e400" would be read as NA). In a psql table, where a cell's
# text is at hand (its bytes), the padded non-finite words are NA values too (_padded_na).
_NA_CELLS = list(_MISSING + ("nan",))
_NON_FINITE = ("nan", "inf", "-inf")


def _frame(raw: bytes, skip: int, rows: int, sep: str, ncols: int, dtypes: dict, usecols=None):
    """pandas' C reader on `rows` lines of raw after the first `skip`: text columns (dtypes
    object) as read, number columns (float64) exactly, a _NA_CELLS cell as nan."""
    numbers = [k for k, t in dtypes.items() if t == "float64"]
    return pd.read_csv(
        io.BytesIO(raw), sep=sep, header=None, skiprows=skip, nrows=rows, names=list(range(ncols)),
        usecols=usecols, dtype={k: (np.float64 if t == "float64" else object) for k, t in dtypes.items()},
        na_values={k: _NA_CELLS for k in numbers}, keep_default_na=False, skipinitialspace=True,
        quoting=csv.QUOTE_NONE, skip_blank_lines=False, engine="c", encoding="utf-8", **_float_options())


_CHUNK = 1 << 18


def _chunks(a, size: int = _CHUNK):
    """(offset, a[offset:offset + size + 2]) over uint8 array a: the chunks overlap by two
    bytes, for a three-byte pattern across a chunk boundary."""
    for start in range(0, len(a), size):
        yield start, a[start:start + size + 2]


def _scan_csv(a) -> tuple[int, int, list[int]]:
    """In one pass over the data lines (uint8): the newlines, the commas, and the offsets
    where "nan" starts, in any letter case."""
    newlines = commas = 0
    hits: list[int] = []
    for start, chunk in _chunks(a):
        body = chunk[:_CHUNK]
        newlines += int(np.count_nonzero(body == 10))
        commas += int(np.count_nonzero(body == 44))
        lower = chunk | 32
        n = lower == 110
        word = n[:-2] & n[2:]
        word &= lower[1:-1] == 97
        if word.any():
            hits.extend((np.flatnonzero(word) + start).tolist())
    return newlines, commas, hits


def _line_starts(a) -> "np.ndarray":
    """Offsets in a (uint8, the text of some lines) where each line starts."""
    parts = [np.zeros(1, dtype=np.int64)]
    for start, chunk in _chunks(a):
        parts.append(np.flatnonzero(chunk[:_CHUNK] == 10) + (start + 1))
    return np.concatenate(parts)


def _spoken_nan_rows(raw: bytes, start: int, body, hits: list[int], numbers: dict) -> list[tuple[int, str]]:
    """(row, line text) of the data lines holding "nan" (hits: offsets in body) where a number
    cell read as nan: the cells to tell missing or not."""
    if not hits or not numbers:
        return []
    starts = _line_starts(body)
    rows = np.unique(np.searchsorted(starts, hits, side="right") - 1)
    nan = np.logical_or.reduce([missing[rows] for _, missing in numbers.values()])
    found = []
    for k in rows[nan].tolist():
        stop = int(starts[k + 1]) - 1 if k + 1 < len(starts) else len(body)
        found.append((k, raw[start + int(starts[k]):start + stop].decode("utf-8")))
    return found


# --- csv -------------------------------------------------------------------------------

def _read_csv(raw: bytes, display: str, skips: Skips, numbering: Sequence[int] | None = None) -> CompareTable:
    """The csv table; `numbering`: the file line of each data row when `raw` is the file
    without the rows left out (else the rows are the file's lines from line 2 on)."""
    end = _content_end(raw)
    if not end:
        # The writer creates an empty file when no rows matched (docs/file_formats.md §3).
        return CompareTable(display, "vB", [], skipped=skips)
    nl = raw.find(b"\n", 0, end)
    header_end = end if nl < 0 else nl
    header = raw[:header_end].decode("utf-8")
    check_table_width(header.count(",") + 1, display, 1, "the header")
    columns = [c.strip() for c in header.split(",")]
    positions = _field_positions(columns, display, line=1)
    width = len(columns)
    allowed = _allowed_field_counts(columns)
    if width + 2 in allowed:
        positions = _with_trailing_same_in(positions, width)
    layout = _layout(columns)
    start = header_end + 1
    if start >= end:
        return CompareTable(display, layout, columns, skipped=skips)
    body = np.frombuffer(raw, dtype=np.uint8, count=end - start, offset=start)
    newlines, commas, hits = _scan_csv(body)
    rows = newlines + 1
    lines = numbering if numbering is not None else range(2, rows + 2)
    first = raw.find(b"\n", start, end)
    first_fields = raw.count(b",", start, end if first < 0 else first) + 1
    # Every row has the header's width when the commas add up and no row has more fields
    # than that: the first row is counted here, pandas refuses any later one (it does so
    # only when it reads every column).
    every_column = set(range(width)) <= set(positions.values())
    counts = None
    if not (every_column and first_fields == width and commas == (width - 1) * rows):
        counts = _field_counts(body)
    small = len(raw) <= STDLIB_MAX_BYTES
    if small and counts is None:
        counts = _field_counts(body)  # the exact reading relies on every row's field count
    for attempt in (("exact",) if small else ("fast", "exact")):
        if counts is not None and not np.isin(counts, sorted(allowed)).all():
            kept, numbering = _without_unreadable_rows(raw, start, end, counts, allowed, columns, lines, skips)
            return _read_csv(kept, display, skips, numbering)
        try:
            if attempt == "fast":
                # (pandas refuses more names than fields when it reads only some columns)
                text, numbers = _csv_fast(raw, start, body, hits, rows,
                                          width if counts is None else int(counts.max()), positions)
            else:
                text, numbers = _csv_exact(raw, start, end, rows, max(allowed), positions, columns, lines,
                                           display, skips)
            break
        except _NotVouched:
            counts = _field_counts(body) if counts is None else counts
    ragged = 0 if counts is None else int(np.count_nonzero(counts != width))
    return CompareTable(display, layout, columns, ragged, rows, text, numbers, lines, csv_shapes=True,
                        skipped=skips)


def _allowed_field_counts(columns: list[str]) -> set[int]:
    """Header width, plus/minus the two same_in_* fields that only some hbir rows carry
    (the header holds the first row's keys only, docs/file_formats.md §3)."""
    width = len(columns)
    lower = [c.lower() for c in columns]
    allowed = {width}
    if not set(_SAME_IN) & set(lower):
        allowed.add(width + 2)
    elif tuple(lower[-2:]) == _SAME_IN:
        allowed.add(width - 2)
    return allowed


def _field_count_message(columns: list[str], allowed: set[int], count: int) -> str:
    width = len(columns)
    expected = f"{width} comma-separated fields as in the header"
    extra = sorted(c for c in allowed if c != width)
    if extra:
        expected += f" (or {extra[0]} with/without the trailing {', '.join(_SAME_IN)})"
    return f"expected {expected}, got {count} fields (a cut, joined or hand-edited row?)"


def _field_counts(body):
    """The comma-separated fields of every data line (body: the data lines as uint8)."""
    before = []   # per '\n': the commas before it
    seen = 0
    for _, chunk in _chunks(body):
        part = chunk[:_CHUNK]
        commas = np.flatnonzero(part == 44)
        before.append(np.searchsorted(commas, np.flatnonzero(part == 10)) + seen)
        seen += len(commas)
    ends = np.concatenate(before + [np.array([seen])])   # commas before each line's end
    return np.diff(ends, prepend=0) + 1


def _without_unreadable_rows(raw: bytes, start: int, end: int, counts, allowed: set[int], columns: list[str],
                             lines: Sequence[int], skips: Skips) -> tuple[bytes, list[int]]:
    """The text without the data lines whose field count is not allowed (each named in
    `skips`, a blank line left out silently), and the file line of each row kept."""
    data = raw[start:end].split(b"\n")
    good = np.isin(counts, sorted(allowed))
    for k in np.flatnonzero(~good).tolist():
        if not _blank(data[k]):
            skips.add(int(lines[k]), _field_count_message(columns, allowed, int(counts[k])))
    kept = np.flatnonzero(good).tolist()
    return raw[:start] + b"\n".join(data[k] for k in kept), [int(lines[k]) for k in kept]


def _with_trailing_same_in(positions: dict[str, int], width: int) -> dict[str, int]:
    # Extra trailing fields of an hbir row belong to the two same_in_* keys.
    return {**positions, _SAME_IN[0]: width, _SAME_IN[1]: width + 1}


def _dtypes(positions: dict[str, int], ncols: int, offset: int = 0) -> dict[int, str]:
    dtypes: dict[int, str] = {}
    for field, pos in positions.items():
        if pos < ncols:
            dtypes[pos + offset] = "float64" if field in _NUMBER_FIELDS else "object"
    return dtypes


def _columns_of(frame, positions: dict[str, int], ncols: int, offset: int = 0):
    """(text, numbers) column dicts of the mapped fields."""
    text, numbers = {}, {}
    for field, pos in positions.items():
        if pos >= ncols:
            continue  # same_in_* of a table without them: every cell None
        column = frame[pos + offset]
        if field in _NUMBER_FIELDS:
            values = column.to_numpy(dtype=np.float64)
            numbers[field] = (values, np.isnan(values))
        else:
            text[field] = _Cells(column.to_numpy(dtype=object))
    return text, numbers


def _csv_fast(raw: bytes, start: int, body, hits: list[int], rows: int, ncols: int,
              positions: dict[str, int]):
    dtypes = _dtypes(positions, ncols)
    usecols = None if len(dtypes) == ncols else sorted(dtypes)
    try:
        frame = _frame(raw, 1, rows, ",", ncols, dtypes, usecols)
    except (ValueError, TypeError, OverflowError):
        raise _NotVouched from None
    if len(frame) != rows:
        raise _NotVouched
    text, numbers = _columns_of(frame, positions, ncols)
    for k, line in _spoken_nan_rows(raw, start, body, hits, numbers):
        _unmiss(line.split(","), k, positions, numbers)
    return text, numbers


def _unmiss(cells: list[str], k: int, positions: dict[str, int], numbers: dict, offset: int = 0) -> None:
    """Row k's number cells that hold a number's text (nan) rather than a blank or None."""
    for field, (values, missing) in list(numbers.items()):
        pos = positions[field] + offset
        if missing[k] and pos < len(cells) and cells[pos].strip() not in _MISSING:
            try:
                value = float(cells[pos].strip())
            except ValueError:
                raise _NotVouched from None
            if not values.flags.writeable:  # a view of pandas' block (copy-on-write)
                values = values.copy()
                numbers[field] = (values, missing)
            values[k] = value
            missing[k] = False


def _csv_exact(raw: bytes, start: int, end: int, rows: int, ncols: int, positions: dict[str, int],
               columns: list[str], lines: Sequence[int], display: str, skips: Skips):
    """Every cell as text, each number column then read the way Python reads a number."""
    if end - start <= STDLIB_MAX_BYTES:
        cells = _stdlib_cells(raw[start:end], ncols, rows)
        if cells is not None:
            return _exact_columns(cells, positions, ncols, columns, lines, skips)
    try:
        frame = pd.read_csv(
            io.BytesIO(raw[start:end]), header=None, names=list(range(ncols)), dtype=object,
            na_filter=False, keep_default_na=False, skipinitialspace=True, encoding="utf-8",
            quoting=csv.QUOTE_NONE, skip_blank_lines=False, engine="c", low_memory=False)
    except (ValueError, pd.errors.ParserError) as exc:
        raise InputError(display, f"expected comma-separated rows ({exc})") from None
    if len(frame) != rows:
        raise InputError(display, f"expected {rows} data rows, the csv parser found "
                                  f"{len(frame)}")
    return _exact_columns({k: frame[k].to_numpy(dtype=object) for k in frame.columns},
                          positions, ncols, columns, lines, skips)


def _stdlib_cells(data: bytes, ncols: int, rows: int) -> dict | None:
    """The cells of `rows` comma-separated lines as text columns (the standard library's csv
    reader, spaces after a comma skipped, quotes no quotes: as pandas is asked to read them;
    a row shorter than ncols padded with blank cells), or None where the csv module would cut
    differently from pandas (a line end inside a line) and pandas reads it."""
    lines = data.decode("utf-8").split("\n")
    try:
        parsed = list(csv.reader(lines, skipinitialspace=True, quoting=csv.QUOTE_NONE, strict=False))
    except csv.Error:
        return None
    if len(parsed) != rows or len(lines) != rows:
        return None
    columns = list(itertools.zip_longest(*parsed, fillvalue="")) if rows else []
    columns += [("",) * rows] * (ncols - len(columns))  # fields no row has
    return dict(enumerate(columns))


def _exact_columns(cells: dict, positions: dict[str, int], ncols: int, columns: list[str],
                   lines: Sequence[int], skips: Skips):
    """(text, numbers) from every cell as text; a cell that is no number is read as blank
    and named in `skips`."""
    text, numbers = {}, {}
    for field in _TEXT_FIELDS + _OPTIONAL_TEXT_FIELDS:
        if field in positions and positions[field] < ncols:
            text[field] = _Cells(np.asarray(cells[positions[field]], dtype=object))
    for field in _NUMBER_FIELDS:
        if field in positions and positions[field] < ncols:
            pos = positions[field]
            name = columns[pos] if pos < len(columns) else field
            numbers[field] = _number_column(cells[pos], name, lines, skips)
    return text, numbers


# --- psql txt ----------------------------------------------------------------------------

def _head_lines(raw: bytes, end: int) -> tuple[list[str], int]:
    """The lines up to the table's header rule (the first non-blank line and two more), and
    the offset of the line after them."""
    head: list[str] = []
    first = None
    pos = 0
    while pos < end and (first is None or len(head) < first + 3):
        nl = raw.find(b"\n", pos, end)
        stop = end if nl < 0 else nl
        head.append(raw[pos:stop].decode("utf-8"))
        if first is None and head[-1].strip():
            first = len(head) - 1
        pos = stop + 1
    return head, min(pos, end)


def _read_psql(raw: bytes, display: str, skips: Skips) -> CompareTable:
    end = _content_end(raw)
    head, body = _head_lines(raw, end)
    first = skip_blank(head, 0)
    if first == len(head):
        raise InputError(display, "empty file; expected a psql table (compare_per_layer_out.txt)"
                                  " starting with a '+----+----+' border")
    if not is_psql_start(head, first):
        raise InputError(display, "expected a psql table border like '+----+----+' "
                                  "(compare_per_layer_out.txt)", line=first + 1)
    border = head[first].rstrip()
    check_table_width(border.count("+") - 1, display, first + 1)
    bounds = [i for i, ch in enumerate(border) if ch == "+"]
    header = _psql_header(head, first + 1, bounds, display)
    has_index = header[0] == ""
    columns = header[1:] if has_index else header
    positions = _field_positions(columns, display, line=first + 2)
    _expect_header_rule(head, first + 2, border, display)
    layout = _layout(columns)
    try:
        rows, text, numbers = _psql_fast(raw, body, end, first, border, bounds, has_index, positions,
                                         len(columns))
        lines: Sequence[int] = range(first + 4, first + 4 + rows)
    except _NotVouched:
        table = parse_psql(split_lines(raw[:end].decode("utf-8"), drop_trailing_blank=True), first, 1, display,
                           numbered=has_index, multiline=has_index, alone=True)
        skips.extend(table.skipped)
        data = [row.cells for row in table.rows]
        lines = [row.line for row in table.rows]
        rows = len(data)
        skip = 1 if has_index else 0
        cells = {pos: np.array([r[skip + pos] for r in data], dtype=object)
                 for pos in range(len(columns))}
        text, numbers = _exact_columns(cells, positions, len(columns), columns, lines, skips)
    return CompareTable(display, layout, columns, 0, rows, text, numbers, lines, skipped=skips)


def _border_line(raw: bytes, border: bytes, start: int, end: int) -> tuple[int, int]:
    """(start, end) of the first line from `start` that is the table border, or _NotVouched."""
    pos = start
    while True:
        at = raw.find(border, pos, end)
        if at < 0:
            raise _NotVouched
        if at == start or raw[at - 1] == 10:
            nl = raw.find(b"\n", at, end)
            stop = end if nl < 0 else nl
            if not _blank(raw[at + len(border):stop]):
                raise _NotVouched  # a row that starts like the border: the exact reading says what it is
            return at, stop
        pos = at + 1


def _psql_fast(raw: bytes, start: int, end: int, first: int, border: str, bounds: list[int],
               has_index: bool, positions: dict[str, int], ncolumns: int):
    """The rows of a psql table in the aligned layout tabulate writes: every line as long as
    the border, a '|' under each '+' and nowhere else, a row number in the index column.
    Each cell then lies between two known '|', so pandas reads the lines as '|'-separated
    fields (a blank cell is its column's width of spaces)."""
    width = bounds[-1] + 1
    stride = width + 1
    at, stop = _border_line(raw, border.encode(), start, end)
    if stop < end or (at - start) % stride:
        raise _NotVouched
    rows = (at - start) // stride
    offset = 2 if has_index else 1  # data column c is field c + offset
    if not rows:
        return 0, {f: _Cells(np.empty(0, dtype=object)) for f in positions if f not in _NUMBER_FIELDS}, \
            {f: (np.empty(0), np.empty(0, dtype=bool)) for f in positions if f in _NUMBER_FIELDS}
    grid = np.frombuffer(raw, dtype=np.uint8, count=rows * stride, offset=start).reshape(rows, stride)
    pipes = len(bounds)
    for r in range(0, rows, 8192):
        block = grid[r:r + 8192]
        if not ((block[:, -1] == 10).all() and (block[:, bounds] == 124).all()
                and np.count_nonzero(block == 124) == len(block) * pipes):
            raise _NotVouched
    if has_index:
        cell = grid[:, 1:bounds[1]]
        digit = (cell >= 48) & (cell <= 57)
        runs = digit[:, 0].astype(np.int64) + np.count_nonzero(digit[:, 1:] & ~digit[:, :-1], axis=1)
        if not ((digit | (cell == 32)).all() and (runs == 1).all()):
            raise _NotVouched  # a continuation line or an odd row number
    span = {f: (bounds[positions[f] + offset - 1] + 1, bounds[positions[f] + offset])
            for f in positions if positions[f] < ncolumns}
    numbers = _psql_numbers(grid, bounds, span, [f for f in span if f in _NUMBER_FIELDS])
    texts = [f for f in span if f not in _NUMBER_FIELDS]
    # the text columns: one block of the bytes from the first to the last of them
    low, high = min(span[f][0] for f in texts), max(span[f][1] for f in texts)
    block = np.array(grid[:, low:high])  # a copy: the table does not keep the file's bytes
    return rows, {f: _ByteCells(block, span[f][0] - low, span[f][1] - low) for f in texts}, numbers


def _padded_na(width: int) -> list[str]:
    """_NA_CELLS as a psql cell of `width` holds them: right-aligned (numbers) or left-aligned
    (a column tabulate took for text), one space either side; a blank cell is all spaces.
    ("None" is left to the exact reading: tabulate writes a None cell blank.)"""
    cells = ["", " " * width]
    for word in _NON_FINITE:
        if len(word) + 2 <= width:
            cells += [" " + word.rjust(width - 2) + " ", " " + word.ljust(width - 2) + " "]
    return cells


def _psql_numbers(grid, bounds: list[int], span: dict[str, tuple[int, int]], fields: list[str]) -> dict:
    """The number columns of an aligned psql table: the block of bytes from the first to the
    last of them, the '|' after the last one made the line end, read by pandas (a blank
    cell is its column's width of spaces)."""
    if not fields:
        return {}
    if grid.size <= STDLIB_MAX_BYTES:
        return {field: _cell_numbers(grid, *span[field]) for field in fields}
    order = sorted(fields, key=lambda f: span[f][0])
    low, high = span[order[0]][0], span[order[-1]][1]
    block = np.array(grid[:, low:high + 1])  # a copy (raw is read-only)
    block[:, -1] = 10
    cuts = [b for b in bounds if low - 1 <= b <= high]  # the '|' around and between the cells
    field_of = {k: f for k, (a, b) in enumerate(zip(cuts, cuts[1:])) for f in fields if span[f] == (a + 1, b)}
    try:
        frame = pd.read_csv(
            _BlockReader(block), sep="|", header=None, names=list(range(len(cuts) - 1)), usecols=sorted(field_of),
            dtype={k: np.float64 for k in field_of},
            na_values={k: _padded_na(span[f][1] - span[f][0]) for k, f in field_of.items()},
            keep_default_na=False, quoting=csv.QUOTE_NONE, skip_blank_lines=False, engine="c",
            encoding="utf-8", **_float_options())
    except (ValueError, TypeError, OverflowError):
        raise _NotVouched from None
    if len(frame) != len(grid):
        raise _NotVouched
    numbers = {}
    for k, field in field_of.items():
        values = frame[k].to_numpy(dtype=np.float64)
        missing = np.isnan(values)
        if missing.any():
            # a cell read as nan is missing when it is blank, else it is nan / inf
            a, b = span[field]
            nan = np.flatnonzero(missing)
            spoken = nan[~(grid[nan, a:b] == 32).all(axis=1)]
            if len(spoken):
                values = values.copy()
                for i in spoken.tolist():
                    try:
                        values[i] = float(grid[i, a:b].tobytes().decode("utf-8").strip())
                    except ValueError:
                        raise _NotVouched from None
                missing[spoken] = False
        numbers[field] = (values, missing)
    return numbers


def _cell_numbers(grid, a: int, b: int):
    """(values, missing) of the number cells between bytes a and b of each row: a blank cell
    is missing, any other is read by Python's float() (nan / inf spoken are numbers), and a
    cell that is no number (None, text) leaves the table to the exact reading."""
    cells = np.ascontiguousarray(grid[:, a:b]).view(f"S{b - a}").ravel().tolist()
    values = np.empty(len(cells), dtype=np.float64)
    missing = np.zeros(len(cells), dtype=bool)
    for i, cell in enumerate(cells):
        text = cell.strip()
        if not text:
            values[i], missing[i] = np.nan, True
            continue
        try:
            values[i] = float(text)
        except ValueError:
            raise _NotVouched from None
    return values, missing


def _psql_header(lines: list[str], at: int, bounds: list[int], display: str) -> list[str]:
    cells = cut_psql_row(lines[at], bounds, loose=True) if at < len(lines) else None
    if cells is None:
        raise InputError(display, f"expected the header row '| mod_name | ... |' with "
                                  f"{len(bounds) - 1} cells aligned with the border",
                         line=min(at, len(lines)) + 1)
    return list(cells)


def _expect_header_rule(lines: list[str], at: int, border: str, display: str) -> None:
    rule = "|" + border[1:-1] + "|"
    if at >= len(lines) or lines[at].rstrip() != rule:
        raise InputError(display, "expected the header rule '|----+----|' under the header",
                         line=min(at, len(lines)) + 1)


# --- cells -> numbers ------------------------------------------------------------------

def _number_column(cells, name: str, line_numbers: Sequence[int], skips: Skips):
    """(values, missing) of text cells: blank / None cells are missing, the others read by
    Python's float(); a cell that is no number is missing too, and named in `skips`."""
    try:  # the usual column, every cell a number: one pass of float()
        return np.fromiter(map(float, cells), dtype=np.float64, count=len(cells)), np.zeros(len(cells), dtype=bool)
    except (ValueError, TypeError):
        pass
    cells = np.asarray(cells, dtype=object)
    missing = np.isin(cells, _MISSING) if len(cells) else np.zeros(0, dtype=bool)
    numbers = _exact_floats(np.where(missing, "nan", cells).astype(object))
    # Only the cells the vectorised parse could not read are looked at one by one.
    for i in (np.isnan(numbers) & ~missing).nonzero()[0].tolist():
        value = _number_cell(str(cells[i]), name, line_numbers[i], skips)
        if value is None:
            missing[i] = True
        else:
            numbers[i] = value
    return numbers, missing


def _exact_floats(cells):
    """Text cells as floats, each the correctly rounded value of its decimal text (Python's
    float(); pandas' fast parsers may differ by one ulp, and differ between pandas versions);
    a cell that is no number is nan."""
    try:
        return cells.astype(np.float64)
    except (ValueError, TypeError):
        out = np.empty(len(cells), dtype=np.float64)
        for i, cell in enumerate(cells.tolist()):
            try:
                out[i] = float(cell)
            except (ValueError, TypeError):
                out[i] = np.nan
        return out


def _number_cell(text: str, name: str, line: int, skips: Skips) -> float | None:
    text = text.strip()
    if text in _MISSING:
        return None
    try:
        return float(text)
    except ValueError:
        skips.add(int(line), f"column {name!r}: expected a number (or nan/inf, or a blank/None cell), got "
                             f"{quoted(text)}; the cell is read as blank")
        return None


# --- summary ---------------------------------------------------------------------------

def _metric_columns(table: CompareTable, index):
    """(values, missing) of Cosine, Atol and max_qscale_diff at the given rows."""
    out = []
    for field in ("cosine", "atol", "max_qscale_diff"):
        column = table.numbers(field)
        if column is None:
            out.append((np.full(len(index), np.nan), np.ones(len(index), dtype=bool)))
        else:
            out.append((column[0][index], column[1][index]))
    return out


def summarize(table: CompareTable) -> CompareSummary:
    """The summary of docs/file_formats.md §13, computed over the columns; the rows it names
    are the only CompareRow objects it makes."""
    if not len(table):
        return CompareSummary(0, 0, _analysis_type(table), [], 0, None, 0, None, None, [])
    metric = np.flatnonzero(table.has_metrics)
    (c, cm), (a, am), (q, qm) = _metric_columns(table, metric)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        c_finite = ~cm & np.isfinite(c)
        below = ~cm & ~(c_finite & (c >= COSINE_HEALTHY))                     # _cosine_below
        atol_broken = ~am & ~np.isfinite(a)
        q_finite = ~qm & np.isfinite(q)
        healthy = ~below & ~atol_broken & (qm | (q_finite & (q <= QSCALE_DIFF_SURGE)))  # is_healthy
        breaks = _breaks(table, metric, c, cm, c_finite, a, am, atol_broken, q, qm, q_finite, healthy)
        decline_start, decline_rows = _decline(table, metric, c, cm, c_finite, healthy)
    scored = np.flatnonzero(~cm)
    worst = None
    if len(scored):
        # nan Cosine ranks as the worst (the first of equal keys wins).
        keys = np.where(np.isnan(c[scored]), -np.inf, c[scored])
        worst = table.row(int(metric[scored[int(np.argmin(keys))]]))
    first_below = np.flatnonzero(below)
    return CompareSummary(
        rows=len(table),
        metric_rows=len(metric),
        analysis_type=_analysis_type(table),
        breaks=breaks,
        degraded_rows=int(np.count_nonzero(~healthy)),
        decline_start=decline_start,
        decline_rows=decline_rows,
        worst=worst,
        first_cosine_below=table.row(int(metric[first_below[0]])) if len(first_below) else None,
        function_call_rows=_function_call_rows(table),
    )


def _breaks(table: CompareTable, metric, c, cm, c_finite, a, am, atol_broken, q, qm, q_finite,
            healthy) -> list[Break]:
    """The metric rows, after a healthy metric row (or first), that are not healthy or whose
    Atol surges, with the measures of that step.

    Vectorised: the largest Atol / max_qscale_diff of the healthy rows before each row is a
    running maximum; each row's step is measured against its upstream metric row."""
    n = len(metric)
    if not n:
        return []
    zero = np.zeros(1)
    max_atol = np.maximum.accumulate(np.concatenate([zero, np.where(healthy & ~am & ~atol_broken, a, 0.0)]))[:-1]
    max_mqd = np.maximum.accumulate(np.concatenate([zero, np.where(healthy & q_finite, q, 0.0)]))[:-1]
    # A ratio that overflows (1e308 over 5e-324) is still a surge: kept as the largest float.
    atol_ratio = np.where(~am & (max_atol > 0), np.minimum(a / np.where(max_atol > 0, max_atol, 1.0),
                                                           _FLOAT_MAX), np.nan)
    after_healthy = np.concatenate([[True], healthy[:-1]])
    candidate = after_healthy & (~healthy | atol_broken | (atol_ratio >= ATOL_SURGE_FACTOR))
    out = []
    for k in np.flatnonzero(candidate)[:MAX_BREAKS].tolist():
        row = table.row(int(metric[k]))
        upstream = table.row(int(metric[k - 1])) if k else None
        reference = float(c[k - 1]) if k and c_finite[k - 1] else 1.0
        ratio = float(atol_ratio[k])
        out.append(Break(
            row, upstream, _fused_group(table, row), bool(healthy[k]),
            cosine_fall=reference - float(c[k]) if c_finite[k] else None,
            cosine_nonfinite=bool(~cm[k] & ~c_finite[k]),
            atol_ratio=ratio if np.isfinite(ratio) else None,
            atol_nonfinite=bool(atol_broken[k]),
            qscale_ratio=min(float(q[k] / max_mqd[k]), _FLOAT_MAX) if q_finite[k] and max_mqd[k] > 0 else None,
            qscale_nonfinite=bool(~qm[k] & ~q_finite[k]),
            ranges=range_measures(row)))
    return out


def _fused_group(table: CompareTable, row: CompareRow) -> tuple[str, ...]:
    """The cleared-metric rows directly before `row` (its fused prefix), plus `row`."""
    names = [row.mod_name]
    has_metrics = table.has_metrics
    k = row.index - 1
    while k >= 0 and len(names) < FUSED_GROUP_MAX and not has_metrics[k]:
        names.insert(0, table.name(k))
        k -= 1
    return tuple(names)


def _decline(table: CompareTable, metric, c, cm, c_finite, healthy) -> tuple[CompareRow | None, int]:
    """The run of falling Cosine that ends at the first degraded metric row: where it begins
    and how many rows it spans (1 when the degraded row follows a row no higher)."""
    bad = np.flatnonzero(~healthy)
    if not len(bad):
        return None, 0
    first_bad = int(bad[0])
    falls = np.concatenate([[False], c_finite[:-1] & ~cm[1:] & (~np.isfinite(c[1:]) | (c[:-1] > c[1:]))])
    stops = np.flatnonzero(~falls[1:first_bad + 1])
    k = int(stops[-1]) + 1 if len(stops) else 0
    return table.row(int(metric[k])), first_bad - k + 1


def _function_call_rows(table: CompareTable) -> list[str]:
    calls = sorted(u for u in table.distinct("base_op_type") if is_function_op(str(u)))
    if not calls:
        return []
    found = table.raw_text("base_op_type").isin(calls)
    return [table.name(i) for i in np.flatnonzero(found).tolist()]


def _finite(value: float | None) -> bool:
    return value is not None and math.isfinite(value)


def _cosine_below(cosine: float | None) -> bool:
    """A nan/inf Cosine is a broken comparison, so it counts as below the threshold."""
    return cosine is not None and not (math.isfinite(cosine) and cosine >= COSINE_HEALTHY)


def is_healthy(row: CompareRow) -> bool:
    """Cosine (if present) at least COSINE_HEALTHY, max_qscale_diff (if present) at most
    QSCALE_DIFF_SURGE, and no nan/inf metric."""
    if _cosine_below(row.cosine):
        return False
    if row.atol is not None and not math.isfinite(row.atol):
        return False
    mqd = row.max_qscale_diff
    return mqd is None or (math.isfinite(mqd) and mqd <= QSCALE_DIFF_SURGE)


def range_measures(row: CompareRow) -> RangeMeasures:
    """The row's analysis range against its baseline range and the integer limits."""
    stats = (row.base_min, row.analy_min, row.base_max, row.analy_max)
    if not all(_finite(v) for v in stats):
        return RangeMeasures()
    bmin, amin, bmax, amax = stats
    span = bmax - bmin
    if span <= 0:
        return RangeMeasures()
    high, low = (bmax - amax) / span, (amin - bmin) / span
    deviation = max(abs(bmax - amax), abs(bmin - amin)) / span
    limits = _QUANT_LIMITS.get(row.dtype or "")
    if limits is None or not _finite(row.qscale) or row.qscale <= 0:
        return RangeMeasures(high, low, deviation)  # float output or per-channel: nothing to pin
    q = row.qscale
    return RangeMeasures(high, low, deviation, abs(amax - limits[1] * q) / q, abs(amin - limits[0] * q) / q, True)


def _analysis_type(table: CompareTable) -> str:
    lower = {c.lower() for c in table.columns}
    if lower & set(_SAME_IN) or table.ragged_rows:
        return "hbir"
    if not len(table):
        return "unknown"
    analy = [str(u).strip() for u in table.distinct("analy_op_type")]
    if any(_HBIR_SUFFIX.search(u) for u in analy):
        return "hbir"
    for field in _SAME_IN:
        column = table.numbers(field)
        if column is not None and not column[1].all():
            return "hbir"
    if (any(".nn.qat." in u for u in analy)
            and not any(".nn.qat." in str(u) for u in table.distinct("base_op_type"))):
        return "fake_quant"
    return "unknown"


def is_function_op(op_name: str) -> bool:
    """Op-name strings of function calls (docs/file_formats.md §0.4): `torch.Tensor.<f>`,
    `torch.<f>`, `<module>.<f>` or a `str(op)` fallback; modules end in a class name
    (`...Conv2d`) or a class name plus method (`...FloatFunctional.add`)."""
    name = _HBIR_SUFFIX.sub("", op_name.strip())
    if not name:
        return False
    if name.startswith("<"):
        return "function" in name
    parts = name.split(".")
    last = parts[-1]
    if not last or not (last[0].islower() or last[0] == "_"):
        return False
    if len(parts) == 1:
        return True
    return parts[-2] == "Tensor" or not parts[-2][:1].isupper()


def metric_row_for(table: CompareTable, op_name: str) -> CompareRow | None:
    """The metric-bearing compare row of a sensitivity op (docs/file_formats.md §13.5):
    sensitivity names the QAT leaf (e.g. the conv of a fused conv-bn-relu); its metrics live
    on the last row of the fused group, reached by walking forward over the cleared-metric
    rows."""
    k = table.find_name(op_name)
    if k is None:
        return None
    has_metrics = table.has_metrics
    analy = table.raw_text("analy_op_type")
    j = k
    while not has_metrics[j] and j + 1 < len(table) and j - k < FUSED_GROUP_MAX - 1:
        if str(analy[j + 1]).strip().split("[")[0].strip() != _IDENTITY:
            break
        j += 1
    return table.row(j) if has_metrics[j] else None


# =========================================================================================
# Facts (probes/probe_output.py)
# =========================================================================================

# The metric columns a reading uses; a nan / inf there is said once per row, however many
# rows hold one (a table of thousands of nan rows gets a count after the first ones).
_METRIC_COLUMNS = (("cosine", "Cosine"), ("l1", "L1"), ("atol", "Atol"), ("max_qscale_diff", "max_qscale_diff"))
MAX_NON_FINITE_NOTES = 20


def add_facts(found, out) -> None:
    """A compare table's summary and the rows where it leaves the healthy state (each with
    the size of that step and its range measures) as facts; the table is kept for the
    sensitivity join and the report's chart. The csv is the file to read when a folder holds
    both the csv and the txt."""
    from j6doctor.probes.probe_output import folder_of

    if found.kind == "compare_per_layer_txt" and folder_of(found) in out.csv_folders:
        out.unread[found.display] = "同一文件夹的 compare_per_layer_out.csv 已读取（同一张表，csv 的数值更完整）"
        return
    table = read_compare_per_layer(found.path, found.display)
    out.compare_tables[folder_of(found)] = table
    summary = summarize(table)
    out.keep("compare", found, (table, summary))
    out.skipped(found, table.skipped)
    _non_finite_cells(found, out, table)
    out.add("compare_summary", {
        "path": found.display, "rows": summary.rows, "metric_rows": summary.metric_rows,
        "analysis_type": summary.analysis_type,
        "worst_mod_name": summary.worst.mod_name if summary.worst else "",
        "worst_cosine": summary.worst.cosine if summary.worst else None,
        "degraded_rows": summary.degraded_rows,
        "decline_start": summary.decline_start.mod_name if summary.decline_start else "",
        "decline_rows": summary.decline_rows,
    }, found, key="summary")
    for step in summary.breaks:
        row, up, ranges = step.row, step.upstream, step.ranges
        out.add("compare_break", {
            "path": found.display, "row": row.index, "mod_name": row.mod_name, "op_type": row.base_op_type,
            "op_name": op_name(row.base_op_type), "fused_group": " → ".join(step.fused_group),
            "first_row": up is None, "healthy": step.healthy, "cosine_fall": step.cosine_fall,
            "cosine_nonfinite": step.cosine_nonfinite, "atol_ratio": step.atol_ratio,
            "atol_nonfinite": step.atol_nonfinite, "qscale_ratio": step.qscale_ratio,
            "qscale_nonfinite": step.qscale_nonfinite,
            "high_narrowing": ranges.high_narrowing, "low_narrowing": ranges.low_narrowing,
            "range_deviation": ranges.deviation, "high_limit_steps": ranges.high_limit_steps,
            "low_limit_steps": ranges.low_limit_steps, "has_int_limits": ranges.has_int_limits,
            "cosine": row.cosine, "atol": row.atol, "l1": row.l1, "qscale": row.qscale,
            "max_qscale_diff": row.max_qscale_diff, "dtype": row.dtype or "",
            "base_max": row.base_max, "analy_max": row.analy_max,
            "upstream": up.mod_name if up else "", "upstream_cosine": up.cosine if up else None,
            "upstream_atol": up.atol if up else None,
        }, found, line=row.line, key=f"row {row.index}")


def row_name(mod_name: str, base_op_type: str, index: int) -> str:
    """A compare row's name: its mod_name, or, for a function call at the top level of the
    model (an empty mod_name, docs/file_formats.md §0.4), its op and row number, e.g.
    `interpolate (row 12)`, so that rules and reports have a name to show."""
    return mod_name or f"{op_name(base_op_type) or 'op'} (row {index})"


def op_name(op_type: str) -> str:
    """The short name of an op-name string: `torch.nn.modules.conv.Conv2d` → Conv2d,
    `...FloatFunctional.add` → add, an HBIR suffix `[...]` dropped."""
    return str(op_type).split("[")[0].strip().rsplit(".", 1)[-1] if op_type else ""


def _non_finite_cells(found, out, table: CompareTable) -> None:
    """A nan / inf metric cell is no number a reading can use (the summary, origin and charts
    skip it): each such row is named, whether or not a fact would have carried the cell."""
    columns = []
    for field, name in _METRIC_COLUMNS:
        column = table.numbers(field)
        if column is not None:
            values, missing = column
            broken = ~missing & ~np.isfinite(values)
            if broken.any():
                columns.append((name, values, broken))
    if not columns:
        return
    rows = np.flatnonzero(np.logical_or.reduce([broken for _, _, broken in columns]))
    for i in rows[:MAX_NON_FINITE_NOTES].tolist():
        row = table.row(i)
        cells = "，".join(f"{name} 是 {float(values[i])}" for name, values, broken in columns if broken[i])
        where = f"{found.display}:{row.line}（row {row.index}，{row.mod_name}）"
        out.add("intake_note", {"key": where, "text": f"{where}：{cells}，不作为数值使用"},
                found, line=row.line, key=f"row {row.index}")
    if len(rows) > MAX_NON_FINITE_NOTES:
        out.add("intake_note", {"key": found.display,
                                "text": f"{found.display}：另有 {len(rows) - MAX_NON_FINITE_NOTES} 行的指标是 nan / inf，"
                                        "不作为数值使用"}, found, key="summary")
