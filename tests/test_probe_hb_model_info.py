"""hb_model_info output (REAL_FORMATS.md R6) against the fixtures in
fixtures/formats/real/hb_model_info/ (invented names and numbers, the vendor's layouts):

* rgb_single_input.txt: one rgb input, all five banner sections, LF, no final newline;
* nv12_two_inputs.txt: one nv12 input converted into the tensors input_y / input_uv, two
  outputs, removed nodes, CRLF and two final line ends;
* bin_x5_types_no_table.txt: an X5 .bin as the hb_mapper 1.24 tool prints it: start lines, two
  blank lines, a centred model name line, '--------- input/output types ---' with the type
  lists, no table;
* bin_x3_deleted_nodes.txt: an X3 .bin in the older layout of the manual ('<name> info' name
  line, short dash lines), two inputs, a key starting with a digit, the compile-time warning
  and '--------- deleted nodes -' lines; no table, no final newline;
* bin_j5_packed.log: the tool's log file for a packed J5 .bin: logging prefixes, DEBUG lines
  with continuation lines, two model descriptions, CRLF;
* hbm_j6_deleted_nodes_table.txt: a J6 .hbm (OE 3.x tool): deleted nodes, then the table;
* hbm_j6_packed.txt: a packed J6 .hbm: the packed-model warning, two descriptions, no table;
* bc_j6_removable_table.txt: a .bc: no model name line, the 'Removable node info' table right
  above the input/output table;
* onnx_table_only.txt: an .onnx: the opset line and the table only.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from conftest import assert_refused, write_case
from j6doctor.diagnosis import diagnose_file
from j6doctor.probes.artifacts import identify
from j6doctor.probes.hb_model_info import (InputSpec, ModelInfo, ModelInput, ModelOutput, Value,
                                           parse_hb_model_info, read_hb_model_info)
from j6doctor.probes.input_error import InputError

FORMATS = Path(__file__).parent / "fixtures" / "formats"
REAL = FORMATS / "real"
RGB = REAL / "hb_model_info" / "rgb_single_input.txt"
NV12 = REAL / "hb_model_info" / "nv12_two_inputs.txt"
X5 = REAL / "hb_model_info" / "bin_x5_types_no_table.txt"
X3 = REAL / "hb_model_info" / "bin_x3_deleted_nodes.txt"
J5_LOG = REAL / "hb_model_info" / "bin_j5_packed.log"
J6_HBM = REAL / "hb_model_info" / "hbm_j6_deleted_nodes_table.txt"
J6_PACKED = REAL / "hb_model_info" / "hbm_j6_packed.txt"
J6_BC = REAL / "hb_model_info" / "bc_j6_removable_table.txt"
ONNX = REAL / "hb_model_info" / "onnx_table_only.txt"
VENDOR = [X5, X3, J5_LOG, J6_HBM, J6_PACKED, J6_BC, ONNX]


def write(tmp_path: Path, content: str | bytes, name: str = "model_info.txt") -> Path:
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    return path


def rgb_text() -> str:
    return RGB.read_bytes().decode("utf-8")


def cut_before(text: str, marker: str) -> str:
    return text[:text.index(marker)]


def cut_after(text: str, marker: str) -> str:
    return text[:text.index(marker) + len(marker)]


# ---------------------------------------------------------------- the fixtures

def test_rgb_model_level_values_and_lines():
    info = read_hb_model_info(RGB)
    assert isinstance(info, ModelInfo)
    assert info.display == "rgb_single_input.txt"
    assert info.tool == "hb_model_info"
    assert info.march == Value("nash-e", 7)
    assert info.builder_version == Value("3.2.6", 2)
    assert info.hbdk_version == Value("4.0.21", 3)
    assert info.removed_nodes == []
    # Board-side facts are not in the host tool's output.
    assert (info.ucp_version, info.dnn_version, info.hbrt_version, info.model_name) == (None,) * 4
    assert info.hbrt_older_than_model is False and info.hbrt_warning is None
    # Every model-level key is kept under its canonical key.
    assert info.fields["hbdk_runtime_version"] == Value("3.51.2", 4)
    assert info.fields["remove_node_type"] == Value("Quantize;Dequantize", 9)
    assert info.fields["optimize_level"] == Value("O2", 25)
    assert info.fields["output_model_file_prefix"] == Value("pelican_cls_rgb", 8)


def test_rgb_input_with_its_conversion_parameters():
    info = read_hb_model_info(RGB)
    assert [spec.name for spec in info.input_specs] == ["images"]
    spec = info.input_specs[0]
    assert isinstance(spec, InputSpec) and spec.line == 11
    [images] = info.inputs
    assert isinstance(images, ModelInput)
    assert (images.name, images.index, images.line) == ("images", 0, 30)
    assert images.spec is spec
    assert images.input_type_rt == Value("rgb", 13)
    assert images.input_layout_rt == Value("NHWC", 14)
    assert images.input_type_train == Value("rgb", 15)
    assert images.input_layout_train == Value("NCHW", 16)
    assert images.norm_type == Value("data_mean_and_scale", 17)
    assert images.mean_value == Value("[124.5, 117.25, 104.0]", 19)
    assert images.scale_value == Value("[0.0172, 0.0176, 0.0175]", 20)
    assert images.mean_values == pytest.approx([124.5, 117.25, 104.0])
    assert images.scale_values == pytest.approx([0.0172, 0.0176, 0.0175])
    assert images.std_value is None
    assert spec.get("input_shape") == Value("1x3x192x192", 18)
    assert spec.get("input name") == Value("images", 12)
    # The table row: shape with spaces inside, data type.
    assert images.shape == Value("[1, 192, 192, 3]", 30)
    assert images.dims == (1, 192, 192, 3)
    assert images.data_type == Value("UINT8", 30)
    # R6 does not print these.
    assert (images.stride, images.strides, images.aligned_byte_size, images.aligned_bytes,
            images.quanti_type, images.layout) == (None,) * 6


def test_rgb_output():
    info = read_hb_model_info(RGB)
    [logits] = info.outputs
    assert isinstance(logits, ModelOutput)
    assert (logits.name, logits.index, logits.line, logits.dims) == ("logits", 0, 31, (1, 100))
    assert logits.data_type == Value("FLOAT32", 31)
    assert logits.quanti_type is None
    assert logits.needs_dequantize is False
    assert info.outputs_to_dequantize == []
    assert info.output("logits") is logits and info.output("nope") is None


def test_nv12_input_split_into_y_and_uv_tensors():
    info = read_hb_model_info(NV12)
    assert info.display == "nv12_two_inputs.txt"
    assert info.march == Value("nash-m", 5)
    assert info.builder_version == Value("3.3.0", 2)
    assert info.hbdk_version == Value("4.1.2", 3)
    assert [spec.name for spec in info.input_specs] == ["input"]
    assert [(t.name, t.index, t.line, t.dims) for t in info.inputs] == [
        ("input_y", 0, 17, (1, 224, 224, 1)), ("input_uv", 1, 18, (1, 112, 112, 2))]
    y, uv = info.inputs
    assert y.spec is uv.spec is info.input_specs[0]
    assert y.input_type_rt == uv.input_type_rt == Value("nv12", 8)
    assert y.input_type_train == Value("rgb", 9)
    assert y.input_layout_rt is None                   # not printed in this file
    assert y.mean_values == pytest.approx([123.675, 116.28, 103.53])
    assert uv.scale_values == pytest.approx([0.0171, 0.0175, 0.0174])
    assert info.input("input_uv") is uv
    assert uv.fields["data_type"] == Value("UINT8", 18)


def test_nv12_outputs_and_removed_nodes():
    info = read_hb_model_info(NV12)
    assert [(t.name, t.index, t.line, t.dims, t.data_type.text) for t in info.outputs] == [
        ("cls", 0, 19, (1, 20), "INT32"), ("box", 1, 20, (1, 56, 56, 4), "FLOAT32")]
    assert info.removed_nodes == [Value("/head/cls/Dequantize", 6), Value("/head/box/Dequantize", 6)]
    assert all(t.needs_dequantize is False for t in info.outputs)


@pytest.mark.parametrize("ending", ["", "\n", "\n\n", "\r\n", "\r\n\r\n"])
def test_line_endings_do_not_matter(tmp_path, ending):
    text = rgb_text().rstrip("\n")
    if "\r" in ending:
        text = text.replace("\n", "\r\n")
    info = read_hb_model_info(write(tmp_path, text + ending))
    reference = read_hb_model_info(RGB)
    assert info.inputs == reference.inputs and info.outputs == reference.outputs
    assert info.fields == reference.fields


def test_log_prefix_preamble_and_end_markers(tmp_path):
    """The tool's log file: each line behind a logging prefix, start messages before the first
    banner, a dash line before the subsection and a '<name> end' marker after it."""
    text = rgb_text().replace("---------input info : images  ---------",
                              "------------------------------------------\n"
                              "---------input info : images ---------")
    text = text.replace("scale_value         : [0.0172, 0.0176, 0.0175]\n",
                        "scale_value         : [0.0172, 0.0176, 0.0175]\n"
                        "---------input info : images end -------\n")
    lines = ["Start hb_model_info....", "log will be stored in /tmp/hb_model_info.log"]
    lines += text.split("\n")
    logged = "\n".join(f"2026-03-01 14:02:11,{i:03d} INFO {line}" for i, line in enumerate(lines))
    info = read_hb_model_info(write(tmp_path, logged + "\n"))
    assert info.march == Value("nash-e", 9)
    [images] = info.inputs
    assert images.dims == (1, 192, 192, 3)
    assert images.input_type_rt == Value("rgb", 16)
    assert images.scale_values == pytest.approx([0.0172, 0.0176, 0.0175])
    assert info.outputs[0].data_type.text == "FLOAT32"


def test_parse_and_display(tmp_path):
    info = parse_hb_model_info(rgb_text(), "run3/model_info.txt")
    assert info.display == "run3/model_info.txt"
    assert read_hb_model_info(str(RGB), display="x.txt").display == "x.txt"


def test_result_shape_is_plain_dataclasses():
    info = read_hb_model_info(NV12)
    assert dataclasses.is_dataclass(info)
    assert {f.name for f in dataclasses.fields(ModelInput)} >= {
        "name", "index", "line", "shape", "dims", "data_type", "stride", "strides",
        "aligned_byte_size", "aligned_bytes", "quanti_type", "fields", "spec"}
    assert "needs_dequantize" in {f.name for f in dataclasses.fields(ModelOutput)}


# ---------------------------------------------------------------- the vendor's other layouts

def test_x5_bin_without_table_model_level_values_and_lines():
    info = read_hb_model_info(X5)
    assert info.model_name == Value("finch_det_x5", 5)
    assert info.line == 5                                  # where the description starts
    assert info.models == [Value("finch_det_x5", 5)]
    assert info.march == Value("bayes-e", 13)
    assert info.builder_version == Value("1.24.6", 7)      # 'hb_mapper version'
    assert info.hbdk_version == Value("3.49.21", 8)
    assert info.fields["hbdk_runtime_version"] == Value("3.15.57.0", 9)
    assert info.fields["input-source"] == Value("{'images': 'pyramid', '_default_value': 'ddr'}",
                                                39)
    assert info.fields["hbdk_pass_through_params"] == Value("--core-num 1 --fast --O3", 38)
    # The type lists: the names of the enum reprs, each with its line; the text as written too.
    assert info.input_types == [Value("NV12", 41)]
    assert info.output_types == [Value("TENSOR_FLOAT", 42)] * 3
    assert info.fields["model_input_types"] == Value("[<InputDataType.NV12: 7>]", 41)
    assert info.removed_nodes == [] and info.outputs == []  # no table: output names are not printed


def test_x5_bin_inputs_come_from_the_input_info_subsections():
    info = read_hb_model_info(X5)
    [spec] = info.input_specs
    [images] = info.inputs
    assert (images.name, images.index, images.line) == ("images", 0, 20)
    assert images.spec is spec and spec.line == 20
    assert images.input_type_rt == Value("nv12", 22)
    assert images.input_type_train == Value("rgb", 25)
    assert images.input_layout_train == Value("NCHW", 26)
    assert images.input_layout_rt == Value("None", 24)      # verbatim: the tool prints None
    assert images.norm_type == Value("data_scale", 27)
    assert images.scale_values == pytest.approx([0.003921568627451])
    assert images.shape == Value("1x3x640x640", 28) and images.dims == (1, 3, 640, 640)
    assert images.data_type == Value("NV12", 41)            # 'model input types', by position
    assert images.fields == {"input_shape": Value("1x3x640x640", 28),
                             "data_type": Value("NV12", 41)}


def test_x3_bin_older_layout_types_by_position_and_deleted_nodes():
    info = read_hb_model_info(X3)
    assert info.model_name == Value("heron_seg_1024", 3)   # '******** <name> info *********'
    assert info.march == Value("bernoulli2", 12)
    assert info.builder_version == Value("1.9.9", 5)
    img, depth = info.inputs
    assert (img.name, img.line, img.dims) == ("img", 19, (1, 3, 512, 1024))
    assert img.data_type == Value("NV12", 51)
    assert (depth.name, depth.line, depth.data_type) == ("depth", 31, Value("F32", 51))
    assert img.input_type_train == Value("bgr", 24)
    assert depth.input_type_rt == Value("featuremap", 33)
    assert img.mean_values == pytest.approx([104.0, 117.0, 123.0])
    assert info.output_types == [Value("S32", 52), Value("F32", 52)]
    # A key may start with a digit; the compile-time warning line is a message, not a key.
    assert info.fields["16_bit_quantize"] == Value("True", 45)
    assert info.fields["remove_node_type"] == Value("Dequantize", 16)   # a type, not a node
    assert info.removed_nodes == [Value("heron_head_cls_conv_HzDequantize", 55),
                                  Value("heron_head_box_conv_HzDequantize", 56)]


def test_removed_and_deleted_nodes_are_listed_once_in_file_order(tmp_path):
    text = X3.read_text(encoding="utf-8").replace(
        "remove node type    : Dequantize",
        "remove node type    : Dequantize\n"
        "remove node name    : heron_head_cls_conv_HzDequantize;heron_aux")
    info = read_hb_model_info(write(tmp_path, text))
    assert info.removed_nodes == [Value("heron_head_cls_conv_HzDequantize", 17),
                                  Value("heron_aux", 17),
                                  Value("heron_head_box_conv_HzDequantize", 57)]


def test_j5_packed_log_file_reads_the_first_model_and_names_all():
    info = read_hb_model_info(J5_LOG)
    assert info.models == [Value("owl_det", 7), Value("owl_kps", 43)]
    assert info.model_name == Value("owl_det", 7) and info.line == 7
    assert info.march == Value("bayes", 15)
    assert info.hbdk_version == Value("3.41.7", 10)
    [image] = info.inputs                                   # owl_kps's 'crop' is not mixed in
    assert (image.name, image.line, image.dims) == ("image", 21, (1, 3, 512, 512))
    assert image.input_type_rt == Value("rgb", 23) and image.input_layout_rt == Value("NHWC", 24)
    assert image.data_type == Value("RGB", 39)
    assert info.output_types == [Value("TENSOR_FLOAT", 40)] * 2
    # The DEBUG lines and the protobuf text that continues them are no part of the description.
    assert not any("elem_type" in key or "graph" in key for key in info.fields)


def test_log_messages_are_skipped_and_a_plain_stray_line_is_garbled(tmp_path):
    lines = X5.read_text(encoding="utf-8").split("\n")
    logged = [f"2025-11-04 16:20:07,{i:03d} INFO {line}" for i, line in enumerate(lines)]
    logged.insert(35, "2025-11-04 16:20:07,900 WARNING calibration data dir not found")
    logged.insert(36, "2025-11-04 16:20:07,901 ERROR (ignored by the tool)")
    info = read_hb_model_info(write(tmp_path, "\n".join(logged)))
    assert info.fields["preprocess_on"] == Value("False", 35)
    assert info.fields["calibration_type"] == Value("default", 38)
    assert info.input_types == [Value("NV12", 43)]
    assert not info.skipped
    # The same text without the prefix is no message of the tool: a garbled line, skipped
    # and named; the lines around it are read.
    lines.insert(35, "calibration data dir not found")
    info = read_hb_model_info(write(tmp_path, "\n".join(lines)))
    (skipped,) = info.skipped.kept
    assert skipped.line == 36
    assert "expected 'key : value' in the 'calibration_parameters info'" in skipped.reason
    assert info.fields["preprocess_on"] == Value("False", 35)
    assert info.fields["calibration_type"] == Value("default", 37)


def test_a_rule_of_stars_is_no_model_name(tmp_path):
    text = X5_TEXT.replace("############# calibration_parameters",
                           "*" * 31 + "\n############# calibration_parameters")
    info = read_hb_model_info(write(tmp_path, text))
    assert info.models == [Value("finch_det_x5", 5)] and info.input_types == [Value("NV12", 42)]


def test_j6_hbm_deleted_nodes_before_the_table():
    info = read_hb_model_info(J6_HBM)
    assert info.model_name == Value("kite_cls_j6", 3)
    assert info.march == Value("nash-m", 10) and info.hbdk_version == Value("4.2.9", 6)
    assert info.builder_version == Value("3.3.1", 5)
    assert [(t.name, t.line, t.data_type.text) for t in info.inputs] == [
        ("input_y", 39, "UINT8"), ("input_uv", 40, "UINT8")]
    assert all(t.input_type_rt == Value("nv12", 18) for t in info.inputs)
    [logits] = info.outputs
    assert (logits.name, logits.line, logits.data_type.text) == ("logits", 41, "INT32")
    assert info.removed_nodes == [Value("/classifier/fc/Dequantize", 35)]
    assert info.input_types == info.output_types == []


def test_j6_packed_hbm_without_table():
    info = read_hb_model_info(J6_PACKED)
    assert info.models == [Value("wren_a", 4), Value("wren_b", 28)]
    assert info.march == Value("nash-e", 11)
    [feat] = info.inputs
    assert (feat.name, feat.line, feat.data_type) == ("feat", 15, None)
    assert feat.input_type_rt == Value("featuremap", 17)
    assert info.outputs == []


def test_bc_removable_nodes_table_right_above_the_io_table():
    info = read_hb_model_info(J6_BC)
    assert info.model_name is None and info.models == [] and info.line == 3
    assert info.march == Value("nash-p", 9)
    assert info.fields["16bit_quantize"] == Value("False", 26)
    [image] = info.inputs
    assert (image.name, image.line, image.dims) == ("image", 35, (1, 320, 320, 3))
    assert image.input_layout_rt == Value("NHWC", 17)
    assert [(t.name, t.line) for t in info.outputs] == [("mask", 36)]
    assert info.removed_nodes == []                          # removable is not removed


def test_onnx_table_only():
    info = read_hb_model_info(ONNX)
    assert (info.march, info.builder_version, info.input_specs, info.line) == (None, None, [], 4)
    [images] = info.inputs
    assert (images.name, images.line, images.dims) == ("images", 7, (1, 3, 256, 256))
    assert images.spec is None
    assert [(t.name, t.line, t.data_type.text) for t in info.outputs] == [("scores", 8, "FLOAT32")]


def test_a_description_ending_after_a_whole_section_is_read_as_far_as_it_goes(tmp_path):
    """Some versions print neither the table nor the type lists, and a packed .hbm no table:
    without them the description is read as far as it goes (all of it is true)."""
    info = read_hb_model_info(write(tmp_path, cut_before(X5_TEXT, "--------- input/output types")))
    assert (info.march, info.hbdk_version) == (Value("bayes-e", 13), Value("3.49.21", 8))
    [images] = info.inputs
    assert images.input_type_rt == Value("nv12", 22) and images.data_type is None
    assert (info.input_types, info.output_types, info.outputs) == ([], [], [])
    info = read_hb_model_info(write(tmp_path, cut_before(TEXT, "############# Model input")))
    assert info.march == Value("nash-e", 7) and info.inputs[0].input_type_rt == Value("rgb", 13)
    assert info.outputs == []
    info = read_hb_model_info(write(tmp_path, cut_before(J6_PACKED.read_text(encoding="utf-8"),
                                                         "************* wren_b")))
    assert info.models == [Value("wren_a", 4)] and info.march == Value("nash-e", 11)


def test_the_first_tables_and_the_known_layouts_keep_their_results():
    """The R6 layout of the earlier fixtures reads as before: its start line is the first banner."""
    assert read_hb_model_info(RGB).line == 1 and read_hb_model_info(RGB).models == []
    assert read_hb_model_info(NV12).input_types == []


# ---------------------------------------------------------------- discovery by content

NEUTRAL = "pasted_from_ticket.txt"  # a name that hints at no kind
OWN = REAL / "hb_model_info"


@pytest.mark.parametrize("path", VENDOR, ids=lambda p: p.name)
def test_the_vendor_layouts_are_recognised_by_content(path):
    assert identify(NEUTRAL, path.read_bytes()[:4096]) == ("hb_model_info", "content")


def test_the_first_banner_is_enough():
    head = b"############# model deps info #############\nbuilder version"
    assert identify(NEUTRAL, head) == ("hb_model_info", "content")


# ---------------------------------------------------------------- bad input

TEXT = rgb_text()
ROW_IMAGES = "images  input   [1, 192, 192, 3]  UINT8"
X5_TEXT = X5.read_text(encoding="utf-8")
X3_TEXT = X3.read_text(encoding="utf-8")
J5_TEXT = J5_LOG.read_bytes().decode("utf-8")
INPUT_TYPES = "model input types   : [<InputDataType.NV12: 7>]"

# Files with no description to read: refused as a whole (a warning on the file in a diagnosis).
REFUSED = [
    ("empty", "", "empty file", None),
    ("blank lines", "\n\n  \n", "empty file", None),
    ("nothing recognisable", "hello\nworld\n", "nothing recognisable", None),
    ("board output", (REAL / "hrt_model_info" / "rgb_single_input.txt").read_text(encoding="utf-8"),
     "nothing recognisable", None),
    ("vendor: start lines only", "Start hb_model_info....\nhb_model_info version 3.3.1\n",
     "hb_model_info printed its start lines but no model description", 2),
    ("vendor: name line only", cut_after(X5_TEXT, "finch_det_x5 ****************"),
     "the model name line 'finch_det_x5' is followed by no description", 5),
    ("vendor: a banner only",
     "Start hb_model_info....\nhb_model_info version 1.24.6\n"
     "############# model deps info #############\n",
     "the description has no 'key : value' line under its banners", 3),
]


@pytest.mark.parametrize("label, content, fragment, line", REFUSED, ids=[b[0] for b in REFUSED])
def test_a_file_without_a_description_is_refused(tmp_path, label, content, fragment, line):
    assert_refused(read_hb_model_info, write(tmp_path, content), "model_info.txt", line, fragment)


# Excerpted, cut and hand-edited dumps: the odd part is skipped and named (line, why), the rest
# read. `kept` is what must still be there.
SKIPPED = [
    ("truncated after the banner", cut_after(TEXT, "Model input/output info #############"),
     "the file ends after the 'Model input/output info' banner", 27),
    ("truncated after the header", cut_after(TEXT, "DATA_TYPE"), "dash rule", 28),
    ("truncated in the shape", cut_after(TEXT, "logits  output  [1, 10"),
     "expected a shape like [1, 224, 224, 3] in the SHAPE column, found '[1, 10'", 31),
    ("truncated in the type", cut_after(TEXT, "logits  outp"),
     "expected 'input' or 'output' in the TYPE column, found 'outp'", 31),
    ("truncated before the data type", cut_after(TEXT, "logits  output  [1, 100]"),
     "expected a data type in the DATA_TYPE column", 31),
    ("no output rows", cut_after(TEXT, ROW_IMAGES), "lists no output", 30),
    ("a row that lines up with nothing", TEXT.replace(ROW_IMAGES, "images input [1, 192, 192, 3] UINT8 extra"),
     "does not line up with the 4 table columns", 30),
    ("wrong columns", TEXT.replace("DATA_TYPE", "DTYPE    "),
     "expected the columns NAME TYPE SHAPE DATA_TYPE", 28),
    ("truncated in the subsection", cut_after(TEXT, "---------input info : images  ---------"),
     "the 'input info : images' subsection has no 'key : value' lines", 11),
    ("garbled key line", TEXT.replace("input_type_rt       : rgb", "input_type_rt       rgb"),
     "expected 'key : value' in the 'input_parameters info' section, found 'input_type_rt", 13),
    ("subsection twice", TEXT.replace("############# calibration_parameters info #############",
                                      "---------input info : images  ---------\nnorm_type : no"),
     "input 'images' is described twice", 21),
    ("end marker without start", TEXT.replace("input_name          : images",
                                              "---------input info : other end -------"),
     "end of the input info subsection 'other' without its start", 12),
    ("table twice", TEXT + "\n\n############# Model input/output info #############\n",
     "a second 'Model input/output info' table", 33),
    ("vendor: cut after the input types", cut_after(X5_TEXT, INPUT_TYPES),
     "the input/output types have no 'model output types' line", 40),
    ("vendor: cut in the types list",
     cut_after(X5_TEXT, "model input types   : [<InputDataType.NV1"),
     "expected a list like [<InputDataType.NV12: 7>] after 'model input types :', found "
     "'[<InputDataType.NV1' (truncated line?)", 41),
    ("vendor: garbled types list",
     X5_TEXT.replace(INPUT_TYPES, "model input types   : [<InputDataType.NV12: 7>, ?]"),
     "(garbled line?)", 41),
    ("vendor: types line without colon",
     X5_TEXT.replace(INPUT_TYPES, "model input types [<InputDataType.NV12: 7>]"),
     "expected 'key : value' in the 'input/output types' section, found 'model input types [",
     41),
    ("vendor: garbled deleted node",
     X3_TEXT.replace("deleted nodes: heron_head_box", "deleted nodes heron_head_box"),
     "expected 'key : value' in the 'deleted nodes' section", 56),
    ("vendor: other key among deleted nodes",
     X3_TEXT.replace("deleted nodes: heron_head_box", "removed: heron_head_box"),
     "expected 'deleted nodes: <node name>' in the 'deleted nodes' section, found "
     "'removed: heron_head_box", 56),
    ("vendor: packed log cut in its second model's types",
     cut_before(J5_TEXT, "2025-11-04 16:20:08,147 INFO model output types"),
     "the input/output types of model 'owl_kps' have no 'model output types' line", 74),
    ("vendor: removable table with other columns",
     J6_BC.read_text(encoding="utf-8").replace("Node Name  ", "Node       "),
     "expected the columns Node Name, Node Type", 28),
    ("vendor: a description after the table", TEXT + "\n************* other *************\n",
     "a model description after the 'Model input/output info' table", 32),
]


@pytest.mark.parametrize("label, content, fragment, line", SKIPPED, ids=[b[0] for b in SKIPPED])
def test_an_odd_part_is_skipped_and_named_and_the_rest_is_read(tmp_path, label, content, fragment, line):
    info = read_hb_model_info(write(tmp_path, content))
    assert any(s.line == line and fragment in s.reason for s in info.skipped.kept), info.skipped
    assert len(info.skipped) <= 2   # the odd part, and what it leaves missing
    assert info.march is not None or info.fields   # the description above it is kept
    whole = read_hb_model_info(write(tmp_path, content.replace("\0", ""), "whole.txt"))
    assert whole.march == info.march


def test_skipped_parts_keep_the_values_above_them(tmp_path):
    info = read_hb_model_info(write(tmp_path, cut_after(TEXT, "logits  outp")))
    assert info.march == Value("bayes-e", 6) or info.march is not None
    (image,) = info.inputs
    assert image.name == "images" and image.input_type_rt is not None
    assert info.outputs == []


def test_rows_wider_than_the_dash_rule_are_cut_at_their_words(tmp_path):
    """hb_model_info pads each column to its header's width; a longer name pushes the row right."""
    text = (TEXT.replace("images  input   [1, 192, 192, 3]  UINT8",
                         "image_input_tensor  input  [1, 192, 192, 3] UINT8")
            .replace("logits  output  [1, 100]          FLOAT32",
                     "classification_logits  output  [1, 100]  FLOAT32"))
    info = read_hb_model_info(write(tmp_path, text))
    assert not info.skipped
    (image,) = info.inputs
    assert (image.name, image.dims, image.data_type.text) == ("image_input_tensor", (1, 192, 192, 3), "UINT8")
    (logits,) = info.outputs
    assert (logits.name, logits.dims, logits.data_type.text) == ("classification_logits", (1, 100), "FLOAT32")
    assert info.march is not None and image.spec is None   # renamed: no longer the spec's input


