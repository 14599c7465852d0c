"""`.pt` artifacts (torch.save output) read without torch and without running their code.

A `.pt` is either a zip (`<archive>/data.pkl` plus raw storages under `<archive>/data/`)
or the legacy format (a run of pickles: magic number, protocol, sys info, object, ...).
Only the object pickle is read, with an Unpickler whose `find_class` hands out:

* a few harmless builtins (containers, numbers, `collections.OrderedDict`);
* inert stand-ins for torch tensors/storages/dtypes (shape and dtype kept, data never read);
* inert stub classes for horizon_plugin_pytorch / horizon_plugin_profiler (and a few
  numpy/torch.nn names) — a stub records its constructor arguments and state, nothing else;
* for anything else (os.system, subprocess, builtins.eval, ...) an inert "refused" stub
  that is reported and never calls the real thing.

No real callable from outside this allow-list is ever imported, so nothing in the file can
execute. torch is deliberately not used even when installed, so results are the same on
every machine.

The unpickler is the pure-Python one (`pickle._Unpickler`), because the C one cannot be
bounded: a few KB of memo references can build a tuple whose hash (as a dict key) takes
2**40 steps inside C code, or a tuple nested a million deep whose hash overflows the C stack.
Here every hash of a tuple is costed first (`MAX_HASH_WORK`, `MAX_KEY_NESTING`), `str()` of a
container is refused (its repr can be exponential too), BUILD may not modify the allowed
functions or classes, and a read past the end of the data is a truncation, never a huge
allocation.
"""

from __future__ import annotations

import _compat_pickle
import collections
import io
import pickle
import struct
import zipfile
import zlib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, BinaryIO

from .input_error import InputError
from .text_tables import read_head

MAX_PICKLE_BYTES = 256 * 1024 * 1024
# Tuple elements hashed (dict keys, set items) over one pickle, shared sub-tuples counted
# every time they are reached, as hash() does; real checkpoints stay far below.
MAX_HASH_WORK = 10_000_000
# tuple.__hash__ recurses in C without a depth check: a deeper key could crash the process.
MAX_KEY_NESTING = 1_000
TORCH_LEGACY_MAGIC = 0x1950A86A20F9469CFC6C
STUB_PACKAGES = ("horizon_plugin_pytorch", "horizon_plugin_profiler")
EXPECTED = "a torch .pt file (a zip archive with <archive>/data.pkl, or a legacy torch pickle)"

