"""`hb_mapper makertbin` / `hb_compile` conversion logs (PTQ, docs/file_formats.md R4).

Every log line starts with a prefix
`2026-05-04 10:21:07,512 file: model_builder.py func: model_builder line No: 38 <message>`;
multi-line messages (the tables) continue on lines without it. The reader strips the
prefix and collects, each with its 1-based file line:

* tool versions (`hbdk version 3.49.15`, `horizon_nn version 1.1.0`, `hb_mapper version
  1.24.3`, hb_compile / hmct alike), the march (`End to compile the model with march
  bayes-e.`, else `march` of `model_deps_info`), the `model_deps_info: {...}` dict (read
  with ast.literal_eval, never eval), the input-parameter `key : value` lines and the
  WARNING lines (verbatim);
* the node table under `The main quantized node information:` and the output table under
  `The quantized model output:`: an optional line of `=`, the header, a line of `-`, then
  fixed-width rows. Columns start where the header's words start (`Cosine Similarity` is
  one column, its words are one space apart), `--` is a missing value and long node
  names are cut from the left with `...` (kept as shown).

The cosine helpers at the end (first sudden fall, worst, the first node against the next ones) work on any
sequence of objects with `name`, `type` and `cosine`; quant_info.py reuses them.

The module knows this one format; what the numbers mean for a diagnosis is the rules' job.
A pasted terminal copy, whose lines start with `<date> <time>,<ms> INFO ` instead, is read
the same way (its WARNING level marks warnings).

Logs are pasted, excerpted and hand-edited: a table without its header or rows, a row that
does not line up (cut at its runs of spaces when that gives one cell per column, else
skipped), a cell that is no number and a model_deps_info that is no dict literal are
skipped and named in `ConversionLog.skipped` (line and why); the rest is read. A log
without either table, when tables are required, raises InputError naming the file.
"""

from __future__ import annotations

import ast
import math
import re
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

from j6doctor.facts import threshold
from j6doctor.probes.input_error import InputError, Skips
from j6doctor.probes.text_file import load_text, split_lines
from j6doctor.probes.text_tables import cut_words, parse_number

__all__ = [
    "COSINE_HEALTHY", "FOLLOWING_NODES", "MAX_BREAKS",
    "ConversionLog", "CosineSummary", "Fall", "FirstNode", "HasCosine", "InputParameters",
    "LogNode", "LogOutput", "LogSummary", "LogValue", "ScoredNode",
    "cosine_breaks", "first_node", "is_preprocess_node",
    "parse_conversion_log", "read_conversion_log",
    "summarize_cosines", "worst_cosine",
]

# Logs of large models stay far below this; it only guards memory against a wrong file.
MAX_TEXT_BYTES = 128 * 1024 * 1024
EXPECTED = ("an hb_mapper makertbin / hb_compile log (lines like '2026-05-04 10:21:07,512 "
            "file: model_builder.py func: model_builder line No: 38 ...' and the tables "
            "'The main quantized node information:' / 'The quantized model output:')")

# --- thresholds of the cosine helpers ---------------------------------------------------
# The values live in facts/vocabulary.yaml (enum `threshold`, each with its meaning); why
# this probe uses each one is said here.
# A node is healthy when its cosine is finite and at least this. The same value as the
# per-layer compare reader (compare_per_layer.py), so that "healthy" means one thing in
# every probe: int8 PTQ nodes of a sound model sit at 0.99-1.0.
COSINE_HEALTHY = threshold("cosine_healthy")
# Where the nodes leave the healthy state is located here (`cosine_breaks`), with the size
# of that step; whether it is a sudden fall, and so the error origin, is judged in
# rules/54_measure_classes.yaml. At most this many such nodes are handed to the rules.
MAX_BREAKS = 32
# The first node's cosine is measured against the nodes after it (how many: this); whether
# that is a collapse (docs/file_formats.md R4) is judged in rules/54_measure_classes.yaml.
FOLLOWING_NODES = threshold("following_nodes")

# --- line patterns -----------------------------------------------------------------------
_PREFIX = re.compile(r"^(?P<date>\d{4}-\d{2}-\d{2}) (?P<time>\d{2}:\d{2}:\d{2},\d{3}) +"
                     r"file: +(?P<file>\S+) +func: +(?P<func>\S+) +line No: +(?P<lineno>\d+)(?: |$)")
# The console form of the same logger (a pasted terminal): date, time and the level.
_CONSOLE_PREFIX = re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3} +"
                             r"(?P<level>DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)(?: |$)")
