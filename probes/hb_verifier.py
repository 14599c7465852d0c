"""hb_verifier output (docs/file_formats.md R3) → VerifierReport.

Two tables in tabulate's pretty / grid style (+---+ above and below the header):

* per-layer cosine, header `NodeName | TensorName | ConsineSimilarity` (misspelled by the
  tool; the correct spelling is accepted too);
* per-output consistency, header `OutputName | Consistency | Mismatched Elements |
  Max Abs Diff | Max Rel Diff`, mismatched elements printed as `37/1000 (3.70%)`.

A file may be a whole log with the tables inside (other text and other tables are
ignored) or only a pasted table, possibly indented. Rows of `...` mark rows elided by
whoever copied the table and are skipped. The compared models are taken from an
`hb_verifier -m a.bc,b.hbm ...` command line when the file has one.

Knows the format and nothing about rules. Tolerant, since real outputs are pasted and
excerpted: a row whose cells are no cosine / consistency values, a row that does not line
up, a table without its closing border or without the columns it needs, a header row
without its border are skipped and named in `VerifierReport.skipped`; the rest is read. A
file without one readable row of our tables raises InputError naming the file, the line
and what was expected.
"""

from __future__ import annotations

import math
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from j6doctor.facts import threshold
from j6doctor.probes.input_error import InputError, Skips
from j6doctor.probes.text_file import load_text, split_lines
from j6doctor.probes.text_tables import Row, Table, parse_grid, parse_number

__all__ = [
    "COSINE_HEALTHY", "ComparedModel", "ConsistencyRow", "CosineRow",
    "VerifierReport", "parse_hb_verifier", "read_hb_verifier",
]

# A log with a few tables (a row per node at most); the limit guards memory against a wrong
# file: parsed rows cost about 20 times the file size.
MAX_TEXT_BYTES = 16 * 1024 * 1024

# --- thresholds of the summary helpers ---------------------------------------------------
# The values live in facts/vocabulary.yaml (enum `threshold`, each with its meaning); why
# this probe uses each one is said here.
# The same number as compare_per_layer.py (docs/file_formats.md §13), so that "healthy"
# means one thing in every probe: a per-layer cosine of a healthy int8 model stays at or
# above 0.99. How far below the best earlier cosine a fall must go to be sudden is a rule
# (rules/54_measure_classes.yaml).
COSINE_HEALTHY = threshold("cosine_healthy")
# At most this many rows leaving the healthy state are handed to the rules.
MAX_BREAKS = 32
# A finite cosine further outside [-1, 1] than rounding explains means a shifted column.
_COSINE_SLACK = 1e-3

EXPECTED = ("hb_verifier output: a +---+ table headed 'NodeName | TensorName | "
            "ConsineSimilarity' or 'OutputName | Consistency | Mismatched Elements | "
            "Max Abs Diff | Max Rel Diff'")

_BORDER = re.compile(r"^\+(?:[-=]+\+)+$")
_ELLIPSIS = re.compile(r"^(?:\.{3,}|…+)$")
_COMMAND = re.compile(r"(?:^|[\s/$>#:'\"])hb_verifier(?:\.py)?(?=\s|$)(?P<args>.*)$")
_MISMATCHED = re.compile(r"^(?P<count>\d+)\s*(?:/\s*(?P<total>\d+)\s*"
                         r"(?:\(\s*[^()]*%\s*\))?)?$")
_MODEL_KINDS = {".bc": "bc", ".onnx": "onnx", ".hbm": "hbm", ".bin": "bin"}
_MISSING = ("", "None")

# Header cells (lower case) that identify each table, and the columns it must have.
_COSINE = "cosine"
_CONSISTENCY = "consistency"
_COSINE_NAMES = ("consinesimilarity", "cosinesimilarity")
_CONSISTENCY_COLUMNS = ("OutputName", "Consistency", "Mismatched Elements",
                        "Max Abs Diff", "Max Rel Diff")
_TITLE = {_COSINE: "per-layer cosine table", _CONSISTENCY: "per-output consistency table"}


@dataclass(frozen=True)
class CosineRow:
    node_name: str
    tensor_name: str          # "" when the table has no TensorName column
    cosine: float | None      # None for a blank / None cell; nan and inf are kept
    line: int                 # 1-based file line
    table: int = 0            # which cosine table of the file, counted from 0


@dataclass(frozen=True)
class ConsistencyRow:
    output_name: str
    consistent: bool          # the Consistency cell as printed (True / False)
    mismatched: int           # 37 of `37/1000 (3.70%)`
    total: int | None         # 1000 of `37/1000 (3.70%)`; None when only a count is printed
    max_abs_diff: float
    max_rel_diff: float
    line: int
    table: int = 0

    @property
    def mismatched_ratio(self) -> float | None:
        return self.mismatched / self.total if self.total else None