ISSUE_DUMP = """############# model deps info #############
builder version     : 3.3.0
hbdk version        : 4.1.2
############# model_parameters info #############
BPU march           : nash-m
---------input info : image_in  ---------
input_type_rt       : nv12
input_type_train    : rgb
input_layout_train  : NCHW
mean_value          : [123.675, 116.28, 103.53]
scale_value         : [0.0171, 0.0175, 0.0174]
############# Model input/output info #############
NAME   TYPE   SHAPE             DATA_TYPE
------ ------ ----------------  ---------
image_in  input  [1, 3, 512, 512] UINT8
seg_logits  output  [1, 21, 512, 512] FLOAT32
"""


def test_the_dump_of_the_issue_keeps_model_march_and_inputs(tmp_path):
    info = read_hb_model_info(write(tmp_path, ISSUE_DUMP))
    assert not info.skipped
    assert info.march == Value("nash-m", 5)
    (image,) = info.inputs
    assert image.name == "image_in" and image.dims == (1, 3, 512, 512)
    assert image.input_type_rt == Value("nv12", 7) and image.mean_values == [123.675, 116.28, 103.53]
    assert [o.name for o in info.outputs] == ["seg_logits"]


def test_broken_input_names_the_display_name():
    info = parse_hb_model_info(cut_after(TEXT, "logits  outp"), "case7/hb_model_info.txt")
    assert info.skipped.kept[0].line == 31
    with pytest.raises(InputError) as error:
        parse_hb_model_info("hello\n", "case7/hb_model_info.txt")
    assert str(error.value).startswith("case7/hb_model_info.txt: nothing recognisable")


