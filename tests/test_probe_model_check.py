"""model_check_result.txt probe: both layouts against EXPECTED.json, the §13.6 red-flag
signals on hand-made files, and InputError (naming the file) for broken input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from j6doctor.probes import InputError
from j6doctor.probes.model_check import read_model_check

FORMATS = Path(__file__).parent / "fixtures" / "formats"
NEWER = FORMATS / "prepare" / "model_check_result.txt"
OLD = FORMATS / "variants" / "model_check_result.old_embedded_graph.txt"
EXPECTED = json.loads((FORMATS / "EXPECTED.json").read_text(encoding="utf-8"))

QS = "<class 'horizon_plugin_pytorch.nn.qat.stubs.QuantStub'>"
DQ = "<class 'horizon_plugin_pytorch.nn.qat.stubs.DeQuantStub'>"
CV = "<class 'horizon_plugin_pytorch.nn.qat.conv2d.Conv2d'>"
RELU = "<class 'horizon_plugin_pytorch.nn.qat.relu.ReLU'>"
LAYER_HEADERS = ["Module Name", "Module Type", "Input dtype", "out dtype", "ch_axis", "observer"]


# ---------------------------------------------------------------- tabulate-like renderers

def simple(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(c)) for c in col) for col in zip(headers, *rows)]
    line = lambda cells: "  ".join(str(c).ljust(w) for c, w in zip(cells, widths)).rstrip()
    return "\n".join([line(headers), "  ".join("-" * w for w in widths)] + [line(r) for r in rows])


def psql(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(c)) for c in col) for col in zip(headers, *rows)]
    border = "+" + "+".join("-" * (w + 2) for w in widths) + "+"
    line = lambda cells: "| " + " | ".join(str(c).ljust(w) for c, w in zip(cells, widths)) + " |"
    rule = "|" + "+".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([border, line(headers), rule] + [line(r) for r in rows] + [border])


def model_check_text(fusion: str, called: list[list[str]], layers: list[list[str]],
                     messages: list[list[str]] | None = None, extra: str = "") -> str:
    parts = [fusion, "\n\nEach module called times:\n", simple(["name", "called times"], called),
             "\n\ninput dtype statistics:\n",
             psql(["module type", "torch.float32", "qint8"], [[QS, "1", "0"], [CV, "0", "2"], ["total", "1", "2"]]),
             extra,
             "\n\nEach layer out qconfig:\n", psql(LAYER_HEADERS, layers)]
    if messages:
        parts += ["\n\nPlease check if these OPs qconfigs are expected..\n",
                  psql(["Module Name", "Module Type", "Msg"], messages)]
    return "".join(parts)


def write(tmp_path: Path, text: str | bytes, name: str = "model_check_result.txt") -> Path:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def kinds(check) -> list[tuple[str, str]]:
    return [(s.kind, s.module) for s in check.signals]


# ---------------------------------------------------------------- fixtures vs EXPECTED.json

def test_newer_layout_matches_expected():
    truth = EXPECTED["model_check_result"]
    check = read_model_check(NEWER)
    assert check.layout == "newer" and truth["layout"].startswith("newer")
    assert check.unfused_groups == [truth["unfused_group"]]
    assert not check.all_fused
    assert check.unused_modules == truth["unused_modules"]
    assert list(check.shared_modules) == truth["shared_modules"]
    assert check.nondefault_averaging_constant == truth["nondefault_averaging_constant"]
    assert check.high_precision_outputs == truth["high_precision_outputs"]
    assert check.dtype_columns == truth["dtype_columns"]
    assert check.has_embedded_graph is False and check.embedded_graph is None
    assert len(check.called_times) == 36 and check.called_times["quant"] == 1
    assert len(check.layer_qconfig) == 16
    assert check.layer_qconfig[9] == {
        "module": "neck.add[add]",
        "type": "<class 'horizon_plugin_pytorch.nn.qat.functional_modules.FloatFunctional'>",
        "input_dtype": "['qint8', 'qint8']", "out_dtype": "['qint8']", "ch_axis": "-1",
        "observer": "MinMaxObserver(averaging_constant=0)"}
    assert check.layer_qconfig[11]["observer"] == ""   # None renders as a blank cell
    assert len(check.weight_qconfig) == 12
    assert check.messages == [("quant", "Fixed input scale 0.0078125")]


def test_newer_layout_signals():
    check = read_model_check(NEWER)
    assert kinds(check) == [("unfused", "neck.lateral.conv"), ("unused_module", "head.aux_conv"),
                            ("scale_frozen", "neck.add[add]"), ("fixed_scale", "quant")]
    lines = NEWER.read_text(encoding="utf-8").split("\n")
    for signal in check.signals:   # each signal points at the row it came from
        assert signal.module.split("[")[0] in lines[signal.line - 1]
    assert check.signals[0].detail == "not fused: neck.lateral.conv + neck.add"
    assert check.signals[2].detail == "averaging_constant=0"


def test_old_layout_with_embedded_graph():
    truth = EXPECTED["variants"]["model_check_result.old_embedded_graph.txt"]
    check = read_model_check(OLD)
    assert check.layout == "vB"
    assert check.all_fused and check.unfused_groups == []
    assert check.unused_modules == truth["unused_modules"]
    assert check.shared_modules == truth["shared_modules"] == {"neck.act": 2}
    assert check.high_precision_outputs == ["conv1"]
    assert check.nondefault_averaging_constant == {}   # class-name-only observers
    assert check.dtype_columns == ["torch.float32", "qint8"]
    assert check.has_embedded_graph
    graph = check.embedded_graph
    assert [n.name for n in graph.nodes] == ["input_0", "quant", "conv0", "conv1", "output"]
    assert graph.opcodes == {"placeholder": 1, "call_module": 3, "output": 1}
    assert OLD.read_text(encoding="utf-8").split("\n")[graph.nodes[0].line - 1].startswith(
        "placeholder  input_0")
    assert kinds(check) == [("unused_module", "head.aux_conv"), ("shared_module", "neck.act"),
                            ("weight_dtype", "conv1")]
    assert check.signals[1].detail.startswith("called 2 times")


def test_run_exactly_once_layout(tmp_path):
    text = OLD.read_text(encoding="utf-8")
    start, end = text.index("\n\nModules below are not used"), text.index("\n\ninput dtype")
    text = text[:start] + "All modules in the model run exactly once." + text[end:]
    check = read_model_check(write(tmp_path, text))
    assert check.layout == "vB" and check.called_times == {} and check.signals[-1].kind == "weight_dtype"


# ---------------------------------------------------------------- hand-made red flags

def test_shared_unfused_groups_and_stub_sharing(tmp_path):
    fusion = ("Fusable modules are listed below:\n"
              + simple(["name", "type"], [["neck.conv(shared)", CV], ["neck.bn", "<class 'BN'>"], ["", ""]])
              + "\n\n" + simple(["name", "type"], [["head.conv", CV], ["head.relu", RELU], ["", ""]])
              + "\n")
    called = [["quant", "2"], ["dequant", "3"], ["neck.conv", "2"], ["head.conv", "1"]]
    layers = [["quant", QS, "[torch.float32]", "['qint8']", "-1", "MinMaxObserver(averaging_constant=0.01)"],
              ["quant(1)", QS, "[torch.float32]", "['qint8']", "-1", "MinMaxObserver(averaging_constant=0.01)"],
              ["dequant", DQ, "[torch.float32]", "[torch.float32]", "qconfig = None", ""]]
    check = read_model_check(write(tmp_path, model_check_text(fusion, called, layers)))
    assert check.unfused_groups == [["neck.conv", "neck.bn"], ["head.conv", "head.relu"]]
    unfused = [s for s in check.signals if s.kind == "unfused"]
    assert [s.module for s in unfused] == ["neck.conv", "head.conv"]
    assert "shared" in unfused[0].detail and "shared" not in unfused[1].detail
    shared = {s.module: s.detail for s in check.signals if s.kind == "shared_module"}
    assert check.shared_modules == {"quant": 2, "dequant": 3, "neck.conv": 2}
    assert "worst case" in shared["quant"]
    assert "harmless" in shared["dequant"]
    assert "worst" not in shared["neck.conv"] and "harmless" not in shared["neck.conv"]


def test_layer_and_message_signals(tmp_path):
    layers = [
        ["quant", QS, "[torch.float32]", "['qint8']", "-1", "MinMaxObserver(averaging_constant=0.05)"],
        ["conv_a", CV, "['qint8']", "[torch.float32]", "activation = None", ""],
        ["relu_a", RELU, "[torch.float32]", "['qint8']", "-1", "MinMaxObserver(averaging_constant=0.01)"],
        ["cpu_op", "<class 'torch.nn.modules.pooling.AvgPool2d'>", "[torch.float32]",
         "[torch.float32]", "qconfig = None", ""],
        ["dequant", DQ, "['qint8']", "[torch.float32]", "qconfig = None", ""],
        ["mix", CV, "['qint8', 'qint16']", "['qint8']", "-1", "MSEObserver(averaging_constant=1e-2)"],
    ]
    messages = [["quant", QS, "Fixed scale 0.0078125"], ["conv_a", CV, "qint16 weight!"],
                ["mix", CV, "Mixed input dtype ['qint8', 'qint16'] and output dtype ['qint8']"],
                ["conv_a", CV, "activation is None, output is high precision"]]
    text = model_check_text("All fusable modules are fused in model!\n",
                            [["quant", "1"], ["conv_a", "1"]], layers, messages)
    check = read_model_check(write(tmp_path, text))
    assert kinds(check) == [("averaging_constant", "quant"), ("float_input_op", "cpu_op"),
                            ("dequant_input_qint8", "dequant"), ("fixed_scale", "quant"),
                            ("weight_dtype", "conv_a"), ("mixed_dtype", "mix"),
                            ("check_message", "conv_a")]  # other messages are kept verbatim
    assert check.nondefault_averaging_constant == {"quant": 0.05}
    assert check.high_precision_outputs == ["conv_a"]   # not cpu_op: it takes float input
    assert check.signals[0].detail == "averaging_constant=0.05"
    assert "['qint8']" in check.signals[2].detail
    assert len(check.messages) == 4


def test_unknown_sections_are_skipped(tmp_path):
    extra = ("\n\nAbnormal compute types:\n" + simple(["name", "compute type"], [["neck.mul", "float32*int8"]])
             + "\n\nSome future section:\n" + psql(["a", "b"], [["1", "2"]]))
    layers = [["conv", CV, "['qint8']", "['qint8']", "-1", "MinMaxObserver(averaging_constant=0)"]]
    text = "Preface line\n" + model_check_text("All fusable modules are fused in model!\n",
                                                [["conv", "1"]], layers, extra=extra)
    check = read_model_check(write(tmp_path, text))
    assert check.dtype_columns == ["torch.float32", "qint8"]
    assert kinds(check) == [("scale_frozen", "conv")]


def test_wide_characters_in_cells(tmp_path):
    # tabulate pads by display width when wcwidth is installed: a CJK name takes 2 columns.
    name = "头部.卷积"
    layers = [["x" * 11, CV, "['qint8']", "['qint8']", "-1", ""]]
    text = model_check_text("All fusable modules are fused in model!\n",
                            [["x" * 11, "1"]], layers)
    text = text.replace("x" * 11, name + "  ", 1).replace("| " + "x" * 11, "| " + name + "  ")
    check = read_model_check(write(tmp_path, text))
    assert check.called_times == {name: 1} and check.layer_qconfig[0]["module"] == name


# ---------------------------------------------------------------- broken input

def _truncated_mid_table() -> str:
    text = NEWER.read_text(encoding="utf-8")
    return text[:text.index("| head.cls_out") + 30]


def _truncated_called_row() -> str:
    text = NEWER.read_text(encoding="utf-8")
    return text[:text.index("backbone.layer2.bn") + 10] + "\n"


def _truncated_between_sections() -> str:
    text = NEWER.read_text(encoding="utf-8")
    return text[:text.index("\n\nEach layer out qconfig:")]


def _cut_in_heading() -> str:
    text = NEWER.read_text(encoding="utf-8")
    return text[:text.index("Weight qconfig:") + len("Weight qcon")]


BROKEN = [
    ("empty", b"", "empty file"),
    ("blank lines", b"\n\n  \n", "empty file"),
    ("NUL bytes", b"Fusable modules are listed below:\n\x00\x00\x01", "binary"),
    ("not UTF-8", "Each layer out qconfig:\n名字".encode("gbk"), "not UTF-8"),
    ("CSV", b"mod_name, op_type, Cosine\nquant, QuantStub, 0.99\n", "not a model_check_result.txt"),
]

# Excerpts and cut files: what is there is read, what is not is named (line and why).
CUT = [
    ("truncated table", _truncated_mid_table(), ["row cut off", "without its closing +---+ border"]),
    ("truncated row", _truncated_called_row(), ["called times", "missing section 'Each layer out qconfig:'"]),
    ("truncated between sections", _truncated_between_sections(), ["missing section 'Each layer out qconfig:'"]),
    ("cut inside a heading", _cut_in_heading(), ["incomplete section heading"]),
    ("heading without table", "All fusable modules are fused in model!\n\nEach layer out qconfig:\n",
     ["expected a psql table under 'Each layer out qconfig:'; the section 'Each layer out qconfig:' is not read"]),
]


@pytest.mark.parametrize("label, text, fragments", CUT, ids=[c[0] for c in CUT])
def test_a_cut_check_keeps_what_it_has_and_names_what_it_lacks(tmp_path, label, text, fragments):
    check = read_model_check(write(tmp_path, text.encode(), "model_check_result.txt"))
    reasons = [item.reason for item in check.skipped.kept]
    assert len(reasons) == len(fragments), reasons
    for fragment in fragments:
        assert any(fragment in reason for reason in reasons), (fragment, reasons)


@pytest.mark.parametrize("label,data,fragment", BROKEN, ids=[b[0] for b in BROKEN])
def test_broken_input_raises_input_error(tmp_path, label, data, fragment):
    path = write(tmp_path, data, "broken_check.txt")
    with pytest.raises(InputError) as info:
        read_model_check(path)
    assert "broken_check.txt" in str(info.value)
    assert fragment in str(info.value)


def test_missing_file(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        read_model_check(tmp_path / "model_check_result.txt")


def test_no_trailing_newline_and_crlf(tmp_path):
    text = NEWER.read_text(encoding="utf-8")
    assert not text.endswith("\n")
    check = read_model_check(write(tmp_path, text.replace("\n", "\r\n").encode()))
    assert check.unfused_groups == [EXPECTED["model_check_result"]["unfused_group"]]
    assert len(check.layer_qconfig) == 16


# ---------------------------------------------------------------- plugin 3.0.x (REAL_FORMATS.md R1)

REAL = FORMATS / "real" / "model_check" / ".model_check_results"
CURRENT = REAL / "model_check_result_261101_0942_31337.txt"


def test_real_check_header_gives_versions_and_march():
    check = read_model_check(CURRENT)
    assert check.header == {"horizon_plugin_pytorch": ("3.0.5+cu126.torch260", 1),
                            "horizon_plugin_profiler": ("3.0.5", 2), "march": ("nash-e", 3)}
    older = read_model_check(REAL / "model_check_result_261030_1715_30211.txt")
    assert older.header["march"] == ("nash-m", 3)
    assert read_model_check(NEWER).header == {}  # older plugins write no header


def test_real_check_float_gemm_input_and_messages_kept_verbatim():
    check = read_model_check(CURRENT)
    float_gemm = [s for s in check.signals if s.kind == "float_gemm_input"]
    assert [(s.module, s.type) for s in float_gemm] == [("", "Conv2d"), ("backbone.stem", "")]
    assert float_gemm[1].detail == "Unexpect gemm input torch.float32xqint8"
    assert float_gemm[0].line == 29  # the Conv2d row of the input dtype statistics
    verbatim = [(s.module, s.detail) for s in check.signals if s.kind == "check_message"]
    assert verbatim == [("head.fc", "activation is None, output is high precision"),
                        ("neck.shared_conv", "Shared module with different input scales")]


def test_real_check_shared_modules_carry_their_type():
    check = read_model_check(CURRENT)
    shared = {s.module: s.type for s in check.signals if s.kind == "shared_module"}
    assert shared == {"backbone.pool": "MaxPool2d", "neck.shared_conv": "Conv2d"}
    assert check.unused_modules == ["head.aux_conv"]


def test_real_check_gemm_section_is_validated(tmp_path):
    text = CURRENT.read_text(encoding="utf-8").replace("|          14 |            0 |", "|          1x |            0 |", 1)
    path = tmp_path / "model_check_result.txt"
    path.write_text(text, encoding="utf-8")
    check = read_model_check(path)
    (item,) = check.skipped.kept
    assert "expected integer counts per dtype, got '1x'" in item.reason
    assert text.splitlines()[item.line - 1].count("1x") == 1
    assert check.signals   # the rest of the check is read
