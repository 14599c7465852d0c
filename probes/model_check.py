"""`model_check_result.txt` (written by prepare()'s model check, docs/file_formats.md §9) → a
ModelCheck with the red flags of §13.6 as Signals.

Two layouts are read: the newer one ("Each module called times:", graph in a separate
fx_graph.txt) and profiler vB ("not used" / "used multi times" sub-sections and a trailing
"Graph:" table). Plugin 3.0.x files (docs/file_formats.md R1) open with a header of the plugin
and profiler versions and the march the model was prepared for, and add a "Gemm input
dtypes statistics" table. Sections are found by their literal heading lines; any other
block is skipped, so an unknown extra section does not stop the parse.

Real checks are pasted and excerpted: a section whose table cannot be read, a row that does
not line up or holds no count, a missing required section or a heading cut at the end are
skipped and named in `ModelCheck.skipped` (line and why), and the rest is read. A file
without any known section heading is refused (InputError).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from j6doctor.probes.fx_graph import FxGraph, graph_signals, opcode_counts, read_fx_table
from j6doctor.probes.input_error import InputError, Skips
from j6doctor.probes.module_signal import Signal
from j6doctor.probes.text_file import load_text, split_lines
from j6doctor.probes.text_tables import Table, is_psql_start, is_simple_start, parse_psql, parse_simple, skip_blank

WHAT = "model_check_result.txt"
# A table row per layer: a few MB for large models; parsed rows cost about 20 times the
# file size, so the limit keeps a wrong file from taking gigabytes.
MAX_TEXT_BYTES = 16 * 1024 * 1024
DEFAULT_AVERAGING_CONSTANT = 0.01

# Literal heading line → section key (docs/file_formats.md §9 table).
HEADINGS = {
    "All fusable modules are fused in model!": "all_fused",
    "Fusable modules are listed below:": "unfused",
    "All modules in the model run exactly once.": "run_once",
    "Modules below are not used:": "not_used",
    "Modules below are used multi times:": "multi_used",
    "Each module called times:": "called_times",
    "input dtype statistics:": "input_dtype",
    "output dtype statistics:": "output_dtype",
    "Gemm input dtypes statistics(inputxweight):": "gemm_dtype",
    "Each layer out qconfig:": "layer_qconfig",
    "Weight qconfig:": "weight_qconfig",
    "Please check if these OPs qconfigs are expected..": "messages",
    "Graph:": "graph",
}
_VB_ONLY = {"run_once", "not_used", "multi_used", "graph"}

_LAYER_COLUMNS = {"module name": "module", "module type": "type", "input dtype": "input_dtype",
                  "out dtype": "out_dtype", "ch_axis": "ch_axis", "observer": "observer"}
_WEIGHT_COLUMNS = {"module name": "module", "module type": "type",
                   "weight dtype": "weight_dtype", "ch_axis": "ch_axis", "observer": "observer"}
_MESSAGE_COLUMNS = {"module name": "module", "module type": "type", "msg": "msg"}

_SHARED_SUFFIX = re.compile(r"\s*\(shared\)$")
# "neck.add[add]" (FloatFunctional method) and "dequant(1)" (k-th reuse) → "neck.add", "dequant".
_NAME_SUFFIX = re.compile(r"(\[[^\]]*\]|\(\d+\))+$")
_AVERAGING = re.compile(r"averaging_constant\s*=\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)")
_FIXED_SCALE = re.compile(r"^Fixed (?:input )?scale\b")
_WEIGHT_MSG = re.compile(r"^(\S+) weight!$")
_FLOAT_DTYPE = re.compile(r"torch\.(?:float|half|bfloat)\w*")
_STUBS = {"QuantStub", "DeQuantStub", "Quantize", "DeQuantize"}
# Header lines of plugin 3.0.x checks: "horizon_plugin_pytorch version: 3.0.5+cu126.torch260".
_HEADER = re.compile(r"^(horizon_plugin_pytorch|horizon_plugin_profiler) version:\s*(\S+)\s*$|^current march:\s*(\S+)\s*$")
# "Unexpect gemm input torch.float32xqint8" (spelling as printed): a gemm fed float data.
_FLOAT_GEMM_MSG = re.compile(r"^Unexpect(?:ed)? gemm input (torch\.\w+x\w+)")
# Layer types whose inputs are multiplied by weights: a float input means a missing QuantStub.
_GEMM_TYPES = re.compile(r"conv|linear|matmul|gemm", re.IGNORECASE)
_DEQUANT_STUBS = {"DeQuantStub", "DeQuantize"}


@dataclass
class ModelCheck:
    display: str
    layout: str                        # "newer" | "vB"
    all_fused: bool
    unfused_groups: list[list[str]]
    called_times: dict[str, int]
    unused_modules: list[str]
    shared_modules: dict[str, int]
    layer_qconfig: list[dict[str, str]]
    dtype_columns: list[str]
    high_precision_outputs: list[str]
    nondefault_averaging_constant: dict[str, float]
    messages: list[tuple[str, str]]
    has_embedded_graph: bool
    signals: list[Signal]
    # Additions beyond the brief: the weight table and the vB embedded graph itself.
    weight_qconfig: list[dict[str, str]] = field(default_factory=list)
    embedded_graph: FxGraph | None = None
    # The R1 header: name ("horizon_plugin_pytorch", "horizon_plugin_profiler", "march") →
    # (value, line). Empty for older checks without it.
    header: dict[str, tuple[str, int]] = field(default_factory=dict)
    skipped: Skips = field(default_factory=Skips)   # what could not be read (line and why)


@dataclass
class _Section:
    key: str
    line: int          # 1-based line of the heading
    start: int         # index of the first body line
    end: int           # index just after the body


@dataclass
class _RowLines:
    """File lines of the rows behind each parsed item, so signals can point at them."""
    groups: list[int] = field(default_factory=list)
    shared_groups: set[int] = field(default_factory=set)   # groups whose first name had "(shared)"
    called: dict[str, int] = field(default_factory=dict)
    layer: list[int] = field(default_factory=list)
    weight: list[int] = field(default_factory=list)
    message: list[int] = field(default_factory=list)
    # (module type, column, count, line) of the input-dtype and gemm-dtype statistics
    input_dtype: list[tuple[str, str, int, int]] = field(default_factory=list)
    gemm: list[tuple[str, str, int, int]] = field(default_factory=list)


def read_model_check(path: Path, display: str | None = None) -> ModelCheck:
    display = display or path.name
    lines = split_lines(load_text(path, display, WHAT, MAX_TEXT_BYTES))
    sections = _find_sections(lines)
    if not sections:
        raise InputError(display, f"not a {WHAT}: expected its section headings, e.g. "
                                  "'Fusable modules are listed below:' and 'Each layer out qconfig:'")
    check = ModelCheck(display=display, layout=_layout(sections), all_fused=False,
                       unfused_groups=[], called_times={}, unused_modules=[],
                       shared_modules={}, layer_qconfig=[], dtype_columns=[],
                       high_precision_outputs=[], nondefault_averaging_constant={},
                       messages=[], has_embedded_graph=False, signals=[])
    where = _RowLines()
    check.header = _read_header(lines, sections[0].line - 1)
    for sec in sections:
        try:
            _read_section(lines, sec, display, check, where)
        except InputError as error:
            heading = next(h for h, k in HEADINGS.items() if k == sec.key)
            check.skipped.add(error.line, f"{error.message}; the section '{heading}' is not read")
    _require_sections(sections, check.skipped)
    _note_cut_heading(lines, check.skipped)
    check.skipped.in_file_order()
    check.unused_modules = [m for m, n in check.called_times.items() if n == 0]
    check.shared_modules = {m: n for m, n in check.called_times.items() if n > 1}
    check.high_precision_outputs = _high_precision_outputs(check.layer_qconfig)
    check.nondefault_averaging_constant = _averaging_constants(check.layer_qconfig)
    check.signals = _signals(check, where)
    return check


def _read_section(lines: list[str], sec: _Section, display: str, check: ModelCheck,
                  where: _RowLines) -> None:
    skips = check.skipped
    if sec.key == "all_fused":
        check.all_fused = True
    elif sec.key == "unfused":
        _read_unfused(lines, sec, display, check, where)
    elif sec.key in ("not_used", "multi_used", "called_times"):
        _read_called(lines, sec, display, check, where.called)
    elif sec.key == "input_dtype":
        check.dtype_columns = _read_dtype_stats(lines, sec, display, skips)
        where.input_dtype = _dtype_counts(lines, sec, display, Skips())   # its rows are noted just above
    elif sec.key == "output_dtype":
        _read_dtype_stats(lines, sec, display, skips)   # validated only; counts are not needed
    elif sec.key == "gemm_dtype":
        where.gemm = _dtype_counts(lines, sec, display, skips)
    elif sec.key == "layer_qconfig":
        _read_rows(lines, sec, display, _LAYER_COLUMNS, check.layer_qconfig, where.layer, skips)
    elif sec.key == "weight_qconfig":
        _read_rows(lines, sec, display, _WEIGHT_COLUMNS, check.weight_qconfig, where.weight, skips)
    elif sec.key == "messages":
        rows: list[dict[str, str]] = []
        _read_rows(lines, sec, display, _MESSAGE_COLUMNS, rows, where.message, skips)
        check.messages += [(r["module"], r["msg"]) for r in rows]
    elif sec.key == "graph":
        check.embedded_graph = _read_graph(lines, sec, display)
        check.has_embedded_graph = True
        skips.extend(check.embedded_graph.skipped.kept)
    # "run_once" carries no table: nothing to read.


# ---------------------------------------------------------------- sections

def _read_header(lines: list[str], end: int) -> dict[str, tuple[str, int]]:
    """The version / march lines before the first section (plugin 3.0.x)."""
    header: dict[str, tuple[str, int]] = {}
    for i in range(max(0, min(end, len(lines)))):
        match = _HEADER.match(lines[i].strip())
        if match:
            name = match.group(1) or "march"
            header.setdefault(name, (match.group(2) or match.group(3), i + 1))
    return header


def _find_sections(lines: list[str]) -> list[_Section]:
    """Known heading lines split the file; text before the first one is ignored."""
    sections: list[_Section] = []
    for i, line in enumerate(lines):
        key = HEADINGS.get(line.strip())
        if key is None:
            continue
        if sections:
            sections[-1].end = i
        sections.append(_Section(key, i + 1, i + 1, len(lines)))
    return sections


def _require_sections(sections: list[_Section], skips: Skips) -> None:
    keys = {s.key for s in sections}
    missing = []
    if not keys & {"all_fused", "unfused"}:
        missing.append("'All fusable modules are fused in model!' or "
                       "'Fusable modules are listed below:'")
    if "layer_qconfig" not in keys:
        missing.append("'Each layer out qconfig:'")
    if missing:
        skips.add(None, f"incomplete {WHAT} (an excerpt, or cut?): missing section " + " and ".join(missing))


def _note_cut_heading(lines: list[str], skips: Skips) -> None:
    """A file that ends in the first part of a heading was cut while being written."""
    last = len(lines) - 1
    while last >= 0 and not lines[last].strip():
        last -= 1
    tail = lines[last].strip() if last >= 0 else ""
    if tail and tail not in HEADINGS and any(h.startswith(tail) for h in HEADINGS):
        skips.add(last + 1, f"file ends in an incomplete section heading {tail!r} (cut?)")


def _layout(sections: list[_Section]) -> str:
    keys = {s.key for s in sections}
    return "vB" if keys & _VB_ONLY and "called_times" not in keys else "newer"


def _first_table(lines: list[str], sec: _Section, display: str, style: str, skips: Skips) -> Table:
    """The table right under a heading (blank lines allowed in between); its skipped rows
    go to `skips`."""
    i = skip_blank(lines, sec.start, sec.end)
    starts = is_psql_start(lines, i) if style == "psql" else is_simple_start(lines, i)
    if i >= sec.end or not starts:
        heading = next(h for h, k in HEADINGS.items() if k == sec.key)
        raise InputError(display, f"expected a {style} table under '{heading}'",
                         i + 1 if i < len(lines) else sec.line)
    parse = parse_psql if style == "psql" else parse_simple
    table = parse(lines[:sec.end], i, 1, display)
    skips.extend(table.skipped)
    return table


def _columns(table: Table, wanted: dict[str, str], display: str, line: int) -> dict[str, int]:
    """Field name → column index; the first wanted column (the name) is required."""
    found = {key: table.column(header) for header, key in wanted.items()}
    first_header, first_key = next(iter(wanted.items()))
    if found[first_key] is None:
        raise InputError(display, f"table has no '{first_header}' column; expected columns "
                                  + ", ".join(repr(h) for h in wanted), line)
    return {key: idx for key, idx in found.items() if idx is not None}


# ---------------------------------------------------------------- section readers

def _read_unfused(lines: list[str], sec: _Section, display: str, check: ModelCheck,
                  where: _RowLines) -> None:
    """One simple `name, type` table per unfused group, each closed by an all-blank row."""
    i = skip_blank(lines, sec.start, sec.end)
    if not is_simple_start(lines, i) or i >= sec.end:
        raise InputError(display, "expected a 'name  type' table of unfused modules under "
                                  "'Fusable modules are listed below:'", min(i, len(lines) - 1) + 1)
    while i < sec.end and is_simple_start(lines, i):
        table = parse_simple(lines[:sec.end], i, 1, display)
        check.skipped.extend(table.skipped)
        col = _columns(table, {"name": "name"}, display, i + 1)["name"]
        group = [r.cells[col] for r in table.rows if r.cells[col]]
        if group:
            if _SHARED_SUFFIX.search(group[0]):
                where.shared_groups.add(len(check.unfused_groups))
            check.unfused_groups.append([_SHARED_SUFFIX.sub("", n) for n in group])
            where.groups.append(table.rows[0].line)
        i = skip_blank(lines, table.end, sec.end)


def _read_called(lines: list[str], sec: _Section, display: str, check: ModelCheck,
                 called_lines: dict[str, int]) -> None:
    table = _first_table(lines, sec, display, "simple", check.skipped)
    cols = _columns(table, {"name": "name", "called times": "times"}, display, sec.line + 1)
    if "times" not in cols:
        raise InputError(display, "expected columns 'name' and 'called times'", sec.line + 1)
    for row in table.rows:
        name, times = row.cells[cols["name"]], row.cells[cols["times"]]
        if not re.fullmatch(r"\d+", times):
            check.skipped.add(row.line, f"expected an integer 'called times' for {name!r}, got {times!r} "
                                        "(cut row?)")
            continue
        check.called_times[name] = int(times)
        called_lines[name] = row.line


def _read_dtype_stats(lines: list[str], sec: _Section, display: str, skips: Skips) -> list[str]:
    table = _stats_table(lines, sec, display, skips)
    return list(table.headers[1:])


def _stats_table(lines: list[str], sec: _Section, display: str, skips: Skips) -> Table:
    """A statistics grid: `module type` (or `Module Type`) then integer counts per column;
    a row with a cell that is no count is left out (and noted)."""
    table = _first_table(lines, sec, display, "psql", skips)
    if table.column("module type") != 0:
        raise InputError(display, "expected a dtype statistics table starting with a "
                                  "'module type' column", sec.line + 2)
    rows = []
    for row in table.rows:
        bad = [c for c in row.cells[1:] if not re.fullmatch(r"\d+", c)]
        if bad:
            skips.add(row.line, f"expected integer counts per dtype, got {bad[0]!r}")
        else:
            rows.append(row)
    return Table(table.headers, rows, table.end, table.header_line, table.skipped)


def _dtype_counts(lines: list[str], sec: _Section, display: str, skips: Skips) -> list[tuple[str, str, int, int]]:
    """(module type, column, count, line) of every non-zero cell but the `total` row."""
    table = _stats_table(lines, sec, display, skips)
    return [(row.cells[0], header, int(cell), row.line)
            for row in table.rows if row.cells[0].strip().lower() != "total"
            for header, cell in zip(table.headers[1:], row.cells[1:]) if int(cell) > 0]


def _read_rows(lines: list[str], sec: _Section, display: str, wanted: dict[str, str],
               out: list[dict[str, str]], out_lines: list[int], skips: Skips) -> None:
    table = _first_table(lines, sec, display, "psql", skips)
    cols = _columns(table, wanted, display, sec.line + 2)
    for row in table.rows:
        out.append({key: row.cells[cols[key]] if key in cols else "" for key in wanted.values()})
        out_lines.append(row.line)


def _read_graph(lines: list[str], sec: _Section, display: str) -> FxGraph:
    i = skip_blank(lines, sec.start, sec.end)
    if i >= sec.end:
        raise InputError(display, "expected the FX graph table under 'Graph:'", sec.line)
    skips = Skips()
    nodes = read_fx_table(lines[i:sec.end], i + 1, display, skips)
    return FxGraph(display, nodes, opcode_counts(nodes), graph_signals(nodes), skips)


# ---------------------------------------------------------------- derived facts

def base_module(name: str) -> str:
    """Module path without the `[method]` / `(k)` suffixes of the qconfig table."""
    return _NAME_SUFFIX.sub("", name)


def class_leaf(type_text: str) -> str:
    """`<class 'a.b.Conv2d'>` or `a.b.Conv2d` → `Conv2d`."""
    m = re.fullmatch(r"<class '([^']*)'>", type_text.strip())
    return (m.group(1) if m else type_text.strip()).rsplit(".", 1)[-1]


def _is_float(dtype_list: str) -> bool:
    return bool(_FLOAT_DTYPE.search(dtype_list)) and "qint" not in dtype_list


def _high_precision_outputs(rows: list[dict[str, str]]) -> list[str]:
    """Output layers left in high precision: `activation = None` in ch_axis, or a non-stub
    op turning quantized input into float output (GEMM high-precision output). Stubs and
    `qconfig = None` float ops are not counted: they are not quantized layers."""
    result: list[str] = []
    for row in rows:
        ch_axis = row["ch_axis"]
        hp = ch_axis.startswith("activation = None") or (
            class_leaf(row["type"]) not in _STUBS and _is_float(row["out_dtype"])
            and "qint" in row["input_dtype"] and not ch_axis.startswith(("qconfig = None", "fakecast"))
            and "FakeCast" not in ch_axis)
        if hp and row["module"] not in result:
            result.append(row["module"])
    return result


def _averaging_constant(observer: str) -> float | None:
    m = _AVERAGING.search(observer)
    return float(m.group(1)) if m else None


def _averaging_constants(rows: list[dict[str, str]]) -> dict[str, float]:
    """Activation observers only: the red flag of §13.6 is about output scales in QAT."""
    result: dict[str, float] = {}
    for row in rows:
        value = _averaging_constant(row["observer"])
        if value is not None and abs(value - DEFAULT_AVERAGING_CONSTANT) > 1e-12:
            result[row["module"]] = value
    return result


# ---------------------------------------------------------------- signals

def _signals(check: ModelCheck, where: _RowLines) -> list[Signal]:
    signals: list[Signal] = []
    for k, (group, line) in enumerate(zip(check.unfused_groups, where.groups)):
        detail = "not fused: " + " + ".join(group)
        if k in where.shared_groups:
            detail += f" ({group[0]} is shared, so it cannot be fused in place)"
        signals.append(Signal("unfused", group[0], detail, line))
    signals += _called_signals(check, where.called)
    signals += _layer_signals(check.layer_qconfig, where.layer)
    signals += _float_gemm_signals(where)
    signals += _message_signals(check.messages, where.message)
    signals += _weight_table_signals(check.weight_qconfig, where.weight, signals)
    return signals


def _called_signals(check: ModelCheck, called_lines: dict[str, int]) -> list[Signal]:
    types = {base_module(r["module"]): class_leaf(r["type"]) for r in check.layer_qconfig}
    signals = [Signal("unused_module", m, "called 0 times (dead branch or missing input key?)",
                      called_lines[m]) for m in check.unused_modules]
    for module, times in check.shared_modules.items():
        leaf = types.get(module, "")
        if leaf in ("QuantStub", "Quantize"):
            detail = (f"called {times} times; shared QuantStub: all its inputs get one scale "
                      "(worst case of sharing)")
        elif leaf in _DEQUANT_STUBS:
            detail = f"called {times} times; shared DeQuantStub (harmless)"
        else:
            detail = f"called {times} times; calls share one set of quantization parameters"
        signals.append(Signal("shared_module", module, detail, called_lines[module], leaf))
    return signals


def _float_gemm_signals(where: _RowLines) -> list[Signal]:
    """A conv / linear / matmul type counted with a float input (input dtype statistics) or
    a float × weight combination (gemm statistics): a quantized gemm fed float data."""
    signals: list[Signal] = []
    for module_type, column, count, line in where.input_dtype + where.gemm:
        if "float" in column and _GEMM_TYPES.search(class_leaf(module_type)):
            signals.append(Signal("float_gemm_input", "", f"{count} input(s) of dtype {column} "
                                  "(no QuantStub in front?)", line, class_leaf(module_type)))
    return signals


def _layer_signals(rows: list[dict[str, str]], lines: list[int]) -> list[Signal]:
    signals: list[Signal] = []
    previous: dict[str, str] | None = None
    for row, line in zip(rows, lines):
        module, leaf = row["module"], class_leaf(row["type"])
        value = _averaging_constant(row["observer"])
        if value == 0:
            signals.append(Signal("scale_frozen", module, "averaging_constant=0", line))
        elif value is not None and abs(value - DEFAULT_AVERAGING_CONSTANT) > 1e-12:
            signals.append(Signal("averaging_constant", module,
                                  f"averaging_constant={_printed_averaging(row['observer'])}", line))
        if leaf in _DEQUANT_STUBS and "qint8" in row["input_dtype"]:
            signals.append(Signal("dequant_input_qint8", module,
                                  f"input dtype {row['input_dtype']}: output not high precision", line))
        if (leaf not in _STUBS and "torch.float32" in row["input_dtype"]
                and not _fused_conv_relu_link(previous, row)):
            signals.append(Signal("float_input_op", module,
                                  f"input dtype {row['input_dtype']} (missing QuantStub? runs as float)", line))
        previous = row
    return signals


def _printed_averaging(observer: str) -> str:
    """The averaging_constant exactly as printed."""
    m = _AVERAGING.search(observer)
    return m.group(1) if m else ""


def _fused_conv_relu_link(previous: dict[str, str] | None, row: dict[str, str]) -> bool:
    """The fp32 tensor between a conv/linear (activation=None) and the ReLU right after it
    is an internal link of a fused pair, not a missing QuantStub."""
    if previous is None or "relu" not in class_leaf(row["type"]).lower():
        return False
    prev_leaf = class_leaf(previous["type"]).lower()
    return (("conv" in prev_leaf or "linear" in prev_leaf)
            and "torch.float32" in previous["out_dtype"])


def _message_signals(messages: list[tuple[str, str]], lines: list[int]) -> list[Signal]:
    """The `Msg` column: known messages by kind, any other kept verbatim."""
    signals: list[Signal] = []
    for (module, msg), line in zip(messages, lines):
        if _FIXED_SCALE.match(msg):
            signals.append(Signal("fixed_scale", module, msg, line))
        elif _WEIGHT_MSG.match(msg):
            signals.append(Signal("weight_dtype", module, msg, line))
        elif msg.startswith("Mixed input dtype"):
            signals.append(Signal("mixed_dtype", module, msg, line))
        elif _FLOAT_GEMM_MSG.match(msg):
            signals.append(Signal("float_gemm_input", module, msg, line))
        elif msg:
            signals.append(Signal("check_message", module, msg, line))
    return signals


def _weight_table_signals(rows: list[dict[str, str]], lines: list[int],
                          existing: list[Signal]) -> list[Signal]:
    """vB may filter the Msg list (docs/file_formats.md §9), so a non-qint8 weight is also
    taken from the weight table when no Msg reported it."""
    reported = {s.module for s in existing if s.kind == "weight_dtype"}
    signals: list[Signal] = []
    for row, line in zip(rows, lines):
        dtype = row["weight_dtype"]
        if dtype and dtype != "qint8" and row["module"] not in reported:
            signals.append(Signal("weight_dtype", row["module"], f"{dtype} weight (weight table)", line))
    return signals


# --- facts (probes/probe_output.py) -------------------------------------------------------

# plugin 3.0.x names each check `model_check_result_<YYMMDD>_<HHMM>_<n>.txt` (docs/file_formats.md R1)
_CHECK_STAMP = re.compile(r"model_check_result_(\d{6})_(\d{4})_(\d+)\.txt$", re.IGNORECASE)


def _check_order(found) -> tuple:
    """Newest last: timestamped checks by their stamp, after the unstamped ones."""
    match = _CHECK_STAMP.search(found.display)
    if match:
        return (1, match.group(1), match.group(2), int(match.group(3)), found.display)
    return (0, "", "", 0, found.display)


def add_facts_of_all(found: list, out) -> None:
    """The model checks found together: the newest is the current one, read in full; older
    ones are listed. Raises the current one's InputError after listing them."""
    checks = sorted(found, key=_check_order)
    if not checks:
        return
    current = checks[-1]
    try:  # read before its facts cite it: the sha256 then comes from the bytes read
        check, error = read_model_check(current.path, current.display), None
    except InputError as exc:
        check, error = None, exc
    for older in checks[:-1]:
        out.add("model_check_info", {"path": older.display, "current": False, "current_path": current.display}, older)
    out.add("model_check_info", {"path": current.display, "current": True, "current_path": current.display}, current)
    if error is not None:
        raise error
    out.skipped(current, check.skipped)
    for name in ("horizon_plugin_pytorch", "horizon_plugin_profiler"):
        if name in check.header:
            version, line = check.header[name]
            out.facts.add_version(name, version, out.source(current, line=line, key=name),
                                  f"{current.display}:{line} 记录")
    if "march" in check.header:
        march, line = check.header["march"]
        source = out.source(current, line=line, key="current march")
        out.facts.add("artifact_march", {"path": current.display, "march": march.lower(),
                                         "what": "prepare 时的 march（模型检查）"}, source)
        out.facts.add_platform(march, source, f"{current.display}:{line} 记录的 current march", note=False)
    out.signals(current, "model_check", check.signals)
