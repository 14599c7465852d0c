"""User scripts (.py): API misuse the debugging procedure warns about (docs/knowledge.md §3, §7,
§9, §10; seed sections 正确 API 用法, J6E/M 高一致性 QAT 策略, 常见误区).

The script is parsed with `ast` and never imported or executed: nothing it says at top
level runs. Every heuristic below is deliberately conservative -- a false alarm costs the
user more than a miss -- and its limits are stated next to it.

Scopes: the module body and every function body (nested functions, lambdas and class
bodies are scopes of their own). "Earlier" means earlier in the scope's source order,
including the bodies of if/for/while/with/try blocks, whatever branch or iteration they
belong to; the analysis is not a data-flow analysis.

Imported aliases are resolved (`import horizon_plugin_pytorch.quantization.hbdk4 as h4`,
`from ...hbdk4 import export as ex`, `from ...hbdk4 import *`); all imports of the file,
wherever they stand, feed one name table, the later one winning for a reused name.
"""

from __future__ import annotations

import ast
import warnings
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from j6doctor.probes.input_error import InputError
from j6doctor.probes.text_file import decode_text, read_bytes

KINDS = (
    "convert_wrong_module",
    "export_wrong_module",
    "export_without_eval",
    "export_without_validation",
    "float_state_export",
    "strategy_after_prepare",
    "strategy_level2_first",
    "strategy_on_checkpoint",
    "run_before_badcase",
    "unknown_analysis_type",
    "deprecated_analysis_type",
    "quant_analysis_on_hbm",
    "export_compare_skips_export_pt",
)

# analysis_model_type values QuantAnalysis accepts; "pt_lut" is the old name of pre_export.
ANALYSIS_TYPES = ("fake_quant", "pre_export", "export", "convert", "quantized", "hbir")
DEPRECATED_TYPES = {"pt_lut": "pre_export"}

PLUGIN = "horizon_plugin_pytorch"
PLUGIN_HBDK4 = "horizon_plugin_pytorch.quantization.hbdk4"
HBDK4_COMPILER = "hbdk4.compiler"
EXPORT_FUNCS = frozenset({"export", "pre_export"})
# Packages whose `export` / `pre_export` is the wrong one for a plugin QAT model. Other
# packages (torch.onnx.export, torch.export.export, the user's own helpers) are legitimate
# APIs for other jobs and are never reported.
HORIZON_FAMILIES = ("hbdk4", "horizon_plugin_pytorch", "horizon_plugin_profiler")
PREPARE_NAMES = frozenset({"prepare", "prepare_qat", "prepare_qat_fx", "prepare_fx",
                           "prepare_calibration_fx"})
LOAD_NAMES = frozenset({"load_state_dict", "load_checkpoint"})
BADCASE_METHODS = frozenset({"auto_find_bad_case", "set_bad_case", "load_bad_case"})
SPLIT_RUN_KEYWORDS = frozenset({"run_baseline_model", "run_analysis_model"})
# Marches of the hbdk4 compiler: a convert(...) call given one of them is hbdk4's convert.
MARCH_PREFIXES = ("nash", "bayes", "bernoulli")

# A script is source code (training scripts are tens of kilobytes); its syntax tree costs
# over 100 times the file size, so anything past 2 MiB is refused as not a user script.
MAX_SCRIPT_BYTES = 2 * 1024 * 1024
EXPECTED = "a Python script (UTF-8 text)"

# Fake-quant states of set_fake_quantize(model, state).
_VALIDATION, _FLOAT, _OTHER, _UNKNOWN = "VALIDATION", "_FLOAT", "other", "unknown"


@dataclass(frozen=True)
class ScriptFinding:
    kind: str      # one of KINDS
    line: int      # 1-based line of the offending statement / call
    detail: str    # short English detail naming the variable / call


@dataclass
class ScriptReport:
    display: str
    findings: list[ScriptFinding]      # sorted by (line, kind)
    uses: set[str] = field(default_factory=set)   # facts about what the script does


def check_script(path: Path, display: str | None = None) -> ScriptReport:
    """Reads and checks one script file; InputError for unreadable, binary, non-UTF-8 or
    syntactically invalid input. An empty file is a valid script with no findings."""
    display = display or path.name
    raw = read_bytes(Path(path), display, EXPECTED, MAX_SCRIPT_BYTES)
    text = decode_text(raw, display, EXPECTED)
    return check_source(text, display)


def check_source(source: str, display: str) -> ScriptReport:
    """The same checks on script text (tests, rendered scripts)."""
    source = source.removeprefix("\ufeff")
    nul = source.find("\x00")
    if nul >= 0:
        raise InputError(display, f"binary data (NUL byte); expected {EXPECTED}",
                         source.count("\n", 0, nul) + 1)
    tree = _parse(source, display)
    try:
        analyzer = _Analyzer(tree)
        analyzer.run()
    except RecursionError:
        raise InputError(display, "the script is nested too deeply to be analysed") from None
    findings = sorted(set(analyzer.findings), key=lambda f: (f.line, f.kind, f.detail))
    return ScriptReport(display=display, findings=findings, uses=analyzer.uses)


