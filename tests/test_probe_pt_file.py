"""`.pt` reading without torch and without executing pickled code (FORMATS.md §6 ".pt content")."""

from __future__ import annotations

import builtins
import contextlib
import os
import pickle
import struct
import subprocess
import sys
import types
import zipfile
from collections import OrderedDict
from pathlib import Path

import pytest

from j6doctor.probes.input_error import InputError
from j6doctor.probes.pt_file import (
    TORCH_LEGACY_MAGIC,
    InertStub,
    StoragePlaceholder,
    TensorStub,
    read_pt,
    sensitivity_rows_from_pt,
)

CONV = "horizon_plugin_pytorch.nn.qat.conv2d"
FLOAT_FUNCTIONAL = "horizon_plugin_pytorch.nn.qat.functional_modules"
DTYPE = "horizon_plugin_pytorch.dtype"
PROFILER = "horizon_plugin_profiler.utils.badcase"


# --- writing helpers -----------------------------------------------------------------------

@contextlib.contextmanager
def fake_horizon_modules():
    """Register stand-in horizon modules so pickle can reference their globals, then remove
    them: the reader must never find them in sys.modules."""
    created: dict[str, types.ModuleType] = {}

    def module(name: str) -> types.ModuleType:
        parts = name.split(".")
        for i in range(1, len(parts) + 1):
            prefix = ".".join(parts[:i])
            if prefix not in created:
                created[prefix] = types.ModuleType(prefix)
        return created[name]

    def define(module_name: str, class_name: str, bases: tuple = (object,)) -> type:
        cls = type(class_name, bases, {"__module__": module_name, "__qualname__": class_name})
        setattr(module(module_name), class_name, cls)
        return cls

    space = types.SimpleNamespace(
        Conv2d=define(CONV, "Conv2d"),
        FloatFunctional=define(FLOAT_FUNCTIONAL, "FloatFunctional"),
        QuantDType=define(DTYPE, "QuantDType", (str,)),
        BadCaseReport=define(PROFILER, "BadCaseReport"),
    )
    assert not set(created) & set(sys.modules)
    sys.modules.update(created)
    try:
        yield space
    finally:
        for name in created:
            sys.modules.pop(name, None)


def sensitivity_rows_pickle() -> bytes:
    with fake_horizon_modules() as h:
        qint8, qint16 = h.QuantDType("qint8"), h.QuantDType("qint16")
        rows = [
            ["backbone.layer3.conv2", "activation", h.Conv2d, 0.288411, qint8, "4718592(14.23%)"],
            ["neck.add", "activation", h.FloatFunctional, 0.0181129, qint8, "0(0%)"],
            ["head.reg_conv1", "activation", h.Conv2d, 5.021e-05, qint16, "2359296(7.12%)"],
            ["head.cls_out", "weight", h.Conv2d, 0.0, None, "40960(0.12%)"],
        ]
        return pickle.dumps(rows, protocol=2)


def write_zip(path: Path, data_pkl: bytes, archive: str = "archive",
              extra: dict[str, bytes] | None = None) -> Path:
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as zf:
        zf.writestr(f"{archive}/data.pkl", data_pkl)
        zf.writestr(f"{archive}/byteorder", b"little")
        for name, content in (extra or {}).items():
            zf.writestr(f"{archive}/{name}", content)
        zf.writestr(f"{archive}/version", b"3\n")
    return path


def write_legacy(path: Path, data_pkl: bytes) -> Path:
    sys_info = {"protocol_version": 1001, "little_endian": True,
                "type_sizes": {"short": 2, "int": 4, "long": 4}}
    parts = [pickle.dumps(TORCH_LEGACY_MAGIC, protocol=2), pickle.dumps(1001, protocol=2),
             pickle.dumps(sys_info, protocol=2), data_pkl, pickle.dumps(["0"], protocol=2),
             struct.pack("<q", 12) + b"\x00" * 48]
    path.write_bytes(b"".join(parts))
    return path


# Hand-written protocol-2 opcodes, as torch.save emits them for a tensor.
def _global(module: str, name: str) -> bytes:
    return b"c" + f"{module}\n{name}\n".encode()