NODE_HEADING = "The main quantized node information:"
OUTPUT_HEADING = "The quantized model output:"
_NODE_HEADING = re.compile(r"^\s*The main quantized node information\s*:?\s*$")
_OUTPUT_HEADING = re.compile(r"^\s*The quantized model output\s*:?\s*$")
_VERSION = re.compile(r"^\s*(?P<tool>[A-Za-z][\w.-]*) +version\s*:?\s*(?P<version>\d[\w.+-]*)\s*$",
                      re.IGNORECASE)
_MARCH_COMPILE = re.compile(r"End to compile the model with march\s+(?P<march>[\w.-]+?)\.?\s*$")
_DEPS = re.compile(r"^\s*model_deps_info\s*:\s*(?=\{)")
_MARCH_PARAM = re.compile(r"^\s*(?:BPU\s+)?march\s*:\s*(?P<march>[\w.-]+)\s*,?\s*$", re.IGNORECASE)
# `WARNING: ...`, `[WARNING] ...`, `Warn ...`, or a Python warning (`x.py:12: UserWarning: ...`).
_WARNING = re.compile(r"^\W{0,3}(?:WARNING|WARN)\b|^\s*\S+:\d+: \w*Warning: ", re.IGNORECASE)
_PARAM = re.compile(r"^\s*(?P<key>[A-Za-z_][\w&]*)\s*:\s*(?P<value>.*?)\s*$")
_INPUT_INFO = re.compile(r"^\s*-*\s*input info\s*:\s*(?P<name>.*?)\s*-*\s*$", re.IGNORECASE)

# Keys of the input-parameter block (hb_mapper prints one `key : value` per line).
INPUT_PARAMETER_KEYS = frozenset({
    "input_name", "input_type_rt", "input_space&range", "input_layout_rt", "input_type_train",
    "input_layout_train", "norm_type", "input_shape", "input_batch", "mean_value",
    "scale_value", "std_value", "cal_data_dir", "cal_data_type", "separate_batch",
    "separate_name",
})

_MISSING = "--"
# Rule lines: one run, or one run per column.
_RULE_EQ = re.compile(r"^=+(?: +=+)*$")
_RULE_DASH = re.compile(r"^-+(?: +-+)*$")
_HEADER_WORDS = re.compile(r"\S+(?: \S+)*")
# A model_deps_info dict split over continuation lines is joined at most this far.
_DEPS_MAX_LINES = 200
_DEPS_MAX_CHARS = 1024 * 1024

# Column name (lower-case, single-spaced) -> field, per table.
_NODE_COLUMNS = {
    "node": "name", "on": "on", "subgraph": "subgraph", "type": "type",
    "cosine similarity": "cosine", "cosine": "cosine", "threshold": "threshold",
    "datatype": "data_type", "data type": "data_type",
}
_OUTPUT_COLUMNS = {
    "output": "name", "cosine similarity": "cosine", "cosine": "cosine",
    "l1 distance": "l1", "l2 distance": "l2", "chebyshev distance": "chebyshev",
}
_NODE_NUMBERS = ("cosine", "threshold")
_OUTPUT_NUMBERS = ("cosine", "l1", "l2", "chebyshev")


# --- data --------------------------------------------------------------------------------

@dataclass(frozen=True)
class LogValue:
    text: str
    line: int


@dataclass(frozen=True)
class LogNode:
    line: int
    name: str                  # as shown: a long name keeps its leading '...'
    on: str | None             # BPU / CPU
    subgraph: str | None       # id(0); None for '--'
    type: str | None
    cosine: float | None
    threshold: float | None
    data_type: str | None
    extra: tuple[tuple[str, str], ...] = ()   # columns this reader does not know: (header, cell)

    @property
    def name_cut(self) -> bool:
        """True when the log cut the name from the left (it starts with '...')."""
        return self.name.startswith("...")


@dataclass(frozen=True)
class LogOutput:
    line: int
    name: str
    cosine: float | None
    l1: float | None
    l2: float | None
    chebyshev: float | None
    extra: tuple[tuple[str, str], ...] = ()


@dataclass
class InputParameters:
    """One input's `key : value` block; values as written, a trailing comma removed."""
    name: str | None
    line: int
    values: dict[str, LogValue] = field(default_factory=dict)

    def get(self, key: str) -> str | None:
        value = self.values.get(key)
        return value.text if value is not None else None

    def floats(self, key: str) -> tuple[float, ...] | None:
        """`mean_value` / `scale_value` as numbers ('123.675 116.28', '0.0039215,',
        '[0.0171, 0.0175]'); None when absent or not all numbers."""
        text = self.get(key)
        if text is None:
            return None
        parts = [p for p in re.split(r"[\s,;]+", text.strip().strip("[]()")) if p]
        numbers = [parse_number(p) for p in parts]
        if not numbers or any(n is None for n in numbers):
            return None
        return tuple(numbers)  # type: ignore[arg-type]