_STORAGE_DTYPES = {
    "Float": "float32", "Double": "float64", "Half": "float16", "BFloat16": "bfloat16",
    "Long": "int64", "Int": "int32", "Short": "int16", "Char": "int8", "Byte": "uint8",
    "Bool": "bool", "ComplexFloat": "complex64", "ComplexDouble": "complex128",
    "QInt8": "qint8", "QUInt8": "quint8", "QInt32": "qint32", "QUInt4x2": "quint4x2",
}
_TORCH_DTYPES = frozenset({
    "float32", "float", "float64", "double", "float16", "half", "bfloat16", "int8", "int16",
    "short", "int32", "int", "int64", "long", "uint8", "bool", "complex64", "complex128",
    "qint8", "quint8", "qint32", "quint4x2",
})
_NUMPY_STUBS = frozenset({
    ("numpy", "ndarray"), ("numpy", "dtype"),
    ("numpy.core.multiarray", "_reconstruct"), ("numpy.core.multiarray", "scalar"),
    ("numpy._core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "scalar"),
})


# =========================================================================================
# Inert stand-ins
# =========================================================================================

class InertStub:
    """Instance of a class that is not loaded: keeps constructor args and pickled state."""

    _stub_name = "?"
    _refused = False

    def __new__(cls, *args: Any, **kwargs: Any) -> InertStub:
        obj = object.__new__(cls)
        obj.args, obj.kwargs, obj.state = args, kwargs, None
        obj.items, obj.entries = [], {}
        return obj

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass  # arguments were recorded by __new__; nothing to run

    def __setstate__(self, state: Any) -> None:
        self.state = state  # recorded, never applied to attributes

    # APPEND(S)/SETITEM(S) opcodes on list- or dict-like classes
    def append(self, item: Any) -> None:
        self.items.append(item)

    def extend(self, items: Any) -> None:
        self.items.extend(items)

    def __setitem__(self, key: Any, value: Any) -> None:
        self.entries[key] = value

    @property
    def label(self) -> str:
        """The single string argument (e.g. a QuantDType's 'qint8'), else the class name."""
        if len(self.args) == 1 and isinstance(self.args[0], str):
            return self.args[0]
        return self._stub_name

    def __str__(self) -> str:
        return self.label

    def __repr__(self) -> str:
        kind = "refused" if self._refused else "stub"
        return f"<{kind} {self._stub_name}{self.args!r}>"


class RefusedStub(InertStub):
    """Stand-in for a global refused as unsafe: calling it only records the arguments."""

    _refused = True


@dataclass(frozen=True)
class InertName:
    """A module-level value that is not a class, e.g. torch.float32."""

    name: str

    def __repr__(self) -> str:
        return self.name


@dataclass(frozen=True)
class StoragePlaceholder:
    """What persistent_load returns for a torch storage: its key, never its bytes."""

    key: str
    dtype: str | None
    location: str | None = None
    numel: int | None = None


@dataclass(frozen=True)
class TensorStub:
    shape: tuple[int, ...]
    dtype: str | None
    requires_grad: bool = False

    def __repr__(self) -> str:
        return f"Tensor(shape={list(self.shape)}, dtype={self.dtype})"


def _rebuild_tensor(*args: Any, **kwargs: Any) -> TensorStub | InertStub:
    """Replaces torch._utils._rebuild_tensor(_v2) and friends: shape and dtype only."""
    storage = next((a for a in args if isinstance(a, StoragePlaceholder)), None)
    size = next((a for a in args[1:] if isinstance(a, (tuple, list))
                 and all(isinstance(d, int) for d in a)), None)
    if storage is None or size is None:
        return _UnknownRebuild(*args, **kwargs)
    requires_grad = len(args) > 4 and args[4] is True
    return TensorStub(tuple(size), storage.dtype, requires_grad)


def _rebuild_parameter(data: Any = None, requires_grad: Any = False, *rest: Any) -> Any:
    return replace(data, requires_grad=bool(requires_grad)) if isinstance(data, TensorStub) else data


def _rebuild_from_type(func: Any, new_type: Any, args: Any = (), state: Any = None) -> Any:
    # Only our own replacement functions may be called through it.
    if func in (_rebuild_tensor, _rebuild_parameter) and isinstance(args, tuple):
        return func(*args)
    return _UnknownRebuild(func, new_type, args, state)


class _UnknownRebuild(InertStub):
    _stub_name = "torch._utils._rebuild_*"


def _torch_size(dims: Any = ()) -> tuple:
    return tuple(dims)


def _latin1_encode(text: Any, encoding: str = "utf-8") -> bytes:
    """_codecs.encode as used by protocol-2 pickles of bytes; only the latin-1 form."""
    if not isinstance(text, str) or not isinstance(encoding, str) \
            or encoding.lower().replace("-", "") not in ("latin1", "iso88591"):
        raise pickle.UnpicklingError(f"_codecs.encode with {_safe_text(encoding)} is not supported")
    return text.encode("latin-1")


def _reconstructor(cls: Any, base: Any, state: Any = None) -> Any:
    """copyreg._reconstructor (protocol 0/1 objects), for stub classes only."""
    if isinstance(cls, type) and issubclass(cls, InertStub):
        obj = cls()
        obj.state = state
        return obj
    raise pickle.UnpicklingError("copyreg._reconstructor is only allowed for stub classes")


def _sized_guard(kind: type) -> Any:
    """bytes/bytearray, but not the bytes(n) form: a huge n would exhaust memory."""
    def build(*args: Any) -> Any:
        if args and isinstance(args[0], int):
            raise pickle.UnpicklingError(f"{kind.__name__}(<size>) is not allowed")
        return kind(*args)
    return build


# range is left out on purpose: list(range(10**12)) would exhaust memory.
SAFE_GLOBALS: dict[tuple[str, str], Any] = {
    **{("builtins", t.__name__): t for t in (dict, list, tuple, set, frozenset, int, float,
                                            complex, str, bool, slice, object)},
    ("builtins", "bytes"): _sized_guard(bytes),
    ("builtins", "bytearray"): _sized_guard(bytearray),
    ("collections", "OrderedDict"): collections.OrderedDict,
    ("_codecs", "encode"): _latin1_encode,
    ("copyreg", "_reconstructor"): _reconstructor,
}
_TORCH_FUNCTIONS: dict[tuple[str, str], Any] = {
    ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
    ("torch._utils", "_rebuild_parameter_with_state"): _rebuild_parameter,
    ("torch._utils", "_rebuild_from_type_v2"): _rebuild_from_type,
    ("torch._utils", "_rebuild_from_type"): _rebuild_from_type,
    ("torch", "Size"): _torch_size,
}


def _is_stub_name(module: str, name: str) -> bool:
    root = module.split(".")[0]
    if root in STUB_PACKAGES or (module, name) in _NUMPY_STUBS:
        return True
    if module == "torch":
        return name.endswith("Storage") or name in ("device", "dtype", "Tensor")
    if module == "torch.storage":
        return name in ("UntypedStorage", "TypedStorage")
    return module.startswith("torch.nn.modules.") or module == "torch.nn.parameter"


# =========================================================================================
# Restricted unpickler
# =========================================================================================

@dataclass
class _Log:
    stubbed: set[str] = field(default_factory=set)
    refused: set[str] = field(default_factory=set)
    classes: dict[str, type] = field(default_factory=dict)

    def stub_class(self, module: str, name: str, base: type[InertStub]) -> type:
        full = f"{module}.{name}"
        if full not in self.classes:
            # __module__/__qualname__ make repr() print <class 'module.Name'> like the real class.
            self.classes[full] = type(name, (base,), {"__module__": module, "__qualname__": name,
                                                      "_stub_name": full})
        return self.classes[full]


_HASHING_TYPES = (set, frozenset, dict, collections.OrderedDict)
_SCALARS = (str, bytes, bytearray, int, float, complex, bool, type(None))


class _Dispatch(dict):
    def __missing__(self, key: int) -> Any:
        raise pickle.UnpicklingError(f"invalid load key, {chr(key)!r}.")


class _StrictReader:
    """The file as the unpickler reads it: a read past the end is an EOFError (truncated
    data), before anything is allocated for it."""

    def __init__(self, file: BinaryIO):
        self._file = file
        start = file.tell()
        self._end = file.seek(0, io.SEEK_END)
        file.seek(start)

    def remaining(self) -> int:
        return self._end - self._file.tell()

    def read(self, n: int = -1) -> bytes:
        if n < 0:
            return self._file.read()
        if n > self._end - self._file.tell():
            raise EOFError("pickle data was truncated")
        return self._file.read(n)

    def readline(self) -> bytes:
        line = self._file.readline()
        if not line.endswith(b"\n"):
            raise EOFError("pickle data was truncated")
        return line

    def readinto(self, buffer: Any) -> int:
        if len(buffer) > self._end - self._file.tell():
            raise EOFError("pickle data was truncated")
        return self._file.readinto(buffer)


class _RestrictedUnpickler(pickle._Unpickler):  # noqa: SLF001 -- see the module docstring
    dispatch = _Dispatch(pickle._Unpickler.dispatch)  # noqa: SLF001

    def __init__(self, file: BinaryIO, log: _Log):
        self._reader = _StrictReader(file)
        super().__init__(self._reader, encoding="utf-8")
        self.log = log
        self._costs: dict[int, tuple[tuple, int, int]] = {}  # id -> (tuple, elements, depth)
        self._hash_work = 0

    # -- bounded hashing ------------------------------------------------------------------
    def _tuple_cost(self, root: tuple) -> tuple[int, int]:
        """(elements hash() visits, nesting depth) of a tuple; each distinct tuple once."""
        costs = self._costs
        todo: list[tuple[tuple, bool]] = [(root, False)]
        while todo:
            node, ready = todo.pop()
            if id(node) in costs:
                continue
            if not ready:
                todo.append((node, True))
                todo.extend((c, False) for c in node if type(c) is tuple and id(c) not in costs)
                continue
            size, depth = 1, 1
            for c in node:
                if type(c) is tuple:
                    size += costs[id(c)][1]
                    depth = max(depth, costs[id(c)][2] + 1)
                else:
                    size += 1
            if depth > MAX_KEY_NESTING:
                raise pickle.UnpicklingError(f"tuples nested more than {MAX_KEY_NESTING} deep")
            costs[id(node)] = (node, size, depth)
        return costs[id(root)][1], costs[id(root)][2]

    def _charge(self, keys: Any) -> None:
        """Account for hashing `keys` (dict keys, set items) before it happens."""
        for key in keys:
            if type(key) is tuple:
                self._hash_work += self._tuple_cost(key)[0]
                if self._hash_work > MAX_HASH_WORK:
                    raise pickle.UnpicklingError(
                        f"hashing its keys would take more than {MAX_HASH_WORK} steps "
                        "(nested shared tuples)")

    def _check_call(self, func: Any, args: Any, new: bool = False) -> None:
        """A call the pickle asks for (REDUCE, NEWOBJ, INST/OBJ) of an allowed callable."""
        if not isinstance(args, tuple):
            return  # the call itself fails
        if func is str and not all(isinstance(a, _SCALARS) for a in args):
            raise pickle.UnpicklingError("str() of a container or object is not allowed")
        if any(func is t for t in _HASHING_TYPES) and args and not (new and func is not frozenset):
            items = args[0]
            if isinstance(items, dict):
                self._charge(list(items))
            elif isinstance(items, (list, tuple, set, frozenset)):
                self._charge(items)

    def load_reduce(self) -> None:
        self._check_call(self.stack[-2], self.stack[-1])
        super().load_reduce()
    dispatch[pickle.REDUCE[0]] = load_reduce

    def load_newobj(self) -> None:
        self._check_call(self.stack[-2], self.stack[-1], new=True)
        super().load_newobj()
    dispatch[pickle.NEWOBJ[0]] = load_newobj

    def load_newobj_ex(self) -> None:
        self._check_call(self.stack[-3], self.stack[-2], new=True)
        super().load_newobj_ex()
    dispatch[pickle.NEWOBJ_EX[0]] = load_newobj_ex

    def _instantiate(self, klass: Any, args: Any) -> None:  # INST, OBJ
        self._check_call(klass, tuple(args) if isinstance(args, list) else args)
        super()._instantiate(klass, args)

    def load_setitem(self) -> None:
        self._charge(self.stack[-2:-1])
        super().load_setitem()
    dispatch[pickle.SETITEM[0]] = load_setitem

    def load_setitems(self) -> None:
        # After a MARK the unpickler collects the items in a fresh self.stack.
        self._charge(self.stack[0::2])
        super().load_setitems()
    dispatch[pickle.SETITEMS[0]] = load_setitems

    def load_additems(self) -> None:
        self._charge(self.stack)
        super().load_additems()
    dispatch[pickle.ADDITEMS[0]] = load_additems

    def load_frozenset(self) -> None:
        self._charge(self.stack)
        super().load_frozenset()
    dispatch[pickle.FROZENSET[0]] = load_frozenset

    def load_bytearray8(self) -> None:
        # The pure-Python unpickler allocates (and zeroes) the bytearray before reading it.
        size, = struct.unpack("<Q", self.read(8))
        frame = self._unframer.current_frame
        available = self._reader.remaining() + (len(frame.getbuffer()) - frame.tell() if frame else 0)
        if size > available:
            raise EOFError("pickle data was truncated")
        buffer = bytearray(size)
        self.readinto(buffer)
        self.append(buffer)
    dispatch[pickle.BYTEARRAY8[0]] = load_bytearray8

    def load_build(self) -> None:
        inst, state = self.stack[-2], self.stack[-1]
        if isinstance(inst, type) or callable(inst):
            # Setting attributes of an allowed function or class would change how this
            # process reads every later pickle.
            raise pickle.UnpicklingError("BUILD on a class or function is not allowed")
        if isinstance(state, tuple) and len(state) == 2:
            state = state[0]
        if isinstance(state, dict) and not hasattr(inst, "__setstate__"):
            self._charge(list(state))
        super().load_build()
    dispatch[pickle.BUILD[0]] = load_build

    def find_class(self, module: str, name: str) -> Any:
        module, name = _modern_name(module, name)
        full = f"{module}.{name}"
        if (module, name) in SAFE_GLOBALS:
            return SAFE_GLOBALS[module, name]
        replacement = _torch_replacement(module, name)
        if replacement is not None:
            self.log.stubbed.add(full)
            return replacement
        if _is_stub_name(module, name):
            self.log.stubbed.add(full)
            return self.log.stub_class(module, name, InertStub)
        self.log.refused.add(full)
        return self.log.stub_class(module, name, RefusedStub)

    def persistent_load(self, pid: Any) -> StoragePlaceholder:
        if isinstance(pid, tuple) and len(pid) >= 3 and pid[0] == "storage":
            numel = pid[4] if len(pid) > 4 and isinstance(pid[4], int) else None
            location = pid[3] if len(pid) > 3 and isinstance(pid[3], str) else None
            key = pid[2] if isinstance(pid[2], str) else _safe_text(pid[2])
            return StoragePlaceholder(key, _storage_dtype(pid[1]), location, numel)
        return StoragePlaceholder(_safe_text(pid), None)


def _safe_text(value: Any, limit: int = 200) -> str:
    """A short text for a value from the pickle; never the repr of a container (which can be
    exponentially long when the pickle shares sub-objects)."""
    if isinstance(value, (str, bytes, int, float, bool, type(None))):
        try:
            return repr(value)[:limit]
        except ValueError:  # an int too large to print
            return f"<{type(value).__name__}>"
    return f"<{type(value).__name__}>"


def _modern_name(module: str, name: str) -> tuple[str, str]:
    """Python 2 names that protocol-2 pickles carry (__builtin__, copy_reg) -> Python 3."""
    if (module, name) in _compat_pickle.NAME_MAPPING:
        return _compat_pickle.NAME_MAPPING[module, name]
    return _compat_pickle.IMPORT_MAPPING.get(module, module), name


def _torch_replacement(module: str, name: str) -> Any:
    if (module, name) in _TORCH_FUNCTIONS:
        return _TORCH_FUNCTIONS[module, name]
    if module == "torch._utils" and name.startswith("_rebuild_"):
        return _rebuild_tensor
    if module == "torch" and name in _TORCH_DTYPES:
        return InertName(f"torch.{name}")
    return None


def _storage_dtype(storage_type: Any) -> str | None:
    name = getattr(storage_type, "_stub_name", "")
    short = name.rsplit(".", 1)[-1].removesuffix("Storage")
    return _STORAGE_DTYPES.get(short)


# =========================================================================================
# Public API
# =========================================================================================

@dataclass
class PtContent:
    display: str
    readable: bool            # False when the content needs classes we refuse / do not have
    value: object | None      # the unpickled object with stubs, when readable
    needs: list[str]          # "module.Class" names that were stubbed or refused (sorted, unique)
    refused: list[str]        # names refused as unsafe (subset of needs)
    note: str                 # human sentence in English


def read_pt(path: Path, display: str | None = None) -> PtContent:
    display = display or path.name
    head = _head(path, display)
    log = _Log()
    if len(head) >= 2 and head[0] == 0x80 and 2 <= head[1] <= 5:  # pickle PROTO opcode
        with path.open("rb") as file:
            return _load(lambda: _load_legacy(file, log), log, display)
    if head.startswith(b"PK") or zipfile.is_zipfile(path):
        stream: BinaryIO = io.BytesIO(_zip_pickle(path, display))
        return _load(lambda: _RestrictedUnpickler(stream, log).load(), log, display)
    raise InputError(display, f"neither a zip archive nor a pickle; expected {EXPECTED}")


def _head(path: Path, display: str) -> bytes:
    # Only the magic bytes: the archive or pickle is streamed later, never loaded whole.
    head = read_head(path, display, EXPECTED, 8)
    if not head:
        raise InputError(display, f"empty file; expected {EXPECTED}")
    return head


def _zip_pickle(path: Path, display: str) -> bytes:
    try:
        with zipfile.ZipFile(path) as archive:
            names = [n for n in archive.namelist()
                     if n == "data.pkl" or (n.endswith("/data.pkl") and n.count("/") == 1)]
            if not names:
                raise InputError(display, f"zip archive without <archive>/data.pkl; expected {EXPECTED}")
            info = archive.getinfo(min(names, key=len))
            if info.file_size > MAX_PICKLE_BYTES:
                raise InputError(display, f"{info.filename} is too large ({info.file_size} bytes)")
            return archive.read(info)
    except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, ValueError) as exc:
        raise InputError(display, f"corrupt zip archive ({exc}); expected {EXPECTED}") from None


