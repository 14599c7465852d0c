"""compare_per_layer_out.csv / .txt (shared/formats/FORMATS.md §2, §3) → CompareTable, and
the per-layer error-origin summary of FORMATS.md §13.

Reads every known layout: vB (16 columns), the older wide23 and the v3.3 guess (`dtype`,
upper-case metric names, `advice`). Knows the format and nothing about rules. Any bad input
raises InputError naming the file, the line and what was expected.
"""

from __future__ import annotations

import csv
import io
import math
import operator
import re
from collections.abc import Callable
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

from .input_error import InputError
from .text_tables import check_table_width, decode_text, is_psql_start, read_bytes, skip_blank


class _LazyModule:
    """pandas costs ~0.25 s to import: load it (and numpy) when a compare table is read, not
    when j6doctor starts (most diagnoses read no table)."""

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attr: str):
        import importlib

        return getattr(importlib.import_module(self._name), attr)


pd = _LazyModule("pandas")
np = _LazyModule("numpy")

__all__ = [
    "metric_row_for",
    "ATOL_SURGE_FACTOR", "CLAMP_MARGIN", "COSINE_DROP", "COSINE_HEALTHY", "FUSED_GROUP_MAX",
    "PIN_TOLERANCE_STEPS", "QSCALE_DIFF_JUMP_FACTOR", "QSCALE_DIFF_SURGE",
    "CompareRow", "CompareSummary", "CompareTable", "Origin", "is_function_op", "is_healthy",
    "read_compare_per_layer", "summarize",
]

# --- thresholds (FORMATS.md §13.1-13.3) ------------------------------------------------
# A metric row is healthy when its Cosine is at least this (blank Cosine does not count
# against it) and every metric it has is finite.
COSINE_HEALTHY = 0.99
# A sudden Cosine drop: at least this much below the healthy upstream row, ending below
# COSINE_HEALTHY (the planted origin falls 0.9999 -> 0.873). Drops between rows that are
# already degraded never count: the upstream row must be healthy.
COSINE_DROP = 0.02
# An Atol surge: this many times the largest Atol of the healthy rows seen so far
# ("one or more orders of magnitude").
ATOL_SURGE_FACTOR = 10.0
# Healthy fake-quant rounding error is ~0.5-2 quantisation steps; more than this many steps
# means clipping or propagated error. A row above it is not healthy.
QSCALE_DIFF_SURGE = 10.0
# ...and to count as a sudden jump it must also exceed this many times the largest healthy
# max_qscale_diff so far, so that a slowly creeping value is not mistaken for a step.
QSCALE_DIFF_JUMP_FACTOR = 4.0
# Clamp reading: the analysis range is narrower than the baseline's by more than this
# fraction of the baseline span on the max or min side...
CLAMP_MARGIN = 0.10
# ...and the narrowed bound sits within this many quantisation steps of the integer limit.
PIN_TOLERANCE_STEPS = 1.5
# A fused group has at most 4 ops (e.g. conv-bn-add-relu), so at most 3 cleared prefix rows.
FUSED_GROUP_MAX = 4

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
# Real tables have a row per layer output (tens of thousands at most, a few MB); 64 MiB
# keeps the parsed rows of the largest accepted file under about 700 MB.
MAX_TEXT_BYTES = 64 * 1024 * 1024
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
    # hbir runs only (FORMATS.md §2 columns 17-18); None elsewhere
    same_in_qatbc_qdiff: float | None = None
    same_in_intbc_qdiff: float | None = None

    @property
    def has_metrics(self) -> bool:
        return self.cosine is not None or self.atol is not None


_ROW_FIELDS = tuple(f for f in CompareRow.__dataclass_fields__ if f not in ("index", "line"))


@dataclass
class CompareTable:
    display: str
    layout: str                # "vB" | "wide23" | "v3.3"
    columns: list[str]         # header names as in the file (no blank index column)
    rows: list[CompareRow]
    ragged_rows: int           # csv rows whose field count differs from the header