@dataclass
class ConversionLog:
    display: str
    versions: dict[str, LogValue]            # tool (lower-case) -> version
    march: LogValue | None
    model_deps_info: dict[str, Any] | None
    model_deps_info_line: int | None
    input_parameters: list[InputParameters]
    warnings: list[LogValue]                 # messages as written, prefix stripped
    nodes: list[LogNode]
    node_table_line: int | None              # line of the heading of the node table
    outputs: list[LogOutput]
    output_table_line: int | None
    prefixed_lines: int                      # lines carrying the log prefix
    skipped: Skips = field(default_factory=Skips)   # what could not be read (line and why)

    def node(self, name: str) -> LogNode | None:
        return next((n for n in self.nodes if n.name == name), None)

    def breaks(self, healthy: float = COSINE_HEALTHY) -> list[Fall[LogNode]]:
        return cosine_breaks(self.nodes, healthy)

    def worst_node(self) -> LogNode | None:
        return worst_cosine(self.nodes)

    def worst_output(self) -> LogOutput | None:
        return worst_cosine(self.outputs)

    def first_node(self, following: int = FOLLOWING_NODES) -> FirstNode[LogNode]:
        return first_node(self.nodes, following)

    def summary(self, healthy: float = COSINE_HEALTHY, following: int = FOLLOWING_NODES) -> LogSummary:
        return LogSummary(summarize_cosines(self.nodes, healthy, following), self.worst_output())


# --- reading -----------------------------------------------------------------------------

def read_conversion_log(path: Path | str, display: str | None = None,
                        require_tables: bool = True) -> ConversionLog:
    path = Path(path)
    display = display or path.name
    return parse_conversion_log(load_text(path, display, EXPECTED, MAX_TEXT_BYTES), display,
                                require_tables)


@dataclass
class _Line:
    message: str
    prefixed: bool
    level: str | None


def _strip_prefix(line: str) -> _Line:
    match = _PREFIX.match(line)
    if match:
        return _Line(line[match.end():], True, None)
    match = _CONSOLE_PREFIX.match(line)
    if match:
        return _Line(line[match.end():], True, match.group("level"))
    return _Line(line, False, None)


def parse_conversion_log(text: str, display: str, require_tables: bool = True) -> ConversionLog:
    """The log's facts; InputError when the log has neither table and `require_tables` (the
    default) is set. What cannot be read is skipped and named in `skipped`.

    A log appended over several runs keeps the last of everything (table, version, march,
    model_deps_info). The march comes from `End to compile the model with march X.`, else
    from `model_deps_info['march']`, else from a `march : X` line; versions printed as
    messages win over the `*_version` entries of model_deps_info."""
    log = _LogReader(split_lines(text.removeprefix("\ufeff")), display).read()
    if require_tables and log.node_table_line is None and log.output_table_line is None:
        raise InputError(display, f"no node table ('{NODE_HEADING}') and no output table "
                                  f"('{OUTPUT_HEADING}'); expected {EXPECTED}")
    return log


