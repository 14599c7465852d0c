"""badcase.txt of find_bad_case / QuantAnalysis.auto_find_bad_case (docs/file_formats.md §7).

Three tabulate "simple" tables under literal headings: the worst data index per output
and metric, the metric values at those indices, and the worst index per metric across
all outputs (the one for the run's metric, default L1, is the sample behind run() and the
compare table).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from j6doctor.probes.input_error import InputError, quoted
from j6doctor.probes.text_file import load_text, split_lines
from j6doctor.probes.text_tables import Table, parse_number, parse_simple, skip_blank

# A few short tables (a row per model output); the limit guards memory against a wrong file:
# parsed rows cost about 20 times the file size.
MAX_TEXT_BYTES = 8 * 1024 * 1024

HEADING_INDEX = "The bad case input index of each output:"
HEADING_VALUES = "The metric results of each badcase:"
HEADING_WORST = "The bad case input index of the worst output:"
SECTIONS = (("index", HEADING_INDEX), ("values", HEADING_VALUES), ("worst", HEADING_WORST))

NAME_HEADER = "Name/Index"
WORST_HEADERS = ("metric", "dataloader index")
# Name given to metric columns that tabulate left without a header: with a custom metric
# the writer passes one header too few and the header list shifts right
# (docs/file_formats.md §0.3 rule 7, §7).
CUSTOM_METRIC = "custom"
EXPECTED = ("badcase.txt (three tables headed 'The bad case input index of each output:', "
            "'The metric results of each badcase:', 'The bad case input index of the worst output:')")


@dataclass
class BadcaseReport:
    display: str
    metrics: list[str]                               # e.g. Cosine MSE L1 KL SQNR (+ custom)
    index_by_output: dict[str, dict[str, int]]       # output -> metric -> worst data index
    value_by_output: dict[str, dict[str, float]]     # output -> metric -> worst value
    worst_index: dict[str, int]                      # metric -> index worst over all outputs
    lines: dict[str, int]                            # section -> 1-based line of its heading

    def outputs_disagree(self, metric: str = "L1") -> bool:
        """True when the outputs have different worst indices for `metric`."""
        key = self._metric_key(metric)
        if key is None:
            return False
        return len({per[key] for per in self.index_by_output.values() if key in per}) > 1

    def sample_used_by_run(self, metric: str = "L1") -> int | None:
        key = _find_key(self.worst_index, metric)
        return self.worst_index[key] if key is not None else None

    def _metric_key(self, metric: str) -> str | None:
        return _find_key(dict.fromkeys(self.metrics), metric)


def _find_key(mapping: dict, metric: str) -> str | None:
    """Exact key, else a case-insensitive match (L1 / l1, Cosine / COSINE)."""
    if metric in mapping:
        return metric
    return next((k for k in mapping if k.lower() == metric.lower()), None)


def read_badcase_txt(path: Path, display: str | None = None) -> BadcaseReport:
    display = display or path.name
    text = split_lines(load_text(path, display, EXPECTED, MAX_TEXT_BYTES))
    tables: dict[str, Table] = {}
    heading_lines: dict[str, int] = {}
    pos = skip_blank(text, 0)
    for key, heading in SECTIONS:
        if pos >= len(text) or text[pos].strip() != heading:
            found = f"found {text[pos].strip()[:60]!r}" if pos < len(text) else "but the file ends"
            raise InputError(display, f"expected the heading {heading!r}, {found}",
                             pos + 1 if pos < len(text) else None)
        heading_lines[key] = pos + 1
        tables[key] = parse_simple(text, pos + 1, 1, display, f"the table under {heading!r}")
        pos = skip_blank(text, tables[key].end)
    if pos < len(text):
        raise InputError(display, f"unexpected text after the third table; expected {EXPECTED}", pos + 1)
    metrics = _metric_names(tables["index"], display)
    if _metric_names(tables["values"], display) != metrics:
        raise InputError(display, "the metric columns of the two per-output tables differ",
                         tables["values"].header_line)
    index_by_output = _per_output(tables["index"], metrics, display, _parse_index)
    value_by_output = _per_output(tables["values"], metrics, display, _parse_value)
    if list(value_by_output) != list(index_by_output):
        raise InputError(display, "the two per-output tables list different outputs",
                         tables["values"].header_line)
    worst = _worst(tables["worst"], display)
    missing = [m for m in metrics if not m.startswith(CUSTOM_METRIC) and _find_key(worst, m) is None]
    if missing:
        raise InputError(display, f"the worst-output table lacks {', '.join(missing)} "
                                  "(file truncated?)", tables["worst"].header_line)
    return BadcaseReport(display, metrics, index_by_output, value_by_output, worst, heading_lines)


def _metric_names(table: Table, display: str) -> list[str]:
    """Metric columns, undoing tabulate's right shift of a too-short header list."""
    headers = table.headers
    shift = next((i for i, h in enumerate(headers) if h), len(headers))
    real = headers[shift:]
    if not real or real[0] != NAME_HEADER or len(real) < 2:
        raise InputError(display, f"expected the header '{NAME_HEADER}  Cosine  MSE  L1  KL  SQNR', "
                                  f"found {'  '.join(headers)!r}", table.header_line)
    extra = [CUSTOM_METRIC if i == 0 else f"{CUSTOM_METRIC}_{i + 1}" for i in range(shift)]
    return list(real[1:]) + extra


def _per_output(table: Table, metrics: list[str], display: str,
                parse: Callable[[str, str, int, str], Any]) -> dict:
    result: dict[str, dict] = {}
    for row in table.rows:
        name = row.cells[0]
        if name in result:
            raise InputError(display, f"output {name!r} is listed twice", row.line)
        result[name] = {m: parse(cell, m, row.line, display)
                        for m, cell in zip(metrics, row.cells[1:])}
    if not table.rows:
        raise InputError(display, "a per-output table has no rows (file truncated?)", table.header_line)
    return result


def _parse_index(cell: str, metric: str, line: int, display: str) -> int:
    if not cell.isdigit():
        raise InputError(display, f"expected a data index (integer) for {metric}, "
                                  f"found {quoted(cell)} (file truncated?)", line)
    return int(cell)


def _parse_value(cell: str, metric: str, line: int, display: str) -> float:
    value = parse_number(cell)
    if value is None:
        raise InputError(display, f"expected a number for {metric}, "
                                  f"found {quoted(cell)} (file truncated?)", line)
    return value


def _worst(table: Table, display: str) -> dict[str, int]:
    if table.headers != WORST_HEADERS:
        raise InputError(display, f"expected the header 'metric  dataloader index', "
                                  f"found {'  '.join(table.headers)!r}", table.header_line)
    if not table.rows:
        raise InputError(display, "the worst-output table has no rows (file truncated?)",
                         table.header_line)
    return {row.cells[0]: _parse_index(row.cells[1], row.cells[0], row.line, display)
            for row in table.rows}


# --- facts (probes/probe_output.py) -------------------------------------------------------

def add_facts(found, out) -> None:
    report = read_badcase_txt(found.path, found.display)
    out.add("badcase_info", {
        "path": found.display, "outputs": len(report.index_by_output),
        "used_index": report.sample_used_by_run("L1"), "disagree": report.outputs_disagree("L1"),
    }, found, line=report.lines.get("index"), key="L1")