def _load_legacy(file: BinaryIO, log: _Log) -> Any:
    """Legacy torch.save: magic, protocol, sys_info, then the object. A plain pickle is
    accepted too (its first object is the content)."""
    first = _RestrictedUnpickler(file, log).load()
    if first != TORCH_LEGACY_MAGIC or isinstance(first, bool):
        return first
    _RestrictedUnpickler(file, log).load()  # protocol version
    _RestrictedUnpickler(file, log).load()  # sys_info
    return _RestrictedUnpickler(file, log).load()


def _load(run, log: _Log, display: str) -> PtContent:
    try:
        value = run()
    except InputError:
        raise
    except Exception as exc:  # noqa: BLE001 — any failure on untrusted bytes is bad input
        if log.refused:
            return _refused(display, log)
        detail = _exception_text(exc)
        if isinstance(exc, EOFError) or "truncated" in detail:
            raise InputError(display, f"truncated pickle (the data ends early); expected {EXPECTED}") from None
        raise InputError(display, f"not a readable pickle ({type(exc).__name__}: {detail}); "
                                  f"expected {EXPECTED}") from None
    if log.refused:
        return _refused(display, log)
    needs = sorted(log.stubbed)
    if isinstance(value, InertStub):
        packages = _packages(needs) or value._stub_name
        return PtContent(display, False, None, needs, [],
                         f"present, unreadable without {packages} "
                         f"(the saved object is a {value._stub_name})")
    return PtContent(display, True, value, needs, [], _read_note(needs))