class _LogReader:
    """One pass over the log's lines (prefix stripped), each message to its reader."""

    def __init__(self, raw: list[str], display: str):
        self.lines = [_strip_prefix(line) for line in raw]
        self.display = display
        self.log = ConversionLog(display, {}, None, None, None, [], [], [], None, [], None,
                                 sum(1 for line in self.lines if line.prefixed))
        self.march_deps: LogValue | None = None
        self.march_param: LogValue | None = None
        self.deps_versions: dict[str, LogValue] = {}
        self.params = _ParamCollector()

    def read(self) -> ConversionLog:
        i = 0
        while i < len(self.lines):
            i = self._message(i)
        log = self.log
        if log.march is None:
            log.march = self.march_deps or self.march_param
        for tool, value in self.deps_versions.items():
            log.versions.setdefault(tool, value)
        log.input_parameters = self.params.groups
        log.skipped.in_file_order()
        return log

    def _message(self, i: int) -> int:
        """Reads the message at line index i; the index of the next one."""
        message = self.lines[i].message
        if _NODE_HEADING.match(message):
            block = _parse_block(self.lines, i, "node table", NODE_HEADING, _NODE_COLUMNS, "node", self.log.skipped)
            self.log.nodes = _table_rows(block, _node, self.log.skipped)
            self.log.node_table_line = i + 1
            return block.end
        if _OUTPUT_HEADING.match(message):
            block = _parse_block(self.lines, i, "output table", OUTPUT_HEADING, _OUTPUT_COLUMNS, "output",
                                 self.log.skipped)
            self.log.outputs = _table_rows(block, _output, self.log.skipped)
            self.log.output_table_line = i + 1
            return block.end
        deps = _DEPS.match(message)
        if deps:
            return self._deps(i, message[deps.end():])
        self._values(i, message)
        return i + 1

    def _deps(self, i: int, text: str) -> int:
        try:
            info, end = _deps_info(self.lines, i, text, self.display)
        except InputError as error:
            self.log.skipped.add_error(error)
            return i + 1
        self.log.model_deps_info, self.log.model_deps_info_line = info, i + 1
        march = info.get("march")
        if isinstance(march, str) and march.strip():
            self.march_deps = LogValue(march.strip(), i + 1)
        self.deps_versions = _deps_versions(info, i + 1)
        return end

    def _values(self, i: int, message: str) -> None:
        """Versions, the march, warnings and input parameters of one message line."""
        version = _VERSION.match(message)
        if version:
            self.log.versions[version.group("tool").lower()] = LogValue(version.group("version"), i + 1)
        compiled = _MARCH_COMPILE.search(message)
        if compiled:
            self.log.march = LogValue(compiled.group("march"), i + 1)
        elif (param := _MARCH_PARAM.match(message)):
            self.march_param = LogValue(param.group("march"), i + 1)
        if self.lines[i].level in ("WARNING", "WARN") or _WARNING.match(message):
            self.log.warnings.append(LogValue(message.rstrip(), i + 1))
        self.params.feed(message, i + 1)


# --- tables ------------------------------------------------------------------------------

_Row = tuple[int, dict[str, str], tuple[tuple[str, str], ...]]   # line, field -> cell, extra


@dataclass
class _Block:
    titles: dict[str, str]      # field -> its header as written
    rows: list[_Row]
    end: int                    # index of the first line after the table


class _Unreadable(ValueError):
    """A row of a table that cannot be read: why (the row is skipped)."""


def _table_rows(block: _Block, make, skips: Skips) -> list:
    """The block's rows as nodes / outputs (`make`); a row whose cells are no values is skipped."""
    rows = []
    for row in block.rows:
        try:
            rows.append(make(row, block.titles))
        except _Unreadable as problem:
            skips.add(row[0], str(problem))
    return rows


def _table_line(line: _Line) -> bool:
    """A line of a table: no log prefix, not blank, no rule of '=' or '-'."""
    text = line.message.strip()
    return not line.prefixed and bool(text) and not _RULE_EQ.match(text) and not _RULE_DASH.match(text)


def _parse_block(lines: list[_Line], heading: int, what: str, heading_text: str,
                 columns: dict[str, str], row_noun: str, skips: Skips) -> _Block:
    """The fixed-width table under the heading at index `heading`; what cannot be read of it
    goes to `skips` (a table without its header: nothing of it is read).

    Layout: optional `=` line, header, `-` line, rows; all without the log prefix. The table
    ends at a blank line, a line with the prefix, a `=` / `-` line or the end of the file."""
    i = _header_index(lines, heading)
    problem = _header_problem(lines, i, what, heading_text)
    if problem:
        skips.add(min(i, len(lines) - 1) + 1, problem)
        return _Block({}, [], heading + 1)
    words = [(m.start(), m.group()) for m in _HEADER_WORDS.finditer(lines[i].message.rstrip())]
    names = [w for _, w in words]
    known = [columns.get(" ".join(name.lower().split())) for name in names]
    if words[0][0] != 0 or known[0] != "name" or "cosine" not in known:
        skips.add(i + 1, f"expected a header with the columns {_expected_columns(row_noun)} for the {what}, "
                         f"found {'  '.join(names)!r} (the first at the start of the line); the table is not read")
        return _Block({}, [], i + 2)
    rows, end = _block_rows(lines, i + 2, [s for s, _ in words], names, known, what, skips)
    if not rows:
        skips.add(i + 1, f"the {what} has a header but no readable rows; expected one row per {row_noun} "
                         "(file cut?)")
    titles = {field_name: name for name, field_name in zip(names, known) if field_name}
    return _Block(titles, rows, end + _is_rule(lines, end, _RULE_EQ))   # and a closing line of '='


