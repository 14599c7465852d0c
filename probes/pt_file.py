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

The work of one file is bounded too (see "Reading limits"): the opcodes executed plus the
elements the allowed calls copy (`MAX_PICKLE_OPS`, which also bounds every container built and
so the memory), the pickle bytes (`MAX_PICKLE_BYTES`, also for the legacy layout read from
disk), the key comparisons crafted hash collisions could force (`MAX_KEY_PROBES`), the size of
an integer and the number of distinct classes. Reading never recurses, so the only nesting
that needs a bound is that of hashed tuples. Going over a limit is an InputError that says which.
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
from itertools import repeat
from pathlib import Path
from typing import Any, BinaryIO

from j6doctor.probes.input_error import InputError
from j6doctor.probes.text_file import read_head

# --- Reading limits ---------------------------------------------------------------------
# Measured on QuantAnalysis-like files larger than real ones (tests/test_probe_pt_file.py,
# `realistic_payloads`, which reads them with every limit cut eightfold): a 100,000-row
# sensitivity table (a large model has a few thousand ops) is an 8.8 MB data.pkl of 1.2
# million opcodes, read in about 1 s; all_badcase_info with 900 badcase entries keyed by
# sample index, with their tensors, is 0.17 MB, 62,000 opcodes and 34,000 key comparisons
# (below). Each limit sits an order of magnitude above that.
#
# Opcodes executed, plus the elements copied or walked by the calls a pickle makes
# (list(x), dict(x), ... on a memo reference to one big container, over and over), over the
# whole file: over 6x the 100k-row table. Every element of every container built costs at
# least one, so this also bounds the memory: about 90 bytes each at worst (an empty list kept
# in the memo), 720 MB, under the 1 GiB any single input may take. A run of the cheapest
# opcodes (the 200-million-opcode file that took 47 s) is stopped after 2-4 s, the slowest
# mix of opcodes after about 7 s.
MAX_PICKLE_OPS = 8_000_000
# Bytes of pickle data (the zip member's declared size, checked before it is decompressed;
# the legacy layout is read from disk and stops there): 29x the 8.8 MB of the 100k-row table.
MAX_PICKLE_BYTES = 256 * 1024 * 1024
# Tuple elements hashed (dict keys, set items) over one pickle, shared sub-tuples counted
# every time they are reached, as hash() does; real checkpoints stay far below.
MAX_HASH_WORK = 10_000_000
# tuple.__hash__ recurses in C without a depth check: a deeper key could crash the process.
MAX_KEY_NESTING = 1_000
# Keys whose hash the file can choose (numbers, tuples, ...: not str/bytes, whose hash is
# seeded per process) can all collide: n of them in one dict or set cost n**2/2 comparisons
# (40,000 colliding ints: 11 s). Each such key is charged the number of those already in its
# container (times its size for a tuple). Real files key their dicts by name; one dict with
# 14,000 integer keys (50x "a few hundred badcase indices") reaches the limit; colliding
# keys up to it take about 1.5 s.
MAX_KEY_PROBES = 100_000_000
# LONG4 integers: hash() and == are linear in their size and not cached. torch.save never
# writes an integer over 8 bytes; int("...") is already held to 4300 digits by Python.
MAX_INT_BYTES = 2048
# Distinct classes the file names (one stub class is made for each): a model has hundreds.
MAX_GLOBALS = 10_000
# LONG_BINPUT/PUT index beyond the memo size: picklers number the memo densely (pickletools.
# optimize renumbers); sparse indices could be chosen to collide in the memo dict.
MEMO_SLACK = 256
# Dimensions of the shape _rebuild_tensor looks for (real tensors have a handful).
MAX_TENSOR_DIMS = 64
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
    size = next((a for a in args[1:] if isinstance(a, (tuple, list)) and len(a) <= MAX_TENSOR_DIMS
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

class _TooMuch(pickle.UnpicklingError):
    """A reading limit was reached: the message says which."""


@dataclass
class _Log:
    """What one file's reading found and the work it has done (shared by the pickles of a
    legacy file)."""

    stubbed: set[str] = field(default_factory=set)
    refused: set[str] = field(default_factory=set)
    classes: dict[str, type] = field(default_factory=dict)
    ops: int = 0          # opcodes (counted per _OPS_CHUNK) and elements copied by calls
    hash_work: int = 0    # tuple elements hashed
    probes: int = 0       # worst-case key comparisons (see MAX_KEY_PROBES)

    def spend(self, n: int) -> None:
        self.ops += n
        if self.ops > MAX_PICKLE_OPS:
            raise _TooMuch(f"more than {MAX_PICKLE_OPS:,} pickle operations")

    def stub_class(self, module: str, name: str, base: type[InertStub]) -> type:
        full = f"{module}.{name}"
        if full not in self.classes:
            if len(self.classes) >= MAX_GLOBALS:
                raise _TooMuch(f"more than {MAX_GLOBALS:,} different classes")
            # __module__/__qualname__ make repr() print <class 'module.Name'> like the real class.
            self.classes[full] = type(name, (base,), {"__module__": module, "__qualname__": name,
                                                      "_stub_name": full})
        return self.classes[full]


_HASHING_TYPES = (set, frozenset, dict, collections.OrderedDict)
_SCALARS = (str, bytes, bytearray, int, float, complex, bool, type(None))
# Arguments a call may copy or walk element by element: containers are charged their length,
# text one operation per _TEXT_PER_OP bytes (a memcpy; a copy kept is as big as that), or per
# character when parsed or printed (int(), str() of bytes: up to 25 ns a character).
_CONTAINERS = frozenset({list, tuple, dict, set, frozenset, collections.OrderedDict})
_TEXT = frozenset({str, bytes, bytearray})
_TEXT_PER_OP = 64
# Keys whose hash the file cannot choose: seeded per process (str, bytes), few values, or
# the object's id (stubs, classes, functions: object.__hash__). A tuple's hash can be chosen
# when one of its items' can.
_FREE_KEYS = frozenset({str, bytes, bool, type(None)})


def _chosen_hash(key: Any) -> bool:
    kind = type(key)
    return kind not in _FREE_KEYS and kind is not tuple and kind.__hash__ is not object.__hash__
# Opcodes are counted per chunk, so that the loop costs nothing per opcode.
_OPS_CHUNK = 1 << 14
# Extra operations charged for what allocates more than a pointer per opcode: a call (a stub
# instance is ~450 bytes) and an empty set (216 bytes).
_CALL_COST = 8
_SET_COST = 3


class _Dispatch(dict):
    def __missing__(self, key: int) -> Any:
        raise pickle.UnpicklingError(f"invalid load key, {chr(key)!r}.")


_UINT32 = struct.Struct("<I").unpack


def _sparse_memo(index: int, memo: dict) -> Exception:
    return pickle.UnpicklingError(f"memo index {index} far beyond the {len(memo)} objects memoized so far")


class _StrictReader:
    """The file as the unpickler reads it: a read past the end is an EOFError (truncated
    data), before anything is allocated for it. Only the first MAX_PICKLE_BYTES of the file
    are readable (a legacy .pt is read from disk)."""

    def __init__(self, file: BinaryIO):
        self._file = file
        start = file.tell()
        size = file.seek(0, io.SEEK_END)
        file.seek(start)
        self._end = min(size, MAX_PICKLE_BYTES)
        self._capped = size > MAX_PICKLE_BYTES

    def remaining(self) -> int:
        return self._end - self._file.tell()

    def _past_end(self) -> Exception:
        if self._capped:
            return _TooMuch(f"more than {MAX_PICKLE_BYTES:,} bytes of pickle data")
        return EOFError("pickle data was truncated")

    def read(self, n: int = -1) -> bytes:
        if n < 0:
            n = self.remaining()
        if n > self._end - self._file.tell():
            raise self._past_end()
        return self._file.read(n)

    def readline(self) -> bytes:
        line = self._file.readline(max(0, self.remaining()))
        if not line.endswith(b"\n"):
            raise self._past_end()
        return line

    def readinto(self, buffer: Any) -> int:
        if len(buffer) > self._end - self._file.tell():
            raise self._past_end()
        return self._file.readinto(buffer)


class _RestrictedUnpickler(pickle._Unpickler):  # noqa: SLF001 -- see the module docstring
    dispatch = _Dispatch(pickle._Unpickler.dispatch)  # noqa: SLF001

    def __init__(self, file: BinaryIO, log: _Log):
        self._reader = _StrictReader(file)
        super().__init__(self._reader, encoding="utf-8")
        self.log = log
        # id -> (tuple, elements, depth, whether the file can choose its hash)
        self._costs: dict[int, tuple[tuple, int, int, bool]] = {}
        # id -> (dict/set/instance, keys in it whose hash the file chose)
        self._chosen: dict[int, tuple[Any, int]] = {}

    def load(self) -> Any:
        """pickle._Unpickler.load, counting opcodes a chunk at a time (no cost per opcode)."""
        self._unframer = pickle._Unframer(self._file_read, self._file_readline)
        self.read = self._unframer.read
        self.readinto = self._unframer.readinto
        self.readline = self._unframer.readline
        self.metastack = []
        self.stack = []
        self.append = self.stack.append
        self.proto = 0
        read = self.read
        dispatch = self.dispatch
        spend = self.log.spend
        try:
            while True:
                for _ in repeat(None, _OPS_CHUNK):
                    key = read(1)
                    if not key:
                        raise EOFError
                    dispatch[key[0]](self)
                spend(_OPS_CHUNK)
        except pickle._Stop as stop:
            return stop.value

    # -- bounded hashing ------------------------------------------------------------------
    def _tuple_cost(self, root: tuple) -> tuple[int, int, bool]:
        """(elements hash() visits, nesting depth, whether the file can choose its hash: it
        holds a number or the like) of a tuple; each distinct tuple once."""
        costs = self._costs
        todo: list[tuple[tuple, bool, int]] = [(root, False, 1)]
        while todo:
            node, ready, level = todo.pop()
            if id(node) in costs:
                continue
            if level > MAX_KEY_NESTING:  # refused on the way down: a million-deep key is not walked
                raise pickle.UnpicklingError(f"tuples nested more than {MAX_KEY_NESTING} deep")
            if not ready:
                todo.append((node, True, level))
                todo.extend((c, False, level + 1) for c in node if type(c) is tuple and id(c) not in costs)
                continue
            size, depth, chosen = 1, 1, False
            for c in node:
                if type(c) is tuple:
                    size += costs[id(c)][1]
                    depth = max(depth, costs[id(c)][2] + 1)
                    chosen = chosen or costs[id(c)][3]
                else:
                    size += 1
                    chosen = chosen or _chosen_hash(c)
            if depth > MAX_KEY_NESTING:
                raise pickle.UnpicklingError(f"tuples nested more than {MAX_KEY_NESTING} deep")
            costs[id(node)] = (node, size, depth, chosen)
        return costs[id(root)][1:]

    def _charge(self, keys: Any, into: Any = None) -> None:
        """Account for hashing `keys` (dict keys, set items) into `into` (None: a new
        container) before it happens."""
        log = self.log
        chosen = weight = 0
        for key in keys:
            kind = type(key)
            if kind is str:
                continue
            if kind is tuple:
                size, _depth, choosable = self._tuple_cost(key)
                log.hash_work += size
                if log.hash_work > MAX_HASH_WORK:
                    raise pickle.UnpicklingError(
                        f"hashing its keys would take more than {MAX_HASH_WORK} steps "
                        "(nested shared tuples)")
                if choosable:
                    chosen += 1
                    weight += size
            elif _chosen_hash(key):
                chosen += 1
                weight += 1
        if chosen:
            # Each of these keys may be compared with every such key already in the container
            # and with those before it in this batch: chosen/2 of them on average.
            before = self._chosen.get(id(into), (None, 0))[1] if into is not None else 0
            if into is not None:
                self._chosen[id(into)] = (into, before + chosen)
            log.probes += weight * before + weight * (chosen + 1) // 2
            if log.probes > MAX_KEY_PROBES:
                raise _TooMuch(f"more than {MAX_KEY_PROBES:,} key comparisons "
                               "(numbers or tuples as keys of a huge dict or set)")

    def _check_call(self, func: Any, args: Any, new: bool = False, kwargs: Any = None) -> None:
        """A call the pickle asks for (REDUCE, NEWOBJ, INST/OBJ) of an allowed callable."""
        if not isinstance(args, tuple):
            return  # the call itself fails
        # Calls copy or walk their arguments (list(x), dict(x) on a memo reference to one big
        # container, again and again): charge the elements. Stubs only keep references,
        # charged all the same.
        spend = self.log.spend
        spend(_CALL_COST + len(args) + (len(kwargs) if type(kwargs) is dict else 0))
        parses = func is str or func is int or func is float or func is complex
        work = 0
        for arg in args:
            kind = type(arg)
            if kind in _CONTAINERS:
                work += len(arg)
            elif kind in _TEXT:
                work += len(arg) if parses else len(arg) // _TEXT_PER_OP
        spend(work)
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
        self._check_call(self.stack[-3], self.stack[-2], new=True, kwargs=self.stack[-1])
        super().load_newobj_ex()
    dispatch[pickle.NEWOBJ_EX[0]] = load_newobj_ex

    def _instantiate(self, klass: Any, args: Any) -> None:  # INST, OBJ
        self._check_call(klass, tuple(args) if isinstance(args, list) else args)
        super()._instantiate(klass, args)

    def _under_mark(self) -> Any:
        """The object below the last MARK (the dict or set SETITEMS/ADDITEMS fill)."""
        below = self.metastack[-1] if self.metastack else None
        return below[-1] if below else None

    def load_setitem(self) -> None:
        self._charge(self.stack[-2:-1], self.stack[-3] if len(self.stack) > 2 else None)
        super().load_setitem()
    dispatch[pickle.SETITEM[0]] = load_setitem

    def load_setitems(self) -> None:
        # After a MARK the unpickler collects the items in a fresh self.stack.
        self._charge(self.stack[0::2], self._under_mark())
        super().load_setitems()
    dispatch[pickle.SETITEMS[0]] = load_setitems

    def load_additems(self) -> None:
        self._charge(self.stack, self._under_mark())
        super().load_additems()
    dispatch[pickle.ADDITEMS[0]] = load_additems

    def load_empty_set(self) -> None:
        self.log.spend(_SET_COST)
        super().load_empty_set()
    dispatch[pickle.EMPTY_SET[0]] = load_empty_set

    def load_long4(self) -> None:
        # Checked before reading: hash() and == of a huge integer are slow and not cached.
        size, = struct.unpack("<i", self.read(4))
        if size > MAX_INT_BYTES:
            raise pickle.UnpicklingError(f"an integer of more than {MAX_INT_BYTES} bytes")
        if size < 0:
            raise pickle.UnpicklingError("LONG pickle has negative byte count")
        self.append(pickle.decode_long(self.read(size)))
    dispatch[pickle.LONG4[0]] = load_long4

    def load_long_binput(self) -> None:
        index, = _UINT32(self.read(4))
        memo = self.memo
        if index > len(memo) + MEMO_SLACK:
            raise _sparse_memo(index, memo)
        memo[index] = self.stack[-1]
    dispatch[pickle.LONG_BINPUT[0]] = load_long_binput

    def load_put(self) -> None:
        index = int(self.readline()[:-1])
        if index < 0:
            raise ValueError("negative PUT argument")
        if index > len(self.memo) + MEMO_SLACK:
            raise _sparse_memo(index, self.memo)
        self.memo[index] = self.stack[-1]
    dispatch[pickle.PUT[0]] = load_put

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
        if not hasattr(inst, "__setstate__"):
            # The state's items are set on the instance one by one.
            parts = state if isinstance(state, tuple) and len(state) == 2 else (state,)
            self.log.spend(sum(len(part) for part in parts if isinstance(part, dict)))
            if isinstance(parts[0], dict):
                self._charge(list(parts[0]), inst)
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
    except _TooMuch as exc:
        raise InputError(display, f"{exc.args[0]}; not a QuantAnalysis output? "
                                  "Reading stopped there, nothing was executed") from None
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
        try:
            rows.append((op_name, sensitive_type, float(number)))
        except OverflowError:  # an integer beyond float range: not a sensitivity value
            return []
    return rows


# --- facts (probes/probe_output.py) -------------------------------------------------------

def add_facts(found, out) -> None:
    """What the .pt holds (readable or not, and why); a sensitivity .pt without its .txt twin
    is read as the table it carries (docs/file_formats.md §6)."""
    from pathlib import PurePosixPath

    from j6doctor.probes import sensitivity

    content = read_pt(found.path, found.display)
    out.add("pt_file", {"path": found.display, "kind": found.kind, "readable": content.readable,
                        "note": content.note}, found)
    if found.kind != "sensitivity_pt" or found.display[:-3] in out.txt_twins:
        return
    rows = sensitivity_rows_from_pt(content)
    name = sensitivity.parse_sensitivity_name(PurePosixPath(found.display).name)
    if rows and name is not None:
        table = sensitivity.SensitivityTable(found.display, name, name.metric or "L1", "unsorted", [
            sensitivity.SensitivityRow(rank, 0, op, kind, "", value, None, None)
            for rank, (op, kind, value) in enumerate(rows)])
        sensitivity.add_facts(found, out, table)
