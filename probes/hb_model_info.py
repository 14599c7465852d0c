"""`hb_model_info` output (REAL_FORMATS.md R6): what a compiled model (.bin / .hbm) expects,
as the host tool prints it.

Layout: `key : value` lines under `############# ... info #############` banners (model deps,
model_parameters, input_parameters, calibration_parameters, compiler_parameters), one
`---------input info : <name>  ---------` subsection per model input (its conversion
parameters: input_type_rt / _train, layouts, norm_type, mean / scale), and at the end the
banner `Model input/output info` with a whitespace table `NAME TYPE SHAPE DATA_TYPE` over a
dash rule. Cells contain spaces (`[1, 224, 224, 1]`), so the table is cut by the column
spans of its dash rule. A line may carry the logging prefix of the tool's log file
(`2026-03-01 14:02:11,204 INFO `); it is removed before anything else.

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

from .input_error import InputError
from .text_tables import Table, load_text, parse_number, parse_simple, skip_blank, split_lines

# A few hundred lines in practice; the limit guards memory against a wrong file (parsing
# costs about 50 times the file size).
MAX_TEXT_BYTES = 4 * 1024 * 1024

WHAT = ("hb_model_info output ('key : value' lines under '############# ... info #############' "
        "banners, ending with the 'Model input/output info' table NAME TYPE SHAPE DATA_TYPE)")
TOOL = "hb_model_info"

IO_TITLE = "model input/output info"
TABLE_COLUMNS = ("NAME", "TYPE", "SHAPE", "DATA_TYPE")

# Prefix of a line of the tool's log file; the message after it is the stdout line.
_LOG_PREFIX = re.compile(r"^\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)? "
                         r"(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL) ")
_BANNER = re.compile(r"^#{3,}\s*(?P<title>[^#]*?)\s*#{3,}$")
_SUBSECTION = re.compile(r"^-{3,}\s*input info\s*:\s*(?P<name>.*?)\s*-{3,}$", re.IGNORECASE)
_SUBSECTION_END = re.compile(r"^(?P<name>.*\S)\s+end$", re.IGNORECASE)
_DASHES = re.compile(r"^-+$")
_KEY_VALUE = re.compile(r"^(?P<key>[A-Za-z_][^:]*?)\s*:\s*(?P<value>.*?)$")
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
    lines = [_LOG_PREFIX.sub("", line, count=1).rstrip()
             for line in split_lines(text.removeprefix("\ufeff"))]
    return _HbParser(lines, display).run()


class _HbParser:
    def __init__(self, lines: list[str], display: str):
        self.lines = lines
        self.display = display
        self.section: str | None = None      # title of the current banner
        self.spec: InputSpec | None = None   # the open `input info` subsection
        self.specs: list[InputSpec] = []
        self.fields: dict[str, Value] = {}
        self.table: Table | None = None

    def run(self) -> ModelInfo:
        i = 0
        while i < len(self.lines):
            body = self.lines[i]
            if not body.strip():
                i += 1
                continue
            banner = _BANNER.match(body)
            if banner:
                self._close_spec()
                self.section = banner["title"]
                i = self._read_table(i) if self.section.lower() == IO_TITLE else i + 1
                continue
            # Before the first banner: the tool's start messages. After the table: its end.
            if self.section is not None and self.section.lower() != IO_TITLE:
                self._section_line(i, body)
            i += 1
        self._close_spec()
        if self.table is None:
            if self.section is None and not self.specs:
                raise InputError(self.display, f"nothing recognisable; expected {WHAT}")
            raise InputError(self.display, "the file ends before the '############# Model "
                                           "input/output info #############' table (truncated?)",
                             len(self.lines))
        return self._result(self.table)

    def _section_line(self, i: int, body: str) -> None:
        sub = _SUBSECTION.match(body)
        if sub:
            self._subsection(i, sub["name"])
            return
        if _DASHES.match(body.strip()):
            return
        kv = _KEY_VALUE.match(body.strip())
        if not kv:
            raise InputError(self.display, f"expected 'key : value' in the '{self.section}' "
                                           f"section, found {shown(body.strip())} (garbled line?)",
                             i + 1)
        target = self.spec.fields if self.spec else self.fields
        target.setdefault(canonical_key(kv["key"]), Value(kv["value"], i + 1))

    def _subsection(self, i: int, name: str) -> None:
        end = _SUBSECTION_END.match(name)
        if end and self.spec is not None and end["name"] == self.spec.name:
            self._close_spec()
            return
        if end:
            raise InputError(self.display, f"end of the input info subsection {end['name']!r} "
                                           "without its start", i + 1)
        self._close_spec()
        if not name:
            raise InputError(self.display, "expected an input name after 'input info :'", i + 1)
        if any(spec.name == name for spec in self.specs):
            raise InputError(self.display, f"input {name!r} is described twice", i + 1)
        self.spec = InputSpec(name, i + 1)
        self.specs.append(self.spec)

    def _close_spec(self) -> None:
        spec, self.spec = self.spec, None
        if spec is not None and not spec.fields:
            raise InputError(self.display, f"the 'input info : {spec.name}' subsection has no "
                                           "'key : value' lines (file truncated?)", spec.line)

    def _read_table(self, i: int) -> int:
        if self.table is not None:
            raise InputError(self.display, "a second 'Model input/output info' table", i + 1)
        start = skip_blank(self.lines, i + 1)
        if start >= len(self.lines):
            raise InputError(self.display, "the file ends after the 'Model input/output info' "
                                           "banner; expected the table NAME TYPE SHAPE DATA_TYPE "
                                           "(truncated?)", i + 1)
        self.table = parse_simple(self.lines, start, 1, self.display,
                                  "the table NAME TYPE SHAPE DATA_TYPE")
        return self.table.end

    def _result(self, table: Table) -> ModelInfo:
        inputs, outputs = self._tensors(table)
        attach_specs(inputs, self.specs)
        removed = self.fields.get(REMOVED_NODES_KEY)
        nodes = [Value(name, removed.line) for name in split_names(removed.text)] if removed else []
        return ModelInfo(display=self.display, tool=TOOL, inputs=inputs, outputs=outputs,
                         input_specs=self.specs, fields=self.fields, removed_nodes=nodes,
                         **model_values(self.fields))

    def _tensors(self, table: Table) -> tuple[list[ModelInput], list[ModelOutput]]:
        columns = [table.column(name) for name in TABLE_COLUMNS]
        if any(column is None for column in columns):
            raise InputError(self.display, "expected the columns NAME TYPE SHAPE DATA_TYPE, "
                                           f"found {'  '.join(table.headers)!r}",
                             table.header_line)
        c_name, c_type, c_shape, c_dtype = columns
        inputs: list[ModelInput] = []
        outputs: list[ModelOutput] = []
        for row in table.rows:
            cells, line = row.cells, row.line
            kind = cells[c_type].lower()
            if kind not in ("input", "output"):
                raise InputError(self.display, "expected 'input' or 'output' in the TYPE column, "
                                               f"found {shown(cells[c_type])} (garbled row?)", line)
            if not cells[c_name]:
                raise InputError(self.display, "expected a tensor name in the NAME column", line)
            dims = parse_dims(cells[c_shape])
            if dims is None:
                raise InputError(self.display, "expected a shape like [1, 224, 224, 3] in the "
                                               f"SHAPE column, found {shown(cells[c_shape])} "
                                               "(garbled or truncated row?)", line)
            if not cells[c_dtype]:
                raise InputError(self.display, "expected a data type in the DATA_TYPE column "
                                               "(file truncated?)", line)
            fields = {canonical_key(h): Value(c, line) for h, c in zip(table.headers, cells) if h}
            common = dict(name=cells[c_name], line=line, shape=Value(cells[c_shape], line),
                          dims=dims, data_type=Value(cells[c_dtype], line), fields=fields)
            if kind == "input":
                inputs.append(ModelInput(index=len(inputs), **common))
            else:
                outputs.append(ModelOutput(index=len(outputs), **common))
        last = table.rows[-1].line if table.rows else table.header_line
        if not inputs or not outputs:
            missing = "input" if not inputs else "output"
            raise InputError(self.display, "the table NAME TYPE SHAPE DATA_TYPE lists no "
                                           f"{missing} (file truncated?)", last)
        return inputs, outputs