@pytest.mark.parametrize("path", [RGB, NV12, *VENDOR], ids=lambda p: p.name)
def test_every_truncation_gives_a_result_or_an_input_error(path):
    """Never a traceback: each prefix of a fixture is read or refused with an InputError."""
    text = path.read_bytes().decode("utf-8")
    for end in range(len(text)):
        try:
            parse_hb_model_info(text[:end], "cut.txt")
        except InputError as error:
            assert error.file == "cut.txt"


def test_binary_and_missing_files(tmp_path):
    with pytest.raises(InputError, match="binary data"):
        read_hb_model_info(write(tmp_path, b"#### model deps info ####\x00\x01"))
    with pytest.raises(InputError, match="no such file"):
        read_hb_model_info(tmp_path / "absent.txt")


# ---------------------------------------------------------------- in a diagnosis

PTQ_CASE = ("flow: ptq\nsymptom: 板端检测 mAP 掉了 11 个点\n"
            "results: {quantized_model: {status: normal, evidence: dataset_eval}, "
            "board: {status: abnormal, evidence: dataset_eval}}\n")
DUMP = "model_desc.txt"   # a name that hints at no kind: found by content


def _project(tmp_path: Path, text: str) -> Path:
    project = tmp_path / "ticket"
    project.mkdir()
    (project / DUMP).write_text(text, encoding="utf-8")
    write_case(project, PTQ_CASE + "artifacts: [.]\n")
    return project


