"""hb_mapper makertbin / hb_compile conversion logs (REAL_FORMATS.md R4) against the
fixtures in tests/fixtures/formats/real/conversion_log (invented names and numbers):

* hb_mapper_makertbin.first_node_collapse.log: LF, final newline; the preprocess node is at
  0.541412 while the next nodes are ≈ 1; a calibration-folder WARNING;
* hb_mapper_makertbin.healthy.log: no final newline (the file ends in the output table);
* hb_compile.interleaved.crlf.log: CRLF; tables, multi-line messages and prefixed lines
  interleaved; model_deps_info over several lines; a sudden fall in the middle.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from conftest import judged
from j6doctor.probes import conversion_log
from j6doctor.probes.artifacts import identify
from j6doctor.probes.conversion_log import (
    COSINE_HEALTHY,
    FOLLOWING_NODES,
    parse_conversion_log,
    read_conversion_log,
)
from j6doctor.probes.input_error import InputError

FORMATS = Path(__file__).parent / "fixtures" / "formats"
FIXTURES = FORMATS / "real" / "conversion_log"
COLLAPSE = FIXTURES / "hb_mapper_makertbin.first_node_collapse.log"
HEALTHY = FIXTURES / "hb_mapper_makertbin.healthy.log"
INTERLEAVED = FIXTURES / "hb_compile.interleaved.crlf.log"

PREFIX = "2026-05-04 10:21:07,512 file: print_info_dict.py func: print_info_dict line No: 72 "


def write(tmp_path: Path, content: str | bytes, name: str = "hb_mapper_makertbin.log") -> Path:
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    return path


def text_of(path: Path) -> str:
    return path.read_bytes().decode("utf-8")


# --- the fixtures are what they claim to be -------------------------------------------------

def test_fixture_layouts():
    assert COLLAPSE.read_bytes().endswith(b"\n") and b"\r" not in COLLAPSE.read_bytes()
    assert not HEALTHY.read_bytes().endswith(b"\n")
    raw = INTERLEAVED.read_bytes()
    assert raw.count(b"\r\n") == raw.count(b"\n") > 40
    # trailing spaces on every row but the last (R4)
    rows = text_of(COLLAPSE).split("\n")[33:41]
    assert all(row.endswith(" ") for row in rows[:-1]) and not rows[-1].endswith(" ")


# --- first-node collapse ----------------------------------------------------------------

def test_collapse_log_messages():
    log = read_conversion_log(COLLAPSE)
    assert log.display == COLLAPSE.name
    assert {tool: (v.text, v.line) for tool, v in log.versions.items()} == {
        "hbdk": ("3.49.15", 2), "horizon_nn": ("1.1.0", 3), "hb_mapper": ("1.24.3", 4),
        # only in model_deps_info
        "hbdk_runtime": ("3.15.55.0", 24),
    }
    assert (log.march.text, log.march.line) == ("bayes-e", 48)
    assert log.model_deps_info_line == 24
    deps = log.model_deps_info
    assert deps["march"] == "bayes-e"
    assert deps["input_type_rt"] == ["nv12"] and deps["cal_data_type"] == ["uint8"]
    assert deps["hbdk_params"]["input-source"] == {"images": "pyramid", "_default_value": "ddr"}
    assert deps["layer_out_dump"] is False
    assert log.prefixed_lines == 35 == text_of(COLLAPSE).count("\n2026-05-04 ") + 1


def test_collapse_log_input_parameters():
    [group] = read_conversion_log(COLLAPSE).input_parameters
    assert group.name == "images" and group.line == 7
    assert group.get("input_type_rt") == "nv12"
    assert group.get("input_type_train") == "rgb"
    assert group.get("input_layout_train") == "NCHW"
    assert group.get("norm_type") == "data_mean_and_scale"
    assert group.get("input_space&range") == "regular"
    # the trailing comma is dropped
    assert group.get("mean_value") == "123.675,116.28,103.53"
    assert group.values["scale_value"].line == 18
    assert group.floats("mean_value") == pytest.approx((123.675, 116.28, 103.53))
    assert group.floats("scale_value") == pytest.approx((0.01712, 0.01751, 0.01743))
    assert group.floats("norm_type") is None
    assert group.get("std_value") is None and group.floats("std_value") is None


def test_collapse_log_warning_is_kept_verbatim():
    [warning] = read_conversion_log(COLLAPSE).warnings
    assert warning.line == 23
    assert warning.text == ("WARNING: The calibration dir name suffix (f32) is not the same as the "
                            "value uint8 of the cal_data_type parameter, the cal_data_type "
                            "parameter value will prevail.")


def test_collapse_log_node_table():
    log = read_conversion_log(COLLAPSE)
    assert log.node_table_line == 30
    assert [n.line for n in log.nodes] == list(range(34, 42))
    first = log.nodes[0]
    assert (first.name, first.on, first.subgraph, first.type, first.cosine, first.threshold,
            first.data_type) == ("HZ_PREPROCESS_FOR_images", "BPU", "id(0)",
                                 "HzSQuantizedPreprocess", 0.541412, 127.0, "int8")
    requant = log.node("/backbone/stage1/Split_requant")
    assert requant.cosine is None and requant.threshold is None and requant.data_type == "int8"
    cut = log.nodes[5]
    assert cut.name == "...ck.1/pool/GlobalAveragePool" and cut.name_cut
    assert not first.name_cut
    softmax = log.nodes[-1]
    assert (softmax.on, softmax.subgraph, softmax.cosine, softmax.data_type) == \
        ("CPU", None, 1.000045, "float")
    assert all(n.extra == () for n in log.nodes)


def test_collapse_log_output_table():
    log = read_conversion_log(COLLAPSE)
    assert log.output_table_line == 42
    [output] = log.outputs
    assert (output.line, output.name, output.cosine, output.l1, output.l2, output.chebyshev) == \
        (46, "output", 0.998213, 0.012873, 0.000691, 0.093817)


def test_collapse_log_summary(rulebase):
    summary = read_conversion_log(COLLAPSE).summary()
    first = summary.nodes.first_node
    assert judged(rulebase, COLLAPSE, "first_node_collapsed", "path") == {COLLAPSE.name}
    assert [n.line for n in read_conversion_log(COLLAPSE).first_node(following=1).following] == [35]
    assert first.node.name == "HZ_PREPROCESS_FOR_images" and first.cosine == 0.541412
    assert [n.line for n in first.following] == [35, 36, 38]     # the '--' row is skipped
    assert first.following_min == 0.998907
    # the first node is also the error origin (measured against 1.0) and the worst node
    origin = summary.nodes.breaks[0]
    assert judged(rulebase, COLLAPSE, "node_origin", "node") == {origin.node.name}
    assert origin.node.line == 34 and origin.before is None
    assert origin.drop == pytest.approx(1 - 0.541412)
    assert summary.nodes.worst.line == 34
    assert summary.worst_output.name == "output"


def test_collapse_needs_healthy_nodes_after_it(tmp_path, rulebase):
    text = text_of(COLLAPSE).replace("0.999731  ", "0.712345  ")
    path = write(tmp_path, text)
    first = read_conversion_log(path).first_node()
    assert first.cosine == 0.541412 and first.following_min == 0.712345
    assert judged(rulebase, path, "first_node_collapsed", "path") == set()


def test_healthy_log_without_final_newline(rulebase):
    log = read_conversion_log(HEALTHY)
    assert (log.march.text, log.march.line) == ("bayes-e", 19)
    assert log.model_deps_info is None and log.input_parameters == [] and log.warnings == []
    assert [n.name for n in log.nodes][-2:] == ["...n/lateral_convs.2/conv/Conv",
                                               "...d/cls_branch.3/attn/Softmax"]
    assert [(o.name, o.cosine, o.chebyshev, o.line) for o in log.outputs] == [
        ("logits", 0.99979, 4.086966, 24), ("boxes", 0.993406, 5.827535, 25)]
    summary = log.summary()
    assert summary.nodes.breaks == []                   # slow drift 0.9998 -> 0.9900: never below 0.99
    assert judged(rulebase, HEALTHY, "node_origin", "node") == set()
    assert summary.nodes.first_node.cosine == 0.999812
    assert summary.nodes.worst.name == "...d/cls_branch.3/attn/Softmax"
    assert summary.worst_output.name == "boxes"
    # a stricter healthy threshold turns the drift into a break at the first node below it
    fall = log.breaks(healthy=0.998)[0]
    assert (fall.node.line, fall.before.line) == (13, 11) and 0.001 < fall.drop < 0.02


# --- CRLF, interleaved, sudden fall in the middle ----------------------------------------

def test_interleaved_crlf_log_messages():
    log = read_conversion_log(INTERLEAVED)
    assert {t: (v.text, v.line) for t, v in log.versions.items()} == {
        "hb_compile": ("3.2.7", 2), "hmct": ("2.0.3", 3), "hbdk": ("4.1.5", 4)}
    # no "End to compile ... march" message: the march comes from model_deps_info
    assert (log.march.text, log.march.line) == ("nash-e", 14)
    assert log.model_deps_info == {
        "hb_compile_version": "3.2.7", "hbdk_version": "4.1.5", "hmct_version": "2.0.3",
        "march": "nash-e", "input_names": ["input"], "input_type_rt": ["featuremap"],
        "norm_type": ["no_preprocess"]}
    [group] = log.input_parameters
    assert (group.name, group.line, group.get("input_type_rt"), group.get("norm_type")) == \
        ("input", 6, "featuremap", "no_preprocess")
    assert [(w.line, w.text[:40]) for w in log.warnings] == [
        (22, "WARNING: 3 calibration samples were skip")]
    assert all("\r" not in w.text for w in log.warnings)


def test_interleaved_crlf_log_tables():
    log = read_conversion_log(INTERLEAVED)
    assert log.node_table_line == 24 and log.output_table_line == 40
    # the node table ends at the next prefixed line; its rows all carry trailing spaces
    assert [n.line for n in log.nodes] == list(range(28, 37))
    assert log.nodes[2].name == "...r/blocks.0/norm1/LayerNormalization"
    assert log.nodes[2].data_type == "int16"
    assert log.nodes[0].threshold is None
    argmax = log.nodes[-1]
    assert (argmax.on, argmax.subgraph, argmax.cosine, argmax.data_type) == ("CPU", None, None, "int64")
    assert [(o.name, o.cosine, o.l1) for o in log.outputs] == [
        ("seg_logits", 0.903114, 0.412277), ("seg_mask", None, None)]


def test_interleaved_crlf_log_origin_in_the_middle(rulebase):
    summary = read_conversion_log(INTERLEAVED).summary()
    (name,) = judged(rulebase, INTERLEAVED, "node_origin", "node")
    origin = next(b for b in summary.nodes.breaks if b.node.name == name)
    # the '--' requantize row between them is skipped
    assert (origin.node.name, origin.node.line) == ("/encoder/blocks.0/attn/Softmax", 33)
    assert (origin.before.name, origin.before.line) == ("/encoder/blocks.0/attn/MatMul", 31)
    assert origin.drop == pytest.approx(0.999102 - 0.871206)
    assert summary.nodes.worst.line == 33
    assert summary.worst_output.name == "seg_logits"       # '--' outputs are not ranked
    # the fall (0.128) is what rules/54 compares with its 0.02


def test_crlf_and_lf_read_the_same():
    crlf = parse_conversion_log(text_of(INTERLEAVED), "a.log")
    lf = parse_conversion_log(text_of(INTERLEAVED).replace("\r\n", "\n"), "a.log")
    assert crlf == lf


def test_defaults_are_documented_constants():
    assert (COSINE_HEALTHY, FOLLOWING_NODES) == (0.99, 3)


# --- other layouts ------------------------------------------------------------------------

def test_table_without_equals_line_and_with_blank_line_after_heading(tmp_path):
    text = ("\n".join(text_of(HEALTHY).split("\n")[:17])).replace(
        "information:\n=====", "information:\n\n=====").replace(
        "\n" + "=" * 111 + "\n", "\n")
    log = read_conversion_log(write(tmp_path, text), require_tables=True)
    # heading 6, blank 7, header 8, dashes 9
    assert len(log.nodes) == 8 and log.nodes[0].line == 10


def test_unknown_columns_are_kept_as_extra(tmp_path):
    text = (PREFIX + "The main quantized node information:\n"
            "Node       ON   Cosine Similarity  In/Out  DataType\n"
            "---------------------------------------------------\n"
            "/a/Conv    BPU  0.999123           in      int8    \n"
            "/b/Conv    BPU  0.5                out     int8")
    log = read_conversion_log(write(tmp_path, text))
    assert log.nodes[1].extra == (("In/Out", "out"),)
    assert log.nodes[1].subgraph is None and log.nodes[1].type is None   # columns absent
    assert log.breaks()[0].node.name == "/b/Conv"


def test_appended_runs_keep_the_last(tmp_path):
    first = text_of(HEALTHY)
    second = text_of(COLLAPSE)
    log = read_conversion_log(write(tmp_path, first + "\n" + second))
    assert log.nodes[0].cosine == 0.541412
    assert log.node_table_line == 25 + 30
    assert len(log.outputs) == 1


def test_terminal_copy_with_level_prefix(tmp_path):
    text = ("2026-05-04 10:21:07,001 INFO hbdk version 3.49.15\n"
            "2026-05-04 10:21:07,002 WARNING input_layout_rt is ignored for featuremap input\n"
            "2026-05-04 10:21:07,512 INFO The quantized model output:\n"
            "Output    Cosine Similarity  L1 Distance  L2 Distance  Chebyshev Distance\n"
            "-------------------------------------------------------------------------\n"
            "out       0.912000           0.5          0.01         3.0\n"
            "2026-05-04 10:21:08,000 INFO End to compile the model with march nash-m.\n")
    log = read_conversion_log(write(tmp_path, text))
    assert log.versions["hbdk"].text == "3.49.15"
    assert [(w.line, w.text) for w in log.warnings] == [
        (2, "input_layout_rt is ignored for featuremap input")]
    assert log.nodes == [] and log.worst_node() is None and log.breaks() == []
    assert log.first_node().node is None
    assert log.outputs[0].cosine == 0.912 and log.march.text == "nash-m"


def test_nan_cosine_is_a_fall_and_the_worst(tmp_path):
    text = text_of(HEALTHY).replace("0.995573", "nan     ")
    log = read_conversion_log(write(tmp_path, text))
    assert math.isnan(log.worst_node().cosine)
    fall = log.breaks()[0]
    assert fall.node.line == 14 and fall.before.line == 13 and fall.drop == math.inf


def test_require_tables_false_reads_a_failed_run(tmp_path):
    text = "\n".join(text_of(COLLAPSE).split("\n")[:29])
    log = read_conversion_log(write(tmp_path, text), require_tables=False)
    assert log.nodes == [] and log.outputs == [] and log.node_table_line is None
    assert log.versions["hbdk"].text == "3.49.15" and log.march.text == "bayes-e"   # from deps


# --- discovery by content -------------------------------------------------------------------

NEUTRAL = "pasted_from_ticket.txt"  # a name that hints at no kind


@pytest.mark.parametrize("head, expected", [
    ("The main quantized node information:\nNode  ON\n", True),             # pasted excerpt
    ("some text\r\nThe quantized model output:\r\nOutput  Cosine Similarity\r\n", True),
    (PREFIX + "hb_mapper version 1.24.3\n", True),
    ("2026-03-01 14:02:11,204 INFO [/usr/lib/python3.10/site-packages/horizon_plugin_pytorch/"
     "quantization/prepare.py:412] horizon_plugin_pytorch version: 3.0.5\n", False),  # R8
    ("############# model deps info #############\nhbdk version        : 4.0.21\n", False),  # R6
    ('{"HZ_PREPROCESS_FOR_images": {"type": "HzSQuantizedPreprocess"', False),      # R5
    ("", False),
])
def test_identify_on_pasted_text(head, expected):
    kind, by = identify(NEUTRAL, head.encode("utf-8"))
    if expected:
        assert (kind, by) == ("conversion_log", "content")
    else:
        assert kind != "conversion_log"


# --- bad input ----------------------------------------------------------------------------

def lines_of(path: Path) -> list[str]:
    return text_of(path).split("\n")


def cut_after(path: Path, line: int, keep: str = "") -> str:
    """The file up to and including `line` (1-based), plus `keep` of the next line."""
    lines = lines_of(path)
    return "\n".join(lines[:line]) + ("\n" + keep if keep else "")


def replace_line(path: Path, line: int, new: str) -> str:
    lines = lines_of(path)
    lines[line - 1] = new
    return "\n".join(lines)


def collapse_row(line: int) -> str:
    return lines_of(COLLAPSE)[line - 1]


def test_a_log_without_either_table_is_refused_when_tables_are_required(tmp_path):
    content = "\n".join(lines_of(COLLAPSE)[:29])
    with pytest.raises(InputError) as info:
        read_conversion_log(write(tmp_path, content), display="run/hb_mapper_makertbin.log")
    assert str(info.value).startswith("run/hb_mapper_makertbin.log: no node table ('The main quantized node "
                                      "information:') and no output table")
    log = read_conversion_log(write(tmp_path, content), require_tables=False)
    assert log.march is not None and not log.skipped


# Excerpted, cut and hand-edited logs: the odd part is skipped and named (line and why), the rest read.
BAD = [
    ("file ends after the heading", cut_after(COLLAPSE, 30),
     "expected the header line of the node table under 'The main quantized node "
     "information:' (a line without the log prefix), but the file ends (file truncated?)", 30),
    ("file ends after the = line", cut_after(COLLAPSE, 31),
     "expected the header line of the node table", 31),
    ("log line where the header should be", replace_line(HEALTHY, 7, PREFIX + "Start"),
     "found the log line 'Start'", 7),
    ("file ends after the header", cut_after(COLLAPSE, 32),
     "expected a line of '-' under the header of the node table, but the file ends", 32),
    ("header without rows", cut_after(COLLAPSE, 33),
     "the node table has a header but no readable rows; expected one row per node (file cut?)", 32),
    ("row cut after the cosine", cut_after(COLLAPSE, 36, collapse_row(37)[:82]),
     "row of the node table ends before the column 'Threshold'; expected a value or '--' under "
     "every header (file truncated?)", 37),
    ("row cut inside the node name", cut_after(COLLAPSE, 34, "/backbone/st"),
     "row of the node table ends before the column 'ON'", 35),
    ("name too long for its column", replace_line(COLLAPSE, 36, "/backbone/stage1/conv1/Conv_1_2_3BPU  "
                                                  + collapse_row(36)[37:]),
     "the text of column 'Node' runs into column 'ON'", 36),
    ("two values in one cell", replace_line(COLLAPSE, 35, collapse_row(35).rstrip() + "  extra"),
     "column 'DataType' holds more than one value", 35),
    ("empty cell", replace_line(COLLAPSE, 35, collapse_row(35).replace("HzSQuantizedConv", " " * 16)),
     "empty cell in column 'Type' of the node table; expected a value or '--'", 35),
    ("non-number cosine", replace_line(COLLAPSE, 36, collapse_row(36).replace("0.999412", "0.99x412")),
     "expected a number or '--' in column 'Cosine Similarity' of the node table, found '0.99x412'", 36),
    ("non-number threshold", replace_line(COLLAPSE, 36, collapse_row(36).replace("3.01554", "high   ")),
     "expected a number or '--' in column 'Threshold' of the node table, found 'high'", 36),
    ("unknown header", replace_line(COLLAPSE, 32, collapse_row(32).replace("Cosine Similarity", "Cosine_Similarit ")),
     "expected a header with the columns 'Node  ON  Subgraph  Type  Cosine Similarity  Threshold  "
     "DataType' for the node table, found", 32),
    ("garbled output row", replace_line(COLLAPSE, 46, "output    0.998213  0.012873  0.000691"),
     "row does not line up with the columns of the output table", 46),
    ("non-number L2", replace_line(COLLAPSE, 46, "output    0.998213           0.012873     n/a          0.093817"),
     "expected a number or '--' in column 'L2 Distance' of the output table, found 'n/a'", 46),
    ("output table cut after its header", "\n".join(lines_of(COLLAPSE)[:44]),
     "expected a line of '-' under the header of the output table, but the file ends", 44),
    ("model_deps_info cut off", replace_line(COLLAPSE, 24, collapse_row(24)[:300]),
     "model_deps_info is not a complete Python dict literal", 24),
    ("model_deps_info with a call", replace_line(
        COLLAPSE, 24, PREFIX + "model_deps_info: {'march': __import__('os').getcwd()}"),
     "model_deps_info is not a Python dict of literals", 24),
    ("model_deps_info a set", replace_line(COLLAPSE, 24, PREFIX + "model_deps_info: {'a', 'b'}"),
     "model_deps_info is not a Python dict of literals", 24),
]


@pytest.mark.parametrize("label, content, fragment, line", BAD, ids=[b[0] for b in BAD])
def test_an_odd_part_is_skipped_and_named(tmp_path, label, content, fragment, line):
    log = read_conversion_log(write(tmp_path, content), display="run/hb_mapper_makertbin.log",
                              require_tables=False)
    # a table whose only row is skipped is also noted as having none
    (item,) = [other for other in log.skipped.kept if "no readable rows" not in other.reason] or log.skipped.kept
    assert fragment in item.reason
    assert item.line == line
    if len(lines_of(COLLAPSE)) == len(content.split("\n")) and "not read" not in item.reason:
        # one line of COLLAPSE edited
        # every other node of the table is read as in the whole file
        assert log.nodes == [n for n in read_conversion_log(COLLAPSE).nodes if n.line != line]


@pytest.mark.parametrize("label, line, new", [
    ("row shifted right", 36, " " + collapse_row(36)),
    ("cell shifted left", 36, collapse_row(36).replace("BPU  id(0)", "BPU id(0) ")),
    ("cell shifted right", 36, collapse_row(36).replace("id(0)     Hz", " id(0)    Hz")),
    ("name longer than its column", 35, "/backbone/stem/conv/Conv_with_a_long_name  " + collapse_row(35)[32:]),
])
def test_a_row_off_its_columns_is_read_at_its_runs_of_spaces(tmp_path, label, line, new):
    log = read_conversion_log(write(tmp_path, replace_line(COLLAPSE, line, new)))
    assert not log.skipped
    whole = read_conversion_log(COLLAPSE)
    (moved,) = [n for n in log.nodes if n.line == line]
    (kept,) = [n for n in whole.nodes if n.line == line]
    assert (moved.on, moved.subgraph, moved.type, moved.cosine, moved.threshold, moved.data_type) == \
        (kept.on, kept.subgraph, kept.type, kept.cosine, kept.threshold, kept.data_type)


def test_crlf_error_lines_match_lf(tmp_path):
    text = text_of(INTERLEAVED).replace("0.902331", "0.90233?")
    log = read_conversion_log(write(tmp_path, text))
    (item,) = log.skipped.kept
    assert item.line == 34 and "found '0.90233?'" in item.reason


def test_table_cut_at_the_end_of_a_file_without_newline(tmp_path):
    text = text_of(HEALTHY)[:-len("5.827535")]        # the last row loses its last cell
    log = read_conversion_log(write(tmp_path, text))
    (item,) = log.skipped.kept
    assert item.line == 25
    assert "ends before the column 'Chebyshev Distance'" in item.reason
    assert "(file truncated?)" in item.reason
    assert len(log.outputs) == len(read_conversion_log(HEALTHY).outputs) - 1


@pytest.mark.parametrize("content, fragment", [
    (b"", "empty file"),
    (b"  \n\n", "empty file"),
    (b"2026-05-04 10:21:07,512 file: a.py\x00 func", "binary data"),
    (b"The main quantized node information:\n\xff\xfe\n", "not UTF-8"),
])
def test_unreadable_files(tmp_path, content, fragment):
    with pytest.raises(InputError) as info:
        read_conversion_log(write(tmp_path, content))
    assert info.value.file == "hb_mapper_makertbin.log" and fragment in info.value.message


def test_missing_file(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        read_conversion_log(tmp_path / "hb_mapper_makertbin.log")


def test_module_exports():
    for name in conversion_log.__all__:
        assert hasattr(conversion_log, name), name
