"""Python tracebacks pasted into users' words (probes/python_traceback.py): the frames of
installed code and every frame's location blanked, the user's call and the exception kept,
every character in its place; and a diagnosis that reads the failed step from them."""

from __future__ import annotations

import pytest

from j6doctor.diagnosis import diagnose_data
from j6doctor.probes.python_traceback import frames_blanked

# The layout CPython 3.10 prints (two-space frames, four-space code lines), the export call
# in the user's script, the failure deep in the plugin and torch.
EXPORT_310 = """qat 训完评测正常（mAP 0.468，float 0.474），导出时：
Traceback (most recent call last):
  File "tools/export_hbir.py", line 88, in <module>
    qat_bc = export(qat_model, example_inputs)
  File "/usr/local/lib/python3.10/site-packages/horizon_plugin_pytorch/quantization/hbdk4/export_hbir/export_hbir.py", line 412, in export
    return _export(model, example_inputs, name)
  File "/usr/local/lib/python3.10/site-packages/torch/fx/graph_module.py", line 738, in call_wrapped
    return self._wrapped_call(self, *args, **kwargs)
RuntimeError: Unsupported op: aten::index_put_ with non-constant indices
之前 float 和 calib 都能跑"""

# CPython 3.11's markers under the code, a Windows conda environment, frames left out.
CONVERT_311_WINDOWS = """Traceback (most recent call last):
  File "D:\\work\\bev\\tools\\quantize.py", line 51, in main
    quantized = convert(qat_bc, "nash-e")
                ^^^^^^^^^^^^^^^^^^^^^^^^^
  File "C:\\Users\\dev\\miniconda3\\envs\\oe\\Lib\\site-packages\\hbdk4\\compiler\\apis.py", line 198, in convert
    return _convert(module, march)
           ^^^^^^^^^^^^^^^^^^^^^^^
  [Previous line repeated 2 more times]
RuntimeError: failed to legalize operation 'qnt.matmul'"""

# Pasted indented as a Markdown code block: the exception's line is indented like the rest.
INDENTED_CHAINED = """    Traceback (most recent call last):
      File "/opt/conda/lib/python3.10/site-packages/hbdk4/compiler/_mlir_libs/__init__.py", line 20, in run
        self.pm.run(module)
    RuntimeError: pass failed
    
    During handling of the above exception, another exception occurred:
    
    Traceback (most recent call last):
      File "compile_hbm.py", line 12, in <module>
        compile(quantized_bc, "model.hbm", march="nash-m")
      File "/opt/conda/lib/python3.10/site-packages/hbdk4/compiler/apis.py", line 301, in compile
        ...
    hbdk4.compiler.HbdkError: Tensor size exceeds the limit of on-chip memory"""


def _kept_lines(text: str) -> list[str]:
    return [line.strip() for line in frames_blanked(text).split("\n") if line.strip()]


def test_the_users_call_stands_next_to_the_exception():
    read = frames_blanked(EXPORT_310)
    assert len(read) == len(EXPORT_310)
    assert "site-packages" not in read and "_wrapped_call" not in read and "line 88" not in read
    # (the blanked lines take their line breaks with them: the exception is on the next line)
    lines = [line.strip() for line in read.split("\n")]
    at = lines.index("qat_bc = export(qat_model, example_inputs)")
    assert lines[at + 1] == "RuntimeError: Unsupported op: aten::index_put_ with non-constant indices"
    # every character that is not blanked stays where it was
    assert all(a == b or a == " " for a, b in zip(read, EXPORT_310))
    assert read.endswith("之前 float 和 calib 都能跑")


def test_markers_windows_paths_and_left_out_frames():
    kept = _kept_lines(CONVERT_311_WINDOWS)
    assert kept[0] == "Traceback (most recent call last):"
    assert kept[1].startswith('quantized = convert(qat_bc, "nash-e")')
    # the markers under the user's line stay (they mark the call); those under installed code go
    assert kept[2] == "^" * 25 and frames_blanked(CONVERT_311_WINDOWS).count("^") == 25
    assert "_convert(module, march)" not in frames_blanked(CONVERT_311_WINDOWS)
    assert "Previous line repeated" not in frames_blanked(CONVERT_311_WINDOWS)
    assert kept[-1].endswith("RuntimeError: failed to legalize operation 'qnt.matmul'")


def test_an_indented_traceback_keeps_its_exception_and_chained_ones_are_read_too():
    read = frames_blanked(INDENTED_CHAINED)
    assert "RuntimeError: pass failed" in read
    assert "self.pm.run(module)" not in read
    assert "During handling of the above exception, another exception occurred:" in read
    assert 'compile(quantized_bc, "model.hbm", march="nash-m")' in read
    assert "hbdk4.compiler.HbdkError: Tensor size exceeds the limit of on-chip memory" in read
    assert "compile_hbm.py" not in read  # (a location, the user's or not, is no statement)


# A frozen module's frame prints no code line; a user's folder named lib is no installed code;
# a post pasted from a web form ends its lines with CR LF.
FROZEN_LAST = """Traceback (most recent call last):
  File "/workspace/lib/tools/export_hbir.py", line 3, in <module>
    from hbdk4.compiler import convert
  File "<frozen importlib._bootstrap>", line 1004, in _find_and_load_unlocked
ModuleNotFoundError: No module named 'hbdk4'"""


def test_a_frame_without_code_keeps_the_exception_and_a_users_lib_folder_is_the_users():
    kept = _kept_lines(FROZEN_LAST)
    assert kept == ["Traceback (most recent call last):", "from hbdk4.compiler import convert",
                    "ModuleNotFoundError: No module named 'hbdk4'"]


def test_lines_ending_in_cr_lf_are_read_alike():
    crlf = EXPORT_310.replace("\n", "\r\n")
    assert [line.strip() for line in frames_blanked(crlf).split("\n") if line.strip()] == _kept_lines(EXPORT_310)


@pytest.mark.parametrize("text", [
    "板端推理结果不对，没有报错",
    "File \"a.py\", line 3, in <module>\n    x = 1",       # no traceback head: nothing is blanked
    "",
])
def test_a_text_without_a_traceback_is_read_as_written(text):
    assert frames_blanked(text) is text


def test_the_failed_step_is_read_through_the_frames():
    verdict = diagnose_data({"symptom": EXPORT_310}).verdict_json
    assert verdict["stage"] == "export"
    verdict = diagnose_data({"symptom": "qat.bc 用 hbir 推理和 qat.pt 一致（80.3）。\n" + CONVERT_311_WINDOWS}).verdict_json
    assert verdict["stage"] == "convert"