def _facts(d, type_name):
    return [f for f in d.facts if f.type == type_name]


def test_diagnose_takes_march_versions_and_input_types_from_a_vendor_dump(tmp_path, rulebase):
    bare = diagnose_file(write_case(tmp_path, PTQ_CASE), rulebase)
    assert {"platform", "versions", "deploy_adaptation"} <= set(bare.verdict_json["missing"])
    project = _project(tmp_path, X5.read_text(encoding="utf-8"))
    d = diagnose_file(project / "case.yaml", rulebase)
    assert [(a["path"], a["kind"], a["by"]) for a in d.verdict_json["artifacts"]] == [
        (DUMP, "hb_model_info", "content")]
    assert not [w for w in d.verdict_json["warnings"] if DUMP in w]
    [platform] = _facts(d, "platform")
    assert (platform["family"], platform["march"], platform.source.file, platform.source.line) == \
        ("X5", "bayes-e", DUMP, 13)
    versions = {f["package"]: f for f in _facts(d, "version")}
    assert (versions["hbdk3"]["version"], versions["hbdk3"].source.line) == ("3.49.21", 8)
    params = {f["name"]: (f["value"], f.source.file, f.source.line)
              for f in _facts(d, "input_param")}
    assert params["input_type_rt"] == ("nv12", DUMP, 22)
    assert params["input_type_train"] == ("rgb", DUMP, 25)
    assert params["norm_type"] == ("data_scale", DUMP, 27)
    # The gate stops asking for what the dump answers.
    assert not {"platform", "versions", "deploy_adaptation"} & set(d.verdict_json["missing"])
    assert d.verdict_json["stage"] == bare.verdict_json["stage"] == "compile"
    # Every fact read from the dump names the file and the line (the whole-file facts aside).
    from_dump = [f for f in d.facts if f.source is not None and f.source.file == DUMP]
    assert {f.type for f in from_dump} >= {"platform", "version", "input_param", "artifact_march"}
    assert all(f.source.line for f in from_dump if f.type not in ("artifact_file", "model_info"))