def _str(text: str) -> bytes:
    raw = text.encode()
    return b"X" + struct.pack("<I", len(raw)) + raw


def _int(value: int) -> bytes:
    return b"K" + bytes([value])


def _tuple(*items: bytes) -> bytes:
    return b"(" + b"".join(items) + b"t"


def tensor_pickle(shape: tuple[int, ...], storage: str = "FloatStorage",
                  parameter: bool = False) -> bytes:
    numel = 1
    for dim in shape:
        numel *= dim
    stride = tuple(int(numel / max(1, shape[0]) if i == 0 else 1) for i in range(len(shape)))
    persistent_id = _tuple(_str("storage"), _global("torch", storage), _str("0"), _str("cpu"),
                           _int(numel)) + b"Q"
    hooks = _global("collections", "OrderedDict") + b")R"
    tensor = (_global("torch._utils", "_rebuild_tensor_v2")
              + _tuple(persistent_id, _int(0), _tuple(*map(_int, shape)),
                       _tuple(*map(_int, stride)), b"\x89", hooks) + b"R")
    if parameter:
        tensor = (_global("torch._utils", "_rebuild_parameter")
                  + _tuple(tensor, b"\x88", _global("collections", "OrderedDict") + b")R") + b"R")
    return b"\x80\x02" + b"}" + _str("weight") + tensor + b"s."


# --- sensitivity row list ------------------------------------------------------------------

@pytest.mark.parametrize("layout", ["zip", "legacy"])
def test_sensitivity_row_list_reads_without_horizon(tmp_path, layout):
    name = "output_0-0_dataindex_1_sensitive_ops.pt"
    payload = sensitivity_rows_pickle()
    path = (write_zip if layout == "zip" else write_legacy)(tmp_path / name, payload)
    content = read_pt(path)
    assert content.display == name
    assert content.readable is True
    assert content.refused == []
    assert content.needs == [f"{DTYPE}.QuantDType", f"{CONV}.Conv2d", f"{FLOAT_FUNCTIONAL}.FloatFunctional"]
    assert "horizon_plugin_pytorch" in content.note and "intact" in content.note
    assert not any(m.startswith("horizon_plugin") for m in sys.modules)  # never imported
    assert sensitivity_rows_from_pt(content) == [
        ("backbone.layer3.conv2", "activation", 0.288411),
        ("neck.add", "activation", 0.0181129),
        ("head.reg_conv1", "activation", 5.021e-05),
        ("head.cls_out", "weight", 0.0),
    ]
    first = content.value[0]
    assert repr(first[2]) == f"<class '{CONV}.Conv2d'>"  # renders like the .txt op_type cell
    assert isinstance(first[4], InertStub) and str(first[4]) == "qint8"
    assert str(content.value[2][4]) == "qint16"
    assert content.value[3][4] is None
    assert first[5] == "4718592(14.23%)"


def test_rows_from_other_shapes_are_empty(tmp_path):
    plain = read_pt(write_zip(tmp_path / "a.pt", pickle.dumps({"a": 1}, protocol=2)))
    assert plain.readable is True and plain.needs == [] and plain.value == {"a": 1}
    assert plain.note == "read (plain Python data)"
    assert sensitivity_rows_from_pt(plain) == []
    odd = read_pt(write_zip(tmp_path / "b.pt", pickle.dumps([["a", "weight"]], protocol=2)))
    assert sensitivity_rows_from_pt(odd) == []
    not_number = read_pt(write_zip(tmp_path / "c.pt", pickle.dumps([["a", "w", None, "x"]], protocol=2)))
    assert sensitivity_rows_from_pt(not_number) == []
    empty = read_pt(write_zip(tmp_path / "d.pt", pickle.dumps([], protocol=2)))
    assert sensitivity_rows_from_pt(empty) == []


# --- tensors, storages, persistent ids ------------------------------------------------------

