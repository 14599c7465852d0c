"""Sensitivity tables of QuantAnalysis.sensitivity() (docs/file_formats.md §6, §13.4).

`output_<name>_<metric>_sensitive_ops.txt` lists, per quantizer, the model-output error
when only that quantizer is enabled. This module parses the file name and the table and
summarises its shape (one dominant op, accumulation over several ops, or flat).

File reading and the tabulate table layouts come from text_tables, shared with the
other text probes. The table is held by column (a simple table is cut column by column,
the metric column read as floats), the summary computed over the columns; a SensitivityRow
is made for the rows a summary names, or for all of them by `SensitivityTable.rows`.

A row without an op name or a number, a row that does not line up, a missing closing border
and text after the table are skipped and named in `SensitivityTable.skipped` (line and
why); the other rows are read. A file without a table, or without a readable row, is
refused (InputError).
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from j6doctor.probes.input_error import InputError, Skips
from j6doctor.probes.text_file import load_text, split_lines
from j6doctor.probes.text_tables import (ColumnTable, is_psql_start, parse_number, parse_psql, parse_simple_columns,
                          skip_blank)

# Sensitivity tables list one row per quantizer: a few MB even for large models (reading one
# peaks at about 6 times the file size: its text, lines and columns).
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

# --- measures -------------------------------------------------------------------------------
# The summary measures how far the worst ops are from the ideal value and from each other;
# whether that is one dominant op, an accumulation or nothing is for the rules
# (rules/54_measure_classes.yaml), which hold the thresholds.

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
    """Parse from the right (docs/file_formats.md §6); None if not a sensitivity file name."""
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


class SensitivityTable:
    """A sensitivity table by column: op names, types and the metric values in file order
    (rank = position). `row(k)` makes one SensitivityRow, `rows` all of them (on first use)."""

    def __init__(self, display: str, name: SensitivityName, metric: str, order: str,
                 rows: list[SensitivityRow] | None = None, *, columns: dict | None = None,
                 skipped: Skips | None = None):
        self.display = display
        self.skipped = skipped if skipped is not None else Skips()   # what could not be read
        self.name = name
        self.metric = metric     # metric column header
        self.order = order       # "descending" | "ascending" | "unsorted"
        if columns is None:
            rows = rows or []
            columns = {"line": [r.line for r in rows], "op_name": [r.op_name for r in rows],
                       "sensitive_type": [r.sensitive_type for r in rows],
                       "op_type": [r.op_type for r in rows], "value": [r.value for r in rows],
                       "quant_dtype": [r.quant_dtype for r in rows], "flops": [r.flops for r in rows]}
        self._columns = columns

    def __len__(self) -> int:
        return len(self._columns["value"])

    def __repr__(self) -> str:
        return f"SensitivityTable({self.display!r}, {self.metric!r}, {self.order!r}, {len(self)} rows)"

    @property
    def values(self) -> list[float]:
        return self._columns["value"]

    @property
    def op_names(self) -> list[str]:
        return self._columns["op_name"]

    def row(self, k: int) -> SensitivityRow:
        c = self._columns
        return SensitivityRow(k, c["line"][k], c["op_name"][k], c["sensitive_type"][k], c["op_type"][k],
                              c["value"][k], c["quant_dtype"][k], c["flops"][k])

    @cached_property
    def rows(self) -> list[SensitivityRow]:
        c = self._columns
        return [SensitivityRow(*cells) for cells in zip(
            range(len(self)), c["line"], c["op_name"], c["sensitive_type"], c["op_type"], c["value"],
            c["quant_dtype"], c["flops"])]


def read_sensitivity_txt(path: Path, display: str | None = None) -> SensitivityTable:
    """Read one sensitivity table (tabulate simple, or psql for v3.3)."""
    display = display or path.name
    expected = f"a sensitivity table ({EXPECTED_HEADER})"
    lines = split_lines(load_text(path, display, expected, MAX_TEXT_BYTES))
    # A renamed file still parses; its output name is then unknown (reported as "").
    name = parse_sensitivity_name(path.name) or SensitivityName("", None, None, None)
    skips = Skips()
    table = _locate_table(lines, display, expected, skips)
    metric_col = _metric_column(table.headers, name, display, table.header_line)
    columns = _row_columns(table, metric_col, skips)
    if not columns["value"]:
        first = skips.kept[0] if skips else None
        raise InputError(display, f"the table has no readable data rows{f': {first.reason}' if first else ''} "
                                  f"(file truncated?); expected {expected}",
                         first.line if first else table.header_line)
    skips.in_file_order()
    metric = table.headers[metric_col]
    return SensitivityTable(display, name, metric, _detect_order(columns["value"], metric), columns=columns,
                            skipped=skips)


def _locate_table(lines: list[str], display: str, expected: str, skips: Skips) -> ColumnTable:
    first = skip_blank(lines, 0)  # load_text has rejected an all-blank file
    psql = is_psql_start(lines, first)
    if not psql and "op_name" not in lines[first]:
        raise InputError(display, f"expected the header line of {expected}, "
                                  f"found {lines[first].strip()[:60]!r}", first + 1)
    table = (ColumnTable.of(parse_psql(lines, first, 1, display)) if psql
             else parse_simple_columns(lines, first, 1, display, expected))
    skips.extend(table.skipped)
    extra = skip_blank(lines, table.end)
    if extra < len(lines):
        skips.add(extra + 1, f"text after the table, lines {extra + 1}-{len(lines)}, not read")
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


def _row_columns(table: ColumnTable, metric_col: int, skips: Skips) -> dict[str, list]:
    """The row fields by column, the metric read as numbers; a row without a number, an
    op_name or (when the column exists) its flops is left out and named in `skips`."""
    by_name = {h.lower(): k for k, h in enumerate(table.headers)}  # a repeated name: the last one
    cells = table.columns
    try:
        values = list(map(float, cells[metric_col]))
    except ValueError:
        values = [parse_number(cell) for cell in cells[metric_col]]
    op_names = cells[by_name["op_name"]]
    flops = cells[by_name["flops"]] if "flops" in by_name else None
    firsts = [_first(values, None), _first(op_names, "")]
    if flops is not None:
        firsts.append(_first(flops, ""))
    lines = table.lines
    if min(firsts) < len(values):   # rare: only then is each row looked at
        keep = _readable_rows(values, cells[metric_col], op_names, flops, table.headers[metric_col], lines, skips)
        cells = tuple([column[k] for k in keep] for column in cells)
        values, op_names, lines = [values[k] for k in keep], cells[by_name["op_name"]], [lines[k] for k in keep]
        flops = cells[by_name["flops"]] if flops is not None else None
    quant_dtype = cells[by_name["quant_dtype"]] if "quant_dtype" in by_name else None
    n = len(values)
    return {"line": lines, "op_name": op_names, "sensitive_type": cells[by_name["sensitive_type"]],
            "op_type": cells[by_name["op_type"]], "value": values,
            "quant_dtype": [c or None for c in quant_dtype] if quant_dtype is not None else [None] * n,
            "flops": [c or None for c in flops] if flops is not None else [None] * n}


def _readable_rows(values: list, metric_cells: list[str], op_names: list[str], flops: list[str] | None,
                   metric: str, lines: Sequence[int], skips: Skips) -> list[int]:
    """The indices of the rows that can be read; the others named in `skips`."""
    keep = []
    for k in range(len(values)):
        problem = _row_problem(values[k], metric_cells[k], op_names[k], flops[k] if flops else "-", metric)
        if problem:
            skips.add(lines[k], problem)
        else:
            keep.append(k)
    return keep


def _row_problem(value: float | None, cell: str, op_name: str, flops: str, metric: str) -> str:
    """Why a row cannot be read ("" when it can)."""
    if value is None:
        return f"expected a number in column {metric!r}, found {repr(cell) if cell else 'nothing'} (row cut?)"
    if not op_name:
        return "row without op_name"
    if not flops:
        # The writer prints 0(0%) for ops without flops, so a blank cell means a cut row.
        return "row ends before the flops column (row cut?)"
    return ""


def _first(cells: Sequence, bad: str | None) -> int:
    """Index of the first cell that is `bad` (None, or the empty cell ""); len(cells) if none."""
    try:
        return cells.index(bad)  # no cell (a float, a non-empty text) equals either but itself
    except ValueError:
        return len(cells)


def _detect_order(values: list[float], metric: str) -> str:
    values = [v for v in values if v == v]  # without nan
    descending = all(map(operator.ge, values, values[1:]))
    ascending = all(map(operator.le, values, values[1:]))
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
    top_ops: list[SensitivityRow]       # first 5 distinct op_names
    metric_kind: str                    # "similarity" | "snr" | "error" | "other"
    top_distance: float | None          # the top row's distance from the ideal value (None: NaN / inf)
    next_share: float | None            # the runner-up op's distance / the top's (0: no runner-up)
    third_share: float | None           # the third distinct op's distance / the top's (0: none)


def metric_kind(metric: str) -> str:
    key = metric.lower()
    if key in COSINE_METRICS:
        return "similarity"
    if key in SQNR_METRICS:
        return "snr"
    return "error" if key in ERROR_METRICS else "other"


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
        best = max((v for v in table.values if not math.isnan(v)), default=0.0)
        base = lambda v: best - v  # noqa: E731
    return lambda v: math.inf if math.isnan(v) else max(base(v), 0.0)


def summarize_sensitivity(table: SensitivityTable) -> SensitivitySummary:
    if not len(table):
        raise ValueError(f"{table.display}: empty sensitivity table")
    distance = distance_function(table)
    distances = [distance(v) for v in table.values]
    negated = [-d for d in distances]
    ranked = sorted(range(len(distances)), key=negated.__getitem__)  # stable: file order on ties
    distinct = _first_per_op(ranked, table.op_names)
    top = table.row(ranked[0])
    runner_up = table.row(distinct[1]) if len(distinct) > 1 else None
    return SensitivitySummary(top, runner_up, [table.row(k) for k in distinct[:5]], metric_kind(table.metric),
                              _finite_or_none(distances[distinct[0]]), _share(distances, distinct, 1),
                              _share(distances, distinct, 2))


def _finite_or_none(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _share(distances: list[float], distinct: list[int], k: int) -> float | None:
    """The k-th distinct op's distance as a share of the top's: 0 when there is no such op;
    None when the top is ideal (nothing to share); an infinite top (a NaN value) leaves 0 to
    finite ops and 1 to other infinite ones."""
    top = distances[distinct[0]]
    if top == 0.0:
        return None
    other = distances[distinct[k]] if len(distinct) > k else 0.0
    if math.isinf(top):
        return 1.0 if math.isinf(other) else 0.0
    return other / top


def _first_per_op(ranked: list[int], op_names: list[str]) -> list[int]:
    seen: set[str] = set()
    result = []
    for k in ranked:
        if op_names[k] not in seen:
            seen.add(op_names[k])
            result.append(k)
    return result


# =========================================================================================
# Facts (probes/probe_output.py)
# =========================================================================================

def add_facts(found, out, table: SensitivityTable | None = None) -> None:
    """The table's summary, joined to the compare row of its top op (through the fused
    group, docs/file_formats.md §13.5) when a compare table was read."""
    from j6doctor.probes.compare_per_layer import metric_row_for

    table = table or read_sensitivity_txt(found.path, found.display)
    if not len(table):
        raise InputError(found.display, "the sensitivity table has no rows")
    out.skipped(found, table.skipped)
    summary = summarize_sensitivity(table)
    out.keep("sensitivity", found, (table, summary))
    compare = out.compare_table_for(found)
    joined = metric_row_for(compare, summary.top.op_name) if compare is not None else None
    runner = summary.runner_up
    out.add("sensitivity_summary", {
        "path": found.display, "output": table.name.output, "metric": table.metric,
        "top_op": summary.top.op_name, "top_type": summary.top.sensitive_type, "top_value": summary.top.value,
        "runner_up_op": runner.op_name if runner else "", "runner_up_value": runner.value if runner else None,
        "metric_kind": summary.metric_kind, "top_distance": summary.top_distance,
        "next_share": summary.next_share, "third_share": summary.third_share,
        "top_ops": "、".join(r.op_name for r in summary.top_ops),
        "compare_path": compare.display if joined else "",
        "compare_row": joined.mod_name if joined else "",
    }, found, line=summary.top.line, key=f"rank {summary.top.rank}")
