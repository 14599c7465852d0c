"""`hb_model_info` output (docs/file_formats.md R6): what a compiled model (.bin / .hbm / .bc)
expects, as the host tool prints it.

Layout: `key : value` lines under `############# ... info #############` banners (model deps,
model_parameters, input_parameters, calibration_parameters, custom_op, compiler_parameters),
one `---------input info : <name>  ---------` subsection per model input (its conversion
parameters: input_type_rt / _train, layouts, norm_type, mean / scale; closed by
`---------input info : <name> end -------` in the vendor's own output). Then, depending on the
toolchain version, one or more of:

* `--------- input/output types -------------------` with `model input types   : [...]` and
  `model output types  : [...]` (the .bin tool of the X3 / J5 / X5 toolchains; the lists hold
  enum reprs such as `<InputDataType.NV12: 7>` or `<DataType.TENSOR_FLOAT: 1>`);
* `--------- deleted nodes -------------------` with one `deleted nodes: <name>` line per node
  removed from the compiled model afterwards (hb_model_modifier), after a warning that the
  description is the one of compile time;
* `############# Removable node info #############` with a table `Node Name  Node Type` (or the
  message that the model has no nodes to delete) for a .bc model;
* the banner `Model input/output info` with a whitespace table `NAME TYPE SHAPE DATA_TYPE`
  over a dash rule (the .hbm / .bc / .onnx tool). Cells contain spaces (`[1, 224, 224, 1]`), so
  the table is cut by the column spans of its dash rule.

Some versions print neither table nor types, a packed model prints no table, an .onnx or a
.bc without a description prints only the table: a description may end after any whole
section, and what was read is kept. What the tool always prints whole must be whole, though
(the input/output types line and its two lists, a table, an `input info` subsection).
Before the first banner come the tool's start lines (`Start hb_model_info....`, `hb_model_info
version ...`) and a model name line `******** <name> *********` (older versions: `<name> info`);
a packed model repeats the whole description once per model, after a warning that it is
packed, and prints no table: the result describes the first model and names all of them.

A line may carry the logging prefix of the tool's log file (`2026-03-01 14:02:11,204 INFO `);
it is removed before anything else. Lines the log file holds at DEBUG level (with their
continuation lines) and WARNING / ERROR lines are the tool's messages, not the description:
they are skipped, as are the few messages the tool prints between the sections without a
prefix.

Real dumps are pasted, excerpted and hand-edited, so a line or part that fits none of these
shapes (a garbled line, a cut list, a table row that does not line up, a section without
its lines) is skipped and named with its line in `ModelInfo.skipped`, and the rest is read;
a table row wider than its dash rule (a name longer than its header) is cut at its words.
Only a file with no description in it at all is refused (InputError).

This module also defines the result shape that hrt_model_info (R7, the board side) fills
in too, so that later code can compare either with the user's platform and deployment:
a ModelInfo with model-level values, ModelInputs (one per tensor the application feeds,
each linked to the InputSpec it was converted from) and ModelOutputs. Every value keeps its
text as written and its 1-based file line. The module knows the format, not any rule.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from j6doctor.probes.input_error import InputError, Skips
from j6doctor.probes.text_file import load_text, split_lines
from j6doctor.probes.text_tables import Table, cut_words, parse_number, parse_simple, skip_blank

# A few hundred lines in practice; the limit guards memory against a wrong file (parsing
# costs about 50 times the file size).
MAX_TEXT_BYTES = 4 * 1024 * 1024

WHAT = ("hb_model_info output ('key : value' lines under '############# ... info #############' "
        "banners, then the '--------- input/output types' lines or the 'Model input/output info' "
        "table NAME TYPE SHAPE DATA_TYPE)")
TOOL = "hb_model_info"

IO_TITLE = "model input/output info"
REMOVABLE_TITLE = "removable node info"
IO_TYPES_TITLE = "input/output types"
DELETED_TITLE = "deleted nodes"
TABLE_COLUMNS = ("NAME", "TYPE", "SHAPE", "DATA_TYPE")
REMOVABLE_COLUMNS = ("Node Name", "Node Type")

# Prefix of a line of the tool's log file; the message after it is the stdout line.
_LOG_PREFIX = re.compile(r"^\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)? "
                         r"(?P<level>DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)(?: |$)")
# Levels of the log file that are messages of the tool, never part of the description.
_MESSAGE_LEVELS = ("WARNING", "WARN", "ERROR", "CRITICAL")
_BANNER = re.compile(r"^#{3,}\s*(?P<title>[^#]*?)\s*#{3,}$")
_SUBSECTION = re.compile(r"^-{3,}\s*input info\s*:\s*(?P<name>.*?)\s*-{3,}$", re.IGNORECASE)
_SUBSECTION_END = re.compile(r"^(?P<name>.*\S)\s+end$", re.IGNORECASE)
# `--------- input/output types -------------------`, `--------- deleted nodes -`: a titled dash
# line (the manuals shorten the dashes after the title to one).
_DASH_SECTION = re.compile(r"^-{3,}\s*(?P<title>[A-Za-z][^:]*?)\s*-+$")
_DASHES = re.compile(r"^-+$")
# `******** yolo_x5 *********`, older versions `******** yolo_x5 info *********`
_MODEL_NAME = re.compile(r"^\*{3,}\s*(?P<name>[^*\s][^*]*?)\s*\*{3,}$")
_STARS = re.compile(r"^\*+$")
_NAME_INFO_SUFFIX = re.compile(r"\s+info$", re.IGNORECASE)
# Keys may start with a digit (`16 bit quantize`, `16bit_quantize`); brackets and quotes belong
# to values only (a `model input types [<InputDataType.NV12: 7>]` without its colon is garbled).
_KEY_VALUE = re.compile(r"^(?P<key>[A-Za-z0-9_][^:\[\](){}<>'\"]*?)\s*:\s*(?P<value>.*?)$")
# The messages the tool prints between the sections, as they appear in a pasted terminal
# (without the log prefix, possibly with the level word alone).
_MESSAGE = re.compile(r"^(?:(?:WARNING|WARN|INFO|ERROR)\s*:?\s+)?(?:"
                      r"Please note that the model information shown now is\b.*"
                      r"|This model is a packaged model\b.*"
                      r"|The model \S.* has no nodes to delete\.?)$", re.IGNORECASE)
_START = re.compile(r"^(?:Start hb_model_info\b|hb_model_info version\b)", re.IGNORECASE)
# One entry of `model input types` / `model output types`: `<InputDataType.NV12: 7>`.
_TYPE_ENTRY = re.compile(r"<(?P<body>[^<>]*)>")
_TYPE_NAME = re.compile(r"^\w+$")
_X_DIMS = re.compile(r"^\d+(?:\s*x\s*\d+)*$", re.IGNORECASE)
_DIMS = re.compile(r"^[\[(](?P<body>[^\[\]()]*)[\])]$")
_NODE_SEPARATORS = re.compile(r"[;,\s]+")
_FLOAT_SEPARATORS = re.compile(r"[,;\s]+")

# Canonical key (see canonical_key) → model-level attribute of ModelInfo.
MODEL_KEYS = {
    "march": ("bpu_march", "march"),
    "builder_version": ("builder_version", "hb_mapper_version"),
    "hbdk_version": ("hbdk_version",),
}
REMOVED_NODES_KEY = "remove_node_name"
DELETED_NODES_KEY = "deleted_nodes"
INPUT_TYPES_KEY = "model_input_types"
OUTPUT_TYPES_KEY = "model_output_types"
SCALE_QUANTI_TYPE = "SCALE"


# ---------------------------------------------------------------- the shared result shape

@dataclass(frozen=True)
class Value:
    """A value as the file writes it, and the 1-based file line it was read from."""
    text: str
    line: int


@dataclass
class InputSpec:
    """The conversion parameters of one model input: R6 an `input info` subsection, R7 the
    per-input keys of `[model desc]`. `name` is None when the file does not name the input.
    `fields` holds every key of it under its canonical key (`input_type_rt`, `mean_value` ...)."""
    name: str | None
    line: int
    fields: dict[str, Value] = field(default_factory=dict)

    def get(self, key: str) -> Value | None:
        return self.fields.get(canonical_key(key))

    @property
    def input_type_rt(self) -> Value | None:
        return self.get("input_type_rt")

    @property
    def input_type_train(self) -> Value | None:
        return self.get("input_type_train")

    @property
    def input_layout_rt(self) -> Value | None:
        return self.get("input_layout_rt")

    @property
    def input_layout_train(self) -> Value | None:
        return self.get("input_layout_train")

    @property
    def norm_type(self) -> Value | None:
        return self.get("norm_type")

    @property
    def mean_value(self) -> Value | None:
        return self.get("mean_value")

    @property
    def scale_value(self) -> Value | None:
        return self.get("scale_value")

    @property
    def std_value(self) -> Value | None:
        return self.get("std_value")

    @property
    def mean_values(self) -> list[float] | None:
        """mean_value as numbers, or None when absent or not a list of numbers."""
        return parse_floats(self.mean_value.text) if self.mean_value else None

    @property
    def scale_values(self) -> list[float] | None:
        return parse_floats(self.scale_value.text) if self.scale_value else None


@dataclass(kw_only=True)
class Tensor:
    """One model input or output as the runtime sees it. Absent values are None: R6 has no
    stride, aligned byte size or quanti type. `data_type` is verbatim: R6 DATA_TYPE (UINT8,
    FLOAT32 ...), R7 tensor type (HB_DNN_TENSOR_TYPE_U8, HB_DNN_IMG_TYPE_NV12 ...)."""
    name: str
    index: int                    # 0-based position among the inputs (or the outputs)
    line: int                     # R6: the table row; R7: the `input[i]:` / `output[i]:` line
    shape: Value | None = None
    dims: tuple[int, ...] | None = None
    data_type: Value | None = None
    layout: Value | None = None
    stride: Value | None = None
    strides: tuple[int, ...] | None = None
    aligned_byte_size: Value | None = None
    aligned_bytes: int | None = None
    quanti_type: Value | None = None
    fields: dict[str, Value] = field(default_factory=dict)   # every cell / key, canonical keys


@dataclass(kw_only=True)
class ModelInput(Tensor):
    """A tensor the application feeds. `spec` is the model input it was converted from: the
    same name, or `<name>_y` / `<name>_uv` for the two tensors of an nv12 input, or the one
    unnamed spec of a single-input model; None when the file does not tell."""
    spec: InputSpec | None = None

    def _spec_value(self, key: str) -> Value | None:
        return self.spec.get(key) if self.spec else None

    @property
    def input_type_rt(self) -> Value | None:
        return self._spec_value("input_type_rt")

    @property
    def input_type_train(self) -> Value | None:
        return self._spec_value("input_type_train")

    @property
    def input_layout_rt(self) -> Value | None:
        return self._spec_value("input_layout_rt")

    @property
    def input_layout_train(self) -> Value | None:
        return self._spec_value("input_layout_train")

    @property
    def norm_type(self) -> Value | None:
        return self._spec_value("norm_type")

    @property
    def mean_value(self) -> Value | None:
        return self._spec_value("mean_value")

    @property
    def scale_value(self) -> Value | None:
        return self._spec_value("scale_value")

    @property
    def std_value(self) -> Value | None:
        return self._spec_value("std_value")

    @property
    def mean_values(self) -> list[float] | None:
        return self.spec.mean_values if self.spec else None

    @property
    def scale_values(self) -> list[float] | None:
        return self.spec.scale_values if self.spec else None


@dataclass(kw_only=True)
class ModelOutput(Tensor):
    """A tensor the model returns. needs_dequantize: quanti type SCALE, i.e. the board returns
    integers that the application must dequantize with the listed scale data (False also when
    the format does not say, as in R6)."""
    needs_dequantize: bool = field(init=False, default=False)

    def __post_init__(self) -> None:
        self.needs_dequantize = (self.quanti_type is not None
                                 and self.quanti_type.text.strip().upper() == SCALE_QUANTI_TYPE)


@dataclass
class ModelInfo:
    """What a compiled model expects, from hb_model_info (R6) or hrt_model_exec model_info (R7).
    Runtime versions (UCP, DNN, HBRT) and the hbrt warning exist only in R7 (board side)."""
    display: str
    tool: str                                  # "hb_model_info" or "hrt_model_exec model_info"
    inputs: list[ModelInput]
    outputs: list[ModelOutput]
    input_specs: list[InputSpec]
    model_name: Value | None = None
    march: Value | None = None
    builder_version: Value | None = None
    hbdk_version: Value | None = None
    ucp_version: Value | None = None
    dnn_version: Value | None = None
    hbrt_version: Value | None = None
    removed_nodes: list[Value] = field(default_factory=list)
    hbrt_older_than_model: bool = False
    hbrt_warning: Value | None = None          # the warning line verbatim
    fields: dict[str, Value] = field(default_factory=dict)   # model-level keys, canonical
    # R6 only (empty / None for R7): the line where the description starts (its model name
    # line or first banner), the `model input types` / `model output types` entries as the
    # type names (`NV12`, `F32`, `TENSOR_FLOAT` ...), and the names of the models a packed
    # file describes (the result is the first of them).
    line: int | None = None
    input_types: list[Value] = field(default_factory=list)
    output_types: list[Value] = field(default_factory=list)
    models: list[Value] = field(default_factory=list)
    skipped: Skips = field(default_factory=Skips)   # what the reader went past (line and why)

    def input(self, name: str) -> ModelInput | None:
        return next((t for t in self.inputs if t.name == name), None)

    def output(self, name: str) -> ModelOutput | None:
        return next((t for t in self.outputs if t.name == name), None)

    @property
    def outputs_to_dequantize(self) -> list[ModelOutput]:
        return [t for t in self.outputs if t.needs_dequantize]


# ---------------------------------------------------------------- helpers shared with R7

def canonical_key(key: str) -> str:
    """`BPU march` → `bpu_march`, `input_space&range` → `input_space_and_range`,
    `MEAN_VALUE` → `mean_value`, `valid shape` → `valid_shape`."""
    return re.sub(r"[\s_]+", "_", key.strip().lower().replace("&", "_and_"))


def parse_dims(text: str) -> tuple[int, ...] | None:
    """`[1, 224, 224, 1]`, `(1,224,224,1)`, `(1,3,672,672,)` → ints; None when not such a list
    (no closing bracket, a non-integer)."""
    match = _DIMS.match(text.strip())
    if not match:
        return None
    parts = [part.strip() for part in match["body"].split(",")]
    if parts[-1] == "":          # a trailing comma, or empty brackets
        parts.pop()
    try:
        return tuple(int(part) for part in parts)
    except ValueError:
        return None


def parse_floats(text: str) -> list[float] | None:
    """`[123.675, 116.28, 103.53]`, `0.0039215,`, `128 128 128` → floats; None when empty or
    when a part is not a number."""
    body = text.strip()
    if body[:1] in "[(" and body[-1:] in "])":
        body = body[1:-1]
    parts = [part for part in _FLOAT_SEPARATORS.split(body) if part]
    numbers = [parse_number(part) for part in parts]
    if not numbers or any(number is None for number in numbers):
        return None
    return numbers  # type: ignore[return-value]


def split_names(text: str) -> list[str]:
    """A list of node names written as `a;b`, `a,b`, `a b` or `['a', 'b']`."""
    body = text.strip()
    if body[:1] == "[" and body[-1:] == "]":
        body = body[1:-1]
    return [name.strip("'\"") for name in _NODE_SEPARATORS.split(body) if name.strip("'\"")]


def model_values(fields: dict[str, Value]) -> dict[str, Value | None]:
    """march / builder_version / hbdk_version from canonical model-level keys."""
    return {attr: next((fields[k] for k in keys if k in fields), None)
            for attr, keys in MODEL_KEYS.items()}


def attach_specs(inputs: list[ModelInput], specs: list[InputSpec]) -> None:
    """Links each input tensor to the InputSpec it was converted from (see ModelInput)."""
    for tensor in inputs:
        tensor.spec = _spec_for(tensor.name, specs)


def _spec_for(name: str, specs: list[InputSpec]) -> InputSpec | None:
    for spec in specs:
        if spec.name == name:
            return spec
    for spec in specs:
        if spec.name and re.fullmatch(re.escape(spec.name) + r"_(?:y|uv)", name):
            return spec
    if len(specs) == 1 and specs[0].name is None:
        return specs[0]
    return None


def shown(text: str) -> str:
    return repr(text[:60]) if text else "nothing"


# ---------------------------------------------------------------- R6 entry points

def read_hb_model_info(path: Path | str, display: str | None = None) -> ModelInfo:
    path = Path(path)
    display = display or path.name
    return parse_hb_model_info(load_text(path, display, WHAT, MAX_TEXT_BYTES), display)


def parse_hb_model_info(text: str, display: str) -> ModelInfo:
    return _HbParser(_description_lines(text), display).run()


def _description_lines(text: str) -> list[str]:
    """The lines as the tool printed them on the terminal, one per file line (so that line
    numbers stay the file's): the log prefix removed; a DEBUG line of the log file, the lines
    without prefix that continue it (a dumped protobuf message) and a WARNING / ERROR line
    other than the messages the parser knows become blank, since none of them is part of
    the description."""
    lines: list[str] = []
    in_debug = False
    for line in split_lines(text.removeprefix("\ufeff")):
        prefix = _LOG_PREFIX.match(line)
        if prefix:
            level = prefix["level"]
            in_debug = level == "DEBUG"
            body = "" if in_debug else line[prefix.end():]
            if level in _MESSAGE_LEVELS and not _MESSAGE.match(body.strip()):
                body = ""
        else:
            body = "" if in_debug else line
        lines.append(body.rstrip())
    return lines


@dataclass
class _Model:
    """One model's description; a packed model's output holds several."""
    start: int                                  # 1-based line of its name line or first banner
    name: Value | None = None
    specs: list[InputSpec] = field(default_factory=list)
    fields: dict[str, Value] = field(default_factory=dict)
    deleted: list[Value] = field(default_factory=list)
    input_types: list[Value] | None = None
    output_types: list[Value] | None = None
    types_line: int | None = None               # the `input/output types` line
    has_sections: bool = False


class _HbParser:
    def __init__(self, lines: list[str], display: str):
        self.lines = lines
        self.display = display
        self.section: str | None = None      # title of the current banner or dash section
        self.spec: InputSpec | None = None   # the open `input info` subsection
        self.models: list[_Model] = []
        self.table: Table | None = None
        self.started = False                 # the tool's start lines were seen
        self.skips = Skips()
        self.end = len(lines)                # where reading stops (a second description after the table)

    @property
    def model(self) -> _Model:
        return self.models[-1]

    def run(self) -> ModelInfo:
        i = 0
        while i < self.end:
            body = self.lines[i].strip()
            if not body:
                i += 1
                continue
            banner = _BANNER.match(body)
            if banner:
                i = self._banner(i, banner["title"])
                continue
            name = _MODEL_NAME.match(body)
            if name:
                self._model_name(i, name["name"])
            elif _MESSAGE.match(body) or _STARS.match(body):
                pass    # the packed-model and compile-time warnings, the no-removable-node note,
                        # a rule of stars (the log file's separator)
            elif self.section is None:
                self.started |= bool(_START.match(body))
            # Before the first banner: the tool's start messages. After the table: its end.
            elif self.section.lower() != IO_TITLE:
                self._section_line(i, body)
            i += 1
        self._close_spec()
        return self._result()

    def _skip(self, line: int | None, reason: str) -> None:
        self.skips.add(line, reason)

    # -------------------------------------------------------- structure

    def _new_model(self, i: int) -> None:
        self._close_spec()
        self.models.append(_Model(start=i + 1))
        self.section = None

    def _model_name(self, i: int, text: str) -> None:
        if self.table is not None:
            self._skip(i + 1, "a model description after the 'Model input/output info' table (two outputs "
                              f"in one file?): lines {i + 1}-{len(self.lines)} not read")
            self.end = i
            return
        name = _NAME_INFO_SUFFIX.sub("", text).strip()
        if not self.models or self.model.has_sections or self.model.name is not None:
            self._new_model(i)
        self.model.name = Value(name, i + 1)

    def _banner(self, i: int, title: str) -> int:
        self._close_spec()
        if not self.models:
            self.models.append(_Model(start=i + 1))
        self.model.has_sections = True
        self.section = title
        if title.lower() == IO_TITLE:
            return self._read_table(i)
        if title.lower() == REMOVABLE_TITLE:
            return self._read_removable(i)
        return i + 1

    def _section_line(self, i: int, body: str) -> None:
        sub = _SUBSECTION.match(body)
        if sub:
            self._subsection(i, sub["name"])
            return
        if _DASHES.match(body):
            return
        dash = _DASH_SECTION.match(body)
        if dash:
            self._close_spec()
            self.section = dash["title"]
            if self.section.lower() == IO_TYPES_TITLE:
                self.model.types_line = i + 1
            return
        kv = _KEY_VALUE.match(body)
        if not kv:
            self._skip(i + 1, f"expected 'key : value' in the '{self.section}' section, found {shown(body)} "
                              "(garbled line?)")
            return
        key, value = canonical_key(kv["key"]), Value(kv["value"], i + 1)
        section = self.section.lower() if self.section else ""
        if section == DELETED_TITLE:
            self._deleted_node(key, value)
            return
        if section == IO_TYPES_TITLE and key in (INPUT_TYPES_KEY, OUTPUT_TYPES_KEY):
            self._type_line(key, kv["key"], value)
        target = self.spec.fields if self.spec else self.model.fields
        target.setdefault(key, value)

    def _type_line(self, key: str, written: str, value: Value) -> None:
        types = self._types(written, value)
        if types is None:
            types = []  # the line was there: its list is skipped, not missing
        if key == INPUT_TYPES_KEY and self.model.input_types is None:
            self.model.input_types = types
        elif key == OUTPUT_TYPES_KEY and self.model.output_types is None:
            self.model.output_types = types

    def _deleted_node(self, key: str, value: Value) -> None:
        if key != DELETED_NODES_KEY or not value.text:
            line = self.lines[value.line - 1].strip()
            self._skip(value.line, "expected 'deleted nodes: <node name>' in the 'deleted nodes' section, found "
                                   f"{shown(line)} (garbled line?)")
            return
        self.model.deleted.append(value)

    def _types(self, key: str, value: Value) -> list[Value] | None:
        """`[<InputDataType.NV12: 7>, <DataType.TENSOR_FLOAT: 1>]` (or `[NV12, F32]`) → the type
        names, each with the line; None, the line skipped, for anything else (a cut or garbled list)."""
        body = value.text.strip()
        if not (body.startswith("[") and body.endswith("]")):
            self._skip(value.line, f"expected a list like [<InputDataType.NV12: 7>] after '{key.strip()} :', "
                                   f"found {shown(body)} (truncated line?)")
            return None
        inner = body[1:-1].strip()
        if not inner:
            return []
        if "<" in inner or ">" in inner:
            entries = [m["body"] for m in _TYPE_ENTRY.finditer(inner)]
            rest = _TYPE_ENTRY.sub("", inner)
        else:
            entries, rest = inner.split(","), ""
        names = [entry.split(":")[0].strip().strip("'\"").rsplit(".", 1)[-1] for entry in entries]
        if rest.replace(",", "").strip() or not all(_TYPE_NAME.match(name) for name in names):
            self._skip(value.line, f"expected a list like [<InputDataType.NV12: 7>] after '{key.strip()} :', "
                                   f"found {shown(body)} (garbled line?)")
            return None
        return [Value(name, value.line) for name in names]

    def _subsection(self, i: int, name: str) -> None:
        end = _SUBSECTION_END.match(name)
        if end and self.spec is not None and end["name"] == self.spec.name:
            self._close_spec()
            return
        if end:
            self._skip(i + 1, f"end of the input info subsection {end['name']!r} without its start")
            return
        self._close_spec()
        if not name:
            self._skip(i + 1, "expected an input name after 'input info :'; the lines under it are not read")
            self.spec = InputSpec(None, i + 1)  # takes its lines; not one of the model's inputs
            return
        self.spec = InputSpec(name, i + 1)
        if any(spec.name == name for spec in self.model.specs):
            self._skip(i + 1, f"input {name!r} is described twice; the second description is not read")
            return
        self.model.specs.append(self.spec)

    def _close_spec(self) -> None:
        spec, self.spec = self.spec, None
        if spec is not None and not spec.fields and spec in self.model.specs:
            self.model.specs.remove(spec)
            self._skip(spec.line, f"the 'input info : {spec.name}' subsection has no 'key : value' lines "
                                  "(file cut?)")

    # -------------------------------------------------------- tables

    def _table_lines(self, start: int) -> list[str]:
        """The lines up to the next banner, dash section or model name line: a table ends
        there even without the blank line after it (the tool logs the next banner right
        below a table)."""
        end = start
        while end < len(self.lines):
            body = self.lines[end].strip()
            if _BANNER.match(body) or _MODEL_NAME.match(body) or _DASH_SECTION.match(body):
                break
            end += 1
        return self.lines[:end]

    def _simple_table(self, i: int, banner: str, what: str) -> Table | None:
        """The table under the banner at line index i, its skipped rows noted; None, noted,
        when the file ends there or no table with a dash rule follows."""
        start = skip_blank(self.lines, i + 1)
        if start >= len(self.lines):
            self._skip(i + 1, f"the file ends after the '{banner}' banner; expected {what} (cut?)")
            return None
        try:
            table = parse_simple(self._table_lines(start), start, 1, self.display, what)
        except InputError as error:
            self.skips.add_error(error)
            return None
        self.skips.extend(table.skipped)
        return table

    def _read_table(self, i: int) -> int:
        if self.table is not None:
            self._skip(i + 1, "a second 'Model input/output info' table, not read")
            return i + 1
        table = self._simple_table(i, "Model input/output info", "the table NAME TYPE SHAPE DATA_TYPE")
        if table is None:
            return i + 1
        self.table = table
        return table.end

    def _read_removable(self, i: int) -> int:
        """The nodes a .bc model could have removed (a table Node Name / Node Type): no fact
        about the compiled model, read past."""
        table = self._simple_table(i, "Removable node info", "the table Node Name / Node Type")
        if table is None:
            return i + 1
        if any(table.column(name) is None for name in REMOVABLE_COLUMNS):
            self._skip(table.header_line, f"expected the columns Node Name, Node Type, found "
                                          f"{'  '.join(table.headers)!r}")
        return table.end

    # -------------------------------------------------------- result

    def _result(self) -> ModelInfo:
        if not self.models and self.started:
            raise InputError(self.display, "hb_model_info printed its start lines but no model "
                                           "description (the model carries none, or the output "
                                           "was cut)", len(self.lines))
        if not self.models:
            raise InputError(self.display, f"nothing recognisable; expected {WHAT}")
        self._check_models()
        self._require_whole_types()
        model = self.models[0]
        inputs, outputs = self._tensors(self.table) if self.table is not None else ([], [])
        if inputs or outputs:
            attach_specs(inputs, model.specs)
        else:
            inputs = self._spec_inputs(model)
        if not (model.fields or inputs or outputs):
            raise InputError(self.display, "the description has no 'key : value' line under its banners "
                                           "and no readable input/output table (file cut?)", model.start)
        return ModelInfo(display=self.display, tool=TOOL, inputs=inputs, outputs=outputs,
                         input_specs=model.specs, fields=model.fields, model_name=model.name,
                         removed_nodes=self._removed_nodes(model), line=model.start,
                         input_types=model.input_types or [], output_types=model.output_types or [],
                         models=[m.name for m in self.models if m.name is not None],
                         skipped=self.skips, **model_values(model.fields))

    def _check_models(self) -> None:
        """A model name line without a description after it: refused when it is the model the
        result describes (the first), noted for a later model of a packed file."""
        first = self.models[0]
        if not first.has_sections:
            raise InputError(self.display, f"the model name line {first.name.text!r} is followed by no "
                                           "description; expected the '############# model deps info "
                                           "#############' section (truncated?)", first.start)
        for model in self.models[1:]:
            if not model.has_sections or not (model.fields or model.specs):
                name = model.name.text if model.name else "?"
                self._skip(model.start, f"the description of model {name!r} has no 'key : value' line "
                                        "(file cut?)")

    def _require_whole_types(self) -> None:
        """A description may end after any whole section: some versions print neither the
        table nor the type lists, a packed .hbm prints no table, and what was read is true
        either way. The tool prints the type lists whole, though: the input/output types
        line is always followed by both lists, so one missing means a file cut there (noted)."""
        packed = len(self.models) > 1
        for model in self.models:
            if model.types_line is None:
                continue
            for key, types in ((INPUT_TYPES_KEY, model.input_types),
                               (OUTPUT_TYPES_KEY, model.output_types)):
                if types is None:
                    what = key.replace("_", " ")
                    where = f" of model {model.name.text!r}" if packed and model.name else ""
                    self._skip(model.types_line, f"the input/output types{where} have no '{what}' line (file cut?)")

    @staticmethod
    def _removed_nodes(model: _Model) -> list[Value]:
        """Nodes removed at conversion (`remove node name`) and afterwards (`deleted nodes`),
        each once, in file order."""
        removed = model.fields.get(REMOVED_NODES_KEY)
        nodes = [Value(name, removed.line) for name in split_names(removed.text)] if removed else []
        nodes += model.deleted
        first: dict[str, Value] = {}
        for node in nodes:
            first.setdefault(node.text, node)
        return list(first.values())

    @staticmethod
    def _spec_inputs(model: _Model) -> list[ModelInput]:
        """Without the table, the model inputs are the `input info` subsections; each takes its
        type from `model input types` when that lists one type per subsection, and its shape
        from `input_shape` (`1x3x640x640`)."""
        types = model.input_types or []
        inputs: list[ModelInput] = []
        for index, spec in enumerate(model.specs):
            shape = spec.get("input_shape")
            dims = (tuple(int(d) for d in re.split(r"\s*x\s*", shape.text.strip(), flags=re.I))
                    if shape and _X_DIMS.match(shape.text.strip()) else None)
            data_type = types[index] if len(types) == len(model.specs) else None
            fields = {k: v for k, v in (("input_shape", shape), ("data_type", data_type)) if v}
            inputs.append(ModelInput(name=spec.name or "", index=index, line=spec.line, shape=shape,
                                     dims=dims, data_type=data_type, fields=fields, spec=spec))
        return inputs

    def _tensors(self, table: Table) -> tuple[list[ModelInput], list[ModelOutput]]:
        """The table's rows as tensors; a row whose cells are no tensor (cut, garbled) is
        cut again at its words (a row pushed right by a long name can happen to fit the
        columns), else skipped."""
        columns = [table.column(name) for name in TABLE_COLUMNS]
        if any(column is None for column in columns):
            self._skip(table.header_line, "expected the columns NAME TYPE SHAPE DATA_TYPE, found "
                                          f"{'  '.join(table.headers)!r}; the table is not read")
            return [], []
        inputs: list[ModelInput] = []
        outputs: list[ModelOutput] = []
        for row in table.rows:
            cells = row.cells
            problem = self._tensor_problem(cells, columns)
            if problem:
                words = cut_words(self.lines[row.line - 1], len(table.headers))
                if words is None or self._tensor_problem(words, columns):
                    self._skip(row.line, problem)
                    continue
                cells = words
            tensor = self._tensor(table.headers, cells, columns, row.line, len(inputs), len(outputs))
            (inputs if isinstance(tensor, ModelInput) else outputs).append(tensor)
        if table.rows and (not inputs or not outputs):
            missing = "input" if not inputs else "output"
            last = table.rows[-1].line
            self._skip(last, f"the table NAME TYPE SHAPE DATA_TYPE lists no {missing} (file cut?)")
        return inputs, outputs

    @staticmethod
    def _tensor_problem(cells: tuple[str, ...], columns: list[int | None]) -> str:
        """What keeps a row from being a tensor ("" for nothing)."""
        c_name, c_type, c_shape, c_dtype = columns
        if cells[c_type].lower() not in ("input", "output"):
            return f"expected 'input' or 'output' in the TYPE column, found {shown(cells[c_type])} (garbled row?)"
        if not cells[c_name]:
            return "expected a tensor name in the NAME column"
        if parse_dims(cells[c_shape]) is None:
            return (f"expected a shape like [1, 224, 224, 3] in the SHAPE column, found {shown(cells[c_shape])} "
                    "(garbled or truncated row?)")
        if not cells[c_dtype]:
            return "expected a data type in the DATA_TYPE column (file truncated?)"
        return ""

    @staticmethod
    def _tensor(headers: tuple[str, ...], cells: tuple[str, ...], columns: list[int | None], line: int,
                inputs: int, outputs: int) -> ModelInput | ModelOutput:
        c_name, c_type, c_shape, c_dtype = columns
        fields = {canonical_key(h): Value(c, line) for h, c in zip(headers, cells) if h}
        common = dict(name=cells[c_name], line=line, shape=Value(cells[c_shape], line),
                      dims=parse_dims(cells[c_shape]), data_type=Value(cells[c_dtype], line), fields=fields)
        if cells[c_type].lower() == "input":
            return ModelInput(index=inputs, **common)
        return ModelOutput(index=outputs, **common)


# --- facts (probes/probe_output.py) -------------------------------------------------------

# The input settings a compiled model declares, as the conversion yaml names them.
MODEL_INPUT_KEYS = ("input_type_rt", "input_type_train", "input_layout_rt", "input_layout_train",
                    "norm_type", "mean_value", "scale_value")


def add_facts(found, out) -> None:
    add_model_facts(found, out, read_hb_model_info(found.path, found.display))


def add_pasted_facts(text: str, found, out) -> None:
    """The same facts of hb_model_info output pasted into the user's words."""
    add_model_facts(found, out, parse_hb_model_info(text, found.display))


def add_model_facts(found, out, info: ModelInfo) -> None:
    """A compiled model's description (hb_model_info or hrt_model_exec model_info): march,
    runtime and toolchain versions, declared inputs and outputs; what its reader skipped."""
    out.skipped(found, info.skipped)
    facts = out.facts
    out.add("model_info", {
        "path": found.display, "tool": info.tool, "march": info.march.text.lower() if info.march else "",
        "hbrt_older": info.hbrt_older_than_model, "hbrt_warning": info.hbrt_warning.text if info.hbrt_warning else "",
        "removed_nodes": "、".join(v.text for v in info.removed_nodes),
    }, found, line=info.hbrt_warning.line if info.hbrt_warning else info.line, key=info.tool)
    if info.march:
        source = out.source(found, line=info.march.line, key="march")
        facts.add("artifact_march", {"path": found.display, "march": info.march.text.lower(),
                                     "what": "模型（hbm / bin）编译的 march"}, source)
        facts.add_platform(info.march.text, source, f"{found.display}:{info.march.line} 记录的模型 march", note=False)
    # the conversion tools' own versions (hb_mapper / horizon_nn on X3 / X5 / J5; a J6 hbm's
    # "builder version"): they answer the versions question for PTQ users
    tools = [(given, info.fields[key]) for key, given in (("hb_mapper_version", "hb_mapper"),
                                                          ("builder_version", "builder"),
                                                          ("horizon_nn_version", "horizon_nn"))
             if key in info.fields]
    for name, value in [("hbdk", info.hbdk_version), *tools, ("UCP", info.ucp_version), ("DNN", info.dnn_version),
                        ("HBRT", info.hbrt_version)]:
        if value is not None:
            facts.add_version(name, value.text, out.source(found, line=value.line, key=name),
                              f"{found.display}:{value.line} 记录")
    multi = len(info.inputs) > 1
    for model_input in info.inputs[:out.limit]:
        for key in MODEL_INPUT_KEYS:
            value = getattr(model_input, key)
            if value is not None:
                out.add("input_param", {"name": key, "value": value.text.strip().lower(),
                                        "input": model_input.name if multi else ""},
                        found, line=value.line, key=f"{model_input.name}.{key}")
    for output in info.outputs[:out.limit]:
        out.add("model_output", {"path": found.display, "name": output.name,
                                 "quanti_type": output.quanti_type.text if output.quanti_type else "",
                                 "needs_dequantize": output.needs_dequantize},
                found, line=output.line, key=output.name)