@dataclass(frozen=True)
class Origin:
    row: CompareRow
    upstream: CompareRow | None
    fused_group: tuple[str, ...]
    trigger: str               # "cosine_drop" | "atol_surge" | "qscale_diff"
    reading: str               # "clamp" | "rounding" | "unknown"


@dataclass
class CompareSummary:
    rows: int
    metric_rows: int
    analysis_type: str         # "fake_quant" | "hbir" | "unknown"
    origin: Origin | None
    pattern: str               # "single_drop" | "gradual" | "healthy" | "no_metrics"
    gradual_start: CompareRow | None
    worst: CompareRow | None
    first_cosine_below: CompareRow | None
    function_call_rows: list[str]


# --- reading ---------------------------------------------------------------------------

def read_compare_per_layer(path: Path, display: str | None = None) -> CompareTable:
    """Read compare_per_layer_out.csv (by suffix) or the psql .txt (anything else)."""
    path = Path(path)
    display = display or path.name
    text = _read_text(path, display)
    if path.suffix.lower() == ".csv":
        return _read_csv(text, display)
    return _read_psql(text, display)


def _read_text(path: Path, display: str) -> str:
    text = decode_text(read_bytes(path, display, _WHAT, MAX_TEXT_BYTES), display, _WHAT)
    # Unlike text_tables.split_lines, a lone '\r' ends a line too (old Mac line ends),
    # as this reader has always accepted.
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _split_lines(text: str) -> list[str]:
    """Lines without the trailing blank ones (files may or may not end with a newline)."""
    lines = text.split("\n")
    while lines and not lines[-1].strip():
        lines.pop()
    return lines


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


# --- csv -------------------------------------------------------------------------------

def _read_csv(text: str, display: str) -> CompareTable:
    lines = _split_lines(text)
    if not lines:
        # The writer creates an empty file when no rows matched (FORMATS.md §3).
        return CompareTable(display, "vB", [], [], 0)
    check_table_width(lines[0].count(",") + 1, display, 1, "the header")
    columns = [c.strip() for c in lines[0].split(",")]
    positions = _field_positions(columns, display, line=1)
    width = len(columns)
    allowed = _allowed_field_counts(columns)
    counts = [ln.count(",") + 1 for ln in lines[1:]]
    for i, count in enumerate(counts):
        if count not in allowed:
            raise InputError(display, _field_count_message(columns, allowed, count, lines[i + 1]),
                             line=i + 2)
    if width + 2 in allowed:
        positions = _with_trailing_same_in(positions, width)
    cells = _csv_cells(lines[1:], max(allowed), display)
    line_numbers = list(range(2, len(lines) + 1))
    rows = _build_rows(cells, positions, columns, line_numbers, display, csv_shapes=True)
    ragged = sum(1 for c in counts if c != width)
    return CompareTable(display, _layout(columns), columns, rows, ragged)


def _allowed_field_counts(columns: list[str]) -> set[int]:
    """Header width, plus/minus the two same_in_* fields that only some hbir rows carry
    (the header holds the first row's keys only, FORMATS.md §3)."""
    width = len(columns)
    lower = [c.lower() for c in columns]
    allowed = {width}
    if not set(_SAME_IN) & set(lower):
        allowed.add(width + 2)
    elif tuple(lower[-2:]) == _SAME_IN:
        allowed.add(width - 2)
    return allowed


def _field_count_message(columns: list[str], allowed: set[int], count: int, line: str) -> str:
    width = len(columns)
    expected = f"{width} comma-separated fields as in the header"
    extra = sorted(c for c in allowed if c != width)
    if extra:
        expected += f" (or {extra[0]} with/without the trailing {', '.join(_SAME_IN)})"
    what = "blank line" if not line.strip() else f"{count} fields"
    return f"expected {expected}, got {what} (truncated or ragged row)"