def _exception_text(exc: BaseException) -> str:
    """The message of an exception raised while unpickling, without str(exc): a KeyError or
    the like would repr an object from the pickle."""
    if len(exc.args) == 1 and isinstance(exc.args[0], str):
        return exc.args[0][:300]
    return ", ".join(_safe_text(a, 100) for a in exc.args[:3])


def _refused(display: str, log: _Log) -> PtContent:
    refused = sorted(log.refused)
    return PtContent(display, False, None, sorted(log.stubbed | log.refused), refused,
                     f"refused as unsafe: the pickle calls {', '.join(refused)}; "
                     "nothing was executed and the content was not used")


def _packages(names: list[str]) -> str:
    return ", ".join(sorted({n.split(".")[0] for n in names}))


def _read_note(needs: list[str]) -> str:
    if not needs:
        return "read (plain Python data)"
    tensors = " (tensor data not loaded)" if any(n.startswith("torch") for n in needs) else ""
    return (f"read with inert stand-ins for {len(needs)} name(s) from {_packages(needs)}; "
            f"strings and numbers intact{tensors}")


def sensitivity_rows_from_pt(content: PtContent) -> list[tuple[str, str, float]]:
    """(op_name, sensitive_type, value) from the row list
    [[op_name, sensitive_type, op_type, value, quant_dtype, flops], ...]; [] otherwise."""
    value = content.value
    if not content.readable or not isinstance(value, (list, tuple)) or not value:
        return []
    rows = []
    for item in value:
        if not isinstance(item, (list, tuple)) or len(item) < 4:
            return []
        op_name, sensitive_type, _op_type, number = item[:4]
        if not (isinstance(op_name, str) and isinstance(sensitive_type, str)
                and isinstance(number, (int, float)) and not isinstance(number, bool)):
            return []
        rows.append((op_name, sensitive_type, float(number)))
    return rows