def _is_rule(lines: list[_Line], i: int, rule: re.Pattern) -> bool:
    """lines[i] is a rule line (of '=' or '-') without the log prefix."""
    return i < len(lines) and not lines[i].prefixed and bool(rule.match(lines[i].message.strip()))


def _header_index(lines: list[_Line], heading: int) -> int:
    """Where the header of the table under the heading should be: after blank lines and an
    optional line of '='."""
    i = heading + 1
    while i < len(lines) and not lines[i].prefixed and not lines[i].message.strip():
        i += 1
    return i + _is_rule(lines, i, _RULE_EQ)


def _header_problem(lines: list[_Line], i: int, what: str, heading_text: str) -> str:
    """Why lines[i] is not the header of a table with its dash line under it ("" when it is)."""
    if i >= len(lines) or not _table_line(lines[i]):
        return (f"expected the header line of the {what} under '{heading_text}' (a line without the log "
                f"prefix), {_found(lines, i)} (file truncated?)")
    if not _is_rule(lines, i + 1, _RULE_DASH):
        return f"expected a line of '-' under the header of the {what}, {_found(lines, i + 1)} (file truncated?)"
    return ""


def _block_rows(lines: list[_Line], i: int, starts: list[int], names: list[str], known: list[str | None],
                what: str, skips: Skips) -> tuple[list[_Row], int]:
    """The rows from index i on, and the index after them; a row that does not line up is
    cut at its runs of spaces when that gives one cell per column, else skipped."""
    rows = []
    while i < len(lines) and _table_line(lines[i]):
        try:
            cells = _cut(lines[i].message, starts, names, what, i == len(lines) - 1)
        except _Unreadable as problem:
            words = cut_words(lines[i].message, len(starts))
            if words is None or any("  " in cell for cell in words):
                skips.add(i + 1, str(problem))
                i += 1
                continue
            cells = list(words)
        # (a column named twice keeps its last cell)
        fields = {known[k]: cells[k] for k in range(len(cells)) if known[k] is not None}
        extra = tuple((names[k], cells[k]) for k in range(len(cells)) if known[k] is None)
        rows.append((i + 1, fields, extra))
        i += 1
    return rows, i


def _cut(line: str, starts: list[int], names: list[str], what: str, last_line: bool) -> list[str]:
    """Cells of one fixed-width row: column k runs from starts[k] to starts[k + 1]; every
    cell is left-aligned under its header, non-empty ('--' for missing) and has no run of
    two spaces inside it. _Unreadable says why a row is not such a row."""
    text = line.rstrip()
    cells: list[str] = []
    for k, start in enumerate(starts):
        end = starts[k + 1] if k + 1 < len(starts) else len(text)
        if start >= len(text):
            hint = " (file truncated?)" if last_line else " (truncated or garbled row?)"
            raise _Unreadable(f"row of the {what} ends before the column {names[k]!r}; "
                              f"expected a value or '--' under every header{hint}")
        if k > 0 and text[start - 1] != " ":
            raise _misaligned(what, f"the text of column {names[k - 1]!r} runs into column {names[k]!r}")
        cell = text[start:end]
        if not cell.strip():
            raise _Unreadable(f"empty cell in column {names[k]!r} of the {what}; expected a value or '--'")
        if cell[0] == " ":
            raise _misaligned(what, f"the cell of column {names[k]!r} does not start under its header")
        if "  " in cell.strip():
            raise _misaligned(what, f"column {names[k]!r} holds more than one value")
        cells.append(cell.strip())
    return cells


def _misaligned(what: str, detail: str) -> _Unreadable:
    return _Unreadable(f"row does not line up with the columns of the {what}: {detail}; "
                       "expected fixed-width cells starting under each header word "
                       "(garbled or truncated row?)")


def _found(lines: list[_Line], i: int) -> str:
    if i >= len(lines):
        return "but the file ends"
    shown = lines[i].message.strip()[:60]
    if lines[i].prefixed:
        return f"found the log line {shown!r}"
    return f"found {shown!r}" if shown else "found a blank line"


def _expected_columns(row_noun: str) -> str:
    if row_noun == "node":
        return "'Node  ON  Subgraph  Type  Cosine Similarity  Threshold  DataType'"
    return "'Output  Cosine Similarity  L1 Distance  L2 Distance  Chebyshev Distance'"


def _text(cell: str | None) -> str | None:
    return None if cell is None or cell == _MISSING else cell


def _number(cell: str | None, column: str, what: str) -> float | None:
    if cell is None or cell == _MISSING:
        return None
    value = parse_number(cell)
    if value is None:
        raise _Unreadable(f"expected a number or '--' in column {column!r} of the {what}, found {cell[:60]!r}")
    return value