def test_tensor_is_a_stub_with_shape_and_dtype(tmp_path):
    path = write_zip(tmp_path / "t.pt", tensor_pickle((1, 3, 2, 2)))  # no data/0 entry at all
    content = read_pt(path)
    assert content.readable is True
    tensor = content.value["weight"]
    assert tensor == TensorStub((1, 3, 2, 2), "float32", False)
    assert "torch._utils._rebuild_tensor_v2" in content.needs
    assert "torch.FloatStorage" in content.needs
    assert "tensor data not loaded" in content.note


def test_parameter_and_storage_bytes_are_never_read(tmp_path):
    path = write_zip(tmp_path / "p.pt", tensor_pickle((4, 2), storage="HalfStorage", parameter=True),
                     extra={"data/0": os.urandom(16)})
    tensor = read_pt(path).value["weight"]
    assert tensor == TensorStub((4, 2), "float16", True)


def test_persistent_load_returns_an_inert_placeholder(tmp_path):
    payload = b"\x80\x02" + _tuple(_str("storage"), _global("torch", "LongStorage"), _str("7"),
                                    _str("cuda:0"), _int(3)) + b"Q."
    value = read_pt(write_zip(tmp_path / "s.pt", payload)).value
    assert value == StoragePlaceholder("7", "int64", "cuda:0", 3)


def test_python2_names_and_bytes_of_protocol_2(tmp_path):
    payload = pickle.dumps({"set": {1, 2}, "bytes": b"\x00\xffab", "od": OrderedDict(a=1)}, protocol=2)
    assert b"__builtin__" in payload and b"_codecs" in payload
    value = read_pt(write_zip(tmp_path / "x.pt", payload)).value
    assert value == {"set": {1, 2}, "bytes": b"\x00\xffab", "od": OrderedDict(a=1)}


# --- unsafe pickles are refused and never executed ----------------------------------------

class _Evil:
    def __init__(self, func, *args):
        self.func, self.args = func, args

    def __reduce__(self):
        return self.func, self.args


def _evil_payloads(target: Path) -> dict[str, tuple[object, str]]:
    return {
        "os.system": (_Evil(os.system, f"touch {target}"), f"{os.system.__module__}.system"),
        "builtins.open": (_Evil(builtins.open, str(target), "w"), f"{builtins.open.__module__}.open"),
        "builtins.eval": (_Evil(builtins.eval, f"open({str(target)!r}, 'w')"), "builtins.eval"),
        "subprocess.call": (_Evil(subprocess.call, ["touch", str(target)]), "subprocess.call"),
        "builtins.exec": (_Evil(builtins.exec, f"open({str(target)!r}, 'w')"), "builtins.exec"),
    }


@pytest.mark.parametrize("layout", ["zip", "legacy"])
@pytest.mark.parametrize("which", ["os.system", "builtins.open", "builtins.eval", "subprocess.call",
                                   "builtins.exec"])
def test_unsafe_global_is_refused_and_never_called(tmp_path, layout, which):
    target = tmp_path / "pwned"
    obj, refused_name = _evil_payloads(target)[which]
    payload = pickle.dumps(["row", obj], protocol=2)
    path = (write_zip if layout == "zip" else write_legacy)(tmp_path / "evil.pt", payload)
    content = read_pt(path)
    assert not target.exists()
    assert content.readable is False
    assert content.value is None
    assert content.refused == [refused_name]
    assert refused_name in content.needs
    assert "refused as unsafe" in content.note
    assert refused_name in content.note
    assert sensitivity_rows_from_pt(content) == []


def test_unsafe_global_used_with_newobj_is_refused(tmp_path):
    # NEWOBJ (cls.__new__) and BUILD on a refused global must stay inert as well.
    payload = (b"\x80\x02" + _global("posix", "system") + _tuple(_str("touch x")) + b"\x81"
               + b"}" + _str("a") + _int(1) + b"sb.")
    content = read_pt(write_zip(tmp_path / "n.pt", payload))
    assert (content.readable, content.refused) == (False, ["posix.system"])


def test_protocol_4_stack_global_is_refused(tmp_path):
    target = tmp_path / "pwned4"
    payload = pickle.dumps(_Evil(os.system, f"touch {target}"), protocol=4)
    content = read_pt(write_zip(tmp_path / "p4.pt", payload))
    assert not target.exists()
    assert content.readable is False and content.refused