@dataclass(frozen=True)
class ComparedModel:
    path: str                 # as written on the command line
    kind: str | None          # "bc" | "onnx" | "hbm" | "bin" from the suffix; None otherwise
    line: int                 # line of the command line


@dataclass(frozen=True)
class VerifierReport:
    display: str
    layers: tuple[CosineRow, ...]
    outputs: tuple[ConsistencyRow, ...]
    models: tuple[ComparedModel, ...]   # from the first command line naming models; may be ()
    elided_lines: tuple[int, ...]       # lines of `...` rows that were skipped
    skipped: Skips = field(default_factory=Skips, compare=False)   # what could not be read (line, why)

    def breaks(self, healthy: float = COSINE_HEALTHY) -> list[tuple[CosineRow, float]]:
        """The rows, after at least one healthy row (cosine >= `healthy`) of the same table,
        whose cosine is not healthy, each with its fall below the highest cosine of the rows
        above it (inf for nan / inf); the first MAX_BREAKS of them. Whether a fall is sudden
        (the error origin) is judged in rules/54_measure_classes.yaml.

        Comparing with the highest earlier cosine rather than the row just above keeps a row
        of a side branch from hiding the fall; blank cosines are skipped. A table that is
        unhealthy from its first row has no break: see first_below()."""
        out: list[tuple[CosineRow, float]] = []
        best: dict[int, float] = {}
        for row in self.layers:
            cosine = row.cosine
            if cosine is None:
                continue
            top = best.get(row.table)
            if top is not None and top >= healthy and not _at_least(cosine, healthy):
                out.append((row, top - cosine if math.isfinite(cosine) else math.inf))
                if len(out) == MAX_BREAKS:
                    break
            if math.isfinite(cosine):
                best[row.table] = cosine if top is None else max(top, cosine)
        return out

    def first_below(self, healthy: float = COSINE_HEALTHY) -> CosineRow | None:
        """The first row whose cosine is below `healthy` (or nan / inf)."""
        return next((row for row in self.layers
                     if row.cosine is not None and not _at_least(row.cosine, healthy)), None)

    def worst_layer(self) -> CosineRow | None:
        """The row with the lowest cosine (nan / inf count as lowest; the first on a tie)."""
        rows = [row for row in self.layers if row.cosine is not None]
        if not rows:
            return None
        return min(rows, key=lambda row: row.cosine if math.isfinite(row.cosine) else -math.inf)

    def all_outputs_consistent(self) -> bool | None:
        """True when every consistency row says True; None without a consistency table."""
        if not self.outputs:
            return None
        return all(row.consistent for row in self.outputs)

    def inconsistent_outputs(self) -> tuple[ConsistencyRow, ...]:
        return tuple(row for row in self.outputs if not row.consistent)


def _at_least(value: float, threshold: float) -> bool:
    return math.isfinite(value) and value >= threshold


# --- reading -----------------------------------------------------------------------------

def read_hb_verifier(path: Path, display: str | None = None) -> VerifierReport:
    display = display or path.name
    return parse_hb_verifier(load_text(path, display, EXPECTED, MAX_TEXT_BYTES), display)


def parse_hb_verifier(text: str, display: str) -> VerifierReport:
    lines = split_lines(text.removeprefix("\ufeff"))
    layers: list[CosineRow] = []
    outputs: list[ConsistencyRow] = []
    elided: list[int] = []
    models: tuple[ComparedModel, ...] = ()
    counts = {_COSINE: 0, _CONSISTENCY: 0}
    skips = Skips()
    i = 0
    while i < len(lines):
        kind = _table_at(lines, i)
        if kind is None:
            _header_without_border(lines[i], i + 1, skips)
            if not models:
                models = _models_on_command_line(lines[i], i + 1)
            i += 1
            continue
        table, skipped, end = _parse_table(lines, i, display)
        skips.extend(table.skipped)
        rows = [row for row in table.rows if row.line not in skipped and not _is_elided(row.cells)]
        elided += sorted(skipped | {row.line for row in table.rows if _is_elided(row.cells)})
        if not rows:
            skips.add(table.header_line, f"the {_TITLE[kind]} has no rows{' but elided ones' if table.rows else ''} "
                                         "(truncated or cut when copied?)")
        elif kind == _COSINE:
            layers += _cosine_rows(table, rows, counts[kind], skips)
        else:
            outputs += _consistency_rows(table, rows, counts[kind], skips)
        counts[kind] += 1
        i = end
    if not layers and not outputs:
        if skips:
            first = skips.kept[0]
            raise InputError(display, f"no readable row of an hb_verifier table: {first.reason}", first.line)
        raise InputError(display, f"no hb_verifier table found; expected {EXPECTED}")
    skips.in_file_order()
    return VerifierReport(display, tuple(layers), tuple(outputs), models, tuple(elided), skips)


