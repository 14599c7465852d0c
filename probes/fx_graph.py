"""`fx_graph.txt` (torch.fx `print_tabular` output written by prepare(), docs/file_formats.md §10)
→ FxGraph: the nodes, opcode counts and export-risk signals.

Memory addresses in reprs (`<function scope_end at 0x7f...>`) change between runs, so
they are removed from target/args/kwargs when reading: two dumps of the same model then
give equal node lists.

Signal heuristics (conservative: each needs a specific pattern, ordinary module calls,
view/reshape on sizes and FloatFunctional calls never fire):

* "deploy_branch": a node whose name, target, args or kwargs mention `deploy`
  (`is_deploy`, `self.deploy`), or that reads the `training` flag (get_attr `*.training`,
  getattr(..., 'training')). Such flags often switch graph branches between the traced
  and the exported model.
* "dynamic_control":
  - `item()` / `tolist()` (call_method, or their Tensor-method reprs): a value read from
    tensor data enters the graph;
  - `range`, `len`, `torch._assert`: only appear in a graph when driven by traced values;
  - arithmetic or comparison (`operator.*` / `<built-in function add>` ...) whose node
    inputs all derive (through getitem/int/min/... and arithmetic) from a `size()` /
    `dim()` / `numel()` call or a `.shape` / `.ndim` getattr: shapes turned into numbers
    that can drive loop counts. A size only used by view/reshape does not fire, and a
    tensor op taking a size does not pass the taint on.
* "float_function": tensor arithmetic / concatenation called as a plain function or
  tensor method (`torch.cat`, `torch.add`, `<built-in function add>` on a tensor node,
  `x.add(y)` not routed through a FloatFunctional get_attr): it may bypass quantization.
  Ops on size-derived numbers and Horizon `scope_end` markers are excluded.

A row that is no node (a row that does not line up, an unknown opcode, args cut off) and a
graph cut before its `output` node are skipped and named in `FxGraph.skipped`; the other
nodes are read. A file without the table is refused (InputError).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from j6doctor.probes.input_error import InputError, Skips
from j6doctor.probes.module_signal import Signal
from j6doctor.probes.text_file import load_text, split_lines
from j6doctor.probes.text_tables import is_simple_start, parse_simple, skip_blank

WHAT = "fx_graph.txt"
HEADERS = ("opcode", "name", "target", "args", "kwargs")
OPCODES = ("placeholder", "get_attr", "call_function", "call_method", "call_module", "output")

_ADDRESS = re.compile(r"\s+at\s+0x[0-9a-fA-F]+")
_QUOTED = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"")
_IDENT = re.compile(r"[A-Za-z_]\w*")
_DEPLOY = re.compile(r"deploy", re.IGNORECASE)

_DATA_METHODS = {"item", "tolist"}
_SIZE_METHODS = {"size", "dim", "numel"}
_SHAPE_ATTRS = {"shape", "ndim"}
_ALWAYS_DYNAMIC = {"range", "len", "_assert"}
_ARITH = {"add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "neg", "matmul",
          "iadd", "isub", "imul", "itruediv", "ifloordiv"}
_COMPARE = {"lt", "le", "gt", "ge", "eq", "ne"}
_SCALAR_FUNCS = _ARITH | _COMPARE | {"getitem", "int", "float", "floor", "ceil", "trunc",
                                     "max", "min", "abs"}
# Tensor functions Horizon wants routed through FloatFunctional (approximate list).
_TENSOR_FUNCS = {"add", "sub", "mul", "div", "true_divide", "cat", "concat", "concatenate",
                 "stack", "matmul", "bmm", "mm", "sum", "mean", "exp", "maximum", "minimum"}
_TENSOR_METHODS = _TENSOR_FUNCS | {"__add__", "__sub__", "__mul__", "__truediv__",
                                   "__matmul__", "truediv"}


@dataclass(frozen=True)
class FxNode:
    line: int
    opcode: str
    name: str
    target: str     # addresses removed
    args: str       # addresses removed
    kwargs: str     # addresses removed


@dataclass
class FxGraph:
    display: str
    nodes: list[FxNode]
    opcodes: dict[str, int]
    signals: list[Signal]
    skipped: Skips = field(default_factory=Skips)   # what could not be read (line and why)


def read_fx_graph(path: Path, display: str | None = None) -> FxGraph:
    display = display or path.name
    lines = split_lines(load_text(path, display, WHAT))
    i = skip_blank(lines, 0)
    if i < len(lines) and lines[i].strip() == "Graph:":
        i = skip_blank(lines, i + 1)
    if not is_simple_start(lines, i):
        raise InputError(display, f"not an {WHAT}: expected a 'Graph:' line and a table with "
                                  "columns " + ", ".join(HEADERS), i + 1 if i < len(lines) else None)
    skips = Skips()
    nodes = read_fx_table(lines[i:], i + 1, display, skips)
    return FxGraph(display, nodes, opcode_counts(nodes), graph_signals(nodes), skips)


def read_fx_table(lines: list[str], first_line: int, display: str, skips: Skips) -> list[FxNode]:
    """Nodes of a print_tabular table whose header is lines[0] (file line `first_line`);
    the table ends at the first blank line. A row that is no node goes to `skips`; a graph
    must end with its `output` node, so a table cut at a line boundary is noted there too."""
    if not is_simple_start(lines, 0):
        raise InputError(display, "expected an FX graph table: header "
                                  + "  ".join(HEADERS) + " and a dash rule", first_line)
    table = parse_simple(lines, 0, first_line, display)
    if tuple(h.lower() for h in table.headers) != HEADERS:
        raise InputError(display, "expected FX graph table columns " + ", ".join(HEADERS)
                                  + f", got {', '.join(table.headers)}", first_line)
    skips.extend(table.skipped)
    nodes = []
    for row in table.rows:
        try:
            nodes.append(_node(row.line, row.cells, display))
        except InputError as error:
            skips.add_error(error)
    if not nodes:
        first = skips.kept[0] if skips else None
        raise InputError(display, "FX graph table has no nodes" + (f": {first.reason}" if first else ""),
                         first.line if first else first_line)
    if nodes[-1].opcode != "output":
        skips.add(nodes[-1].line, "FX graph table does not end with its 'output' node (an excerpt, or cut?)")
    return nodes


def _node(line: int, cells: tuple[str, ...], display: str) -> FxNode:
    opcode, name, target, args, kwargs = cells
    if opcode not in OPCODES:
        raise InputError(display, f"unknown FX opcode {opcode!r}; expected one of "
                                  + ", ".join(OPCODES), line)
    if not name:
        raise InputError(display, "FX node without a name", line)
    if not (args.startswith("(") and args.endswith(")")) or not (
            kwargs.startswith("{") and kwargs.endswith("}")):
        raise InputError(display, f"node {name!r}: expected args as (...) and kwargs as {{...}} "
                                  "(truncated row?)", line)
    return FxNode(line, opcode, name, normalize(target), normalize(args), normalize(kwargs))


def normalize(text: str) -> str:
    """Drop run-specific memory addresses: `<function f at 0x7f..>` → `<function f>`."""
    return _ADDRESS.sub("", text)


def opcode_counts(nodes: list[FxNode]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for node in nodes:
        counts[node.opcode] = counts.get(node.opcode, 0) + 1
    return counts


def callable_name(target: str) -> str:
    """Short name of a call_function target repr: `<built-in function getitem>` → `getitem`,
    `<built-in method cat of type object>` → `torch.cat`, `<function Tracer.scope_end>` →
    `Tracer.scope_end`, `<class 'range'>` → `range`,
    `<method 'add' of 'torch._C.TensorBase' objects>` → `Tensor.add`; dotted paths stay."""
    t = normalize(target).strip()
    patterns = [
        (r"<built-in function (\w+)>", "{0}"),
        (r"<built-in method (\w+) of type object>", "torch.{0}"),
        (r"<built-in method (\w+) of .*>", "{0}"),
        (r"<function ([\w.<>]+)>", "{0}"),
        (r"<class '([\w.]+)'>", "{0}"),
        (r"<method '(\w+)' of '[\w.]*Tensor\w*' objects>", "Tensor.{0}"),
        (r"<(?:method|slot wrapper) '(\w+)' of '([\w.]+)' objects>", "{1}.{0}"),
    ]
    for pattern, form in patterns:
        m = re.fullmatch(pattern, t)
        if m:
            return form.format(*m.groups())
    return t


def _leaf(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def _refs(args: str, known: set[str]) -> list[str]:
    """Node names referenced in an args/kwargs repr (literals are quoted, names are not)."""
    return [tok for tok in _IDENT.findall(_QUOTED.sub("", args)) if tok in known]


def _strings(args: str) -> list[str]:
    return [s[1:-1] for s in _QUOTED.findall(args)]


# ---------------------------------------------------------------- signals

def graph_signals(nodes: list[FxNode]) -> list[Signal]:
    known: set[str] = set()
    sized: dict[str, str] = {}        # node → the size/shape call it derives from
    attrs: set[str] = set()           # get_attr nodes (FloatFunctional modules etc.)
    signals: list[Signal] = []
    for node in nodes:
        refs = _refs(node.args, known) + _refs(node.kwargs, known)
        signals += _deploy_signals(node)
        signals += _dynamic_signals(node, refs, sized)
        signals += _float_signals(node, refs, sized, attrs)
        if node.opcode == "get_attr":
            attrs.add(node.name)
        known.add(node.name)
    return signals


def _deploy_signals(node: FxNode) -> list[Signal]:
    text = " ".join((node.name, node.target, node.args, node.kwargs))
    if _DEPLOY.search(text):
        return [Signal("deploy_branch", node.name,
                       f"{node.opcode} {node.target} mentions 'deploy': check the deploy branch", node.line)]
    reads_training = ((node.opcode == "get_attr" and _leaf(node.target) == "training")
                      or (node.opcode == "call_function" and callable_name(node.target) == "getattr"
                          and "training" in _strings(node.args)))
    if reads_training:
        return [Signal("deploy_branch", node.name,
                       "reads the 'training' flag: the graph may branch on train/eval mode", node.line)]
    return []


def _function(node: FxNode) -> str:
    """Bare function/method name of a call node ('' for other opcodes)."""
    if node.opcode == "call_method":
        return node.target
    if node.opcode == "call_function":
        return _leaf(callable_name(node.target))
    return ""


def _dynamic_signals(node: FxNode, refs: list[str], sized: dict[str, str]) -> list[Signal]:
    fn = _function(node)
    if not fn:
        return []
    tainted = [r for r in refs if r in sized]
    owner = refs[0] if refs else ""
    tensor_method = node.opcode == "call_method" or "Tensor" in callable_name(node.target)
    if fn in _DATA_METHODS and tensor_method:
        sized[node.name] = f"{owner}.{fn}()"
        return [Signal("dynamic_control", node.name,
                       f"{owner}.{fn}() reads a tensor value into the graph (data-dependent)", node.line)]
    if fn in _SIZE_METHODS and tensor_method:
        sized[node.name] = f"{owner}.{fn}()"
        return []
    if fn == "getattr" and set(_strings(node.args)) & _SHAPE_ATTRS:
        sized[node.name] = f"{owner}." + next(s for s in _strings(node.args) if s in _SHAPE_ATTRS)
        return []
    if node.opcode == "call_function" and fn in _ALWAYS_DYNAMIC:
        sized[node.name] = f"{fn}()"
        origin = f" of a value from {sized[tainted[0]]}" if tainted else ""
        return [Signal("dynamic_control", node.name,
                       f"{fn}(){origin}: shape- or data-dependent control flow", node.line)]
    # Only pure number crunching on sizes stays a size: a tensor op that takes a size as an
    # argument (view, reshape, x + n) yields a tensor, and tainting it would flag the model.
    if not tainted or len(tainted) != len(refs) or node.opcode != "call_function" \
            or fn not in _SCALAR_FUNCS:
        return []
    sized[node.name] = sized[tainted[0]]
    if fn in _ARITH or fn in _COMPARE:
        return [Signal("dynamic_control", node.name,
                       f"{fn} on a value from {sized[tainted[0]]}: shape-dependent arithmetic "
                       "(loop count or shape may change)", node.line)]
    return []


def _float_signals(node: FxNode, refs: list[str], sized: dict[str, str],
                   attrs: set[str]) -> list[Signal]:
    tensors = [r for r in refs if r not in sized]
    if not tensors or node.name in sized:
        return []
    if node.opcode == "call_function":
        full = callable_name(node.target)
        fn = _leaf(full)
        torch_func = full.startswith(("torch.", "Tensor.")) and fn in _TENSOR_METHODS
        operator_func = full in (fn, f"operator.{fn}", f"_operator.{fn}") and fn in _ARITH
        if torch_func or operator_func:
            return [Signal("float_function", node.name,
                           f"{full} called as a plain function: may bypass quantization "
                           "(use FloatFunctional)", node.line)]
    if node.opcode == "call_method" and node.target in _TENSOR_METHODS:
        if refs[0] in attrs:
            return []   # FloatFunctional: get_attr of the module, then its method
        return [Signal("float_function", node.name,
                       f"tensor method {node.target}() outside FloatFunctional: may bypass "
                       "quantization", node.line)]
    return []


# --- facts (probes/probe_output.py) -------------------------------------------------------

def add_facts(found, out) -> None:
    graph = read_fx_graph(found.path, found.display)
    out.skipped(found, graph.skipped)
    out.signals(found, "fx_graph", graph.signals)