# --- horizon object at top level --------------------------------------------------------------

def test_top_level_horizon_object_is_present_but_unreadable(tmp_path):
    with fake_horizon_modules() as h:
        report = h.BadCaseReport()
        report.topk = [1, 2]
        payload = pickle.dumps(report, protocol=2)
    content = read_pt(write_zip(tmp_path / "all_badcase_info.pt", payload))
    assert content.readable is False
    assert content.value is None
    assert content.refused == []
    assert content.needs == [f"{PROFILER}.BadCaseReport"]
    assert content.note.startswith("present, unreadable without horizon_plugin_profiler")


def test_plain_pickle_file_is_accepted(tmp_path):
    path = tmp_path / "plain.pt"
    path.write_bytes(pickle.dumps((1.5, "x", [None]), protocol=2))
    content = read_pt(path, display="qa/plain.pt")
    assert (content.display, content.readable, content.value) == ("qa/plain.pt", True, (1.5, "x", [None]))


# --- broken input ------------------------------------------------------------------------------

def _zip_bytes(tmp_path: Path) -> bytes:
    return write_zip(tmp_path / "good.pt", sensitivity_rows_pickle()).read_bytes()


def _corrupt_crc(data: bytes) -> bytes:
    at = data.index(b"backbone.layer3.conv2")
    return data[:at] + b"X" + data[at + 1:]


def _zip_without_data_pkl() -> bytes:
    import io
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        zf.writestr("archive/other.pkl", b"\x80\x02K\x01.")
    return buffer.getvalue()


@pytest.mark.parametrize("label, make, fragment", [
    ("empty", lambda tp: b"", "empty file"),
    ("text", lambda tp: b"hello, this is not a pickle\n", "neither a zip archive nor a pickle"),
    ("NUL bytes", lambda tp: b"\x00" * 64, "neither a zip archive nor a pickle"),
    ("non-UTF-8 garbage", lambda tp: b"\xff\xfe\xfd\xfc" * 8, "neither a zip archive nor a pickle"),
    ("truncated zip", lambda tp: _zip_bytes(tp)[:len(_zip_bytes(tp)) // 2], "corrupt zip archive"),
    ("corrupt zip (CRC)", lambda tp: _corrupt_crc(_zip_bytes(tp)), "corrupt zip archive"),
    ("zip without data.pkl", lambda tp: _zip_without_data_pkl(), "without <archive>/data.pkl"),
    ("truncated pickle", lambda tp: sensitivity_rows_pickle()[:-40], "truncated pickle"),
    ("garbage after header", lambda tp: b"\x80\x02\xee\xee\xee", "not a readable pickle"),
])
def test_broken_input_raises_input_error_naming_the_file(tmp_path, label, make, fragment):
    path = tmp_path / "broken.pt"
    path.write_bytes(make(tmp_path))
    with pytest.raises(InputError) as info:
        read_pt(path)
    assert info.value.file == "broken.pt"
    assert fragment in info.value.message


def test_truncated_zip_pickle_raises_input_error(tmp_path):
    path = write_zip(tmp_path / "cut.pt", sensitivity_rows_pickle()[:-30])
    with pytest.raises(InputError, match="truncated pickle"):
        read_pt(path)


def test_missing_file_raises_input_error(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        read_pt(tmp_path / "nope.pt")


def test_bytearray_round_trips_but_size_forms_are_refused(tmp_path):
    value = read_pt(write_zip(tmp_path / "b.pt", pickle.dumps(bytearray(b"ab\x00"), protocol=2))).value
    assert value == bytearray(b"ab\x00")
    huge = b"\x80\x02" + _global("__builtin__", "bytearray") + _tuple(b"J" + struct.pack("<i", 2**31 - 1)) + b"R."
    with pytest.raises(InputError, match="not a readable pickle"):
        read_pt(write_zip(tmp_path / "huge.pt", huge))
    xrange = b"\x80\x02" + _global("__builtin__", "xrange") + _tuple(_int(5)) + b"R."
    assert read_pt(write_zip(tmp_path / "r.pt", xrange)).refused == ["builtins.range"]
