"""Sensitivity tables of QuantAnalysis.sensitivity() (FORMATS.md §6, §13.4).

`output_<name>_<metric>_sensitive_ops.txt` lists, per quantizer, the model-output error
when only that quantizer is enabled. This module parses the file name and the table and
summarises its shape (one dominant op, accumulation over several ops, or flat).

File reading and the tabulate table layouts come from text_tables, shared with the
other text probes.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .input_error import InputError
from .text_tables import (Row, Table, is_psql_start, load_text, parse_number, parse_psql,
                          parse_simple, skip_blank, split_lines)

# Sensitivity tables list one row per quantizer: a few MB even for large models (parsed rows
# cost about 20 times the file size).
MAX_TEXT_BYTES = 16 * 1024 * 1024

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

_CASE_SUFFIX = re.compile(r"^(.*)_case_(\d+)$")
_DATAINDEX_SUFFIX = re.compile(r"^(.*)_dataindex_(\d+)$")


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
    lines = split_lines(load_text(path, display, expected, MAX_TEXT_BYTES))
    # A renamed file still parses; its output name is then unknown (reported as "").
    name = parse_sensitivity_name(path.name) or SensitivityName("", None, None, None)
    table = _locate_table(lines, display, expected)
    metric_col = _metric_column(table.headers, name, display, table.header_line)
    rows = [_row(rank, row, table.headers, metric_col, display)
            for rank, row in enumerate(table.rows)]
    if not rows:
        raise InputError(display, f"the table has no data rows (file truncated?); expected {expected}",
                         table.header_line)
    metric = table.headers[metric_col]
    return SensitivityTable(display, name, metric, _detect_order(rows, metric), rows)


def _locate_table(lines: list[str], display: str, expected: str) -> Table:
    first = skip_blank(lines, 0)  # load_text has rejected an all-blank file
    psql = is_psql_start(lines, first)
    if not psql and "op_name" not in lines[first]:
        raise InputError(display, f"expected the header line of {expected}, "
                                  f"found {lines[first].strip()[:60]!r}", first + 1)
    table = (parse_psql(lines, first, 1, display) if psql
             else parse_simple(lines, first, 1, display, expected))
    extra = skip_blank(lines, table.end)
    if extra < len(lines):
        raise InputError(display, f"unexpected text after the table; expected only {expected}", extra + 1)
    return table


def _metric_column(headers: tuple[str, ...], name: SensitivityName, display: str, line: int) -> int:
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


def _row(rank: int, row: Row, headers: tuple[str, ...], metric_col: int,
         display: str) -> SensitivityRow:
    line, cells = row.line, row.cells
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