def test_deleted_nodes_reach_the_removed_nodes_rule(tmp_path, rulebase):
    d = diagnose_file(_project(tmp_path, X3.read_text(encoding="utf-8")) / "case.yaml", rulebase)
    [info] = _facts(d, "model_info")
    assert info["removed_nodes"] == ("heron_head_cls_conv_HzDequantize、"
                                     "heron_head_box_conv_HzDequantize")
    assert info["march"] == "bernoulli2"
    steps = " ".join(step["text"] for step in d.verdict_json["next_steps"])
    assert "heron_head_box_conv_HzDequantize" in steps
    inputs = {(f["input"], f["name"], f["value"]) for f in _facts(d, "input_param")}
    assert {("img", "input_type_rt", "nv12"), ("depth", "input_type_rt", "featuremap")} <= inputs


def test_the_model_info_fact_carries_its_line(tmp_path, rulebase):
    d = diagnose_file(_project(tmp_path, X5.read_text(encoding="utf-8")) / "case.yaml", rulebase)
    [info] = _facts(d, "model_info")
    assert (info.source.file, info.source.line) == (DUMP, 5)


def test_conversion_tool_versions_become_version_facts(tmp_path, rulebase):
    """hb_mapper / horizon_nn versions of a vendor dump answer the PTQ user's versions question."""
    text = X5.read_text(encoding="utf-8")
    d = diagnose_file(_project(tmp_path, text) / "case.yaml", rulebase)
    versions = {f["given"]: (f["version"], f.source.line) for f in _facts(d, "version")}
    for given, key in (("hb_mapper", "hb_mapper version"), ("horizon_nn", "horizon_nn version")):
        lines = [n for n, line in enumerate(text.splitlines(), 1) if line.strip().lower().startswith(key)]
        if lines:
            assert versions[given][1] == lines[0], versions
    assert any(given in versions for given in ("hb_mapper", "horizon_nn")), versions


