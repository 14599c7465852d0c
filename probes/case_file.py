"""The case file (case.yaml / case.json, shared/contracts/CASE_AND_OUTPUT.md) → input facts.

Knows the case format and nothing about rules. Every fact carries the case key and line
it came from. A typo must never silently drop evidence: unknown keys, wrong types and bad
enum values are errors that name the key, the line and the allowed values.
"""

from __future__ import annotations

import difflib
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema

from ..engine import Fact, Source
from ..engine.strict_yaml import LocatedDocument, YamlInputError, load_yaml
from ..facts import attr, enum_values, vocabulary
from .input_error import InputError
from .text_tables import decode_text, read_bytes

MAX_CASE_BYTES = 4 * 1024 * 1024
CASE_WHAT = "a YAML or JSON case file"
STATUS_VALUES = ("normal", "abnormal", "unknown")

# Platform spellings accepted (case-insensitive, '-', '_' and spaces ignored).
_PLATFORM_ALIASES = {
    "j6e": "J6E", "nashe": "J6E", "marchnashe": "J6E", "rdks100": "J6E", "s100": "J6E",
    "j6m": "J6M", "nashm": "J6M", "marchnashm": "J6M", "rdks100p": "J6M", "s100p": "J6M",
    "j6p": "J6P", "nashp": "J6P", "marchnashp": "J6P", "rdks600": "J6P", "s600": "J6P",
    "j6b": "J6B", "nashb": "J6B", "marchnashb": "J6B", "nashblite": "J6B", "nashbplus": "J6B",
    "j6h": "J6H", "nashh": "J6H", "marchnashh": "J6H",
}
PLATFORM_FORMS = "J6E J6M J6P J6B J6H, nash-e nash-m nash-p nash-b nash-h, RDK S100 / S100P (= J6E / J6M)"


def normalize_platform(text: str) -> str | None:
    key = re.sub(r"[\s_\-.]", "", text).lower()
    return _PLATFORM_ALIASES.get(key)


def version_number(text: str) -> int | None:
    """`4.4.2` → 4004002, comparable in rules; None when the text is not a release number."""
    match = re.match(r"^\s*v?(\d+)\.(\d+)(?:\.(\d+))?", text)
    if not match or any(int(part or 0) > 999 for part in match.groups()[1:]):
        return None
    major, minor, micro = (int(part or 0) for part in match.groups())
    return major * 1_000_000 + minor * 1_000 + micro


def normalize_package(name: str) -> str:
    return re.sub(r"[_.\s]+", "-", name.strip().lower())


def _case_schema() -> dict[str, Any]:
    string = {"type": "string"}
    result = {
        "type": "object",
        "additionalProperties": False,
        "required": ["status"],
        "properties": {
            "status": {"enum": list(STATUS_VALUES)},
            "evidence": {"enum": [v for v in enum_values("evidence") if v != "unspecified"]},
            "metric": string,
            "value": {"type": "number"},
            "dataset": string,
            "frames": {"type": "integer", "minimum": 1},
            "note": string,
        },
    }
    check = {
        "type": "object",
        "additionalProperties": False,
        "required": ["status"],
        "properties": {"status": {"enum": list(enum_values("check_status"))}, "note": string},
    }
    outcome = {
        "type": "object",
        "additionalProperties": False,
        "required": ["outcome"],
        "properties": {"outcome": {"enum": list(enum_values("diag_outcome"))}, "note": string},
    }
    return {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "symptom": string,
            "platform": string,
            "versions": {"type": "object", "additionalProperties": string},
            "results": {
                "type": "object",
                "additionalProperties": False,
                "properties": {a: result for a in enum_values("artifact")},
            },
            "badcase": {
                "type": "object",
                "additionalProperties": False,
                "required": ["reproducible"],
                "properties": {"reproducible": {"type": "boolean"}, "path": string, "note": string},
            },
            "deployment": {
                "type": "object",
                "additionalProperties": False,
                "properties": {
                    "notes": string,
                    "checklist": {
                        "type": "object",
                        "additionalProperties": False,
                        "properties": {i: check for i in enum_values("check_item")},
                    },
                },
            },
            "artifacts": {"type": "array", "items": string},
            "scripts": {"type": "array", "items": string},
            "user_checks": {
                "type": "object",
                "additionalProperties": False,
                "properties": {i: check for i in enum_values("user_check_item")},
            },
            "bc_flow_check": outcome,
            "fake_quant_off_check": outcome,
            "input_formats_differ": {"type": "boolean"},
            "consistency_strategy": {
                "type": "object",
                "additionalProperties": False,
                "required": ["levels"],
                "properties": {
                    "levels": {"type": "array", "minItems": 1,
                               "items": {"type": "integer", "minimum": 0, "maximum": 2}},
                    "retrained": {"type": "boolean"},
                    "set_before_prepare": {"type": "boolean"},
                },
            },
            "metrics": {
                "type": "object",
                "additionalProperties": False,
                "required": ["file"],
                "properties": {
                    "file": string,
                    "tolerance": {"type": "number", "exclusiveMinimum": 0},
                    "relative": {"type": "boolean"},
                    "higher_is_better": {"type": "boolean"},
                },
            },
            "tried": {"type": "array", "items": string},
        },
    }


