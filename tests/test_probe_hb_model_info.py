"""hb_model_info output (REAL_FORMATS.md R6) against the fixtures in
fixtures/formats/real/hb_model_info/ (invented names and numbers, the R6 layout):

* rgb_single_input.txt: one rgb input, all five banner sections, LF, no final newline;
* nv12_two_inputs.txt: one nv12 input converted into the tensors input_y / input_uv, two
  outputs, removed nodes, CRLF and two final line ends.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from j6doctor.probes.artifacts import identify
from j6doctor.probes.hb_model_info import (InputSpec, ModelInfo, ModelInput, ModelOutput, Value,
                                           parse_hb_model_info, read_hb_model_info)
from j6doctor.probes.input_error import InputError

FORMATS = Path(__file__).parent / "fixtures" / "formats"
REAL = FORMATS / "real"
RGB = REAL / "hb_model_info" / "rgb_single_input.txt"
NV12 = REAL / "hb_model_info" / "nv12_two_inputs.txt"


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


# ---------------------------------------------------------------- discovery by content

NEUTRAL = "pasted_from_ticket.txt"  # a name that hints at no kind
OWN = REAL / "hb_model_info"


def test_the_first_banner_is_enough():
    head = b"############# model deps info #############\nbuilder version"
    assert identify(NEUTRAL, head) == ("hb_model_info", "content")


# ---------------------------------------------------------------- bad input

TEXT = rgb_text()
ROW_IMAGES = "images  input   [1, 192, 192, 3]  UINT8"

BROKEN = [
    ("empty", "", "empty file", None),
    ("blank lines", "\n\n  \n", "empty file", None),
    ("nothing recognisable", "hello\nworld\n", "nothing recognisable", None),
    ("board output", (REAL / "hrt_model_info" / "rgb_single_input.txt").read_text(encoding="utf-8"),
     "nothing recognisable", None),
    ("truncated before the table", cut_before(TEXT, "############# Model input"),
     "the file ends before the '############# Model input/output info", 26),
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
    ("row does not line up", TEXT.replace(ROW_IMAGES, "images input    [1, 192, 192, 3]  UINT8"),
     "row does not line up with the 4 table columns", 30),
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
]


@pytest.mark.parametrize("label, content, fragment, line", BROKEN, ids=[b[0] for b in BROKEN])
def test_broken_input_raises_input_error(tmp_path, label, content, fragment, line):
    with pytest.raises(InputError) as info:
        read_hb_model_info(write(tmp_path, content))
    error = info.value
    assert error.file == "model_info.txt"
    assert fragment in error.message
    assert error.line == line
    assert str(error).startswith(f"model_info.txt:{line}: " if line else "model_info.txt: ")


def test_broken_input_names_the_display_name():
    with pytest.raises(InputError) as info:
        parse_hb_model_info(cut_after(TEXT, "logits  outp"), "case7/hb_model_info.txt")
    assert str(info.value).startswith("case7/hb_model_info.txt:31: expected 'input' or 'output'")


@pytest.mark.parametrize("path", [RGB, NV12], ids=["rgb", "nv12"])
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