def _node(row: _Row, titles: dict[str, str]) -> LogNode:
    line, cells, extra = row
    numbers = {f: _number(cells.get(f), titles.get(f, f), "node table") for f in _NODE_NUMBERS}
    return LogNode(line, cells["name"], _text(cells.get("on")), _text(cells.get("subgraph")),
                   _text(cells.get("type")), numbers["cosine"], numbers["threshold"],
                   _text(cells.get("data_type")), extra)


def _output(row: _Row, titles: dict[str, str]) -> LogOutput:
    line, cells, extra = row
    numbers = {f: _number(cells.get(f), titles.get(f, f), "output table") for f in _OUTPUT_NUMBERS}
    return LogOutput(line, cells["name"], numbers["cosine"], numbers["l1"], numbers["l2"],
                     numbers["chebyshev"], extra)


# --- model_deps_info ---------------------------------------------------------------------

def _deps_info(lines: list[_Line], i: int, text: str, display: str) -> tuple[dict[str, Any], int]:
    """The dict literal after `model_deps_info:`, joined with continuation lines while it
    is incomplete; returns it and the index after its last line."""
    end = i + 1
    while True:
        if len(text) > _DEPS_MAX_CHARS:
            raise InputError(display, f"model_deps_info is longer than {_DEPS_MAX_CHARS} "
                                      "characters; expected a short Python dict literal", i + 1)
        value, complete = _literal(text)
        if complete:
            break
        if end >= len(lines) or lines[end].prefixed or end - i >= _DEPS_MAX_LINES:
            raise InputError(display, "model_deps_info is not a complete Python dict literal; "
                                      "expected \"model_deps_info: {'march': 'bayes-e', ...}\" "
                                      "(truncated or garbled?)", i + 1)
        text += "\n" + lines[end].message
        end += 1
    if value is _INVALID or not isinstance(value, dict):
        raise InputError(display, "model_deps_info is not a Python dict of literals; "
                                  "expected \"model_deps_info: {'march': 'bayes-e', ...}\"", i + 1)
    return {str(k): v for k, v in value.items()}, end


_INVALID = object()


def _literal(text: str) -> tuple[Any, bool]:
    """(value, True) for a literal, (_INVALID, True) for text that more lines cannot fix,
    (None, False) while the brackets are still open (more lines may complete it)."""
    try:
        with warnings.catch_warnings():
            # e.g. "invalid decimal literal" SyntaxWarnings of a garbled dict
            warnings.simplefilter("ignore")
            return ast.literal_eval(text.strip()), True
    except SyntaxError:
        return (None, False) if _open_brackets(text) else (_INVALID, True)
    except (ValueError, TypeError, MemoryError, RecursionError):
        return _INVALID, True


def _open_brackets(text: str) -> bool:
    """More opening than closing brackets, outside quoted strings (a rough check)."""
    depth = 0
    quote: str | None = None
    escaped = False
    for ch in text:
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch in "{[(":
            depth += 1
        elif ch in "}])":
            depth -= 1
    return depth > 0


def _deps_versions(info: dict[str, Any], line: int) -> dict[str, LogValue]:
    """`hbdk_version` / `horizon_nn_version` / ... entries as tool -> version."""
    found = {}
    for key, value in info.items():
        if key.lower().endswith("_version") and isinstance(value, (str, int, float)) \
                and not isinstance(value, bool) and str(value).strip():
            found[key.lower().removesuffix("_version")] = LogValue(str(value).strip(), line)
    return found


# --- input parameters --------------------------------------------------------------------

class _ParamCollector:
    """Groups `key : value` lines per input: a group starts at `---input info : NAME---`,
    at a second `input_name`, or when a key repeats within the current group."""

    def __init__(self) -> None:
        self.groups: list[InputParameters] = []
        self.current: InputParameters | None = None

    def feed(self, message: str, line: int) -> None:
        info = _INPUT_INFO.match(message)
        if info:
            name = info.group("name").strip()
            if name == "end" or name.endswith(" end"):
                self.current = None
            elif name:
                self._start(name, line)
            return
        match = _PARAM.match(message)
        if not match or match.group("key").lower() not in INPUT_PARAMETER_KEYS:
            return
        key = match.group("key").lower()
        value = match.group("value").removesuffix(",").rstrip()
        group = self.current
        if group is None or key in group.values:
            group = self._start(None, line)
        if key == "input_name" and group.name is None:
            group.name = value
        group.values[key] = LogValue(value, line)

    def _start(self, name: str | None, line: int) -> InputParameters:
        self.current = InputParameters(name, line)
        self.groups.append(self.current)
        return self.current