def _header_kind(line: str) -> str | None:
    """Which of our tables a `| a | b |` header row belongs to, from its cell names."""
    text = line.strip()
    if not text.startswith("|"):
        return None
    cells = {cell.strip().lower() for cell in text.strip("|").split("|")}
    if "nodename" in cells and cells.intersection(_COSINE_NAMES):
        return _COSINE
    if "outputname" in cells and "consistency" in cells:
        return _CONSISTENCY
    return None


def _table_at(lines: list[str], i: int) -> str | None:
    """The kind of our table whose top border is lines[i], else None (other tables of the
    log are not ours and are left alone)."""
    if not _BORDER.match(lines[i].strip()) or i + 1 >= len(lines):
        return None
    return _header_kind(lines[i + 1])


def _header_without_border(line: str, number: int, skips: Skips) -> None:
    kind = _header_kind(line)
    if kind is not None:
        skips.add(number, f"header row of the {_TITLE[kind]} without the +---+ border line above it "
                          "(table cut off when copied?); its table is not read")


def _parse_table(lines: list[str], start: int, display: str) -> tuple[Table, set[int], int]:
    """The table whose border is lines[start], its skipped bare `...` lines and the index
    after it. Parsed on a view of the block up to the next blank line, without the
    indentation of its border (a table pasted indented), and with every line that is
    only `...` replaced by an empty row."""
    indent = len(lines[start]) - len(lines[start].lstrip())
    stop = start
    while stop < len(lines) and lines[stop].strip():
        stop += 1
    view = [line[indent:] if not line[:indent].strip() else line for line in lines[start:stop]]
    border = view[0].rstrip()
    empty_row = "".join("|" if ch == "+" else " " for ch in border)
    skipped: set[int] = set()
    for k in range(3, len(view)):
        if _ELLIPSIS.match(view[k].strip()):
            view[k] = empty_row
            skipped.add(start + 1 + k)
    table = parse_grid(view, 0, start + 1, display)
    return table, skipped, start + table.end


def _is_elided(cells: tuple[str, ...]) -> bool:
    marks = [cell for cell in cells if cell]
    return bool(marks) and all(_ELLIPSIS.match(cell) for cell in marks)


def _required(table: Table, names: tuple[str, ...], kind: str, skips: Skips) -> list[int] | None:
    """The columns' positions, or None (the table noted as not read) when one is missing."""
    found = [table.column(name) for name in names]
    missing = [name for name, index in zip(names, found) if index is None]
    if missing:
        skips.add(table.header_line, f"the {_TITLE[kind]} lacks the column(s) {', '.join(missing)}; found "
                                     f"{' | '.join(table.headers)!r}; the table is not read")
        return None
    return found  # type: ignore[return-value]


def _cosine_rows(table: Table, rows: list[Row], ordinal: int, skips: Skips) -> list[CosineRow]:
    names = ("NodeName", "ConsineSimilarity" if table.column("ConsineSimilarity") is not None else "CosineSimilarity")
    columns = _required(table, names, _COSINE, skips)
    if columns is None:
        return []
    node, cosine = columns
    tensor = table.column("TensorName")
    result = []
    for row in rows:
        try:
            value = _cosine(row.cells[cosine], row.line, table.headers[cosine])
        except InputError as error:
            skips.add_error(error)
            continue
        result.append(CosineRow(row.cells[node], row.cells[tensor] if tensor is not None else "", value,
                                row.line, ordinal))
    return result


# A row's cell that is no value of its column: the row is skipped (raised inside the reading
# of one row, caught by the table's loop and named in its skips).
_ROW = "row"


def _cosine(cell: str, line: int, column: str) -> float | None:
    if cell in _MISSING:
        return None
    value = parse_number(cell)
    if value is None:
        raise InputError(_ROW, f"expected a cosine similarity (a number, nan or inf) in {column}, "
                               f"found {cell!r}", line)
    if math.isfinite(value) and abs(value) > 1 + _COSINE_SLACK:
        raise InputError(_ROW, f"expected a cosine similarity between -1 and 1 in {column}, "
                               f"found {cell!r} (columns shifted?)", line)
    return value


