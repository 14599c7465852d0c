"""badcase.txt of find_bad_case / QuantAnalysis.auto_find_bad_case (docs/file_formats.md §7).

Three tabulate "simple" tables under literal headings: the worst data index per output
and metric, the metric values at those indices, and the worst index per metric across
all outputs (the one for the run's metric, default L1, is the sample behind run() and the
compare table).

Excerpts and hand-edited copies are read as far as they go: a missing or unreadable
section, a row whose index or value is no number, text between or after the tables are
skipped and named in `BadcaseReport.skipped`. A file without any readable table is
refused (InputError).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from j6doctor.probes.input_error import InputError, Skips, quoted
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
    skipped: Skips = field(default_factory=Skips)    # what could not be read (line and why)

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
    skips = Skips()
    tables, heading_lines = _tables(text, display, skips)
    if not tables:
        first = skip_blank(text, 0)
        raise InputError(display, f"expected the heading {HEADING_INDEX!r}, found {text[first].strip()[:60]!r}"
                                  + (f"; {skips.kept[0].reason}" if skips and skips.kept[0].line != first + 1 else ""),
                         first + 1)
    metrics, value_metrics = _metric_columns(tables, display, skips)
    index_by_output = _section(skips, tables, "index", lambda t: _per_output(t, metrics, skips, _parse_index)) or {}
    value_by_output = _section(skips, tables, "values",
                               lambda t: _per_output(t, value_metrics or [], skips, _parse_value)) or {}
    if index_by_output and value_by_output and list(value_by_output) != list(index_by_output):
        skips.add(tables["values"].header_line, "the two per-output tables list different outputs")
    worst = _section(skips, tables, "worst", lambda t: _worst(t, display, skips)) or {}
    _note_missing(metrics, worst, tables, heading_lines, skips)
    skips.in_file_order()
    return BadcaseReport(display, metrics, index_by_output, value_by_output, worst, heading_lines, skips)


def _metric_columns(tables: dict[str, Table], display: str, skips: Skips) -> tuple[list[str], list[str] | None]:
    """The metrics of the index table and of the values table; a values table whose metrics
    differ is left out (noted)."""
    metrics = _section(skips, tables, "index", lambda t: _metric_names(t, display)) or []
    value_metrics = _section(skips, tables, "values", lambda t: _metric_names(t, display))
    if metrics and value_metrics is not None and value_metrics != metrics:
        skips.add(tables["values"].header_line, "the metric columns of the two per-output tables differ; "
                                                "the second table is not read")
        del tables["values"]
        value_metrics = None
    return metrics, value_metrics


def _note_missing(metrics: list[str], worst: dict[str, int], tables: dict[str, Table], heading_lines: dict[str, int],
                  skips: Skips) -> None:
    """Notes a worst-output table without some metric, and every section that is absent."""
    missing = [m for m in metrics if not m.startswith(CUSTOM_METRIC) and _find_key(worst, m) is None]
    if "worst" in tables and missing:
        skips.add(tables["worst"].header_line, f"the worst-output table lacks {', '.join(missing)} (cut?)")
    for key, heading in SECTIONS:
        if key not in heading_lines:
            skips.add(None, f"no section {heading!r} (an excerpt, or cut?)")


def _tables(text: list[str], display: str, skips: Skips) -> tuple[dict[str, Table], dict[str, int]]:
    """The table under each section heading, wherever the headings are; text that belongs to
    no section and tables that cannot be read are noted in `skips`."""
    headings = {heading: key for key, heading in SECTIONS}
    tables: dict[str, Table] = {}
    heading_lines: dict[str, int] = {}
    pos = skip_blank(text, 0)
    while pos < len(text):
        key = headings.get(text[pos].strip())
        if key is None or key in tables:
            end = pos + 1
            while end < len(text) and text[end].strip() not in headings:
                end += 1
            what = "a second section" if key is not None else f"text that is no section of badcase.txt " \
                                                                f"({quoted(text[pos].strip())})"
            skips.add(pos + 1, f"{what}, lines {pos + 1}-{end}, not read")
            pos = skip_blank(text, end)
            continue
        heading_lines[key] = pos + 1
        try:
            table = parse_simple(text, pos + 1, 1, display, f"the table under {text[pos].strip()!r}")
        except InputError as error:
            skips.add_error(error)
            pos = skip_blank(text, pos + 1)
            continue
        skips.extend(table.skipped)
        tables[key] = table
        pos = skip_blank(text, table.end)
    return tables, heading_lines


def _section(skips: Skips, tables: dict[str, Table], key: str, read: Callable[[Table], Any]) -> Any:
    """read(table) of a section, or None when the section is absent or its table cannot be
    read (then noted, and left out of `tables`)."""
    if key not in tables:
        return None
    try:
        return read(tables[key])
    except InputError as error:
        skips.add(error.line, f"{error.message}; the table is not read")
        del tables[key]
        return None


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


def _per_output(table: Table, metrics: list[str], skips: Skips, parse: Callable[[str, str, int], Any]) -> dict:
    """Output -> metric -> cell read by `parse`; a row with a cell it cannot read, or an
    output listed again, is skipped (noted)."""
    result: dict[str, dict] = {}
    for row in table.rows:
        name = row.cells[0]
        if name in result:
            skips.add(row.line, f"output {name!r} is listed twice; the second row is not read")
            continue
        try:
            result[name] = {m: parse(cell, m, row.line) for m, cell in zip(metrics, row.cells[1:])}
        except ValueError as error:
            skips.add(row.line, str(error))
    if not result:
        raise InputError("badcase.txt", "a per-output table has no readable rows (cut?)", table.header_line)
    return result


def _parse_index(cell: str, metric: str, line: int) -> int:
    if not cell.isdigit():
        raise ValueError(f"expected a data index (integer) for {metric}, found {quoted(cell)} (row cut?)")
    return int(cell)


def _parse_value(cell: str, metric: str, line: int) -> float:
    value = parse_number(cell)
    if value is None:
        raise ValueError(f"expected a number for {metric}, found {quoted(cell)} (row cut?)")
    return value


def _worst(table: Table, display: str, skips: Skips) -> dict[str, int]:
    if table.headers != WORST_HEADERS:
        raise InputError(display, f"expected the header 'metric  dataloader index', "
                                  f"found {'  '.join(table.headers)!r}", table.header_line)
    worst: dict[str, int] = {}
    for row in table.rows:
        try:
            worst[row.cells[0]] = _parse_index(row.cells[1], row.cells[0], row.line)
        except ValueError as error:
            skips.add(row.line, str(error))
    return worst


# --- facts (probes/probe_output.py) -------------------------------------------------------

def add_facts(found, out) -> None:
    report = read_badcase_txt(found.path, found.display)
    out.skipped(found, report.skipped)
    if not report.index_by_output:
        return  # which sample each output found worst is unknown: nothing to say about them
    out.add("badcase_info", {
        "path": found.display, "outputs": len(report.index_by_output),
        "used_index": report.sample_used_by_run("L1"), "disagree": report.outputs_disagree("L1"),
    }, found, line=report.lines.get("index"), key="L1")
