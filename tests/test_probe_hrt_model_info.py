"""hrt_model_exec model_info output (REAL_FORMATS.md R7) against the fixtures in
fixtures/formats/real/hrt_model_info/ (invented names and numbers, the R7 layout):

* rgb_single_input.txt: one rgb input, one output with quanti type SCALE, LF, no final
  newline;
* nv12_two_inputs.txt: the tensors input_y / input_uv of one nv12 input, outputs with quanti
  type SCALE and NONE, removed nodes, the warning that the hbrt library is older than the
  model's build version, CRLF.

The result has the shape of hb_model_info (R6); the last tests compare the two.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import assert_refused
from j6doctor.probes import hb_model_info as r6
from j6doctor.probes.artifacts import identify
from j6doctor.probes.hrt_model_info import parse_hrt_model_info, read_hrt_model_info
from j6doctor.probes.input_error import InputError

FORMATS = Path(__file__).parent / "fixtures" / "formats"
REAL = FORMATS / "real"
RGB = REAL / "hrt_model_info" / "rgb_single_input.txt"
NV12 = REAL / "hrt_model_info" / "nv12_two_inputs.txt"
Value = r6.Value


def write(tmp_path: Path, content: str | bytes, name: str = "model_info.txt") -> Path:
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    return path


def rgb_text() -> str:
    return RGB.read_bytes().decode("utf-8")


def cut_after(text: str, marker: str) -> str:
    return text[:text.index(marker) + len(marker)]


def cut_before(text: str, marker: str) -> str:
    return text[:text.index(marker)]


def tensor_text(kind: str, index: int, name: str, shape: str, tensor_type: str,
                quanti: str = "NONE", extra: str = "") -> str:
    return (f"{kind}[{index}]:\nname: {name}\nvalid shape: {shape}\n{extra}"
            f"tensor type: {tensor_type}\nquanti type: {quanti}\n\n")


# ---------------------------------------------------------------- the fixtures

def test_rgb_model_level_values_and_lines():
    info = read_hrt_model_info(RGB)
    assert isinstance(info, r6.ModelInfo)
    assert info.display == "rgb_single_input.txt"
    assert info.tool == "hrt_model_exec model_info"
    assert info.ucp_version == Value("3.7.4", 1)
    assert info.dnn_version == Value("3.7.4", 2)
    assert info.hbrt_version == Value("4.3.2", 2)
    assert info.model_name == Value("pelican_cls_rgb", 3)
    assert info.march == Value("nash-e", 4)
    assert info.builder_version == Value("3.2.6", 4)
    assert info.hbdk_version == Value("4.0.21", 4)
    assert info.removed_nodes == []                     # "REMOVE_NODE_NAME": ""
    assert info.hbrt_older_than_model is False and info.hbrt_warning is None
    assert info.fields["input_layout_train"] == Value("NCHW", 4)
    assert info.fields["remove_node_name"] == Value("", 4)


def test_rgb_input_block_and_desc_parameters():
    info = read_hrt_model_info(RGB)
    [images] = info.inputs
    assert isinstance(images, r6.ModelInput)
    assert (images.name, images.index, images.line) == ("images", 0, 5)
    assert images.shape == Value("(1,192,192,3)", 7) and images.dims == (1, 192, 192, 3)
    assert images.aligned_byte_size == Value("110592", 8) and images.aligned_bytes == 110592
    assert images.data_type == Value("HB_DNN_TENSOR_TYPE_U8", 9)
    assert images.quanti_type == Value("NONE", 10)
    assert images.stride == Value("(110592,576,3,1)", 11)
    assert images.strides == (110592, 576, 3, 1)
    # The desc names no input: its one unnamed spec belongs to the one input.
    [spec] = info.input_specs
    assert spec.name is None and images.spec is spec
    assert images.input_type_rt == Value("rgb", 4)
    assert images.input_type_train == Value("rgb", 4)
    assert images.input_layout_rt == Value("NHWC", 4)
    assert images.norm_type == Value("data_mean_and_scale", 4)
    assert images.mean_value == Value("124.5,117.25,104.0", 4)
    assert images.mean_values == pytest.approx([124.5, 117.25, 104.0])
    assert images.scale_value == Value("[0.0172, 0.0176, 0.0175]", 4)
    assert images.scale_values == pytest.approx([0.0172, 0.0176, 0.0175])


def test_rgb_output_with_scale_needs_dequantize():
    info = read_hrt_model_info(RGB)
    [logits] = info.outputs
    assert isinstance(logits, r6.ModelOutput)
    assert (logits.name, logits.index, logits.line, logits.dims) == ("logits", 0, 13, (1, 100))
    assert logits.data_type == Value("HB_DNN_TENSOR_TYPE_S32", 17)
    assert logits.quanti_type == Value("SCALE", 18)
    assert logits.needs_dequantize is True
    assert logits.aligned_bytes == 400 and logits.strides == (400, 4)
    assert info.outputs_to_dequantize == [logits]


def test_nv12_tensors_warning_and_removed_nodes():
    info = read_hrt_model_info(NV12)
    assert info.display == "nv12_two_inputs.txt"
    assert info.march == Value("nash-m", 5)
    assert info.hbdk_version == Value("4.3.5", 5)
    assert (info.ucp_version.text, info.dnn_version.text, info.hbrt_version.text) == (
        "3.7.4", "3.7.4", "4.3.2")
    assert info.hbrt_older_than_model is True
    assert info.hbrt_warning == Value(
        "[W][DNN][hb_model.cpp:88][Model] the hbrt library version (4.3.2) is lower than the "
        "model's build version (4.3.5); please update the runtime", 3)
    assert info.removed_nodes == [Value("/head/cls/Dequantize", 5), Value("/head/box/Dequantize", 5)]
    assert [(t.name, t.index, t.line, t.dims, t.strides, t.aligned_bytes) for t in info.inputs] == [
        ("input_y", 0, 7, (1, 224, 224, 1), (-1, -1, 1, 1), -1),
        ("input_uv", 1, 15, (1, 112, 112, 2), (-1, -1, 2, 1), -1)]
    y, uv = info.inputs
    assert y.spec is uv.spec is info.input_specs[0]
    assert y.input_type_rt == uv.input_type_rt == Value("nv12", 5)
    assert uv.mean_values == pytest.approx([123.675, 116.28, 103.53])
    assert uv.scale_values == pytest.approx([0.0171, 0.0175, 0.0174])
    assert y.quanti_type == Value("NONE", 12)


def test_nv12_outputs_scale_and_none():
    info = read_hrt_model_info(NV12)
    cls, box = info.outputs
    assert (cls.name, cls.line, cls.quanti_type, cls.needs_dequantize) == (
        "cls", 23, Value("SCALE", 28), True)
    assert (box.name, box.line, box.quanti_type, box.needs_dequantize) == (
        "box", 31, Value("NONE", 36), False)
    assert box.data_type.text == "HB_DNN_TENSOR_TYPE_F32"
    assert [t.name for t in info.outputs_to_dequantize] == ["cls"]
    assert info.output("box") is box and info.input("input_y") is info.inputs[0]


@pytest.mark.parametrize("ending", ["", "\n", "\n\n", "\r\n", "\r\n\r\n"])
def test_line_endings_do_not_matter(tmp_path, ending):
    text = rgb_text().rstrip("\n")
    if "\r" in ending:
        text = text.replace("\n", "\r\n")
    info = read_hrt_model_info(write(tmp_path, text + ending))
    reference = read_hrt_model_info(RGB)
    assert info.inputs == reference.inputs and info.outputs == reference.outputs
    assert info.fields == reference.fields and info.ucp_version == reference.ucp_version


def test_parse_and_display():
    info = parse_hrt_model_info(rgb_text(), "board/model_info.log")
    assert info.display == "board/model_info.log"
    assert read_hrt_model_info(str(RGB), display="x.log").display == "x.log"


# ---------------------------------------------------------------- layout variations

def test_multi_input_desc_split_over_named_inputs(tmp_path):
    desc = {"MARCH": "nash-e", "INPUT_NAMES": "img;feat", "INPUT_TYPE_RT": "nv12;featuremap",
            "INPUT_TYPE_TRAIN": "rgb;featuremap", "NORM_TYPE": "data_scale;no_preprocess",
            "SCALE_VALUE": "0.0039215;", "REMOVE_NODE_NAME": ["/a/Dequantize", "/b/Dequantize"]}
    text = (f"[model name]: two_inputs\n[model desc]: {json.dumps(desc)}\n\n"
            + tensor_text("input", 0, "img_y", "(1,64,64,1)", "HB_DNN_IMG_TYPE_NV12")
            + tensor_text("input", 1, "img_uv", "(1,32,32,2)", "HB_DNN_IMG_TYPE_NV12")
            + tensor_text("input", 2, "feat", "(1,16)", "HB_DNN_TENSOR_TYPE_F32")
            + tensor_text("output", 0, "out", "(1,4)", "HB_DNN_TENSOR_TYPE_F32"))
    info = read_hrt_model_info(write(tmp_path, text))
    assert [spec.name for spec in info.input_specs] == ["img", "feat"]
    img_y, img_uv, feat = info.inputs
    assert img_y.spec is img_uv.spec is info.input_specs[0]
    assert feat.spec is info.input_specs[1]
    assert img_uv.input_type_rt == Value("nv12", 2)
    assert feat.input_type_rt == Value("featuremap", 2)
    assert feat.norm_type.text == "no_preprocess"
    # One part for two inputs: not split, the whole text for each.
    assert img_y.scale_value.text == feat.scale_value.text == "0.0039215;"
    assert img_y.scale_values == pytest.approx([0.0039215])
    assert [node.text for node in info.removed_nodes] == ["/a/Dequantize", "/b/Dequantize"]
    assert info.fields["remove_node_name"].text == '["/a/Dequantize", "/b/Dequantize"]'


def test_empty_desc_and_older_runtime_lines(tmp_path):
    """An older board image: `[DNN] Runtime version = ...`, `[HBRT] ... version = ...`, other
    log lines, `input[0]: ` with a trailing space, trailing commas in shapes, more keys."""
    extra = ("input source: HB_DNN_INPUT_FROM_PYRAMID\naligned shape: (1,3,64,64,)\n"
             "tensor layout: HB_DNN_LAYOUT_NCHW\n")
    text = ("I0301 14:02:11.000000  4321 vlog_is_on.cc:197] RAW: Set VLOG level\n"
            "[HBRT] set log level as 0. version = 3.15.25.0\n"
            "[DNN] Runtime version = 1.18.4_(3.15.25 HBRT)\n"
            "Load model to DDR cost 12.5ms.\n"
            "This model file has 1 model:\n[owl_nv12]\n" + "-" * 40 + "\n"
            "[model name]: owl_nv12\n[model desc]: \n\n"
            + tensor_text("input", 0, "data", "(1,3,64,64,)", "HB_DNN_IMG_TYPE_NV12", extra=extra)
              .replace("input[0]:\n", "input[0]: \n")
            + tensor_text("output", 0, "out", "(1,4,)", "HB_DNN_TENSOR_TYPE_S32", "SCALE",
                          extra="scale data: 0.01,0.02,0.03,0.04,\nquantizeAxis: 1\n")
            + "-" * 40)
    info = read_hrt_model_info(write(tmp_path, text))
    assert info.hbrt_version == Value("3.15.25.0", 2)      # the first line naming it
    assert info.dnn_version == Value("1.18.4", 3)
    assert info.ucp_version is None
    assert info.model_name == Value("owl_nv12", 8)
    assert info.march is None and info.fields == {} and info.input_specs == []
    [data] = info.inputs
    assert data.dims == (1, 3, 64, 64) and data.spec is None and data.input_type_rt is None
    assert data.layout == Value("HB_DNN_LAYOUT_NCHW", 16)
    assert data.fields["input_source"].text == "HB_DNN_INPUT_FROM_PYRAMID"
    assert data.fields["aligned_shape"].text == "(1,3,64,64,)"
    [out] = info.outputs
    assert out.needs_dequantize is True and out.dims == (1, 4)
    assert out.fields["scale_data"] == Value("0.01,0.02,0.03,0.04,", 23)


# ---------------------------------------------------------------- the same shape as R6

def test_same_result_shape_as_hb_model_info():
    board = read_hrt_model_info(NV12)
    host = r6.read_hb_model_info(REAL / "hb_model_info" / "nv12_two_inputs.txt")
    assert type(board) is type(host) is r6.ModelInfo
    assert {type(t) for t in board.inputs} == {type(t) for t in host.inputs} == {r6.ModelInput}
    assert {type(t) for t in board.outputs} == {type(t) for t in host.outputs} == {r6.ModelOutput}
    # The same model seen from both sides.
    assert [(t.name, t.dims) for t in board.inputs] == [(t.name, t.dims) for t in host.inputs]
    assert [(t.name, t.dims) for t in board.outputs] == [(t.name, t.dims) for t in host.outputs]
    assert board.march.text == host.march.text == "nash-m"
    assert [t.input_type_rt.text for t in board.inputs] == [t.input_type_rt.text for t in host.inputs]
    assert [t.mean_values for t in board.inputs] == [t.mean_values for t in host.inputs]
    assert [n.text for n in board.removed_nodes] == [n.text for n in host.removed_nodes]


# ---------------------------------------------------------------- discovery by content

NEUTRAL = "pasted_from_ticket.txt"  # a name that hints at no kind
OWN = REAL / "hrt_model_info"


def test_a_pasted_tensor_block_is_enough():
    head = b"input[0]:\nname: x\nvalid shape: (1,3)\n"
    assert identify(NEUTRAL, head) == ("hrt_model_info", "content")


def test_a_block_start_and_a_name_alone_are_not_enough():
    assert identify(NEUTRAL, b"input[0]:\nname: x\n")[0] != "hrt_model_info"
    assert identify(NEUTRAL, b"output[0]:\nname: y\nvalid shape: (1,3)\n")[0] == "hrt_model_info"
    assert identify(NEUTRAL, b"input[0]:\nvalid shape: (1,3)\nname: x\n")[0] == "hrt_model_info"


# ---------------------------------------------------------------- bad input

TEXT = rgb_text()
DESC_LINE = TEXT.split("\n")[3]

BROKEN = [
    ("empty", "", "empty file", None),
    ("nothing recognisable", "hello\nworld\n", "nothing recognisable", None),
    ("host output", (REAL / "hb_model_info" / "rgb_single_input.txt").read_text(encoding="utf-8"),
     "nothing recognisable", None),
]


@pytest.mark.parametrize("label, content, fragment, line", BROKEN, ids=[b[0] for b in BROKEN])
def test_a_file_without_model_info_raises_input_error(tmp_path, label, content, fragment, line):
    assert_refused(read_hrt_model_info, write(tmp_path, content), "model_info.txt", line, fragment)


# Pasted, cut and hand-edited outputs: the odd part is skipped and named (line, why); `inputs`,
# `outputs`: the tensors still read.
SKIPPED = [
    ("desc not JSON", TEXT.replace('"MARCH": "nash-e"', '"MARCH": nash-e'),
     # The column of the value in the garbled line: where the removed quote was.
     f"invalid JSON after [model desc]: Expecting value (column {DESC_LINE.index(chr(34) + 'nash-e') + 1})", 4, 1, 1),
    ("desc truncated", cut_after(TEXT, '"MARCH": "nas'), "invalid JSON after [model desc]: "
     f"Unterminated string starting at (column {DESC_LINE.index(chr(34) + 'nas') + 1})", 4, 0, 0),
    ("desc a list", TEXT.replace(DESC_LINE, '[model desc]: ["MARCH", "nash-e"]'),
     "expected a JSON object {...} after [model desc]:, found list", 4, 1, 1),
    ("truncated after desc", cut_after(TEXT, DESC_LINE), "no readable input[0] block", 4, 0, 0),
    ("truncated before outputs", cut_before(TEXT, "output[0]:"), "no readable output[0] block", 12, 1, 0),
    ("truncated block", cut_after(TEXT, "valid shape: (1,100)"),
     "the output[0] block (ending at line 15) lacks 'tensor type:', 'quanti type:'", 13, 1, 1),
    ("truncated in a shape", cut_after(TEXT, "valid shape: (1,10"),
     "expected a shape like (1,224,224,3) after 'valid shape:', found '(1,10'", 15, 1, 1),
    ("truncated in a stride", TEXT[:-2],
     "expected a stride like (-1,-1,1,1) after 'stride:', found '(400,'", 19, 1, 1),
    ("garbled line in a block", TEXT.replace("tensor type: HB_DNN_TENSOR_TYPE_U8",
                                             "tensor type HB_DNN_TENSOR_TYPE_U8"),
     "expected 'key: value' in the input[0] block, found 'tensor type HB_DNN", 9, 1, 1),
    ("block index skipped", TEXT.replace("output[0]:", "output[1]:"),
     "expected output[0], found output[1]", 13, 1, 1),
    ("garbled byte size", TEXT.replace("aligned byte size: 400", "aligned byte size: 4OO"),
     "expected an integer after 'aligned byte size:', found '4OO'", 16, 1, 1),
    ("no name", TEXT.replace("name: logits", "name:"), "expected a tensor name after 'name:'", 14, 1, 0),
    ("second model", TEXT + "\n[model name]: other_model\n", "a second model ('other_model')", 20, 1, 1),
]


@pytest.mark.parametrize("label, content, fragment, line, inputs, outputs", SKIPPED, ids=[b[0] for b in SKIPPED])
def test_an_odd_part_is_skipped_and_named(tmp_path, label, content, fragment, line, inputs, outputs):
    info = read_hrt_model_info(write(tmp_path, content))
    assert any(item.line == line and fragment in item.reason for item in info.skipped.kept), info.skipped
    assert (len(info.inputs), len(info.outputs)) == (inputs, outputs)
    assert info.model_name is not None   # what the file says above the odd part is kept


def test_broken_input_names_the_display_name():
    info = parse_hrt_model_info(cut_after(TEXT, "valid shape: (1,100)"), "board/info.txt")
    (item,) = info.skipped.kept
    assert item.line == 13 and item.reason.startswith("the output[0] block")
    with pytest.raises(InputError) as error:
        parse_hrt_model_info("hello\n", "board/info.txt")
    assert str(error.value).startswith("board/info.txt: nothing recognisable")


@pytest.mark.parametrize("path", [RGB, NV12], ids=["rgb", "nv12"])
def test_every_truncation_gives_a_result_or_an_input_error(path):
    """Never a traceback: each prefix of a fixture is read or refused with an InputError."""
    text = path.read_bytes().decode("utf-8")
    for end in range(len(text)):
        try:
            parse_hrt_model_info(text[:end], "cut.txt")
        except InputError as error:
            assert error.file == "cut.txt"


def test_binary_and_missing_files(tmp_path):
    with pytest.raises(InputError, match="binary data"):
        read_hrt_model_info(write(tmp_path, b"[model name]: x\x00"))
    with pytest.raises(InputError, match="no such file"):
        read_hrt_model_info(tmp_path / "absent.txt")