def _consistency_rows(table: Table, rows: list[Row], ordinal: int, skips: Skips) -> list[ConsistencyRow]:
    columns = _required(table, _CONSISTENCY_COLUMNS, _CONSISTENCY, skips)
    if columns is None:
        return []
    name, flag, mismatched, abs_diff, rel_diff = columns
    result = []
    for row in rows:
        try:
            count, total = _mismatched(row.cells[mismatched], row.line, _ROW)
            result.append(ConsistencyRow(
                row.cells[name], _flag(row.cells[flag], row.line, _ROW), count, total,
                _diff(row.cells[abs_diff], "Max Abs Diff", row.line, _ROW),
                _diff(row.cells[rel_diff], "Max Rel Diff", row.line, _ROW),
                row.line, ordinal))
        except InputError as error:
            skips.add_error(error)
    return result


def _flag(cell: str, line: int, display: str) -> bool:
    if cell.lower() in ("true", "false"):
        return cell.lower() == "true"
    raise InputError(display, f"expected True or False in Consistency, found {cell!r}", line)


def _mismatched(cell: str, line: int, display: str) -> tuple[int, int | None]:
    match = _MISMATCHED.match(cell)
    if match is None:
        raise InputError(display, "expected mismatched elements like '37/1000 (3.70%)' in "
                                  f"Mismatched Elements, found {cell!r}", line)
    count = int(match["count"])
    total = int(match["total"]) if match["total"] is not None else None
    if total is not None and count > total:
        raise InputError(display, f"Mismatched Elements {cell!r}: more mismatched elements "
                                  "than elements", line)
    return count, total


def _diff(cell: str, column: str, line: int, display: str) -> float:
    value = parse_number(cell)
    if value is None:
        raise InputError(display, f"expected a number (or nan / inf) in {column}, "
                                  f"found {cell!r}", line)
    return value


# --- command line ------------------------------------------------------------------------

def _models_on_command_line(line: str, number: int) -> tuple[ComparedModel, ...]:
    """The models of `hb_verifier -m a.bc,b.hbm` / `--model a.bc,b.hbm` / `--model=...`
    (repeated options add up), or () when the line is not such a command line."""
    match = _COMMAND.search(line)
    if match is None:
        return ()
    words = _words(match["args"])
    values: list[str] = []
    for k, word in enumerate(words):
        if word in ("-m", "--model") and k + 1 < len(words):
            values.append(words[k + 1])
        elif word.startswith("--model="):
            values.append(word.removeprefix("--model="))
    paths = [part.strip() for value in values for part in value.split(",") if part.strip()]
    return tuple(ComparedModel(path, _MODEL_KINDS.get(Path(path).suffix.lower()), number)
                 for path in paths)


def _words(args: str) -> list[str]:
    """Shell words with quotes removed; backslashes and '#' are kept (Windows paths, log
    text), and an unbalanced quote falls back to splitting at whitespace."""
    lexer = shlex.shlex(args, posix=True)
    lexer.whitespace_split = True
    lexer.escape = ""
    lexer.commenters = ""
    try:
        return list(lexer)
    except ValueError:
        return args.split()


# --- facts (probes/probe_output.py) -------------------------------------------------------

def add_facts(found, out) -> None:
    _add_report_facts(read_hb_verifier(found.path, found.display), found, out)


def add_pasted_facts(text: str, found, out) -> None:
    """The same facts of hb_verifier output pasted into the user's words."""
    _add_report_facts(parse_hb_verifier(text, found.display), found, out)


def _add_report_facts(report: VerifierReport, found, out) -> None:
    from j6doctor.probes.conversion_log import add_cosine_breaks  # the cosine_break facts every cosine table gives
    from j6doctor.probes.probe_output import finite

    out.skipped(found, report.skipped)
    kinds = {m.kind for m in report.models}
    pair = "bc_hbm" if "bc" in kinds and kinds & {"hbm", "bin"} else ""
    models = ",".join(m.path for m in report.models)
    if report.layers:
        worst = report.worst_layer()
        out.keep("cosines", found, ("hb_verifier", [(r.node_name, r.cosine) for r in report.layers]))
        out.add("layer_cosines", {
            "path": found.display, "tool": "hb_verifier", "rows": len(report.layers),
            "worst_node": worst.node_name if worst else "", "worst_cosine": finite(worst.cosine if worst else None),
            "first_node": report.layers[0].node_name, "first_node_cosine": finite(report.layers[0].cosine),
        }, found, line=(worst or report.layers[0]).line, key="layers")
        index = {id(r): k for k, r in enumerate(report.layers)}
        add_cosine_breaks(found, out, "hb_verifier", [(index[id(r)], r.node_name, r.cosine, fall, r.line)
                                                      for r, fall in report.breaks()])
    for row in report.outputs[:out.limit]:
        out.add("verifier_output", {
            "path": found.display, "output": row.output_name, "consistent": row.consistent,
            "mismatched": row.mismatched, "total": row.total, "max_abs": finite(row.max_abs_diff),
            "max_rel": finite(row.max_rel_diff), "pair": pair, "models": models,
        }, found, line=row.line, key=row.output_name)