# --- cosine helpers (shared with quant_info.py) ------------------------------------------

class HasCosine(Protocol):
    @property
    def cosine(self) -> float | None: ...


class ScoredNode(HasCosine, Protocol):
    @property
    def name(self) -> str: ...

    @property
    def type(self) -> str | None: ...


N = TypeVar("N", bound=ScoredNode)
C = TypeVar("C", bound=HasCosine)


@dataclass(frozen=True)
class Fall(Generic[N]):
    """A node whose cosine leaves the healthy state, and by how much (the rules judge
    whether that is a sudden fall)."""
    node: N
    before: N | None     # the healthy node before it; None: the first node with a cosine,
                         # measured against 1.0 (both models see the same input there)
    drop: float          # cosine before (or 1.0) minus the node's cosine; inf for nan


@dataclass(frozen=True)
class FirstNode(Generic[N]):
    """The first (preprocess) node against the nodes after it (docs/file_formats.md R4):
    `node` is the worst of the leading preprocess nodes (or the first node with a cosine
    when the model has none); `following` the nodes with a cosine after it."""
    node: N | None
    following: tuple[N, ...]

    @property
    def cosine(self) -> float | None:
        return self.node.cosine if self.node is not None else None

    @property
    def following_min(self) -> float | None:
        values = [n.cosine for n in self.following if n.cosine is not None]
        return min(values, key=_rank) if values else None


@dataclass(frozen=True)
class CosineSummary(Generic[N]):
    breaks: list[Fall[N]]
    worst: N | None
    first_node: FirstNode[N]


@dataclass(frozen=True)
class LogSummary:
    nodes: CosineSummary[LogNode]
    worst_output: LogOutput | None


def _healthy(cosine: float | None, healthy: float) -> bool:
    return cosine is not None and math.isfinite(cosine) and cosine >= healthy


def _broken(cosine: float) -> bool:
    return not math.isfinite(cosine)


def _rank(cosine: float) -> float:
    """Sort key: nan (a broken comparison) ranks below every number."""
    return -math.inf if math.isnan(cosine) else cosine


def cosine_breaks(nodes: Iterable[N], healthy: float = COSINE_HEALTHY) -> list[Fall[N]]:
    """The first MAX_BREAKS nodes whose cosine is not healthy (below `healthy`, or nan / inf)
    while the node with a cosine before them is healthy, each with its fall from that node
    (the first node with a cosine is measured against 1.0). Nodes without a cosine ('--')
    are skipped; nodes that merely stay degraded after a fall are not breaks."""
    out: list[Fall[N]] = []
    before: N | None = None
    for node in nodes:
        cosine = node.cosine
        if cosine is None:
            continue
        if (before is None or _healthy(before.cosine, healthy)) and not _healthy(cosine, healthy):
            reference = before.cosine if before is not None else 1.0
            assert reference is not None
            out.append(Fall(node, before, math.inf if _broken(cosine) else reference - cosine))
            if len(out) == MAX_BREAKS:
                break
        before = node
    return out


def worst_cosine(items: Iterable[C]) -> C | None:
    """The item with the lowest cosine (nan lowest of all; the first of equals); None when
    no item has a cosine."""
    scored = [item for item in items if item.cosine is not None]
    if not scored:
        return None
    return min(scored, key=lambda item: _rank(item.cosine))  # type: ignore[arg-type]


def is_preprocess_node(node: ScoredNode) -> bool:
    """The preprocessing node hb_mapper inserts per input (HZ_PREPROCESS_FOR_<input>,
    type HzSQuantizedPreprocess / HzPreprocess); a name cut from the left still shows
    'PROCESS_FOR_' or the type."""
    name = node.name.upper()
    return ("PREPROCESS" in name or "PROCESS_FOR_" in name
            or "preprocess" in (node.type or "").lower())


def first_node(nodes: Sequence[N], following: int = FOLLOWING_NODES) -> FirstNode[N]:
    """The worst leading preprocess node (or the first node with a cosine when there is none)
    and the next `following` nodes with a cosine (at least one)."""
    scored = [n for n in nodes if n.cosine is not None]
    if not scored:
        return FirstNode(None, ())
    lead = 0
    while lead < len(scored) and is_preprocess_node(scored[lead]):
        lead += 1
    lead = max(lead, 1)
    node = min(scored[:lead], key=lambda n: _rank(n.cosine))  # type: ignore[arg-type]
    return FirstNode(node, tuple(scored[lead:lead + max(following, 1)]))