def test_a_garbled_vendor_dump_is_a_warning_naming_file_and_line(tmp_path, rulebase):
    text = X5.read_text(encoding="utf-8").replace(INPUT_TYPES,
                                                  "model input types   : [<InputDataType.NV12: 7")
    d = diagnose_file(_project(tmp_path, text) / "case.yaml", rulebase)
    (warning,) = [w for w in d.verdict_json["warnings"] if DUMP in w]
    assert f"{DUMP}:41" in warning and "model input types" in warning and "已跳过这部分" in warning
    assert "无法使用" not in warning   # the file is used: only the garbled line is not
    # the diagnosis keeps what the rest of the dump says: its march answers the platform
    assert "platform" not in d.verdict_json["missing"]
    assert [f["march"] for f in _facts(d, "artifact_march")] == ["bayes-e"]


def test_the_issue_dump_gives_its_march_and_inputs_to_the_diagnosis(tmp_path, rulebase):
    d = diagnose_file(_project(tmp_path, ISSUE_DUMP) / "case.yaml", rulebase)
    assert not [w for w in d.verdict_json["warnings"] if DUMP in w]
    assert [f["march"] for f in _facts(d, "artifact_march")] == ["nash-m"]
    params = {f["name"]: f["value"] for f in _facts(d, "input_param")}
    assert params["input_type_rt"] == "nv12" and params["input_layout_train"] == "nchw"