def _with_trailing_same_in(positions: dict[str, int], width: int) -> dict[str, int]:
    # Extra trailing fields of an hbir row belong to the two same_in_* keys.
    return {**positions, _SAME_IN[0]: width, _SAME_IN[1]: width + 1}


def _csv_cells(body: list[str], width: int, display: str) -> pd.DataFrame:
    if not body:
        return pd.DataFrame({i: pd.Series([], dtype=object) for i in range(width)})
    try:
        frame = pd.read_csv(
            io.StringIO("\n".join(body)), header=None, names=list(range(width)), dtype=str,
            na_filter=False, keep_default_na=False, skipinitialspace=True,
            quoting=csv.QUOTE_NONE, skip_blank_lines=False, engine="c", low_memory=False)
    except (ValueError, pd.errors.ParserError) as exc:
        raise InputError(display, f"expected comma-separated rows ({exc})") from None
    if len(frame) != len(body):
        raise InputError(display, f"expected {len(body)} data rows, the csv parser found "
                                  f"{len(frame)}")
    return frame


# --- psql txt ----------------------------------------------------------------------------

def _read_psql(text: str, display: str) -> CompareTable:
    lines = _split_lines(text)
    first = skip_blank(lines, 0)
    if first == len(lines):
        raise InputError(display, "empty file; expected a psql table (compare_per_layer_out.txt)"
                                  " starting with a '+----+----+' border")
    if not is_psql_start(lines, first):
        raise InputError(display, "expected a psql table border like '+----+----+' "
                                  "(compare_per_layer_out.txt)", line=first + 1)
    border = lines[first].rstrip()
    check_table_width(border.count("+") - 1, display, first + 1)
    bounds = [i for i, ch in enumerate(border) if ch == "+"]
    header = _psql_header(lines, first + 1, bounds, display)
    has_index = header[0] == ""
    columns = header[1:] if has_index else header
    positions = _field_positions(columns, display, line=first + 2)
    _expect_header_rule(lines, first + 2, border, display)
    data, line_numbers = _psql_rows(lines, first + 3, border, bounds, has_index, display)
    start = 1 if has_index else 0
    frame = pd.DataFrame({i: pd.Series([r[start + i] for r in data], dtype=object)
                          for i in range(len(columns))})
    rows = _build_rows(frame, positions, columns, line_numbers, display, csv_shapes=False)
    return CompareTable(display, _layout(columns), columns, rows, 0)


def _cell_splitter(bounds: list[int]) -> Callable[[str], list[str] | None]:
    """Returns a function giving the cells of one psql line, or None if it does not fit."""
    width = bounds[-1] + 1
    separators = operator.itemgetter(*bounds)
    bars = ("|",) * len(bounds)
    spans = [slice(a + 1, b) for a, b in pairwise(bounds)]

    def split(line: str) -> list[str] | None:
        line = line.rstrip()
        if len(line) == width and separators(line) == bars:
            return [line[span].strip() for span in spans]
        # Wide (e.g. CJK) characters are padded by display width, so the spans shift; the
        # separators still count right unless a cell itself holds a '|'.
        parts = line.split("|")
        if line.startswith("|") and line.endswith("|") and len(parts) == len(bounds) + 1:
            return [p.strip() for p in parts[1:-1]]
        return None

    return split


def _psql_header(lines: list[str], at: int, bounds: list[int], display: str) -> list[str]:
    cells = _cell_splitter(bounds)(lines[at]) if at < len(lines) else None
    if cells is None:
        raise InputError(display, f"expected the header row '| mod_name | ... |' with "
                                  f"{len(bounds) - 1} cells aligned with the border",
                         line=min(at, len(lines)) + 1)
    return cells


def _expect_header_rule(lines: list[str], at: int, border: str, display: str) -> None:
    rule = "|" + border[1:-1] + "|"
    if at >= len(lines) or lines[at].rstrip() != rule:
        raise InputError(display, "expected the header rule '|----+----|' under the header",
                         line=min(at, len(lines)) + 1)


