"""Sensitivity tables of QuantAnalysis.sensitivity() (FORMATS.md §6, §13.4).

`output_<name>_<metric>_sensitive_ops.txt` lists, per quantizer, the model-output error
when only that quantizer is enabled. This module parses the file name and the table and
summarises its shape (one dominant op, accumulation over several ops, or flat).

The generic reading helpers (`read_text_lines`, `parse_simple_table`, `parse_psql_table`)
are public because badcase.txt uses the same tabulate layout.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .input_error import InputError

MAX_TEXT_BYTES = 64 * 1024 * 1024

# --- metric direction rules -------------------------------------------------------------
# Error metrics: ideal value 0, larger is worse; distance from ideal = the value itself.
ERROR_METRICS = frozenset({"l1", "mse", "kl", "atol", "rtol", "l2", "mae"})
# Cosine similarity: ideal 1, smaller is worse; distance from ideal = 1 - value.
COSINE_METRICS = frozenset({"cosine"})
# SQNR in dB: ideal +inf, smaller is worse; distance = 10 ** (-SQNR / 20), the relative
# noise amplitude |x - y| / |x|, so it can be compared like an error metric.
SQNR_METRICS = frozenset({"sqnr"})
KNOWN_METRICS = ERROR_METRICS | COSINE_METRICS | SQNR_METRICS

# --- summary thresholds --------------------------------------------------------------------
# "dominant": the worst op's distance is at least this many times the runner-up's.
DOMINANT_RATIO = 3.0
# "accumulation": at least this many distinct ops (top included) whose distance is at
# least ACCUMULATION_SHARE of the top distance.
ACCUMULATION_MIN_OPS = 3
ACCUMULATION_SHARE = 0.5
# The tail is the better half of the rows (in worst-first order).
TAIL_FRACTION = 0.5
# Error metrics have no absolute scale (it depends on the output's magnitude), so the tail
# is "near 0" when its worst value is at most this share of the top value.
ERROR_TAIL_SHARE = 0.1
# Cosine tail "near 1": cosine >= 0.999.
COSINE_TAIL_MAX_DISTANCE = 1e-3
# SQNR tail healthy at >= 30 dB (noise amplitude <= ~3 % of the signal).
SQNR_TAIL_MIN_DB = 30.0

SUFFIXES = ("_sensitive_ops.txt", "_sensitive_ops.pt")
BARE_NAMES = ("sensitive_ops.txt", "sensitive_ops.pt")
KNOWN_COLUMNS = ("op_name", "sensitive_type", "op_type", "quant_dtype", "flops")
EXPECTED_HEADER = "op_name  sensitive_type  op_type  <metric>  quant_dtype  flops"

_SIMPLE_RULE = re.compile(r"^-+(?: +-+)*$")
_PSQL_BORDER = re.compile(r"^\+(?:-+\+)+$")
_PSQL_RULE = re.compile(r"^\|(?:-+[+|])+$")
_CASE_SUFFIX = re.compile(r"^(.*)_case_(\d+)$")
_DATAINDEX_SUFFIX = re.compile(r"^(.*)_dataindex_(\d+)$")


# =========================================================================================
# Text and tabulate tables (shared with badcase.py)
# =========================================================================================

@dataclass
class TextTable:
    headers: list[str]
    rows: list[tuple[int, list[str]]]  # (1-based line, cells)
    header_line: int                   # 1-based
    next_index: int                    # 0-based index of the first line after the table


def read_text_lines(path: Path, display: str, expected: str) -> list[str]:
    """The file's lines (no line ends), or InputError for empty/binary/non-UTF-8 input."""
    try:
        size = path.stat().st_size
        if size > MAX_TEXT_BYTES:
            raise InputError(display, f"too large ({size} bytes); expected {expected}")
        raw = path.read_bytes()
    except FileNotFoundError:
        raise InputError(str(path), "no such file") from None
    except IsADirectoryError:
        raise InputError(str(path), f"is a folder; expected {expected}") from None
    except OSError as exc:
        raise InputError(str(path), f"cannot read: {exc.strerror}") from None
    if not raw.strip():
        raise InputError(display, f"empty file; expected {expected}")
    if b"\x00" in raw:
        raise InputError(display, f"binary data (NUL bytes), not a text table; expected {expected}")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        raise InputError(display, f"not UTF-8 text (invalid byte at offset {exc.start}); "
                                  f"expected {expected}", line) from None
    # split("\n") rather than splitlines(): only real line ends separate rows.
    return [line.rstrip("\r") for line in text.split("\n")]


