"""`hrt_model_exec model_info` output (docs/file_formats.md R7): what a compiled model expects, as
the board's runtime reads it.

Layout: log lines in brackets with the runtime versions (`[UCP]: UCP version = 3.7.4`,
`[DNN]: 3.7.4_(4.3.2 HBRT)`), `[model name]: ...`, `[model desc]: {JSON}` (conversion
parameters such as MARCH, INPUT_TYPE_RT, MEAN_VALUE, REMOVE_NODE_NAME, HBDK_VERSION), then
one block per tensor: an `input[0]:` / `output[0]:` line followed by `key: value` lines
(name, valid shape, aligned byte size, tensor type, quanti type, stride ...) up to a blank
line. Other log lines are skipped, except a warning that the hbrt library is older than the
model's build version, which is kept verbatim.

The result has the shape defined in hb_model_info (R6), so that both can be compared with
the user's platform and deployment. The desc is parsed with json. Per-input desc values of
a multi-input model may be joined with ';' (as in the converter's config); they are split
over the inputs named by INPUT_NAMES. The module knows the format, not any rule.

Pasted and cut outputs are read as far as they go: a garbled line, a value that does not
parse, a block out of order or cut short, a second desc or model are skipped and named in
`ModelInfo.skipped` (line and why). Only a file with nothing of model_info in it is
refused (InputError).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from j6doctor.probes.hb_model_info import (REMOVED_NODES_KEY, InputSpec, ModelInfo, ModelInput, ModelOutput,
                            Value, attach_specs, canonical_key, model_values, parse_dims, shown,
                            split_names)
from j6doctor.probes.input_error import InputError, Skips
from j6doctor.probes.text_file import load_text, split_lines

# A few hundred lines in practice; the limit guards memory against a wrong file (parsing
# costs about 50 times the file size).
MAX_TEXT_BYTES = 4 * 1024 * 1024

WHAT = ("hrt_model_exec model_info output ('[model name]:', '[model desc]: {JSON}' and "
        "'input[0]:' / 'output[0]:' blocks of 'key: value' lines)")
TOOL = "hrt_model_exec model_info"

# The lines this module reads (matched after the line is stripped, case ignored).
_MODEL_NAME = re.compile(r"^\[model name\]\s*:\s*(?P<name>.*?)\s*$", re.IGNORECASE)
_MODEL_DESC = re.compile(r"^\[model desc\]\s*:\s*(?P<json>.*?)\s*$", re.IGNORECASE)
_BLOCK_START = re.compile(r"^(?P<kind>input|output)\[(?P<index>\d+)\]\s*:\s*$", re.IGNORECASE)
_UCP_VERSION = re.compile(r"^\[UCP\]\s*:?\s*UCP version\s*[=:]\s*(?P<version>\S+)", re.IGNORECASE)
_DNN_VERSION = re.compile(r"^\[DNN\]\s*:?\s*(?:Runtime version\s*[=:]\s*)?"
                          r"(?P<dnn>\d[\w.+-]*?)_\((?P<hbrt>\d[\w.+-]*)\s+HBRT\)", re.IGNORECASE)
_HBRT_VERSION = re.compile(r"^\[HBRT\].*?\bversion\s*[=:]\s*(?P<version>\d[\w.+-]*)", re.IGNORECASE)
# The warning that the board's hbrt library is older than the model's build version.
_OLD_RUNTIME = re.compile(r"^(?=.*hbrt)(?=.*\bversion\b).*\b(?:lower|older)\s+than\b",
                          re.IGNORECASE)
_KEY_VALUE = re.compile(r"^(?P<key>[A-Za-z][A-Za-z0-9_ ]*?)\s*:\s*(?P<value>.*?)\s*$")
_DASHES = re.compile(r"^-{3,}$")
# A tensor line without which a block is incomplete (canonical keys).
REQUIRED_KEYS = ("name", "valid_shape", "tensor_type", "quanti_type")
# Desc keys that describe one model input (besides these, any key starting with input_).
_PER_INPUT_KEYS = {"norm_type", "mean_value", "scale_value", "std_value"}
_INPUT_NAMES_KEYS = ("input_names", "input_name")


@dataclass
class _Block:
    kind: str                # input / output
    index: int
    line: int                # of the `input[i]:` line
    last: int                # last line read into it
    fields: dict[str, Value] = field(default_factory=dict)
    read: bool = True        # False: a block repeated, taken past but not read

    @property
    def label(self) -> str:
        return f"{self.kind}[{self.index}]"


def read_hrt_model_info(path: Path | str, display: str | None = None) -> ModelInfo:
    path = Path(path)
    display = display or path.name
    return parse_hrt_model_info(load_text(path, display, WHAT, MAX_TEXT_BYTES), display)


def parse_hrt_model_info(text: str, display: str) -> ModelInfo:
    return _HrtParser(split_lines(text.removeprefix("\ufeff")), display).run()


class _HrtParser:
    def __init__(self, lines: list[str], display: str):
        self.lines = lines
        self.display = display
        self.blocks: dict[str, list[dict[str, Any]]] = {"input": [], "output": []}  # tensor kwargs
        self.block: _Block | None = None
        self.found: dict[str, Value] = {}    # model_name, ucp / dnn / hbrt version
        self.desc: dict[str, Any] | None = None
        self.desc_line = 0
        self.warning: Value | None = None
        self.skips = Skips()
        self.end = len(lines)    # where reading stops (a second model)

    def run(self) -> ModelInfo:
        for number, raw in enumerate(self.lines, 1):
            if number > self.end:
                break
            body = raw.strip()
            if self.warning is None and _OLD_RUNTIME.match(body):
                self.warning = Value(body, number)
            if self.block is not None and self._in_block(body, number):
                continue
            if body:
                self._outside(body, number)
        self._finish_block()
        return self._result()

    # -------------------------------------------------------- lines

    def _in_block(self, body: str, number: int) -> bool:
        """Adds a `key: value` line to the open block; False (and the block closed) at its end."""
        if not body or _BLOCK_START.match(body) or body.startswith("[") or _DASHES.match(body):
            self._finish_block()
            return False
        kv = _KEY_VALUE.match(body)
        if not kv:
            self.skips.add(number, f"expected 'key: value' in the {self.block.label} block, found {shown(body)} "
                                   "(garbled line?)")
            return True
        self.block.fields.setdefault(canonical_key(kv["key"]), Value(kv["value"], number))
        self.block.last = number
        return True

    def _outside(self, body: str, number: int) -> None:
        if match := _BLOCK_START.match(body):
            kind, index = match["kind"].lower(), int(match["index"])
            expected = len(self.blocks[kind])
            self.block = _Block(kind, index, number, number, read=index >= expected)
            if index < expected:
                self.skips.add(number, f"{kind}[{index}] again after {kind}[{expected - 1}]; this block is not read")
            elif index > expected:
                self.skips.add(number, f"expected {kind}[{expected}], found {kind}[{index}] (blocks missing, "
                                       "an excerpt?)")
        elif match := _MODEL_NAME.match(body):
            if "model_name" in self.found:
                self.skips.add(number, f"a second model ({match['name']!r}) in the same output; its lines "
                                       f"{number}-{len(self.lines)} are not read (split the file per model)")
                self.end = number - 1
                return
            self.found["model_name"] = Value(match["name"], number)
        elif match := _MODEL_DESC.match(body):
            self._read_desc(match, number)
        elif match := _UCP_VERSION.match(body):
            self.found.setdefault("ucp_version", Value(match["version"], number))
        elif match := _DNN_VERSION.match(body):
            self.found.setdefault("dnn_version", Value(match["dnn"], number))
            self.found.setdefault("hbrt_version", Value(match["hbrt"], number))
        elif match := _HBRT_VERSION.match(body):
            self.found.setdefault("hbrt_version", Value(match["version"], number))

    def _read_desc(self, match: re.Match[str], number: int) -> None:
        if self.desc is not None:
            self.skips.add(number, "a second [model desc] line, not read; expected model_info of one model")
            return
        text = match["json"]
        self.desc, self.desc_line = {}, number
        if not text:            # a model converted without a description
            return
        try:
            desc = json.loads(text)
        except json.JSONDecodeError as exc:
            column = raw_column(self.lines[number - 1], text) + exc.pos
            self.skips.add(number, f"invalid JSON after [model desc]: {exc.msg} (column {column}); expected a "
                                   "JSON object on one line (truncated or garbled?); the desc is not read")
            return
        except (ValueError, RecursionError) as exc:   # e.g. an integer of more than 4300 digits
            self.skips.add(number, f"unreadable JSON after [model desc] ({type(exc).__name__}); not read")
            return
        if not isinstance(desc, dict):
            self.skips.add(number, f"expected a JSON object {{...}} after [model desc]:, found "
                                   f"{type(desc).__name__}; not read")
            return
        self.desc = desc

    def _finish_block(self) -> None:
        """Checks the values of the closed block in file order, then that none is missing."""
        block, self.block = self.block, None
        if block is None or not block.read:
            return
        name = block.fields.get("name")
        if name is None or not name.text:
            self.skips.add(name.line if name else block.line,
                           f"expected a tensor name after 'name:' in the {block.label} block; the block is not read")
            return
        missing = [key.replace("_", " ") for key in REQUIRED_KEYS if key not in block.fields]
        if missing:
            self.skips.add(block.line, f"the {block.label} block (ending at line {block.last}) lacks "
                                       f"{', '.join(repr(m + ':') for m in missing)} (file cut?)")
        self.blocks[block.kind].append(self._tensor(block))

    # -------------------------------------------------------- result

    def _result(self) -> ModelInfo:
        if not any(self.blocks.values()) and not self.desc and not self.found:
            first = self.skips.kept[0] if self.skips else None
            raise InputError(self.display, f"nothing recognisable; expected {WHAT}"
                                           + (f" ({first.reason})" if first else ""), first.line if first else None)
        for kind in ("input", "output"):
            if not self.blocks[kind]:
                self.skips.add(self.end, f"no readable {kind}[0] block (the file ends before it?)")
        inputs = [ModelInput(**kwargs) for kwargs in self.blocks["input"]]
        outputs = [ModelOutput(**kwargs) for kwargs in self.blocks["output"]]
        desc = {canonical_key(key): value for key, value in (self.desc or {}).items()}
        fields = {key: Value(desc_text(value), self.desc_line) for key, value in desc.items()}
        specs = self._specs(desc)
        attach_specs(inputs, specs)
        return ModelInfo(
            display=self.display, tool=TOOL, inputs=inputs, outputs=outputs, input_specs=specs,
            fields=fields, model_name=self.found.get("model_name"),
            ucp_version=self.found.get("ucp_version"), dnn_version=self.found.get("dnn_version"),
            hbrt_version=self.found.get("hbrt_version"), removed_nodes=self._removed_nodes(desc),
            hbrt_older_than_model=self.warning is not None, hbrt_warning=self.warning,
            skipped=self.skips, **model_values(fields),
        )

    def _tensor(self, block: _Block) -> dict[str, Any]:
        """ModelInput / ModelOutput arguments; a present value that does not parse is left out
        (noted)."""
        f = block.fields
        shape = f.get("valid_shape")
        dims = self._parsed(shape, parse_dims, "a shape like (1,224,224,3) after 'valid shape:'")
        stride = f.get("stride")
        strides = self._parsed(stride, parse_dims, "a stride like (-1,-1,1,1) after 'stride:'")
        size = f.get("aligned_byte_size")
        aligned = self._parsed(size, _int, "an integer after 'aligned byte size:'")
        return dict(name=f["name"].text, index=block.index, line=block.line,
                    shape=shape, dims=dims, data_type=f.get("tensor_type"),
                    layout=f.get("tensor_layout"), stride=stride, strides=strides,
                    aligned_byte_size=size, aligned_bytes=aligned,
                    quanti_type=f.get("quanti_type"), fields=dict(f))

    def _parsed(self, value: Value | None, parse, expected: str):
        """parse(value.text), or None for an absent value and, noted, for one that does not parse."""
        if value is None:
            return None
        parsed = parse(value.text)
        if parsed is None:
            self.skips.add(value.line, f"expected {expected}, found {shown(value.text)} (cut or garbled?); "
                                       "the value is not read")
        return parsed

    def _specs(self, desc: dict[str, Any]) -> list[InputSpec]:
        """Per-input desc values → one InputSpec per model input: named by INPUT_NAMES, else one
        unnamed spec (several unnamed ones, linked to no tensor, when values are split with ';'
        but no names are given)."""
        names_key = next((key for key in _INPUT_NAMES_KEYS if key in desc), None)
        names = [name for name in desc_parts(desc[names_key]) if name] if names_key else []
        per_input = {key: desc_parts(value) for key, value in desc.items()
                     if key not in _INPUT_NAMES_KEYS
                     and (key.startswith("input_") or key in _PER_INPUT_KEYS)}
        if not per_input and not names:
            return []
        count = max(len(names) or max(len(parts) for parts in per_input.values()), 1)
        specs = [InputSpec(names[i] if names else None, self.desc_line) for i in range(count)]
        for key, parts in per_input.items():
            whole = Value(desc_text(desc[key]), self.desc_line)
            split = count > 1 and len(parts) == count     # one part per input
            for i, spec in enumerate(specs):
                spec.fields[key] = Value(parts[i], self.desc_line) if split else whole
        return specs

    def _removed_nodes(self, desc: dict[str, Any]) -> list[Value]:
        raw = desc.get(REMOVED_NODES_KEY)
        if raw is None:
            return []
        names = ([desc_text(item) for item in raw] if isinstance(raw, list)
                 else split_names(desc_text(raw)))
        return [Value(name, self.desc_line) for name in names]


def desc_text(value: Any) -> str:
    """A desc value as text: strings as they are, anything else as JSON."""
    return value if isinstance(value, str) else json.dumps(value)


def desc_parts(value: Any) -> list[str]:
    """Per-input parts of a desc value: list items, or a string split on ';' (a trailing ';'
    adds no part)."""
    if isinstance(value, list):
        return [desc_text(item) for item in value]
    parts = [part.strip() for part in desc_text(value).split(";")]
    if len(parts) > 1 and parts[-1] == "":
        parts.pop()
    return parts


def raw_column(line: str, text: str) -> int:
    """1-based column of the start of `text` (the JSON) within the file line."""
    return line.rfind(text) + 1 if text else len(line) + 1


def _int(text: str) -> int | None:
    try:
        return int(text.strip())
    except ValueError:
        return None


# --- facts (probes/probe_output.py) -------------------------------------------------------

def add_facts(found, out) -> None:
    from j6doctor.probes.hb_model_info import add_model_facts

    add_model_facts(found, out, read_hrt_model_info(found.path, found.display))


def add_pasted_facts(text: str, found, out) -> None:
    """The same facts of `hrt_model_exec model_info` output pasted into the user's words."""
    from j6doctor.probes.hb_model_info import add_model_facts

    add_model_facts(found, out, parse_hrt_model_info(text, found.display))