def _psql_rows(lines: list[str], at: int, border: str, bounds: list[int], has_index: bool,
               display: str) -> tuple[list[list[str]], list[int]]:
    data: list[list[str]] = []
    line_numbers: list[int] = []
    split = _cell_splitter(bounds)
    for i in range(at, len(lines)):
        if lines[i].rstrip() == border:
            _expect_nothing_after(lines, i + 1, display)
            return data, line_numbers
        cells = split(lines[i])
        if cells is None:
            raise InputError(display, f"expected a table row '| ... |' with {len(bounds) - 1} "
                                      "cells aligned with the border (truncated or ragged row)",
                             line=i + 1)
        if has_index and cells[0] == "" and data:
            _merge_continuation(data[-1], cells)     # multi-line cell (FORMATS.md §0.3 rule 6)
            continue
        if has_index and not cells[0].isdigit():
            raise InputError(display, f"expected the row number in the first column, got "
                                      f"{cells[0]!r}", line=i + 1)
        data.append(cells)
        line_numbers.append(i + 1)
    raise InputError(display, "truncated: expected the closing border '+----+' after the last "
                              "row", line=len(lines))


def _merge_continuation(previous: list[str], cells: list[str]) -> None:
    for k, cell in enumerate(cells):
        if cell:
            previous[k] = f"{previous[k]}\n{cell}" if previous[k] else cell


def _expect_nothing_after(lines: list[str], at: int, display: str) -> None:
    for i in range(at, len(lines)):
        if lines[i].strip():
            raise InputError(display, "expected the end of the file after the closing border",
                             line=i + 1)


# --- cells -> rows ---------------------------------------------------------------------

def _build_rows(frame: pd.DataFrame, positions: dict[str, int], columns: list[str],
                line_numbers: list[int], display: str, csv_shapes: bool) -> list[CompareRow]:
    n = len(line_numbers)
    values: dict[str, list] = {}
    for field in _TEXT_FIELDS:
        values[field] = _text_column(frame[positions[field]])
    for field in _OPTIONAL_TEXT_FIELDS:
        values[field] = _optional_text_column(frame[positions[field]]) if field in positions \
            else [None] * n
    if csv_shapes:
        # The csv writer escapes the shape's commas as '*' (FORMATS.md §3).
        values["shape"] = [s.replace("*", ",") if s else s for s in values["shape"]]
    for field in _NUMBER_FIELDS:
        if field not in positions:
            values[field] = [None] * n
            continue
        pos = positions[field]
        name = columns[pos] if pos < len(columns) else field
        values[field] = _number_column(frame[pos], name, line_numbers, display)
    # Positional construction in declaration order: much faster than keywords for 20k rows.
    ordered = [values[f] for f in _ROW_FIELDS]
    return [CompareRow(*cells) for cells in zip(range(n), line_numbers, *ordered)]


def _text_column(series: pd.Series) -> list[str]:
    return [str(v).strip() for v in series.tolist()]


def _optional_text_column(series: pd.Series) -> list[str | None]:
    out: list[str | None] = []
    for value in series.tolist():
        text = str(value).strip()
        out.append(None if text in _MISSING else text)
    return out


def _number_column(series: pd.Series, name: str, line_numbers: list[int],
                   display: str) -> list[float | None]:
    missing = series.isin(_MISSING).to_numpy()
    numbers = _exact_floats(series.where(~missing, "nan").to_numpy(dtype=object))
    out: list[float | None] = numbers.tolist()
    # Only the cells the vectorised parse could not read are looked at one by one.
    for i in (np.isnan(numbers) & ~missing).nonzero()[0].tolist():
        out[i] = _number_cell(str(series.iat[i]), name, line_numbers[i], display)
    for i in missing.nonzero()[0].tolist():
        out[i] = None
    return out


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