def is_simple_rule(line: str) -> bool:
    return bool(_SIMPLE_RULE.match(line))


def is_psql_border(line: str) -> bool:
    return bool(_PSQL_BORDER.match(line))


def _cut(line: str, starts: list[int]) -> list[str]:
    """Cells by column start positions; the last column runs to end of line."""
    stops = starts[1:] + [len(line)]
    return [line[a:b].strip() for a, b in zip(starts, stops)]


def _cut_boxed(line: str, bars: list[int]) -> list[str]:
    """Cells between the '|' positions of a psql row."""
    return [line[a + 1:b].strip() for a, b in zip(bars, bars[1:])]


def parse_simple_table(lines: list[str], header_index: int, display: str,
                       expected: str) -> TextTable:
    """A tabulate "simple" table whose header is lines[header_index]; ends at a blank line."""
    rule_index = header_index + 1
    if rule_index >= len(lines) or not is_simple_rule(lines[rule_index]):
        line = rule_index + 1 if rule_index < len(lines) else None
        raise InputError(display, f"expected a dash rule line under the header of {expected} "
                                  "(file truncated or not a tabulate table?)", line)
    starts = [m.start() for m in re.finditer(r"-+", lines[rule_index])]
    headers = _cut(lines[header_index], starts)
    rows: list[tuple[int, list[str]]] = []
    index = rule_index + 1
    while index < len(lines) and lines[index].strip():
        rows.append((index + 1, _cut(lines[index], starts)))
        index += 1
    return TextTable(headers, rows, header_index + 1, index)


def parse_psql_table(lines: list[str], border_index: int, display: str,
                     expected: str) -> TextTable:
    """A tabulate "psql" table whose top border is lines[border_index]."""
    border = lines[border_index]
    bars = [i for i, ch in enumerate(border) if ch == "+"]
    header_index, rule_index = border_index + 1, border_index + 2
    if rule_index >= len(lines) or not lines[header_index].startswith("|") \
            or not _PSQL_RULE.match(lines[rule_index]):
        raise InputError(display, f"expected a header row and a |---+---| rule under the top "
                                  f"border of {expected} (file truncated?)", border_index + 1)
    headers = _cut_boxed(lines[header_index], bars)
    rows: list[tuple[int, list[str]]] = []
    index = rule_index + 1
    while index < len(lines) and not is_psql_border(lines[index]):
        if not lines[index].startswith("|"):
            raise InputError(display, f"expected a table row starting with '|' in {expected}",
                             index + 1)
        rows.append((index + 1, _cut_boxed(lines[index], bars)))
        index += 1
    if index >= len(lines):
        raise InputError(display, f"{expected} has no closing +---+ border (file truncated?)",
                         len(lines))
    return TextTable(headers, rows, header_index + 1, index + 1)


def parse_number(text: str) -> float | None:
    """A tabulate `g`-formatted number (`5.021e-05`, `0`, `1`, `inf`, `nan`), else None."""
    try:
        return float(text)
    except ValueError:
        return None


# =========================================================================================
# File names
# =========================================================================================

@dataclass(frozen=True)
class SensitivityName:
    output: str              # "" for a single-tensor output
    metric: str | None       # as written in the file name, None if absent
    case: int | None         # v3.3 _case_<n>_
    data_index: int | None   # _dataindex_<n>_ form


def parse_sensitivity_name(filename: str) -> SensitivityName | None:
    """Parse from the right (FORMATS.md §6); None if not a sensitivity file name."""
    base = Path(filename).name
    if base in BARE_NAMES:
        return SensitivityName("", None, None, None)
    suffix = next((s for s in SUFFIXES if base.endswith(s)), None)
    if suffix is None or not base.startswith("output_"):
        return None
    rest = base[len("output_"):-len(suffix)]
    metric: str | None = None
    head, sep, last = rest.rpartition("_")
    if sep and last.lower() in KNOWN_METRICS:
        metric, rest = last, head
    case, rest = _split_number_suffix(_CASE_SUFFIX, rest)
    data_index, rest = _split_number_suffix(_DATAINDEX_SUFFIX, rest)
    return SensitivityName(rest, metric, case, data_index)