def summarize_cosines(nodes: Sequence[N], healthy: float = COSINE_HEALTHY,
                      following: int = FOLLOWING_NODES) -> CosineSummary[N]:
    return CosineSummary(cosine_breaks(nodes, healthy), worst_cosine(nodes), first_node(nodes, following))


# --- facts (probes/probe_output.py) -------------------------------------------------------

def add_facts(found, out) -> None:
    """An hb_mapper / hb_compile conversion log: versions, march and input parameters, the
    per-node cosine reading, warnings verbatim."""
    _add_log_facts(read_conversion_log(found.path, found.display, require_tables=False), found, out)


def add_pasted_facts(text: str, found, out) -> None:
    """The same facts of a conversion log pasted into the user's words (the prose around it
    is passed by, as the log's own unprefixed lines are)."""
    _add_log_facts(parse_conversion_log(text, found.display, require_tables=False), found, out)


def _add_log_facts(log: ConversionLog, found, out) -> None:
    from j6doctor.probes.probe_output import warning_text

    out.skipped(found, log.skipped)
    facts = out.facts
    for tool, value in sorted(log.versions.items()):
        facts.add_version(tool, value.text, out.source(found, line=value.line, key=tool),
                          f"{found.display}:{value.line} 记录")
    if log.march is not None:
        source = out.source(found, line=log.march.line, key="march")
        facts.add("artifact_march", {"path": found.display, "march": log.march.text.lower(),
                                     "what": "转换（编译）时的 march"}, source)
        facts.add_platform(log.march.text, source, f"{found.display}:{log.march.line} 记录的 march", note=False)
    multi = len(log.input_parameters) > 1
    for block in log.input_parameters[:out.limit]:
        for key, value in block.values.items():
            out.add("input_param", {"name": key, "value": value.text.strip().rstrip(",").lower(),
                                    "input": (block.name or "") if multi else ""},
                    found, line=value.line, key=key)
    for warning in log.warnings[:out.limit]:
        out.add("tool_warning", {"path": found.display, "tool": "hb_mapper / hb_compile",
                                 "text": warning_text(warning.text)}, found, line=warning.line)
    add_cosine_facts(found, out, "conversion_log", log.nodes, log.outputs, log.summary().nodes)


def add_cosine_facts(found, out, tool: str, nodes: Sequence[N], outputs: Sequence, summary: CosineSummary[N]) -> None:
    """The per-node cosine reading of a conversion log or a *_quant_info.json, as measures:
    the nodes leaving the healthy state (with their fall), the worst node and output, the
    first node against the next ones."""
    from j6doctor.probes.probe_output import finite

    if not nodes:
        return
    worst, first = summary.worst, summary.first_node
    worst_output = min((o for o in outputs if o.cosine is not None), key=lambda o: o.cosine, default=None)
    out.keep("cosines", found, (tool, [(n.name, n.cosine) for n in nodes]))
    out.add("layer_cosines", {
        "path": found.display, "tool": tool, "rows": len(nodes),
        "worst_node": worst.name if worst else "", "worst_cosine": finite(worst.cosine if worst else None),
        "worst_output": worst_output.name if worst_output else "",
        "worst_output_cosine": finite(worst_output.cosine if worst_output else None),
        "first_node": first.node.name if first.node else "", "first_node_cosine": finite(first.cosine),
        "first_node_nan": first.cosine is not None and math.isnan(first.cosine),
        "next_cosine": finite(first.following_min),
    }, found, line=(worst or nodes[0]).line, key="nodes")
    index = {id(n): k for k, n in enumerate(nodes)}
    add_cosine_breaks(found, out, tool, [(index[id(f.node)], f.node.name, f.node.cosine, f.drop, f.node.line)
                                         for f in summary.breaks])


def add_cosine_breaks(found, out, tool: str, breaks: Sequence[tuple[int, str, float | None, float, int]]) -> None:
    """`cosine_break` facts: (position among the nodes, name, cosine, fall, line) of each node
    where a per-node cosine table leaves the healthy state; a nan / inf cosine has no fall."""
    from j6doctor.probes.probe_output import finite

    for position, name, cosine, fall, line in breaks:
        out.add("cosine_break", {
            "path": found.display, "tool": tool, "index": position, "node": name,
            "cosine": finite(cosine), "cosine_fall": finite(fall),
            "cosine_nonfinite": cosine is not None and not math.isfinite(cosine),
        }, found, line=line, key=name)