def _number_cell(text: str, name: str, line: int, display: str) -> float | None:
    text = text.strip()
    if text in _MISSING:
        return None
    try:
        return float(text)
    except ValueError:
        raise InputError(display, f"column {name!r}: expected a number (or nan/inf, or a blank/"
                                  f"None cell), got {text!r}", line=line) from None


# --- summary ---------------------------------------------------------------------------

def summarize(table: CompareTable) -> CompareSummary:
    metric = [r for r in table.rows if r.has_metrics]
    origin = _find_origin(table.rows, metric)
    pattern, gradual_start = _pattern(metric, origin)
    return CompareSummary(
        rows=len(table.rows),
        metric_rows=len(metric),
        analysis_type=_analysis_type(table),
        origin=origin,
        pattern=pattern,
        gradual_start=gradual_start,
        worst=_worst(metric),
        first_cosine_below=next((r for r in metric if _cosine_below(r.cosine)), None),
        function_call_rows=[r.mod_name for r in table.rows if is_function_op(r.base_op_type)],
    )


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


def _find_origin(rows: list[CompareRow], metric: list[CompareRow]) -> Origin | None:
    """First metric row that breaks suddenly while the metric row before it is healthy.

    Only the previous metric row has to be healthy (not every earlier one), so a real break
    after a mildly degraded side branch that recovered is still found; rows that merely stay
    degraded after a break never qualify because their upstream is not healthy."""
    upstream: CompareRow | None = None
    max_atol = 0.0
    max_mqd = 0.0
    for row in metric:
        if upstream is None or is_healthy(upstream):
            trigger = _trigger(row, upstream, max_atol, max_mqd)
            if trigger:
                return Origin(row, upstream, _fused_group(rows, row), trigger, _reading(row))
        if is_healthy(row):
            max_atol = max(max_atol, row.atol or 0.0)
            max_mqd = max(max_mqd, row.max_qscale_diff or 0.0)
        upstream = row
    return None


def _trigger(row: CompareRow, upstream: CompareRow | None, max_atol: float,
             max_mqd: float) -> str | None:
    if upstream is None:
        # Nothing upstream but the (identical) model input: any break here is the origin.
        if _cosine_below(row.cosine):
            return "cosine_drop"
        if row.atol is not None and not math.isfinite(row.atol):
            return "atol_surge"
        return None if is_healthy(row) else "qscale_diff"
    if _cosine_dropped(row.cosine, upstream.cosine):
        return "cosine_drop"
    if _atol_surged(row, max_atol):
        return "atol_surge"
    mqd = row.max_qscale_diff
    if mqd is not None and (not math.isfinite(mqd)
                            or mqd > max(QSCALE_DIFF_SURGE, QSCALE_DIFF_JUMP_FACTOR * max_mqd)):
        return "qscale_diff"
    return None


def _cosine_dropped(cosine: float | None, upstream_cosine: float | None) -> bool:
    if cosine is None:
        return False
    if not math.isfinite(cosine):
        return True
    reference = upstream_cosine if _finite(upstream_cosine) else 1.0
    return cosine < COSINE_HEALTHY and reference - cosine >= COSINE_DROP


def _atol_surged(row: CompareRow, max_atol: float) -> bool:
    if row.atol is None:
        return False
    if not math.isfinite(row.atol):
        return True
    # A healthy step error says the larger Atol only reflects a wider value range.
    mqd = row.max_qscale_diff
    if _finite(mqd) and mqd <= QSCALE_DIFF_SURGE:
        return False
    return max_atol > 0 and row.atol >= ATOL_SURGE_FACTOR * max_atol


def _fused_group(rows: list[CompareRow], row: CompareRow) -> tuple[str, ...]:
    """The cleared-metric rows directly before `row` (its fused prefix), plus `row`."""
    names = [row.mod_name]
    k = row.index - 1
    while k >= 0 and len(names) < FUSED_GROUP_MAX and not rows[k].has_metrics:
        names.insert(0, rows[k].mod_name)
        k -= 1
    return tuple(names)