@dataclass
class Case:
    """A loaded, validated case file."""

    path: Path | None  # None for a case assembled in memory (rule examples)
    display: str
    data: dict[str, Any]
    doc: LocatedDocument = field(default_factory=lambda: LocatedDocument(None, {}))
    base: Path | None = None  # folder that relative paths refer to, for cases given as data

    @property
    def folder(self) -> Path:
        if self.path is not None:
            return self.path.parent
        return self.base if self.base is not None else Path.cwd()

    def source(self, *key: Any) -> Source:
        dotted = ".".join(str(k) for k in key)
        return Source("case", file=self.display, line=self.doc.line_of(tuple(key)), key=dotted)


def _describe_type(value: Any) -> str:
    names = {bool: "boolean", int: "number", float: "number", str: "string", list: "list",
             dict: "mapping", type(None): "nothing (null)"}
    return f"{names.get(type(value), type(value).__name__)} {_shown(value)[:60]}"


def _shown(value: Any) -> str:
    """JSON-like text of a value from the case; YAML also gives dates, bytes and sets."""
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (RecursionError, ValueError):  # nested too deeply / circular
        return f"<{type(value).__name__}>"


def _format_error(err: jsonschema.ValidationError) -> tuple[tuple, str]:
    path = tuple(err.absolute_path)
    key = ".".join(str(p) for p in path) or "(top level)"
    if err.validator == "additionalProperties":
        allowed = list((err.schema.get("properties") or {}).keys())
        extra = sorted(set(err.instance) - set(allowed), key=str)  # YAML keys: str, int, null, date
        name = extra[0]
        close = difflib.get_close_matches(str(name), allowed, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        where = f"under {key}" if path else "at the top level"
        return path + (name,), f"unknown key {name!r} {where}{hint}; allowed: {', '.join(allowed)}"
    if err.validator == "enum":
        allowed = [str(v) for v in err.validator_value]
        close = difflib.get_close_matches(str(err.instance), allowed, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        return path, f"{key}: {_shown(err.instance)} is not allowed{hint}; allowed: {', '.join(allowed)}"
    if err.validator == "type":
        expected = err.validator_value
        expected = " or ".join(expected) if isinstance(expected, list) else expected
        extra = ""
        if expected == "string" and isinstance(err.instance, (int, float)) and not isinstance(err.instance, bool):
            extra = " (quote it, e.g. \"4.4.2\": YAML reads 4.4 as a number)"
        words = {"object": "a mapping", "array": "a list", "string": "a string",
                 "number": "a number", "boolean": "true or false", "integer": "a whole number"}
        return path, f"{key}: expected {words.get(expected, expected)}, got {_describe_type(err.instance)}{extra}"
    if err.validator == "required":
        missing = err.message.split("'")[1] if "'" in err.message else err.message
        return path, f"{key}: {missing!r} is required"
    if err.validator in ("minimum", "exclusiveMinimum"):
        word = "at least" if err.validator == "minimum" else "greater than"
        return path, f"{key}: must be {word} {err.validator_value}"
    return path, f"{key}: {err.message}"


def _parse(text: str, suffix: str, display: str) -> LocatedDocument:
    if suffix == ".json":
        def no_duplicates(pairs):
            out = {}
            for k, v in pairs:
                if k in out:
                    raise InputError(display, f"duplicate key {k!r}")
                out[k] = v
            return out
        try:
            data = json.loads(text, object_pairs_hook=no_duplicates,
                              parse_constant=lambda c: _reject_constant(display, c))
        except json.JSONDecodeError as exc:
            raise InputError(display, f"not valid JSON: {exc.msg}", exc.lineno) from None
        except RecursionError:
            raise InputError(display, "JSON nesting is too deep") from None
        except ValueError as exc:  # e.g. an integer of more than 4300 digits
            raise InputError(display, f"not valid JSON: {exc}") from None
        try:  # line numbers only; JSON is (almost always) valid YAML
            lines = load_yaml(text).lines
        except YamlInputError:
            lines = {}
        return LocatedDocument(data, lines)
    try:
        return load_yaml(text)
    except YamlInputError as exc:
        raise InputError(display, exc.message, exc.line) from None


def _reject_constant(display: str, name: str):
    raise InputError(display, f"{name} is not a valid number in a case file")


def _normalize(data: dict[str, Any]) -> dict[str, Any]:
    """Shorthands: `results: {qat_pt: normal}` → `{status: normal}`; `metrics: FILE` → `{file: FILE}`;
    `fake_quant_off_check: consistent` → `{outcome: consistent}`."""
    data = dict(data)
    results = data.get("results")
    if isinstance(results, dict):
        data["results"] = {k: ({"status": v} if isinstance(v, str) else v) for k, v in results.items()}
    if isinstance(data.get("metrics"), str):
        data["metrics"] = {"file": data["metrics"]}
    for key in ("bc_flow_check", "fake_quant_off_check"):
        if isinstance(data.get(key), str):
            data[key] = {"outcome": data[key]}
    return data


def read_case(path: Path) -> Case:
    """Read and validate a case file; raise InputError naming file, line and key."""
    display = path.name
    if path.suffix.lower() not in (".yaml", ".yml", ".json"):
        raise InputError(display, "a case file ends in .yaml, .yml or .json")
    # File-system errors name the path as given; content errors the file name, with a line.
    raw = read_bytes(path, str(path), CASE_WHAT, MAX_CASE_BYTES)
    text = decode_text(raw, display, CASE_WHAT)
    doc = _parse(text, path.suffix.lower(), display)
    return validate_case(doc, display, path)


def case_from_data(data: dict[str, Any], display: str = "<example>", base: Path | None = None) -> Case:
    """A case given as data (a rule's example); validated like a file. Relative paths in
    it refer to `base` (a rule example's: the folder of its rule file)."""
    case = validate_case(LocatedDocument(data, {}), display, None)
    case.base = base
    return case


def validate_case(doc: LocatedDocument, display: str, path: Path | None) -> Case:
    data = doc.data
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise InputError(display, f"a case file is a mapping of keys (symptom, platform, results, ...), got {_describe_type(data)}", 1)
    data = _normalize(data)
    errors: list[tuple[int | None, str]] = []
    validator = jsonschema.Draft202012Validator(_case_schema())
    bad: set[tuple] = set()
    for err in validator.iter_errors(data):
        epath, message = _format_error(err)
        errors.append((doc.line_of(epath), message))
        bad.add(tuple(err.absolute_path))
    for where, number in _non_finite(data, ()):
        if where not in bad:  # YAML's .nan / .inf, JSON's 1e999 (NaN and Infinity are refused above)
            errors.append((doc.line_of(where), f"{'.'.join(str(p) for p in where)}: {number} is not a "
                                               "finite number; expected a number"))
    for where, problem in _unusable_paths(data):
        errors.append((doc.line_of(where), f"{'.'.join(str(p) for p in where)}: {problem}"))
    if isinstance(data.get("platform"), str) and normalize_platform(data["platform"]) is None:
        errors.append((doc.line_of(("platform",)),
                       f"platform: unknown platform {data['platform']!r}; allowed: {PLATFORM_FORMS}"))
    if isinstance(data.get("versions"), dict):
        known = enum_values("package")
        for name in data["versions"]:
            if normalize_package(str(name)) not in known:
                close = difflib.get_close_matches(normalize_package(str(name)), known, n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                errors.append((doc.line_of(("versions", name)),
                               f"versions: unknown package {name!r}{hint}; allowed: {', '.join(known)}"))
    if errors:
        errors.sort(key=lambda e: (e[0] or 0, e[1]))
        raise InputError(display, errors[0][1], errors[0][0],
                         more=[(line, msg) for line, msg in errors[1:]])
    return Case(path, display, data, doc)


def _non_finite(value: Any, where: tuple) -> list[tuple[tuple, float]]:
    """Key paths of nan / inf numbers (iterative: the data may be nested deeply)."""
    found, todo = [], [(where, value)]
    while todo:
        where, value = todo.pop()
        if isinstance(value, float) and not math.isfinite(value):
            found.append((where, value))
        elif isinstance(value, dict):
            todo += [(where + (k,), v) for k, v in value.items()]
        elif isinstance(value, list):
            todo += [(where + (i,), v) for i, v in enumerate(value)]
    return sorted(found, key=lambda f: [str(p) for p in f[0]])


# A name longer than this cannot be a file on any file system the tool runs on (NAME_MAX);
# stat() on it fails with ENAMETOOLONG instead of "no such file".
_MAX_NAME_BYTES = 255


def _unusable_paths(data: dict[str, Any]) -> list[tuple[tuple, str]]:
    """Paths the tool opens that no file can have (NUL byte, over-long name)."""
    paths: list[tuple[tuple, Any]] = []
    for key in ("artifacts", "scripts"):
        if isinstance(data.get(key), list):
            paths += [((key, i), p) for i, p in enumerate(data[key])]
    if isinstance(data.get("metrics"), dict):
        paths.append((("metrics", "file"), data["metrics"].get("file")))
    problems = []
    for where, text in paths:
        if not isinstance(text, str):
            continue
        if "\x00" in text:
            problems.append((where, "a file path cannot contain a NUL character"))
        elif any(len(part.encode("utf-8", "surrogatepass")) > _MAX_NAME_BYTES for part in re.split(r"[\\/]", text)):
            problems.append((where, f"a file or folder name in this path is longer than {_MAX_NAME_BYTES} bytes"))
    return problems


def case_facts(case: Case, start: int = 1) -> list[Fact]:
    """Turn a validated case into input facts, numbered f<start>, f<start+1>, ..."""
    vocab = vocabulary()
    facts: list[Fact] = []

    def add(type_name: str, fields: dict[str, Any], source: Source) -> None:
        facts.append(Fact(f"f{start + len(facts)}", type_name, vocab.complete(type_name, fields), source))

    data = case.data
    symptom = (data.get("symptom") or "").strip()
    if symptom:
        add("symptom", {"text": symptom}, case.source("symptom"))
    if data.get("platform"):
        family = normalize_platform(data["platform"])
        add("platform", {"family": family, "march": attr("platform", family, "march"),
                         "given": data["platform"]}, case.source("platform"))
    for name, version in (data.get("versions") or {}).items():
        add("version", {"package": normalize_package(name), "version": version.strip(),
                        "number": version_number(version)}, case.source("versions", name))
    for artifact in enum_values("artifact"):
        entry = (data.get("results") or {}).get(artifact)
        if not entry or entry["status"] == "unknown":
            continue
        fields = {"artifact": artifact, "status": entry["status"],
                  "evidence": entry.get("evidence", "unspecified"),
                  "metric": entry.get("metric", ""), "value": entry.get("value"),
                  "pos": attr("artifact", artifact, "chain", -1)}
        add("result", fields, case.source("results", artifact))
    if "badcase" in data:
        add("badcase", {"reproducible": data["badcase"]["reproducible"],
                        "path": data["badcase"].get("path", "")}, case.source("badcase"))
    deployment = data.get("deployment") or {}
    if (deployment.get("notes") or "").strip():
        add("deployment_notes", {"text": deployment["notes"].strip()}, case.source("deployment", "notes"))
    for item in enum_values("check_item"):
        check = (deployment.get("checklist") or {}).get(item)
        if check:
            add("checklist_item", {"item": item, "status": check["status"], "note": check.get("note", "")},
                case.source("deployment", "checklist", item))
    for item in enum_values("user_check_item"):
        check = (data.get("user_checks") or {}).get(item)
        if check:
            add("user_check", {"item": item, "status": check["status"], "note": check.get("note", "")},
                case.source("user_checks", item))
    for key in ("bc_flow_check", "fake_quant_off_check"):
        if key in data:
            add(key, {"outcome": data[key]["outcome"], "note": data[key].get("note", "")}, case.source(key))
    if "input_formats_differ" in data:
        add("input_formats", {"differ": data["input_formats_differ"]}, case.source("input_formats_differ"))
    strategy = data.get("consistency_strategy")
    if strategy:
        levels = strategy["levels"]
        add("strategy_use", {"levels": ", ".join(str(level) for level in levels), "first_level": levels[0],
                             "max_level": max(levels), "retrained": strategy.get("retrained"),
                             "before_prepare": strategy.get("set_before_prepare")},
            case.source("consistency_strategy"))
    for index, text in enumerate(data.get("tried") or []):
        if text.strip():
            add("tried_fix", {"text": text.strip()}, case.source("tried", index))
    for index, raw_path in enumerate(data.get("artifacts") or []):
        target = case.folder / raw_path
        try:
            exists = target.exists()
        except OSError:  # e.g. a folder on the way that cannot be searched
            exists = False
        add("artifact_path", {"path": raw_path, "exists": exists}, case.source("artifacts", index))
    return facts