def _parse(source: str, display: str) -> ast.Module:
    try:
        with warnings.catch_warnings():
            # Invalid escape sequences etc. must not print warnings on the user's terminal.
            warnings.simplefilter("ignore")
            return ast.parse(source, filename=display)
    except SyntaxError as exc:   # includes IndentationError / TabError
        message = f"Python syntax error: {exc.msg}"
        if exc.text and exc.text.strip():
            message += f" (near {exc.text.strip()[:60]!r})"
        raise InputError(display, message, exc.lineno or None) from None
    except (ValueError, RecursionError, MemoryError) as exc:
        raise InputError(display, f"cannot be parsed as Python: {exc or type(exc).__name__}") from None


# ---------------------------------------------------------------- names and scopes

def _under(path: str | None, prefix: str) -> bool:
    return path is not None and (path == prefix or path.startswith(prefix + "."))


def _last(path: str | None) -> str:
    return path.rsplit(".", 1)[-1] if path else ""


def _raw_text(node: ast.AST) -> str | None:
    """`a.b.c` as written, without alias resolution; None for anything but names/attributes."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *reversed(parts)])


def _pos(node: ast.AST) -> tuple[int, int]:
    return getattr(node, "lineno", 0), getattr(node, "col_offset", 0)


class _Names:
    """Local name -> dotted origin, from every import of the file in source order."""

    def __init__(self, tree: ast.Module):
        self.alias: dict[str, str] = {}
        self.star: list[str] = []
        bindings: list[tuple[tuple[int, int], str, str | None]] = []
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for item in node.names:
                    if item.asname:
                        bindings.append((_pos(node), item.asname, item.name))
                    else:   # `import a.b.c` binds `a`, and `a.b.c.f` then resolves naturally
                        head = item.name.split(".", 1)[0]
                        bindings.append((_pos(node), head, head))
            elif isinstance(node, ast.ImportFrom):
                module = "." * node.level + (node.module or "")
                for item in node.names:
                    if item.name == "*":
                        self.star.append(module)
                    else:
                        bindings.append((_pos(node), item.asname or item.name, f"{module}.{item.name}"))
        # A module-level def / class of the same name shadows an import (and a star import).
        self.local_defs: set[str] = set()
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                bindings.append((_pos(node), node.name, None))
        for _, name, origin in sorted(bindings, key=lambda b: b[0]):
            if origin is None:
                self.alias.pop(name, None)
                self.local_defs.add(name)
            else:
                self.alias[name] = origin
                self.local_defs.discard(name)

    def dotted(self, node: ast.AST) -> str | None:
        """`h4.export` -> "horizon_plugin_pytorch.quantization.hbdk4.export"; an unknown
        head name stays as written; None for calls, subscripts and the like."""
        raw = _raw_text(node)
        if raw is None:
            return None
        head, _, rest = raw.partition(".")
        origin = self.alias.get(head)
        if origin is None and head not in self.local_defs and head in EXPORT_FUNCS:
            # `from horizon_plugin_pytorch.quantization.hbdk4 import *`
            if any(_under(module, PLUGIN_HBDK4) for module in self.star):
                origin = f"{PLUGIN_HBDK4}.{head}"
        origin = origin or head
        return f"{origin}.{rest}" if rest else origin


@dataclass
class _Scope:
    node: ast.AST
    nodes: list[ast.AST]          # own nodes (nested scopes excluded), in source order
    params: list[str]             # all parameter names
    call_params: list[str]        # parameters a caller passes (self / cls dropped)
    bound: set[str]               # names bound in this scope (excluding parameters)
    aliased: set[str]             # names bound to an existing object (see _aliased_names)
    is_module: bool


def _own_nodes(scope: ast.AST) -> tuple[list[ast.AST], list[ast.AST]]:
    """The nodes of a scope without the bodies of nested functions, lambdas and classes
    (their decorators, defaults and bases belong to this scope), and those nested scopes."""
    if isinstance(scope, ast.Lambda):
        roots: list[ast.AST] = [scope.body]
    else:
        roots = list(scope.body)
    own: list[ast.AST] = []
    nested: list[ast.AST] = []
    stack = list(reversed(roots))
    while stack:   # iterative pre-order walk: deep expressions cannot overflow the stack
        node = stack.pop()
        own.append(node)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            nested.append(node)
            args = node.args
            children = [*getattr(node, "decorator_list", []), *args.defaults,
                        *[d for d in args.kw_defaults if d is not None]]
        elif isinstance(node, ast.ClassDef):
            nested.append(node)
            children = [*node.decorator_list, *node.bases, *node.keywords]
        else:
            children = list(ast.iter_child_nodes(node))
        stack.extend(reversed(children))
    order = {id(n): i for i, n in enumerate(own)}
    own.sort(key=lambda n: (*_pos(n), order[id(n)]))
    return own, nested


def _aliased_names(own: list[ast.AST]) -> set[str]:
    """Names that (somewhere in the scope) refer to an object made elsewhere, whose eval /
    fake-quant state was therefore set elsewhere: `m = self.model`, `m = models[k]`,
    `m = copy.deepcopy(other)`, loop / with / unpacking targets. A name bound to the result
    of another call (`torch.load(...)`, `prepare(...)`) is an object this scope made."""
    aliased: set[str] = set()
    for node in own:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            value = node.value
            copied = isinstance(value, ast.Call) and _last(_raw_text(value.func)) in ("copy", "deepcopy")
            for target in _targets(node):
                if isinstance(target, ast.Name):
                    if not isinstance(value, ast.Call) or copied:
                        aliased.add(target.id)
                else:   # a, m = f(): which element is which is not followed
                    aliased.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            aliased.update(n.id for n in ast.walk(node.target) if isinstance(n, ast.Name))
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            aliased.update(n.id for n in ast.walk(node.optional_vars) if isinstance(n, ast.Name))
        elif isinstance(node, ast.NamedExpr) and not isinstance(node.value, ast.Call):
            aliased.add(node.target.id)
    return aliased


def _collect_scopes(tree: ast.Module) -> list[_Scope]:
    scopes: list[_Scope] = []
    todo: list[tuple[ast.AST, bool]] = [(tree, False)]
    while todo:
        node, in_class = todo.pop()
        own, nested = _own_nodes(node)
        params: list[str] = []
        call_params: list[str] = []
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            args = node.args
            positional = [a.arg for a in (*args.posonlyargs, *args.args)]
            params = [*positional, *(a.arg for a in args.kwonlyargs)]
            params += [a.arg for a in (args.vararg, args.kwarg) if a is not None]
            call_params = positional
            decorators = {_last(_raw_text(d)) for d in getattr(node, "decorator_list", [])}
            if in_class and "staticmethod" not in decorators and call_params:
                call_params = call_params[1:]
        bound: set[str] = set()
        declared_free: set[str] = set()
        for child in own:
            if isinstance(child, ast.Name) and isinstance(child.ctx, (ast.Store, ast.Del)):
                bound.add(child.id)
            elif isinstance(child, (ast.Import, ast.ImportFrom)):
                bound.update((a.asname or a.name).split(".", 1)[0] for a in child.names)
            elif isinstance(child, (ast.Global, ast.Nonlocal)):
                declared_free.update(child.names)
        bound.update(getattr(n, "name", "") for n in nested)
        scopes.append(_Scope(node, own, params, call_params, bound - declared_free,
                             _aliased_names(own), isinstance(node, ast.Module)))
        todo.extend((child, isinstance(node, ast.ClassDef)) for child in reversed(nested))
    scopes.sort(key=lambda s: _pos(s.node))
    return scopes


# ---------------------------------------------------------------- call helpers

def _arg(call: ast.Call, index: int, keyword: str | None = None) -> ast.AST | None:
    """Positional argument `index`, else keyword `keyword`; None when absent or behind *args."""
    for i, arg in enumerate(call.args):
        if isinstance(arg, ast.Starred):
            break
        if i == index:
            return arg
    if keyword:
        for kw in call.keywords:
            if kw.arg == keyword:
                return kw.value
    return None


def _name(node: ast.AST | None) -> str | None:
    return node.id if isinstance(node, ast.Name) else None


def _str(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _int(node: ast.AST | None) -> int | None:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    return None


def _receiver(call: ast.Call) -> str | None:
    """`qa` for `qa.run()`."""
    return _name(call.func.value) if isinstance(call.func, ast.Attribute) else None


def _method(call: ast.Call) -> str | None:
    return call.func.attr if isinstance(call.func, ast.Attribute) else None


def _level_arg(call: ast.Call) -> ast.AST | None:
    """The level of set_consistency_level(level): first positional or its only keyword."""
    if call.args:
        return call.args[0]
    if len(call.keywords) == 1 and call.keywords[0].arg is not None:
        return call.keywords[0].value
    return None


def _state_of(node: ast.AST | None) -> str:
    """FakeQuantState member named by `node`; _UNKNOWN for anything computed."""
    member = _last(_raw_text(node)) if node is not None else ""
    if member == "VALIDATION":
        return _VALIDATION
    if member == "_FLOAT":
        return _FLOAT
    if member in ("QAT", "CALIBRATION"):
        return _OTHER
    return _UNKNOWN


@dataclass(frozen=True)
class _Event:
    # eval | state | export | prepare | level | load | qa_bind | qa_unbind | qa_badcase | qa_run
    kind: str
    line: int
    name: str | None = None   # the model / QuantAnalysis variable concerned
    value: object = None      # state, export function or level
    text: str = ""            # how the call reads, for details


@dataclass
class _Helper:
    """What a function of the script does to its parameters (cheap interprocedural step:
    a local helper that calls `m.eval()` / `set_fake_quantize(m, ...)` / `prepare(...)`)."""
    params: list[str]
    eval_params: set[str] = field(default_factory=set)
    state_params: dict[str, str] = field(default_factory=dict)
    prepares: bool = False


# ---------------------------------------------------------------- the analysis

class _Analyzer:
    def __init__(self, tree: ast.Module):
        self.tree = tree
        self.names = _Names(tree)
        self.scopes = _collect_scopes(tree)
        self.findings: list[ScriptFinding] = []
        self.uses: set[str] = set()
        self.helpers: dict[str, _Helper] = {}
        all_nodes = [n for scope in self.scopes for n in scope.nodes]
        self.calls = [n for n in all_nodes if isinstance(n, ast.Call)]
        self.calls.sort(key=_pos)
        # Names (as written: "qa", "self.qa") ever bound to QuantAnalysis(...).
        self.qa_names = {_raw_text(t) for n in all_nodes if isinstance(n, (ast.Assign, ast.AnnAssign))
                         and n.value is not None and self._is_qa(n.value)
                         for t in _targets(n)} - {None}
        # Names bound to a pre_export(...) result, or to something whose expression mentions
        # "export" in a string (torch.load("qat.export.pt")): they hold qat.export.pt.
        self.export_pt_names: set[str] = set()
        self.pre_export_names: set[str] = set()
        for n in all_nodes:
            if isinstance(n, (ast.Assign, ast.AnnAssign)) and n.value is not None:
                pre = any(isinstance(c, ast.Call) and self._export_func(c) == "pre_export"
                          for c in ast.walk(n.value))
                mentions = any("export" in (_str(c) or "").lower() for c in ast.walk(n.value))
                for target in _targets(n):
                    if isinstance(target, ast.Name):
                        if pre:
                            self.pre_export_names.add(target.id)
                        if pre or mentions:
                            self.export_pt_names.add(target.id)

    # ---- recognisers

    def _path(self, call: ast.Call) -> str | None:
        return self.names.dotted(call.func)

    def _callee(self, call: ast.Call) -> str:
        """Last name of the called function (`export`, `run`), resolved through aliases."""
        return _last(self._path(call)) or (_method(call) or "")

    def _export_func(self, call: ast.Call) -> str | None:
        """"export" / "pre_export" for the plugin's hbdk4 functions: bare names imported from
        horizon_plugin_pytorch.quantization.hbdk4 (or star-imported), or attribute calls on
        that module or an alias of it. Any other `export` (torch.onnx, user code) is ignored."""
        path = self._path(call)
        if _under(path, PLUGIN_HBDK4) and _last(path) in EXPORT_FUNCS:
            return _last(path)
        return None

    def _is_qa(self, node: ast.AST) -> bool:
        return isinstance(node, ast.Call) and self._callee(node) == "QuantAnalysis"

    def _is_prepare(self, call: ast.Call) -> bool:
        """prepare / prepare_qat_fx-like calls: a bare name, or an attribute call on a
        horizon_plugin_pytorch module; `data.prepare()` on a local object is not one."""
        path = self._path(call)
        if _last(path) not in PREPARE_NAMES and _method(call) not in PREPARE_NAMES:
            return False
        if isinstance(call.func, ast.Name):
            return True
        return _under(path, PLUGIN) or _last(path).startswith(("prepare_qat", "prepare_calibration"))

    def _is_load(self, call: ast.Call) -> bool:
        return self._callee(call) in LOAD_NAMES or self._path(call) == "torch.load"

    def _helper_for(self, call: ast.Call) -> _Helper | None:
        """A function defined in the script, called as `f(...)` or `self.f(...)`."""
        if isinstance(call.func, ast.Name):
            return self.helpers.get(call.func.id)
        if isinstance(call.func, ast.Attribute) and _name(call.func.value) in ("self", "cls"):
            return self.helpers.get(call.func.attr)
        return None

    # ---- driver

    def run(self) -> None:
        self._compute_helpers()
        self._check_imports()
        self._check_calls()
        self._check_quant_analysis()
        all_events = []
        for scope in self.scopes:
            events = self._events(scope)
            all_events += events
            self._check_export_state(scope, events)
            self._check_strategy_scope(events)
            self._check_badcase_order(scope, events)
        self._check_strategy_file(all_events)

    def _compute_helpers(self) -> None:
        functions = [s for s in self.scopes if isinstance(s.node, (ast.FunctionDef, ast.AsyncFunctionDef))]
        # A few rounds let a helper that calls another helper inherit its effects.
        for _ in range(4):
            before = repr(sorted((k, sorted(v.eval_params), sorted(v.state_params.items()), v.prepares)
                                 for k, v in self.helpers.items()))
            helpers: dict[str, _Helper] = {}
            for scope in functions:
                helper = helpers.setdefault(scope.node.name, _Helper(scope.call_params))
                params = set(scope.params)
                for event in self._events(scope):
                    if event.kind == "eval" and event.name in params:
                        helper.eval_params.add(event.name)
                    elif event.kind == "state" and event.name in params:
                        helper.state_params[event.name] = event.value
                    elif event.kind == "prepare":
                        helper.prepares = True
            self.helpers = helpers
            after = repr(sorted((k, sorted(v.eval_params), sorted(v.state_params.items()), v.prepares)
                                for k, v in self.helpers.items()))
            if after == before:
                break

    def _events(self, scope: _Scope) -> list[_Event]:
        events: list[_Event] = []
        skip_unbind: set[int] = set()
        for node in scope.nodes:
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                targets = [t for t in _targets(node) if isinstance(t, ast.Name)]
                if self._is_qa(node.value):
                    for t in targets:
                        events.append(_Event("qa_bind", node.lineno, t.id))
                        skip_unbind.add(id(t))
                elif _is_eval_chain(node.value):
                    # `m = prepare(...).eval()` / `m = m.eval()`: m is in eval mode.
                    events.extend(_Event("eval", node.lineno, t.id) for t in targets)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                if id(node) not in skip_unbind:
                    events.append(_Event("qa_unbind", node.lineno, node.id))
            elif isinstance(node, ast.Call):
                events.extend(self._call_events(node))
        return events

    def _call_events(self, call: ast.Call) -> list[_Event]:
        line = call.lineno
        callee = self._callee(call)
        method = _method(call)
        receiver = _receiver(call)
        out: list[_Event] = []
        if method == "eval" and receiver and not call.args and not call.keywords:
            out.append(_Event("eval", line, receiver))
        elif (method == "train" and receiver and len(call.args) == 1
              and isinstance(call.args[0], ast.Constant) and call.args[0].value is False):
            out.append(_Event("eval", line, receiver))          # m.train(False) == m.eval()
        if callee == "set_fake_quantize":
            target = _name(_arg(call, 0, "model"))
            if target:
                state_node = _arg(call, 1, "state")
                if state_node is None and call.keywords:
                    state_node = next((k.value for k in call.keywords if k.arg not in (None, "model")), None)
                out.append(_Event("state", line, target, _state_of(state_node)))
        func = self._export_func(call)
        if func:
            out.append(_Event("export", line, _name(_arg(call, 0, "model")), func))
        if self._is_prepare(call):
            out.append(_Event("prepare", line, text=f"{callee}(...)"))
        if callee == "set_consistency_level":
            out.append(_Event("level", line, value=_int(_level_arg(call))))
        if self._is_load(call):
            out.append(_Event("load", line, text=_raw_text(call.func) or callee))
        if receiver and method in BADCASE_METHODS:
            out.append(_Event("qa_badcase", line, receiver, method))
        if receiver and method == "run":
            out.append(_Event("qa_run", line, receiver))
        helper = self._helper_for(call)
        if helper is not None:
            passed = _passed_names(call, helper.params)
            for param, arg_name in passed.items():
                if param in helper.eval_params:
                    out.append(_Event("eval", line, arg_name))
                if param in helper.state_params:
                    out.append(_Event("state", line, arg_name, helper.state_params[param]))
            if helper.prepares:
                out.append(_Event("prepare", line, text=f"{_raw_text(call.func)}(...) (which calls prepare)"))
        return out

    # ---- convert_wrong_module / export_wrong_module

    def _check_imports(self) -> None:
        for node in ast.walk(self.tree):
            if not isinstance(node, ast.ImportFrom) or node.level or not node.module:
                continue
            module = node.module
            for item in node.names:
                line = getattr(item, "lineno", node.lineno)
                # convert: hbdk4's convert(qat_bc, march) imported from the plugin's hbdk4
                # package. Limit: `from horizon_plugin_pytorch.quantization import convert` is
                # the plugin's own (legacy) torch convert, a real API: only its calls that
                # look like hbdk4's convert are reported (see _check_calls).
                if item.name == "convert" and _under(module, PLUGIN_HBDK4):
                    self._add("convert_wrong_module", line,
                              f"convert imported from {module}; it must come from {HBDK4_COMPILER}")
                # export / pre_export from a Horizon package other than the plugin's hbdk4
                # package (e.g. hbdk4.compiler). torch.onnx / torch.export / user modules
                # are other APIs and are left alone.
                if (item.name in EXPORT_FUNCS and not _under(module, PLUGIN_HBDK4)
                        and any(_under(module, family) for family in HORIZON_FAMILIES)):
                    self._add("export_wrong_module", line,
                              f"{item.name} imported from {module}; it must come from {PLUGIN_HBDK4}")

    def _check_calls(self) -> None:
        for call in self.calls:
            self._check_convert_module(call)
            self._check_export_module(call)
            self._note_call_uses(call)
        self._note_name_uses()

    def _check_convert_module(self, call: ast.Call) -> None:
        path = self._path(call)
        if _last(path) != "convert":
            return
        # `horizon_plugin_pytorch.quantization.hbdk4.convert(...)` / `h4.convert(...)`:
        # only attribute calls (a bare imported name was reported at its import).
        if isinstance(call.func, ast.Attribute) and _under(path, PLUGIN_HBDK4):
            self._add("convert_wrong_module", call.lineno,
                      f"{_raw_text(call.func)}(...) resolves to {path}; convert must come from {HBDK4_COMPILER}")
        # Any other plugin convert is reported only when called like hbdk4's
        # convert(qat_bc, march): a march keyword or value, or a .bc model argument.
        elif _under(path, PLUGIN) and not _under(path, PLUGIN_HBDK4) and self._hbdk4_convert_like(call):
            self._add("convert_wrong_module", call.lineno,
                      f"{_raw_text(call.func)}(...) is {path} but is called like hbdk4's "
                      f"convert(qat_bc, march); it must come from {HBDK4_COMPILER}")

    def _check_export_module(self, call: ast.Call) -> None:
        """`hbdk4.compiler.export(...)` and the like, through a module alias."""
        path = self._path(call)
        last = _last(path)
        if (last in EXPORT_FUNCS and isinstance(call.func, ast.Attribute) and not _under(path, PLUGIN_HBDK4)
                and any(_under(path, family) for family in HORIZON_FAMILIES)):
            self._add("export_wrong_module", call.lineno,
                      f"{_raw_text(call.func)}(...) resolves to {path}; {last} must come from {PLUGIN_HBDK4}")

    def _note_call_uses(self, call: ast.Call) -> None:
        """What the script does, from one call: the consistency strategy and its level, and
        how it runs QuantAnalysis."""
        callee = self._callee(call)
        if callee == "set_consistency_level":
            self.uses.add("consistency_strategy")
            level = _int(_level_arg(call))
            if level is not None:
                self.uses.add(f"consistency_level:{level}")
        attribute = isinstance(call.func, ast.Attribute)
        receiver = _raw_text(call.func.value) if attribute else None
        on_qa = (receiver in self.qa_names) or (attribute and self._is_qa(call.func.value))
        if on_qa and callee == "run":
            keywords = {k.arg for k in call.keywords}
            self.uses.add("split_run" if keywords & SPLIT_RUN_KEYWORDS else "single_run")
        elif on_qa and callee in ("sensitivity", "compare_per_layer"):
            self.uses.add(callee)

    def _note_name_uses(self) -> None:
        """What the script does, from the names it uses: FakeQuantState._FLOAT, QatBcEditor."""
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Attribute) and node.attr == "_FLOAT" \
                    and _last(_raw_text(node.value)) == "FakeQuantState":
                self.uses.add("fake_quant_float")
            elif (isinstance(node, ast.Name) and node.id == "QatBcEditor") or \
                    (isinstance(node, ast.Attribute) and node.attr == "QatBcEditor") or \
                    (isinstance(node, ast.ImportFrom) and any(a.name == "QatBcEditor" for a in node.names)):
                self.uses.add("bc_editor")

    @staticmethod
    def _hbdk4_convert_like(call: ast.Call) -> bool:
        """convert(qat_bc, march): a march keyword, a march value ("nash-m", a name with
        "march" in it) as second argument, or a ".bc" path / a "*_bc" name as first."""
        if any(k.arg == "march" for k in call.keywords):
            return True
        second = _arg(call, 1)
        if second is not None:
            march = _str(second)
            if march is not None and march.lower().startswith(MARCH_PREFIXES):
                return True
            if "march" in (_raw_text(second) or "").lower():
                return True
        first = _arg(call, 0)
        if first is not None:
            path = _str(first)
            if path is not None and path.lower().endswith(".bc"):
                return True
            if "bc" in (_raw_text(first) or "").lower().replace(".", "_").split("_"):
                return True
        return False

    # ---- QuantAnalysis(...) arguments

    def _check_quant_analysis(self) -> None:
        for call in self.calls:
            if not self._is_qa(call):
                continue
            self.uses.add("quant_analysis")
            baseline = _arg(call, 0, "baseline_model")
            analysis = _arg(call, 1, "analysis_model")
            type_node = _arg(call, 2, "analysis_model_type")
            literal = _str(type_node)
            kind = literal.lower() if literal is not None else None
            if kind is not None:
                self.uses.add(f"analysis_type:{kind}")
                if kind in DEPRECATED_TYPES:
                    self._add("deprecated_analysis_type", call.lineno,
                              f"QuantAnalysis analysis_model_type {literal!r} is a deprecated alias "
                              f"of {DEPRECATED_TYPES[kind]!r}")
                elif kind not in ANALYSIS_TYPES:
                    self._add("unknown_analysis_type", call.lineno,
                              f"QuantAnalysis analysis_model_type {literal!r} is not one of "
                              f"{', '.join(ANALYSIS_TYPES)} (pt_lut is a deprecated alias of pre_export)")
            # M10: QuantAnalysis on a compiled model (.hbm path, hbm-named variable, Hbm(...)).
            for role, arg in (("baseline", baseline), ("analysis", analysis)):
                what = _hbm_reference(arg)
                if what:
                    self._add("quant_analysis_on_hbm", call.lineno,
                              f"QuantAnalysis {role} argument {what} is a compiled hbm model; "
                              "QuantAnalysis applies to pre_export, export and convert only")
            # M03: an "export" comparison whose baseline is the QAT model itself. Limit: only
            # a plain name containing "qat" and not "export", never bound to a pre_export(...)
            # result or to an expression mentioning "export" (torch.load("qat.export.pt")).
            base = _name(baseline)
            if (kind == "export" and base and "qat" in base.lower() and "export" not in base.lower()
                    and base not in self.export_pt_names):
                analysed = _raw_text(analysis) if analysis is not None else "..."
                self._add("export_compare_skips_export_pt", call.lineno,
                          f"QuantAnalysis({base}, {analysed}, \"export\") compares the QAT model with "
                          "the bc directly; the baseline should be qat.export.pt (pre_export result)")

    # ---- export_without_eval / export_without_validation / float_state_export

    def _check_export_state(self, scope: _Scope, events: list[_Event]) -> None:
        evaluated: set[str] = set()
        validated: set[str] = set()      # VALIDATION, or a state the script computes
        floated: dict[str, int] = {}     # name -> line of the pending _FLOAT
        touched: set[str] = set()        # names whose state this scope sets itself
        for event in events:
            name = event.name
            if event.kind in ("eval", "state"):
                touched.add(name)
            if event.kind == "eval":
                evaluated.add(name)
            elif event.kind == "state":
                if event.value == _FLOAT:
                    floated[name] = event.line
                elif event.value in (_VALIDATION, _UNKNOWN):
                    validated.add(name)
                    floated.pop(name, None)
            elif event.kind == "export" and name and (name in touched or self._export_target_checked(scope, name)):
                call = f"{event.value}({name}, ...)"
                if name not in evaluated:
                    self._add("export_without_eval", event.line,
                              f"{call} without {name}.eval() before it")
                if name in floated:
                    self._add("float_state_export", event.line,
                              f"{call} after set_fake_quantize({name}, FakeQuantState._FLOAT) at line "
                              f"{floated[name]} with no FakeQuantState.VALIDATION in between")
                elif name not in validated:
                    self._add("export_without_validation", event.line,
                              f"{call} without set_fake_quantize({name}, FakeQuantState.VALIDATION) before it")

    def _export_target_checked(self, scope: _Scope, name: str) -> bool:
        """Only a model this scope owns is checked. Limits: a function parameter, a free
        (global / closure) variable or an alias of another object (`m = self.model`, a loop
        variable, a deepcopy) had its state set by someone else; a pre_export(...) result was
        checked for eval + observers off by pre_export itself. Any of these is checked all the
        same once the scope itself sets its state (calls m.eval() or set_fake_quantize(m, ...)
        before the export): the scope has then taken charge of the export state."""
        if name in self.pre_export_names or name in scope.aliased:
            return False
        if scope.is_module:
            return True
        return name in scope.bound and name not in scope.params

    # ---- strategy_after_prepare / strategy_on_checkpoint (per scope)

    def _check_strategy_scope(self, events: list[_Event]) -> None:
        prepares = [e for e in events if e.kind == "prepare"]
        for event in (e for e in events if e.kind == "level"):
            before = [p for p in prepares if p.line < event.line]
            after = [p for p in prepares if p.line > event.line]
            # Limit: a level set between two prepare calls (e.g. a baseline model, then the
            # high-consistency one) is accepted; so is one followed by a call to a local
            # helper that prepares. A helper defined elsewhere is not followed.
            if before and not after:
                level = event.value if event.value is not None else "..."
                self._add("strategy_after_prepare", event.line,
                          f"ConsistencyStrategy.set_consistency_level({level}) after "
                          f"{before[-1].text} at line {before[-1].line}; it must be set before prepare")
        if self._script_trains:
            return
        first = next((e for e in events if e.kind == "level" and e.value in (1, 2)), None)
        if first is None:
            return
        load = next((e for e in events if e.kind == "load" and e.line > first.line), None)
        if load is not None:
            self._add("strategy_on_checkpoint", load.line,
                      f"set_consistency_level({first.value}) at line {first.line}, then "
                      f"{load.text}(...) and no training call in the script; levels 1 and 2 must be retrained")

    @cached_property
    def _script_trains(self) -> bool:
        """Any call named like training (`train(`, `trainer.fit(`, `train_one_epoch(`,
        `model.train()`) or a `loss.backward()`: the script retrains, so loading a checkpoint
        after set_consistency_level(1|2) is its starting point, not M11."""
        for call in self.calls:
            name = (self._callee(call) or "").lower()
            if "train" in name or "fit" in name or name == "backward":
                return True
        return False

    # ---- strategy_level2_first (whole script)

    def _check_strategy_file(self, events: list[_Event]) -> None:
        levels = [e for e in events if e.kind == "level"]
        levels.sort(key=lambda e: e.line)
        # Limit: a level computed at run time (args.level) may be 0 or 1: then nothing is said.
        if not levels or any(e.value is None for e in levels):
            return
        if levels[0].value == 2 and not any(e.value in (0, 1) for e in levels):
            self._add("strategy_level2_first", levels[0].line,
                      "set_consistency_level(2) with no level 0 or level 1 call in the script")

    # ---- run_before_badcase

    def _check_badcase_order(self, scope: _Scope, events: list[_Event]) -> None:
        """`qa = QuantAnalysis(...)` then `qa.run()` in the same scope with no badcase call on
        that object in between. A rebinding starts a new object; a QuantAnalysis received as a
        parameter or from elsewhere is not followed. One finding per object."""
        state: dict[str, str] = {}       # name -> "fresh" | "ready" | "reported"
        for event in events:
            if event.kind == "qa_bind":
                state[event.name] = "fresh"
            elif event.kind == "qa_unbind":
                state.pop(event.name, None)
            elif event.kind == "qa_badcase" and event.name in state:
                state[event.name] = "ready"
            elif event.kind == "qa_run" and state.get(event.name) == "fresh":
                state[event.name] = "reported"
                self._add("run_before_badcase", event.line,
                          f"{event.name}.run() without {event.name}.auto_find_bad_case(), "
                          f"{event.name}.set_bad_case() or {event.name}.load_bad_case() before it")

    def _add(self, kind: str, line: int, detail: str) -> None:
        assert kind in KINDS, kind
        self.findings.append(ScriptFinding(kind, line, detail))


def _targets(node: ast.Assign | ast.AnnAssign) -> list[ast.AST]:
    return list(node.targets) if isinstance(node, ast.Assign) else [node.target]


def _is_eval_chain(node: ast.AST) -> bool:
    """An expression whose last call is `.eval()` (`m.eval()`, `prepare(...).eval()`)."""
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr == "eval" and not node.args and not node.keywords)


def _passed_names(call: ast.Call, params: list[str]) -> dict[str, str]:
    """Parameter -> plain-name argument of a call to a local helper."""
    passed: dict[str, str] = {}
    for i, arg in enumerate(call.args):
        if isinstance(arg, ast.Starred):
            break
        if i < len(params) and isinstance(arg, ast.Name):
            passed[params[i]] = arg.id
    for kw in call.keywords:
        if kw.arg is not None and isinstance(kw.value, ast.Name):
            passed[kw.arg] = kw.value.id
    return passed


def _hbm_reference(arg: ast.AST | None) -> str | None:
    """How `arg` refers to a compiled model: a ".hbm" path, a name containing "hbm", or a
    call to an Hbm / load_hbm-like function (or one given a ".hbm" path)."""
    if arg is None:
        return None
    text = _str(arg)
    if text is not None:
        return repr(text) if text.lower().endswith(".hbm") else None
    raw = _raw_text(arg)
    if raw is not None:
        return raw if "hbm" in raw.lower() else None
    if isinstance(arg, ast.Call):
        func = _raw_text(arg.func) or ""
        if "hbm" in _last(func).lower():
            return f"{func}(...)"
        if any((_str(a) or "").lower().endswith(".hbm") for a in arg.args):
            return f"{func or 'call'}(... .hbm ...)"
    return None


# --- facts (probes/probe_output.py) -------------------------------------------------------

# What a script does that rules combine with case facts (M05, M08, M09, M10).
SCRIPT_USES = ("quant_analysis", "split_run", "single_run", "consistency_strategy", "sensitivity",
               "compare_per_layer", "fake_quant_float", "bc_editor")


def add_facts(found, out) -> None:
    report = check_script(found.path, found.display)
    for finding in out.limited(report.findings):
        out.add("script_finding", {"path": found.display, "line": finding.line, "kind": finding.kind,
                                   "detail": finding.detail}, found, line=finding.line)
    for use in sorted(u for u in report.uses if u in SCRIPT_USES or u.startswith("consistency_level:")):
        out.add("script_use", {"path": found.display, "use": use}, found, key=use)