def _split_number_suffix(pattern: re.Pattern[str], text: str) -> tuple[int | None, str]:
    match = pattern.match(text)
    return (int(match.group(2)), match.group(1)) if match else (None, text)


# =========================================================================================
# Table
# =========================================================================================

@dataclass(frozen=True)
class SensitivityRow:
    rank: int                # 0-based position in the file
    line: int                # 1-based line
    op_name: str
    sensitive_type: str      # activation | weight | ...
    op_type: str
    value: float
    quant_dtype: str | None
    flops: str | None


@dataclass
class SensitivityTable:
    display: str
    name: SensitivityName
    metric: str              # metric column header
    order: str               # "descending" | "ascending" | "unsorted"
    rows: list[SensitivityRow]


def read_sensitivity_txt(path: Path, display: str | None = None) -> SensitivityTable:
    """Read one sensitivity table (tabulate simple, or psql for v3.3)."""
    display = display or path.name
    expected = f"a sensitivity table ({EXPECTED_HEADER})"
    lines = read_text_lines(path, display, expected)
    # A renamed file still parses; its output name is then unknown (reported as "").
    name = parse_sensitivity_name(path.name) or SensitivityName("", None, None, None)
    table = _locate_table(lines, display, expected)
    metric_col = _metric_column(table.headers, name, display, table.header_line)
    rows = [_row(rank, line, cells, table.headers, metric_col, display)
            for rank, (line, cells) in enumerate(table.rows)]
    if not rows:
        raise InputError(display, f"the table has no data rows (file truncated?); expected {expected}",
                         table.header_line)
    metric = table.headers[metric_col]
    return SensitivityTable(display, name, metric, _detect_order(rows, metric), rows)


def _locate_table(lines: list[str], display: str, expected: str) -> TextTable:
    first = next(i for i, line in enumerate(lines) if line.strip())
    if "op_name" not in lines[first] and not is_psql_border(lines[first]):
        raise InputError(display, f"expected the header line of {expected}, "
                                  f"found {lines[first].strip()[:60]!r}", first + 1)
    if is_psql_border(lines[first]):
        table = parse_psql_table(lines, first, display, expected)
    else:
        table = parse_simple_table(lines, first, display, expected)
    if any(line.strip() for line in lines[table.next_index:]):
        extra = next(i for i in range(table.next_index, len(lines)) if lines[i].strip())
        raise InputError(display, f"unexpected text after the table; expected only {expected}", extra + 1)
    return table


def _metric_column(headers: list[str], name: SensitivityName, display: str, line: int) -> int:
    lowered = [h.lower() for h in headers]
    missing = [c for c in KNOWN_COLUMNS[:3] if c not in lowered]
    if missing:
        raise InputError(display, f"header lacks {', '.join(missing)}; expected {EXPECTED_HEADER}", line)
    if name.metric and name.metric.lower() in lowered:
        return lowered.index(name.metric.lower())
    for i, header in enumerate(lowered):
        if header in KNOWN_METRICS:
            return i
    after_type = lowered.index("op_type") + 1
    if after_type < len(headers) and lowered[after_type] not in KNOWN_COLUMNS:
        return after_type  # an unfamiliar metric name sits where the metric belongs
    raise InputError(display, f"no metric column in the header; expected {EXPECTED_HEADER}", line)


def _row(rank: int, line: int, cells: list[str], headers: list[str], metric_col: int,
         display: str) -> SensitivityRow:
    by_name = {h.lower(): c for h, c in zip(headers, cells)}
    value = parse_number(cells[metric_col])
    if value is None:
        found = repr(cells[metric_col]) if cells[metric_col] else "nothing"
        raise InputError(display, f"expected a number in column {headers[metric_col]!r}, "
                                  f"found {found} (file truncated?)", line)
    if not by_name["op_name"]:
        raise InputError(display, "row without op_name", line)
    if "flops" in by_name and not by_name["flops"]:
        # The writer prints 0(0%) for ops without flops, so a blank cell means a cut row.
        raise InputError(display, "row ends before the flops column (file truncated?)", line)
    return SensitivityRow(rank, line, by_name["op_name"], by_name["sensitive_type"],
                          by_name["op_type"], value, by_name.get("quant_dtype") or None,
                          by_name.get("flops") or None)


