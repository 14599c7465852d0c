"""fx_graph.txt probe: the fixture against EXPECTED.json, export-risk signals on small
hand-made graphs, address normalisation, and InputError for broken input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from j6doctor.probes import InputError
from j6doctor.probes.fx_graph import callable_name, read_fx_graph, read_fx_table
from j6doctor.probes.input_error import Skips

FORMATS = Path(__file__).parent / "fixtures" / "formats"
FX = FORMATS / "prepare" / "fx_graph.txt"
EXPECTED = json.loads((FORMATS / "EXPECTED.json").read_text(encoding="utf-8"))
HEADERS = ["opcode", "name", "target", "args", "kwargs"]


def simple(headers: list[str], rows: list[list[str]]) -> str:
    """tabulate's default ('simple') layout, as print_tabular writes it."""
    widths = [max(len(c) for c in col) for col in zip(headers, *rows)]
    line = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()
    return "\n".join([line(headers), "  ".join("-" * w for w in widths)] + [line(r) for r in rows])


def graph_file(tmp_path: Path, rows: list[list[str]], name: str = "fx_graph.txt") -> Path:
    path = tmp_path / name
    path.write_text("Graph:\n" + simple(HEADERS, rows) + "\n", encoding="utf-8")
    return path


def signals(graph) -> list[tuple[str, str]]:
    return [(s.kind, s.module) for s in graph.signals]


# ---------------------------------------------------------------- fixture

def test_fixture_matches_expected():
    graph = read_fx_graph(FX)
    truth = EXPECTED["fx_graph"]
    assert len(graph.nodes) == truth["nodes"] == 50
    assert graph.opcodes == truth["opcodes"]
    assert graph.signals == []   # ordinary modules, scope_end markers and FloatFunctional add
    first = graph.nodes[0]
    assert (first.line, first.opcode, first.name, first.target, first.args, first.kwargs) == (
        4, "placeholder", "input_0", "input_0", "()", "{}")
    interp = next(n for n in graph.nodes if n.name == "interpolate")
    assert interp.target == "<function interpolate>"
    assert interp.kwargs == "{'scale_factor': 2, 'mode': 'bilinear', 'align_corners': False}"
    assert graph.nodes[-1].args == "({'cls_score': dequant_cls, 'bbox_pred': dequant_reg},)"
    assert not any("0x" in n.target for n in graph.nodes)


def test_address_normalisation_makes_runs_equal(tmp_path):
    text = FX.read_text(encoding="utf-8")
    other = tmp_path / "fx_graph_run2.txt"
    # The same model dumped by another run: only the addresses differ.
    other.write_text(text.replace("0x7f52c81d9ea0", "0x7f0011223344")
                     .replace("0x7f52e4a3f010", "0x7fab00cd00ef"), encoding="utf-8")
    assert other.read_text(encoding="utf-8") != text
    first, second = read_fx_graph(FX), read_fx_graph(other)
    assert first.nodes == second.nodes


def test_address_normalisation_with_reformatted_columns(tmp_path):
    rows = [["placeholder", "x", "x", "()", "{}"],
            ["call_function", "f", "<function helper at 0x7f52c81d9ea0>", "(x,)", "{}"],
            ["output", "output", "output", "(f,)", "{}"]]
    a = read_fx_graph(graph_file(tmp_path, rows, "a.txt"))
    rows[1][2] = "<function helper at 0x1>"
    b = read_fx_graph(graph_file(tmp_path, rows, "b.txt"))
    assert a.nodes == b.nodes and a.nodes[1].target == "<function helper>"


def test_callable_names():
    assert callable_name("<built-in function getitem>") == "getitem"
    assert callable_name("<built-in method cat of type object at 0x7f00>") == "torch.cat"
    assert callable_name("<function Tracer.scope_end at 0x7f52c81d9ea0>") == "Tracer.scope_end"
    assert callable_name("<class 'range'>") == "range"
    assert callable_name("<method 'permute' of 'torch._C.TensorBase' objects>") == "Tensor.permute"
    assert callable_name("<slot wrapper '__getitem__' of 'tuple' objects>") == "tuple.__getitem__"
    assert callable_name("torch.cat") == "torch.cat"


# ---------------------------------------------------------------- signals on hand-made graphs

DEPLOY_AND_LOOP = [
    ["placeholder", "x", "x", "()", "{}"],
    ["get_attr", "is_deploy", "is_deploy", "()", "{}"],
    ["call_function", "getattr_1", "<built-in function getattr>", "(x, 'training')", "{}"],
    ["call_method", "size", "size", "(x,)", "{}"],
    ["call_function", "getitem", "<built-in function getitem>", "(size, 0)", "{}"],
    ["call_method", "view", "view", "(x, getitem, -1)", "{}"],
    ["call_function", "floordiv", "<built-in function floordiv>", "(getitem, 2)", "{}"],
    ["call_function", "range_1", "<class 'range'>", "(floordiv,)", "{}"],
    ["call_method", "item", "item", "(x,)", "{}"],
    ["call_function", "_assert", "<function _assert at 0x7f00aa>", "(x, 'shape check')", "{}"],
    ["call_module", "head", "head", "(view,)", "{'mode': 'deploy'}"],
    ["call_function", "add", "<built-in function add>", "(head, view)", "{}"],
    ["output", "output", "output", "(add,)", "{}"],
]