def _reading(row: CompareRow) -> str:
    """clamp: analysis range visibly narrower than the baseline's and, for a per-tensor
    quantized output, pinned at the integer limit; rounding: ranges agree (§13.3)."""
    stats = (row.base_min, row.analy_min, row.base_max, row.analy_max)
    if not all(_finite(v) for v in stats):
        return "unknown"
    bmin, amin, bmax, amax = stats
    span = bmax - bmin
    if span <= 0:
        return "unknown"
    margin = CLAMP_MARGIN * span
    narrow_max = bmax - amax > margin
    narrow_min = amin - bmin > margin
    if narrow_max or narrow_min:
        limits = _QUANT_LIMITS.get(row.dtype or "")
        if limits is None or not _finite(row.qscale) or row.qscale <= 0:
            return "clamp"          # nothing to pin against (float output, per-channel)
        tolerance = PIN_TOLERANCE_STEPS * row.qscale
        pinned = ((narrow_max and abs(amax - limits[1] * row.qscale) <= tolerance)
                  or (narrow_min and abs(amin - limits[0] * row.qscale) <= tolerance))
        return "clamp" if pinned else "unknown"
    if abs(bmax - amax) <= margin and abs(bmin - amin) <= margin:
        return "rounding"
    return "unknown"


def _pattern(metric: list[CompareRow], origin: Origin | None) -> tuple[str, CompareRow | None]:
    if not metric:
        return "no_metrics", None
    if origin is not None:
        return "single_drop", None
    first_bad = next((k for k, r in enumerate(metric) if not is_healthy(r)), None)
    if first_bad is None:
        return "healthy", None
    # Degraded without a sudden step: walk back over the run of falling Cosine.
    k = first_bad
    while k > 0 and _falls(metric[k - 1].cosine, metric[k].cosine):
        k -= 1
    return "gradual", metric[k]


def _falls(earlier: float | None, later: float | None) -> bool:
    if not _finite(earlier) or later is None:
        return False
    return not math.isfinite(later) or earlier > later


def _worst(metric: list[CompareRow]) -> CompareRow | None:
    scored = [r for r in metric if r.cosine is not None]
    if not scored:
        return None
    # nan Cosine ranks as the worst (min() keeps the first of equal keys).
    return min(scored, key=lambda r: r.cosine if not math.isnan(r.cosine) else -math.inf)


def _analysis_type(table: CompareTable) -> str:
    lower = {c.lower() for c in table.columns}
    rows = table.rows
    if (lower & set(_SAME_IN) or table.ragged_rows
            or any(_HBIR_SUFFIX.search(r.analy_op_type) for r in rows)
            or any(r.same_in_qatbc_qdiff is not None or r.same_in_intbc_qdiff is not None
                   for r in rows)):
        return "hbir"
    if (any(".nn.qat." in r.analy_op_type for r in rows)
            and not any(".nn.qat." in r.base_op_type for r in rows)):
        return "fake_quant"
    return "unknown"


def is_function_op(op_name: str) -> bool:
    """Op-name strings of function calls (FORMATS.md §0.4): `torch.Tensor.<f>`, `torch.<f>`,
    `<module>.<f>` or a `str(op)` fallback; modules end in a class name (`...Conv2d`) or a
    class name plus method (`...FloatFunctional.add`)."""
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
    """The metric-bearing compare row of a sensitivity op (FORMATS.md §13.5): sensitivity names
    the QAT leaf (e.g. the conv of a fused conv-bn-relu); its metrics live on the last row of
    the fused group, reached by walking forward over the cleared-metric rows."""
    rows = table.rows
    for k, row in enumerate(rows):
        if row.mod_name != op_name:
            continue
        j = k
        while not rows[j].has_metrics and j + 1 < len(rows) and j - k < FUSED_GROUP_MAX - 1:
            nxt = rows[j + 1]
            if nxt.analy_op_type.split("[")[0].strip() != _IDENTITY:
                break
            j += 1
        return rows[j] if rows[j].has_metrics else None
    return None