def _detect_order(rows: list[SensitivityRow], metric: str) -> str:
    values = [r.value for r in rows if not math.isnan(r.value)]
    pairs = list(zip(values, values[1:]))
    descending = all(a >= b for a, b in pairs)
    ascending = all(a <= b for a, b in pairs)
    if descending and ascending:  # all equal: report the order the metric is written in
        return "ascending" if _lower_is_worse(metric) else "descending"
    if descending:
        return "descending"
    return "ascending" if ascending else "unsorted"


def _lower_is_worse(metric: str) -> bool:
    return metric.lower() in COSINE_METRICS | SQNR_METRICS


# =========================================================================================
# Summary
# =========================================================================================

@dataclass
class SensitivitySummary:
    top: SensitivityRow                 # most sensitive (worst) row
    runner_up: SensitivityRow | None    # next row with a different op_name
    pattern: str                        # "dominant" | "accumulation" | "flat"
    tail_ok: bool                       # tail near the ideal value (FORMATS.md §13.4)
    top_ops: list[SensitivityRow]       # first 5 distinct op_names


def distance_function(table: SensitivityTable) -> Callable[[float], float]:
    """value -> distance from the ideal value (0 = ideal, larger = worse; NaN = worst)."""
    key = table.metric.lower()
    if key in COSINE_METRICS:
        base = lambda v: 1.0 - v  # noqa: E731
    elif key in SQNR_METRICS:
        base = lambda v: 10.0 ** min(-v / 20.0, 300.0)  # noqa: E731  (capped: no overflow)
    elif key in ERROR_METRICS or table.order != "ascending":
        base = lambda v: v  # noqa: E731
    else:
        # Unknown metric sorted ascending: read it as a similarity whose best value is the
        # best one in the table.
        best = max((r.value for r in table.rows if not math.isnan(r.value)), default=0.0)
        base = lambda v: best - v  # noqa: E731
    return lambda v: math.inf if math.isnan(v) else max(base(v), 0.0)


def summarize_sensitivity(table: SensitivityTable) -> SensitivitySummary:
    if not table.rows:
        raise ValueError(f"{table.display}: empty sensitivity table")
    distance = distance_function(table)
    ranked = sorted(table.rows, key=lambda r: -distance(r.value))  # stable: file order on ties
    distinct = _first_per_op(ranked)
    top = ranked[0]
    runner_up = distinct[1] if len(distinct) > 1 else None
    return SensitivitySummary(top, runner_up, _pattern(table, distinct, distance),
                              _tail_ok(table, ranked, distance), distinct[:5])


def _first_per_op(ranked: list[SensitivityRow]) -> list[SensitivityRow]:
    seen: set[str] = set()
    result = []
    for row in ranked:
        if row.op_name not in seen:
            seen.add(row.op_name)
            result.append(row)
    return result


def _pattern(table: SensitivityTable, distinct: list[SensitivityRow],
             distance: Callable[[float], float]) -> str:
    top = distance(distinct[0].value)
    if top == 0.0 or _healthy_absolute(table.metric, top):
        return "flat"  # no quantizer moves the output noticeably
    second = distance(distinct[1].value) if len(distinct) > 1 else 0.0
    if top >= DOMINANT_RATIO * second:
        return "dominant"
    close = [r for r in distinct if distance(r.value) >= ACCUMULATION_SHARE * top]
    return "accumulation" if len(close) >= ACCUMULATION_MIN_OPS else "flat"


def _healthy_absolute(metric: str, dist: float) -> bool:
    """Absolute health check for bounded metrics; error metrics have no absolute scale."""
    key = metric.lower()
    if key in COSINE_METRICS:
        return dist <= COSINE_TAIL_MAX_DISTANCE
    if key in SQNR_METRICS:
        return dist <= 10.0 ** (-SQNR_TAIL_MIN_DB / 20.0)
    return False


def _tail_ok(table: SensitivityTable, ranked: list[SensitivityRow],
             distance: Callable[[float], float]) -> bool:
    start = min(len(ranked) - 1, int(len(ranked) * (1.0 - TAIL_FRACTION)))
    tail_worst = distance(ranked[start].value)
    key = table.metric.lower()
    if key in COSINE_METRICS or key in SQNR_METRICS:
        return _healthy_absolute(table.metric, tail_worst)
    top = distance(ranked[0].value)
    return tail_worst <= ERROR_TAIL_SHARE * top if top > 0 else True