def test_deploy_branch_and_size_driven_loop(tmp_path):
    graph = read_fx_graph(graph_file(tmp_path, DEPLOY_AND_LOOP))
    assert signals(graph) == [
        ("deploy_branch", "is_deploy"),
        ("deploy_branch", "getattr_1"),          # reads self.training
        ("dynamic_control", "floordiv"),         # size()[0] // 2
        ("dynamic_control", "range_1"),          # loop count from the size
        ("dynamic_control", "item"),
        ("dynamic_control", "_assert"),
        ("deploy_branch", "head"),               # kwargs mention deploy
        ("float_function", "add"),               # tensors: the view did not inherit the size taint
    ]
    by_name = {s.module: s for s in graph.signals}
    assert "size()" in by_name["range_1"].detail and "size()" in by_name["floordiv"].detail
    assert by_name["item"].line == 12   # Graph: + header + rule + 8 rows before it
    assert "view" not in by_name   # a size only used by view/reshape is not flagged


def test_float_functions(tmp_path):
    rows = [
        ["placeholder", "x", "x", "()", "{}"],
        ["placeholder", "y", "y", "()", "{}"],
        ["call_function", "cat", "<built-in method cat of type object at 0x7f1>", "([x, y],)", "{'dim': 1}"],
        ["call_function", "add", "<built-in function add>", "(x, y)", "{}"],
        ["call_function", "mul", "<built-in function mul>", "(x, 0.5)", "{}"],
        ["call_method", "sub", "sub", "(x, y)", "{}"],
        ["get_attr", "ff", "neck.ff", "()", "{}"],
        ["call_method", "add_1", "add", "(ff, x, y)", "{}"],
        ["call_method", "size", "size", "(x,)", "{}"],
        ["call_function", "getitem", "<built-in function getitem>", "(size, 2)", "{}"],
        ["call_function", "getitem_1", "<built-in function getitem>", "(size, 3)", "{}"],
        ["call_function", "mul_1", "<built-in function mul>", "(getitem, getitem_1)", "{}"],
        ["call_function", "interpolate", "<function interpolate at 0x7f2>", "(x,)", "{}"],
        ["call_function", "scope_end", "<function Tracer.scope_end at 0x7f3>", "('neck',)", "{}"],
        ["output", "output", "output", "((cat, add, mul, sub, add_1, mul_1, interpolate),)", "{}"],
    ]
    graph = read_fx_graph(graph_file(tmp_path, rows))
    assert signals(graph) == [("float_function", "cat"), ("float_function", "add"),
                              ("float_function", "mul"), ("float_function", "sub"),
                              ("dynamic_control", "mul_1")]
    assert "torch.cat" in graph.signals[0].detail


def test_read_fx_table_on_embedded_lines():
    lines = ["", simple(HEADERS, [["placeholder", "a", "a", "()", "{}"],
                                 ["output", "output", "output", "(a,)", "{}"]])]
    table_lines = lines[1].split("\n") + ["", "trailing text"]
    nodes = read_fx_table(table_lines, 40, "model_check_result.txt", Skips())
    assert [(n.line, n.name) for n in nodes] == [(42, "a"), (43, "output")]


# ---------------------------------------------------------------- broken input

def _fixture_text() -> str:
    return FX.read_text(encoding="utf-8")


BROKEN = [
    ("empty", b"", "empty file"),
    ("NUL bytes", b"Graph:\nopcode  name\n\x00", "binary"),
    ("not UTF-8", b"Graph:\n\xff\xfe\xfa", "not UTF-8"),
    ("CSV", b"opcode,name,target,args,kwargs\nplaceholder,x,x,(),{}\n", "Graph:"),
    ("graph line only", b"Graph:\n", "expected a 'Graph:' line"),
    ("wrong headers", b"Graph:\nop  name\n--  ----\nx   y\n", "opcode, name, target, args, kwargs"),
    ("unknown opcode", ("Graph:\n" + simple(HEADERS, [["call_stuff", "a", "a", "()", "{}"]])).encode(),
     "unknown FX opcode"),
]


@pytest.mark.parametrize("label, data, fragments", [
    ("truncated mid row", _fixture_text()[:_fixture_text().index("(head_reg_relu1,)") + 5].encode(),
     ["expected args as (...)", "does not end with its 'output' node"]),
    ("truncated at a line end", _fixture_text()[:_fixture_text().index("call_module    dequant_reg")].encode(),
     ["does not end with its 'output' node"]),
])
def test_a_cut_graph_keeps_its_nodes_and_says_where_it_ends(tmp_path, label, data, fragments):
    path = tmp_path / "fx_graph.txt"
    path.write_bytes(data)
    whole = read_fx_graph(FX)
    graph = read_fx_graph(path)
    assert 0 < len(graph.nodes) < len(whole.nodes)
    assert [n.name for n in graph.nodes] == [n.name for n in whole.nodes[:len(graph.nodes)]]
    assert [fragment in item.reason for item, fragment in zip(graph.skipped.kept, fragments)] == [True] * len(fragments)
    assert len(graph.skipped) == len(fragments)


def test_an_unknown_opcode_row_is_skipped_among_good_ones(tmp_path):
    rows = [["placeholder", "x", "x", "()", "{}"], ["call_stuff", "a", "a", "()", "{}"],
            ["output", "output", "output", "((x,),)", "{}"]]
    path = tmp_path / "fx_graph.txt"
    path.write_text("Graph:\n" + simple(HEADERS, rows))
    graph = read_fx_graph(path)
    assert [n.name for n in graph.nodes] == ["x", "output"]
    (item,) = graph.skipped.kept
    assert item.line == 5 and "unknown FX opcode 'call_stuff'" in item.reason


@pytest.mark.parametrize("label,data,fragment", BROKEN, ids=[b[0] for b in BROKEN])
def test_broken_input_raises_input_error(tmp_path, label, data, fragment):
    path = tmp_path / "broken_graph.txt"
    path.write_bytes(data)
    with pytest.raises(InputError) as info:
        read_fx_graph(path)
    assert "broken_graph.txt" in str(info.value)
    assert fragment in str(info.value)
