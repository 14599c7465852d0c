"""The case file (case.yaml / case.json, docs/CONTRACT.md) → input facts.

Knows the case format and nothing about rules. Every fact carries the case key and line
it came from. What real users write is accepted: enum values in any case and under the
spellings the vocabulary lists as aliases (PTQ names of the artifacts, `PyTorch` for torch,
`RDK X5` for X5, ...), any package under `versions`, versions YAML read as numbers. A typo
must never silently drop evidence: unknown keys and bad values are errors that name the key,
the line and the allowed values, all of them in one run; what is accepted but worth a look
(a version that may have lost digits, a package or platform not recognised) becomes an
`intake_note` fact that the report shows.

The keys whose facts derive values (results, versions, platform, comparisons, ...) are read
here by code; the others are declared in the vocabulary (an input type's `read_from`,
facts/case_keys.py) and read by `_declared_facts`, a rule pack's among them.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

from j6doctor.engine import Fact, Source
from j6doctor.engine.schema_errors import describe_type as _describe_type
from j6doctor.engine.schema_certain import certainly_valid
from j6doctor.engine.schema_errors import key_of, messages
from j6doctor.engine.strict_yaml import LocatedDocument, YamlInputError, exponent_number, load_json, load_yaml
from j6doctor.engine.text_rules import MAX_TEXT_READ
from j6doctor.engine.vocabulary import alias_key
from j6doctor.engine.errors import VocabularyError
from j6doctor.facts import attr, enum_values, gate_answer_key, per_vocabulary, vocabulary
from j6doctor.facts.case_keys import CaseKey, case_keys, facts_of
from j6doctor.probes.input_error import InputError
from j6doctor.probes.pasted_text import mentions, platforms_named, versions_printed
from j6doctor.probes.text_file import decode_written_text, read_bytes

if TYPE_CHECKING:  # jsonschema is imported when a case is checked, not on every start
    import jsonschema

MAX_CASE_BYTES = 4 * 1024 * 1024
CASE_WHAT = "a YAML or JSON case file"
PLATFORM_CLOSE = 0.6  # an unknown platform this close to a known spelling is a typo, not "other"
# Lists and mappings of a case are what a person writes: bounded so that one input cannot
# cost minutes and gigabytes (150,000 `tried` entries did).
MAX_LIST = {"artifacts": 200, "scripts": 200, "comparisons": 100, "controls": 100, "suspect": 20,
            "replaced_results": 200}
MAX_KEYS = 200  # versions, input_parameters


def value_forms(enum_name: str, shown: tuple[str, ...] | list[str] = ()) -> str:
    """The spellings of an enum's values, for prompts and messages: the values, then the
    values of each `shown` attribute (a platform's march and board name), the enum's last
    value ("other") at the end."""
    values = list(vocabulary().enums[enum_name].values)
    last = values.pop() if len(values) > 1 else None
    groups = [" ".join(values)]
    for key in shown:
        spelled = [str(a) for a in (attr(enum_name, v, key) for v in values) if a]
        if spelled:
            groups.append((" / " if any(" " in a for a in spelled) else " ").join(spelled))
    return ", ".join(groups) + (f", or {last}" if last else "")


def platform_forms() -> str:
    """The platform spellings, for messages: as the platform gate item shows them."""
    return value_forms("platform", attr("gate_item", "platform", "shown") or ())


def normalize_platform(text: str) -> str | None:
    """The platform a text names (`J6M`, `nash-m`, `RDK S100P`, `J6M (nash-m)`), or None
    when it names none or two different ones."""
    return named_value("platform", text)


def named_value(enum_name: str, text: str) -> str | None:
    """The value of an enum a text names: the whole text is a value or an alias, or exactly
    one value is named by runs of its words (longest first), or None."""
    enum = vocabulary().enums[enum_name]
    found = enum.resolve(text)
    if found:
        return found[0]
    words = [w for w in re.split(r"[\s,;/|()（），、]+", text) if w]
    named: set[str] = set()
    index = 0
    while index < len(words):  # longest run of words first: "RDK X3 Module", "RDK S100P"
        for width in range(min(3, len(words) - index), 0, -1):
            hit = enum.resolve(" ".join(words[index:index + width]))
            if hit:
                named.add(hit[0])
                index += width
                break
        else:
            index += 1
    return named.pop() if len(named) == 1 else None


def version_number(text: str) -> int | None:
    """`4.4.2` → 4004002, comparable in rules; None when the text is not a release number."""
    match = re.match(r"^\s*v?(\d+)\.(\d+)(?:\.(\d+))?", text)
    if not match or any(int(part or 0) > 999 for part in match.groups()[1:]):
        return None
    major, minor, micro = (int(part or 0) for part in match.groups())
    return major * 1_000_000 + minor * 1_000 + micro


def resolve_package(name: str, version: str) -> str | None:
    """The package a `versions` key names; an alias shared by several packages (`hbdk`) is
    decided by the version's major number. None for a package the vocabulary does not know."""
    found = vocabulary().enums["package"].resolve(name)
    if len(found) > 1:
        major = re.match(r"^\s*v?(\d+)", version)
        for package in found:
            if major and attr("package", package, "major") == int(major.group(1)):
                return package
    return found[0] if found else None


# ---------------------------------------------------------------------------- the schema

def _enum(name: str, extra: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"enum": [*enum_values(name), *extra]}


@per_vocabulary
def case_schema() -> dict[str, Any]:
    string = {"type": "string"}
    scalar = {"type": ["string", "number", "boolean"]}
    result = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "status": _enum("status"),
            "evidence": {"enum": [v for v in enum_values("evidence") if v != "unspecified"]},
            "metric": string,
            "value": {"type": "number"},
            "dataset": string,
            "frames": {"type": "integer", "minimum": 1},
            "note": string,
            "failure": _enum("failure_kind"),
            "message": string,
            "by": string,
            "intermittent": {"type": "boolean"},
            # where a recorded result came from (Case.record: the script and the time)
            "recorded": {"type": "object", "additionalProperties": False,
                         "properties": {"script": string, "at": string}},
        },
        # a result is an accuracy status or a failure to compile / load / run
        "if": {"not": {"required": ["failure"]}},
        "then": {"required": ["status"]},
    }
    check = {
        "type": "object",
        "additionalProperties": False,
        "required": ["status"],
        "properties": {"status": _enum("check_status"), "note": string},
    }
    artifact = _enum("artifact")
    control = {
        "type": "object",
        "additionalProperties": False,
        "required": ["variant", "stage", "status"],
        "properties": {"variant": string, "varies": _enum("control_factor"), "stage": artifact,
                       "status": _enum("status"), "note": string},
    }
    comparison = {
        "type": "object",
        "additionalProperties": False,
        "required": ["a", "b", "relation"],
        "properties": {"a": artifact, "b": artifact, "relation": _enum("relation"), "note": string},
    }
    properties = {
        "symptom": string,
        "platform": string,
        "versions": {"type": "object", "maxProperties": MAX_KEYS,
                     "additionalProperties": {"type": ["string", "number"]}},
        "results": {
            "type": "object",
            "additionalProperties": False,
            "properties": {a: result for a in enum_values("artifact")},
        },
        "comparisons": {"type": "array", "maxItems": MAX_LIST["comparisons"], "items": {
            "if": {"type": "object", "required": ["variant"]}, "then": control, "else": comparison}},
        "controls": {"type": "array", "maxItems": MAX_LIST["controls"], "items": control},
        "suspect": {"type": ["string", "array"], "maxItems": MAX_LIST["suspect"], "items": string},
        "input_parameters": {"type": "object", "maxProperties": MAX_KEYS, "additionalProperties": {
            "anyOf": [scalar, {"type": "array", "maxItems": 4096, "items": scalar}]}},
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
        "artifacts": {"type": "array", "maxItems": MAX_LIST["artifacts"], "items": string},
        "scripts": {"type": "array", "maxItems": MAX_LIST["scripts"], "items": string},
        "user_checks": {
            "type": "object",
            "additionalProperties": False,
            "properties": {i: check for i in enum_values("user_check_item")},
        },
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
            "properties": {
                "file": string,
                "tolerance": {"type": "number", "exclusiveMinimum": 0},
                "relative": {"type": "boolean"},
                "higher_is_better": {"type": "boolean"},
            },
        },
        # results a later record replaced (Case.record(..., replace=True)): kept, not read
        "replaced_results": {"type": "array", "maxItems": MAX_LIST["replaced_results"], "items": {
            "type": "object", "additionalProperties": False, "required": ["artifact", "result"],
            "properties": {"artifact": string, "result": {"type": ["object", "string"]}, "replaced_at": string}}},
        # answers to info-gate items that have no case key of their own (`j6doctor ask`)
        "answers": {"type": "object", "additionalProperties": False,
                    "properties": {i: string for i in enum_values("gate_item")
                                   if gate_answer_key(i) == ("answers", i)}},
    }
    for declared in declared_keys():  # the keys the vocabulary declares (facts/case_keys.py)
        if declared.key in properties:
            raise VocabularyError(f"types.{declared.type}.read_from.key: {declared.key!r} is a case key "
                                  "j6doctor reads already; give another name")
        properties[declared.key] = declared.schema
    return {"type": "object", "additionalProperties": False, "properties": properties}


@per_vocabulary
def declared_keys() -> tuple[CaseKey, ...]:
    return case_keys(vocabulary())


def enum_places() -> list[tuple[tuple[str, ...], str]]:
    """Where enum values sit in a case: the keys read here, then the declared ones."""
    return [*_ENUM_PLACES, *(((k.key, *place), enum) for k in declared_keys() for place, enum in k.enum_places)]


def number_places() -> list[tuple[str, ...]]:
    return [*_NUMBER_PLACES, *((k.key, *place) for k in declared_keys() for place in k.number_places)]


# Where enum values sit in a case (key paths, "*" for any key or index) and their enum:
# values there are matched ignoring case and through the vocabulary's aliases.
_ENUM_PLACES: tuple[tuple[tuple[str, ...], str], ...] = (
    (("results", "*", "status"), "status"),
    (("results", "*", "evidence"), "evidence"),
    (("results", "*", "failure"), "failure_kind"),
    (("comparisons", "*", "a"), "artifact"),
    (("comparisons", "*", "b"), "artifact"),
    (("comparisons", "*", "relation"), "relation"),
    (("comparisons", "*", "stage"), "artifact"),
    (("comparisons", "*", "status"), "status"),
    (("comparisons", "*", "varies"), "control_factor"),
    (("controls", "*", "varies"), "control_factor"),
    (("controls", "*", "stage"), "artifact"),
    (("controls", "*", "status"), "status"),
    (("deployment", "checklist", "*", "status"), "check_status"),
    (("user_checks", "*", "status"), "check_status"),
)
# Numbers that YAML 1.1 reads as text when written with an exponent but no point (`1e-05`).
_NUMBER_PLACES: tuple[tuple[str, ...], ...] = (("results", "*", "value"), ("metrics", "tolerance"))


# Mappings whose keys are enum values (renamed to the canonical id, the user's key kept).
_KEY_PLACES: tuple[tuple[tuple[str, ...], str], ...] = (
    (("results",), "artifact"),
    (("deployment", "checklist"), "check_item"),
    (("user_checks",), "user_check_item"),
)


# ---------------------------------------------------------------------------- the case

@dataclass
class Case:
    """A loaded, validated case file."""

    path: Path | None  # None for a case assembled in memory (rule examples)
    display: str
    data: dict[str, Any]
    doc: LocatedDocument = field(default_factory=lambda: LocatedDocument(None, {}))
    base: Path | None = None  # folder that relative paths refer to, for cases given as data
    given_keys: dict[tuple, tuple] = field(default_factory=dict)  # canonical key path → as written
    notes: list[tuple[tuple, str]] = field(default_factory=list)  # (key path, text) worth a look
    text: str | None = None  # the case as given (decoded), for the case library; None for data

    @property
    def folder(self) -> Path:
        if self.path is not None:
            return self.path.parent
        return self.base if self.base is not None else Path.cwd()

    def written(self, key: tuple) -> tuple:
        """A canonical key path as the user wrote it (`results.calibrated_model` for qat_pt)."""
        for size in range(len(key), 0, -1):
            if key[:size] in self.given_keys:
                return self.given_keys[key[:size]] + key[size:]
        return key

    def source(self, *key: Any) -> Source:
        written = self.written(tuple(key))
        dotted = ".".join(str(k) for k in written)
        return Source("case", file=self.display, line=self.doc.line_of(written), key=dotted)


def _format_errors(err: "jsonschema.ValidationError") -> Iterator[tuple[tuple, str]]:
    """The shared translation (engine/schema_errors.py), with what only a case file knows."""
    path = tuple(err.absolute_path)
    key = key_of(path)
    if err.validator == "anyOf":  # the only anyOf of the case schema: a value or a list of values
        yield path, f"{key}: expected a value or a list of values, got {_describe_type(err.instance)}"
        return
    for where, message in messages(err):
        if message.startswith("unknown key"):
            if key == "answers" and message.endswith("nothing is allowed there"):
                message += (" (answers holds answers to a rule pack's info-gate items that have no case key "
                            "of their own; write the others under their own keys)")
            yield where, message
            continue
        if err.validator == "required" and message == "'status' is required" and "results" in path:
            message += " (or `failure:` for a failure to compile, load or run)"
        yield where, f"{key}: {message}"


def _parse(text: str, suffix: str, display: str) -> LocatedDocument:
    try:
        return load_json(text, "a case file") if suffix == ".json" else load_yaml(text)
    except YamlInputError as exc:
        raise InputError(display, exc.message, exc.line) from None


# ---------------------------------------------------------------------------- normalisation

class _Normalizer:
    """Shorthands, aliases and case-insensitive enum values → the canonical case; collects
    the problems it can name and the notes worth showing."""

    def __init__(self, doc: LocatedDocument):
        self.doc = doc
        self.errors: list[tuple[tuple, str]] = []
        self.notes: list[tuple[tuple, str]] = []
        self.given_keys: dict[tuple, tuple] = {}

    def run(self, data: dict[str, Any]) -> dict[str, Any]:
        data = _valid_text(data, (), self.notes)
        results = data.get("results")
        if isinstance(results, dict):  # shorthand: `results: {qat_pt: normal}`
            data["results"] = {k: ({"status": v} if isinstance(v, str) else v) for k, v in results.items()}
        if isinstance(data.get("metrics"), str):
            data["metrics"] = {"file": data["metrics"]}
        declared = declared_keys()
        for key in declared:  # `bc_flow_check: same` for {outcome: same}
            if key.shorthand and isinstance(data.get(key.key), (str, int, float)):
                data[key.key] = {key.shorthand: data[key.key]}
        for place in (("deployment", "checklist"), ("user_checks",)):  # `layout: mismatch`
            checks = value_at(data, place)
            if isinstance(checks, dict):
                _set(data, place, {k: ({"status": v} if isinstance(v, str) else v) for k, v in checks.items()})
        for place, enum in _KEY_PLACES:
            self._rename_keys(data, place, enum)
        for place, enum in enum_places():
            for where, parent, key in _walk(data, place):
                parent[key] = self._enum_value(enum, parent[key])
        for place in number_places():
            for where, parent, key in _walk(data, place):
                parent[key] = exponent_number(parent[key])
        return data

    def _enum_value(self, enum: str, value: Any) -> Any:
        if not isinstance(value, str):
            return value
        found = vocabulary().enums[enum].resolve(value)
        return found[0] if len(found) == 1 else value

    def _rename_keys(self, data: dict[str, Any], place: tuple[str, ...], enum: str) -> None:
        mapping = value_at(data, place)
        if not isinstance(mapping, dict):
            return
        renamed: dict[Any, Any] = {}
        written_as: dict[str, Any] = {}
        for key, value in mapping.items():
            found = vocabulary().enums[enum].resolve(key) if isinstance(key, str) else []
            target = found[0] if len(found) == 1 else key
            if target in renamed:
                self.errors.append((place + (key,), f"{'.'.join(place)}: {key!r} and {written_as[target]!r} "
                                                    f"both name {target!r}; keep one"))
                continue
            renamed[target] = value
            written_as[target] = key
            if target != key:
                self.given_keys[place + (target,)] = place + (key,)
        _set(data, place, renamed)


_SURROGATE = re.compile("[\ud800-\udfff]")
def _valid_text(value: Any, where: tuple, notes: list[tuple[tuple, str]]) -> Any:
    """A copy with lone surrogates (JSON "\\ud800" escapes: not Unicode text, cannot be
    printed or written) replaced by U+FFFD, each replacement noted."""
    if isinstance(value, str):
        if _SURROGATE.search(value):
            notes.append((where, f"{'.'.join(map(str, where)) or '(top level)'}: 含有无效的 Unicode 字符"
                                 "（孤立的代理项），已替换为 \ufffd"))
            return _SURROGATE.sub("\ufffd", value)
        return value
    if isinstance(value, dict):
        copy = {}
        for k, v in value.items():
            k = _valid_text(k, where, notes)  # the value's note names the key as replaced
            copy[k] = _valid_text(v, where + (k,), notes)
        return copy
    if isinstance(value, list):
        return [_valid_text(v, where + (i,), notes) for i, v in enumerate(value)]
    return value


def value_at(data: Any, place: tuple[str, ...]) -> Any:
    """The value under a key path of a case's data, or None (also `j6doctor ask`'s reading)."""
    for key in place:
        if not isinstance(data, dict) or key not in data:
            return None
        data = data[key]
    return data


def _set(data: dict[str, Any], place: tuple[str, ...], value: Any) -> None:
    """Replace the value at `place`, copying the mappings on the way (the input stays as read)."""
    for key in place[:-1]:
        data[key] = dict(data[key])
        data = data[key]
    data[place[-1]] = value


def _walk(data: Any, place: tuple[str, ...], where: tuple = ()) -> Iterator[tuple[tuple, Any, Any]]:
    """(key path, container, key) of every value at `place` ("*" = any key or index); the
    containers on the way are copied so the loaded document is never changed."""
    if not place:
        return
    head, rest = place[0], place[1:]
    if isinstance(data, dict):
        keys = list(data) if head == "*" else ([head] if head in data else [])
    elif isinstance(data, list) and head == "*":
        keys = list(range(len(data)))
    else:
        return
    for key in keys:
        if not rest:
            yield where + (key,), data, key
            continue
        child = data[key]
        if isinstance(child, dict):
            child = data[key] = dict(child)
        elif isinstance(child, list):
            child = data[key] = list(child)
        yield from _walk(child, rest, where + (key,))


# ---------------------------------------------------------------------------- reading

# A forum post, an issue body or a ticket saved as text is a case whose symptom is the whole text.
POST_SUFFIXES = (".txt", ".text", ".md", ".markdown")


def read_case(path: Path) -> Case:
    """Read and validate a case file (or a post saved as text); raise InputError naming file,
    line and key."""
    display = path.name
    suffix = path.suffix.lower()
    if suffix not in (".yaml", ".yml", ".json", *POST_SUFFIXES):
        raise InputError(display, "a case file ends in .yaml, .yml or .json (a post or issue saved as text: "
                                  ".txt or .md)")
    # File-system errors name the path as given; content errors the file name, with a line.
    raw = read_bytes(path, str(path), CASE_WHAT, MAX_CASE_BYTES)
    text, _ = decode_written_text(raw, display, CASE_WHAT)
    return _case_of_text(text, path)


def case_from_text(text: str, path: Path) -> Case:
    """The case file at `path` as it would read with `text` (the recorder checks a case before
    writing it); InputError as read_case gives."""
    _check_case_size(len(text.encode("utf-8")), path.name)
    return _case_of_text(text, path)


def _case_of_text(text: str, path: Path) -> Case:
    """The decoded text of the case file at `path` (a post by its suffix), validated."""
    display = path.name
    suffix = path.suffix.lower()
    doc = _post(text) if suffix in POST_SUFFIXES else _parse(text, suffix, display)
    case = validate_case(doc, display, path)
    case.text = text
    return case


def _check_case_size(size: int, display: str) -> None:
    if size > MAX_CASE_BYTES:
        raise InputError(display, f"larger than {MAX_CASE_BYTES // (1024 * 1024)} MiB; expected {CASE_WHAT}")


def _post(text: str) -> LocatedDocument:
    """A pasted post as a case: its whole text is the symptom, read by the text rules."""
    return LocatedDocument({"symptom": text} if text.strip() else {}, {("symptom",): 1})


def case_from_bytes(raw: bytes, display: str, base: Path) -> Case:
    """A case read from a stream (standard input): YAML or JSON, relative paths from `base`."""
    _check_case_size(len(raw), display)
    text, _ = decode_written_text(raw, display, CASE_WHAT)
    suffix = ".json" if text.lstrip().startswith("{") else ".yaml"
    doc = _parse(text, suffix, display)
    if isinstance(doc.data, str):  # not a mapping of keys: a post pasted on standard input
        doc = _post(text)
    case = validate_case(doc, display, None)
    case.base = base
    case.text = text
    return case


def case_from_data(data: dict[str, Any], display: str = "<example>", base: Path | None = None) -> Case:
    """A case given as data (a rule's example); validated like a file. Relative paths in
    it refer to `base` (a rule example's: the folder of its rule file)."""
    case = validate_case(LocatedDocument(data, {}), display, None)
    case.base = base
    return case


def _schema_errors(data: dict[str, Any]) -> Iterator["jsonschema.ValidationError"]:
    """The schema errors of a (normalised) case, in one pass of jsonschema; none without
    importing it when the case certainly satisfies the schema (engine/schema_certain.py)."""
    schema = case_schema()
    if certainly_valid(data, schema):
        return
    import jsonschema

    yield from jsonschema.Draft202012Validator(schema).iter_errors(data)


def validate_case(doc: LocatedDocument, display: str, path: Path | None) -> Case:
    data = doc.data
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise InputError(display, f"a case file is a mapping of keys (symptom, platform, results, ...), got {_describe_type(data)}", 1)
    normalizer = _Normalizer(doc)
    data = normalizer.run(data)
    case = Case(path, display, data, doc, given_keys=normalizer.given_keys)
    oversized = list(_oversized(data, ()))
    if oversized:  # refused before the schema, which would name every entry of a huge list
        located = [(doc.line_of(case.written(where)), f"{'.'.join(map(str, case.written(where)))}: {message}")
                   for where, message in oversized]
        raise InputError(display, located[0][1], located[0][0], more=located[1:])
    errors: list[tuple[tuple, str]] = list(normalizer.errors)
    bad: set[tuple] = set()
    for err in _schema_errors(data):
        for where, message in _format_errors(err):
            errors.append((case.written(where), message))
        bad.add(tuple(err.absolute_path))
    for where, number in _non_finite(data, ()):
        if where not in bad:  # YAML's .nan / .inf, JSON's 1e999 (NaN and Infinity are refused above)
            errors.append((case.written(where), f"{'.'.join(str(p) for p in case.written(where))}: {number} is not a "
                                                "finite number; expected a number"))
    for where, problem in _unusable_paths(data, case.folder):
        errors.append((where, f"{'.'.join(str(p) for p in where)}: {problem}"))
    errors += _check_meaning(data, case)
    if errors:
        located = sorted(((doc.line_of(w), m) for w, m in errors), key=lambda e: (e[0] or 0, e[1]))
        unique = list(dict.fromkeys(located))
        raise InputError(display, unique[0][1], unique[0][0], more=unique[1:])
    case.notes = normalizer.notes + _notes(data, case)
    return case


MAX_ANY_COLLECTION = 1000  # far above every schema bound: the schema names those


def _oversized(value: Any, where: tuple) -> Iterator[tuple[tuple, str]]:
    """Lists and mappings far longer than a case holds (the top-level lists past their
    MAX_LIST bound, any other past MAX_ANY_COLLECTION), outermost first."""
    if not isinstance(value, (list, dict)):
        return
    limit = MAX_LIST.get(where[0], MAX_ANY_COLLECTION) if len(where) == 1 and isinstance(value, list) \
        else MAX_ANY_COLLECTION
    if len(value) > limit:
        what = "entries" if isinstance(value, list) else "keys"
        yield where, f"{len(value)} {what}; at most {limit} are read (keep the ones that matter for this report)"
        return
    for key, child in (value.items() if isinstance(value, dict) else enumerate(value)):
        yield from _oversized(child, where + (key,))


def _check_meaning(data: dict[str, Any], case: Case) -> list[tuple[tuple, str]]:
    """What the schema cannot say: a platform that names none we know but looks like a typo
    of one, two platforms in one value, a result that is both normal and a failure."""
    errors: list[tuple[tuple, str]] = []
    platform = data.get("platform")
    if isinstance(platform, str) and normalize_platform(platform) is None:
        spellings = vocabulary().enums["platform"].alias_keys()
        close = _close_matches(alias_key(platform), list(spellings), n=1, cutoff=PLATFORM_CLOSE)
        if _names_several(platform):
            errors.append((("platform",), f"platform: {platform!r} names more than one platform; keep one"))
        elif close:
            errors.append((("platform",), f"platform: unknown platform {platform!r} (did you mean "
                                          f"{spellings[close[0]]!r}?); allowed: {platform_forms()}"))
    results = data.get("results") if isinstance(data.get("results"), dict) else {}
    for artifact, entry in results.items():
        if isinstance(entry, dict) and entry.get("failure") and entry.get("status") == "normal":
            errors.append((case.written(("results", artifact)),
                           f"results.{'.'.join(map(str, case.written(('results', artifact))[1:]))}: status normal "
                           f"and failure {entry['failure']} contradict; a failure has no accuracy status"))
    return errors


def _names_several(text: str) -> bool:
    enum = vocabulary().enums["platform"]
    words = [w for w in re.split(r"[\s,;/|()（），、]+", text) if w]
    return len({enum.resolve(w)[0] for w in words if enum.resolve(w)}) > 1


def _notes(data: dict[str, Any], case: Case) -> list[tuple[tuple, str]]:
    """Accepted values worth a look: shown in the report, never dropped."""
    notes: list[tuple[tuple, str]] = []
    platform = data.get("platform")
    if isinstance(platform, str) and platform.strip() and normalize_platform(platform) is None:
        notes.append((("platform",), f"平台 {platform!r} 不是已知的 Horizon 平台，按非 Horizon 平台（other）处理；"
                                     f"Horizon 平台请写 {platform_forms()}"))
    for name, value in (data.get("versions") or {}).items():
        if isinstance(value, float):
            notes.append((("versions", name), f"versions.{name}: YAML 把 {value!r} 读成了数字；若原本是 "
                                              f"{_with_zero(value)} 之类带末尾 0 的版本，请加引号（如 \"{_with_zero(value)}\"）"))
        version = _version_text(value)
        if resolve_package(str(name), version) is None:
            known = [alias_key(v) for v in enum_values("package") if v != "other"]
            close = _close_matches(alias_key(str(name)), known, n=1, cutoff=0.8)
            hint = f"（是不是 {dict((alias_key(v), v) for v in enum_values('package'))[close[0]]}？）" if close else ""
            if close:
                notes.append((("versions", name), f"versions.{name}: 不是已知的包名，按其他软件包保留{hint}"))
    for artifact, entry in (data.get("results") or {}).items():
        if isinstance(entry, dict) and entry.get("failure") and entry.get("status") == "abnormal":
            key = ".".join(map(str, case.written(("results", artifact))))
            notes.append((case.written(("results", artifact)),
                          f"{key}: 写了 failure，status abnormal 按失败处理（失败不是精度结论）"))
    return notes


def _with_zero(value: float) -> str:
    return f"{value!r}0"


def _version_text(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return repr(value)
    return str(value).strip()


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
# stat() on it fails with ENAMETOOLONG instead of "no such file". Nor can a whole path be
# longer than PATH_MAX (4096 bytes with its terminating NUL), however short its names.
_MAX_NAME_BYTES = 255
_MAX_PATH_BYTES = 4095


def case_paths(data: dict[str, Any]) -> list[tuple[tuple, Any]]:
    """The files and folders a case names for the tool to open, with their keys."""
    paths: list[tuple[tuple, Any]] = []
    for key in ("artifacts", "scripts"):
        if isinstance(data.get(key), list):
            paths += [((key, i), p) for i, p in enumerate(data[key])]
    if isinstance(data.get("metrics"), dict):
        paths.append((("metrics", "file"), data["metrics"].get("file")))
    return paths


def _unusable_paths(data: dict[str, Any], folder: Path | None = None) -> list[tuple[tuple, str]]:
    """Paths the tool opens that no file can have (NUL byte, over-long name or path; `folder`:
    where relative paths are opened from)."""
    paths = case_paths(data)
    problems = []
    for where, text in paths:
        if not isinstance(text, str):
            continue
        if "\x00" in text:
            problems.append((where, "a file path cannot contain a NUL character"))
        elif any(len(part.encode("utf-8", "surrogatepass")) > _MAX_NAME_BYTES for part in re.split(r"[\\/]", text)):
            problems.append((where, f"a file or folder name in this path is longer than {_MAX_NAME_BYTES} bytes"))
        elif len(os.path.join(folder or "", text).encode("utf-8", "surrogatepass")) > _MAX_PATH_BYTES:
            shown = text if len(text) <= 80 else f"{text[:50]}…{text[-20:]}"
            problems.append((where, f"the path {shown!r} ({len(text)} characters) is longer than "
                                    f"{_MAX_PATH_BYTES} bytes, the most a file path can have"))
    return problems


# ---------------------------------------------------------------------------- facts

def _producer(text: str) -> str:
    """`by:` of a result: a producer id, its alias, or free text naming one (`hrt_model_exec infer`)."""
    enum = vocabulary().enums["producer"]
    found = enum.resolve(text)
    if found:
        return found[0]
    key = alias_key(text)
    for value in enum.values:
        for spelling in (value, *enum.attr(value, "aliases", ())):
            if len(alias_key(spelling)) >= 3 and alias_key(spelling) in key:
                return value
    return "other"


def _suspect_stage(text: str) -> str:
    """The stage a `suspect:` entry names: a stage id or alias (`compile`, `hbdk`), or free
    text naming one ("怀疑 hbdk 编译器"). Several stages named count as one when they all
    refine one of them (`parent`: "编译或板端" → compile); otherwise, or when none is
    named, "" (the text is still kept and read by text rules)."""
    exact = vocabulary().enums["stage"].resolve(text)
    if exact:
        return exact[0]
    named = [value for value, _ in mentions("stage", text)]
    for candidate in named:
        if all(s == candidate or attr("stage", s, "parent") == candidate for s in named):
            return candidate
    return ""


def _naming(case: Case, artifact: str) -> str:
    """Which flow's name the user gave the artifact (ptq for `calibrated_model`)."""
    written = case.written(("results", artifact))[-1]
    if not isinstance(written, str):
        return ""
    if any(alias_key(written) == alias_key(a) for a in attr("artifact", artifact, "ptq_aliases", ())):
        return "ptq"
    return ""


def _param_text(value: Any) -> str:
    if isinstance(value, list):
        return " ".join(_param_text(v) for v in value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value).strip().lower()


def _input_params(params: dict[str, Any]) -> Iterator[tuple[str, str, str]]:
    """(name, value, input) per parameter; a multi-input model's `a;b` values are split by
    the `input_name` list when the counts agree (the conversion yaml's convention)."""
    names = [n.strip() for n in _param_text(params.get("input_name", "")).split(";")] if "input_name" in params else []
    for name, value in params.items():
        text = _param_text(value)
        parts = [p.strip() for p in text.split(";")]
        if len(names) > 1 and len(parts) == len(names) and name != "input_name":
            for input_name, part in zip(names, parts):
                yield str(name), part, input_name
        else:
            yield str(name), text, ""


_Entry = tuple[str, dict[str, Any], Source]  # (fact type, fields, source)


def case_facts(case: Case, start: int = 1) -> list[Fact]:
    """Turn a validated case into input facts, numbered f<start>, f<start+1>, ... in the
    order of the sections below (the order is part of every report)."""
    vocab = vocabulary()
    facts: list[Fact] = []
    for section in _SECTIONS:
        for type_name, fields, source in section(case):
            facts.append(Fact(f"f{start + len(facts)}", type_name, vocab.complete(type_name, fields), source))
    return facts


def _header_facts(case: Case) -> Iterator[_Entry]:
    data = case.data
    symptom = (data.get("symptom") or "").strip()
    if symptom:
        yield "symptom", {"text": symptom}, case.source("symptom")
    if data.get("platform"):
        family = normalize_platform(data["platform"]) or "other"
        yield "platform", {"family": family, "series": attr("platform", family, "series"),
                           "march": attr("platform", family, "march"), "given": data["platform"]}, case.source("platform")
    for name, value in (data.get("versions") or {}).items():
        version = _version_text(value)
        package = resolve_package(str(name), version) or "other"
        yield "version", {"package": package, "given": str(name), "version": version,
                          "number": version_number(version)}, case.source("versions", name)


def _result_facts(case: Case) -> Iterator[_Entry]:
    """Each artifact's result or failure, in chain order, and the notes written with it."""
    for artifact in enum_values("artifact"):
        entry = (case.data.get("results") or {}).get(artifact)
        if not entry:
            continue
        pos = attr("artifact", artifact, "chain", -1)
        by = entry.get("by", "").strip()
        producer = _producer(by) if by else "unspecified"
        if entry.get("failure"):
            message = entry.get("message", "").strip()
            yield "failure", {"artifact": artifact, "kind": entry["failure"], "message": message, "pos": pos,
                              "by": producer, "intermittent": entry.get("intermittent", False)}, \
                case.source("results", artifact, "message" if message else "failure")
        elif entry["status"] != "unknown":
            yield "result", {"artifact": artifact, "status": entry["status"],
                             "evidence": entry.get("evidence", "unspecified"),
                             "metric": entry.get("metric", ""), "value": entry.get("value"), "pos": pos,
                             "by": producer, "by_given": by, "naming": _naming(case, artifact),
                             "intermittent": entry.get("intermittent", False)}, case.source("results", artifact)
        for key in ("note", "message"):
            text = (entry.get(key) or "").strip()
            if text and not (key == "message" and entry.get("failure")):
                yield "result_note", {"artifact": artifact, "text": text}, case.source("results", artifact, key)


def _comparison_facts(case: Case) -> Iterator[_Entry]:
    """Comparisons, then controls (a comparison entry with a `variant` is a control)."""
    data = case.data
    for index, entry in enumerate(data.get("comparisons") or []):
        if "variant" not in entry:
            yield "comparison", {"a": entry["a"], "b": entry["b"], "relation": entry["relation"],
                                 "note": entry.get("note", ""), "a_pos": attr("artifact", entry["a"], "chain", -1),
                                 "b_pos": attr("artifact", entry["b"], "chain", -1)}, case.source("comparisons", index)
    controls = [("comparisons", i, e) for i, e in enumerate(data.get("comparisons") or []) if "variant" in e]
    controls += [("controls", i, e) for i, e in enumerate(data.get("controls") or [])]
    for key, index, entry in controls:
        if entry["status"] != "unknown":
            yield "control", {"variant": entry["variant"], "varies": entry.get("varies", "unspecified"),
                              "artifact": entry["stage"], "status": entry["status"],
                              "note": entry.get("note", "")}, case.source(key, index)


def _setting_facts(case: Case) -> Iterator[_Entry]:
    """Suspects, conversion settings and the deployment notes."""
    data = case.data
    suspects = data.get("suspect")
    for index, text in enumerate([suspects] if isinstance(suspects, str) else suspects or []):
        if text.strip():
            yield "suspect", {"stage": _suspect_stage(text.strip()), "text": text.strip()}, \
                case.source("suspect") if isinstance(suspects, str) else case.source("suspect", index)
    for name, value, input_name in _input_params(data.get("input_parameters") or {}):
        yield "input_param", {"name": name, "value": value, "input": input_name}, case.source("input_parameters", name)
    notes = ((data.get("deployment") or {}).get("notes") or "").strip()
    if notes:
        yield "deployment_notes", {"text": notes}, case.source("deployment", "notes")


def _check_facts(case: Case) -> Iterator[_Entry]:
    """The deployment checklist, the step-0 user checks and the consistency strategy used (the
    other checks the user ran are declared keys: _declared_facts)."""
    data = case.data
    for item in enum_values("check_item"):
        check = ((data.get("deployment") or {}).get("checklist") or {}).get(item)
        if check:
            yield "checklist_item", {"item": item, "status": check["status"], "note": check.get("note", "")}, \
                case.source("deployment", "checklist", item)
    for item in enum_values("user_check_item"):
        check = (data.get("user_checks") or {}).get(item)
        if check:
            yield "user_check", {"item": item, "status": check["status"], "note": check.get("note", "")}, \
                case.source("user_checks", item)
    strategy = data.get("consistency_strategy")
    if strategy:
        levels = strategy["levels"]
        yield "strategy_use", {"levels": ", ".join(str(level) for level in levels), "first_level": levels[0],
                               "max_level": max(levels), "retrained": strategy.get("retrained"),
                               "before_prepare": strategy.get("set_before_prepare")}, case.source("consistency_strategy")


def _tail_facts(case: Case) -> Iterator[_Entry]:
    """The artifact paths, gate answers, intake notes and what pasted text names."""
    data = case.data
    for index, raw_path in enumerate(data.get("artifacts") or []):
        try:
            exists = (case.folder / raw_path).exists()
        except OSError:  # e.g. a folder on the way that cannot be searched, a name too long
            exists = False
        yield "artifact_path", {"path": raw_path, "exists": exists}, case.source("artifacts", index)
    for item in enum_values("gate_item"):  # answers to gate items that have no key of their own
        text = ((data.get("answers") or {}).get(item) or "").strip()  # (the schema allows no other)
        if text:
            yield "gate_answer", {"item": item, "text": text}, case.source("answers", item)
    for where, text in case.notes:
        key = ".".join(str(k) for k in where)
        yield "intake_note", {"key": key, "text": text}, \
            Source("case", file=case.display, line=case.doc.line_of(where), key=key)
    for type_name, fields, key in _pasted_facts(data):
        yield type_name, fields, case.source(*key)
    for key, text in (("symptom",), data.get("symptom")), (("deployment", "notes"), (data.get("deployment") or {}).get("notes")):
        if isinstance(text, str) and len(text) > MAX_TEXT_READ:
            yield "intake_note", {"key": ".".join(key), "text": f"{'.'.join(key)} 有 {len(text):,} 个字符：只从前 "
                                  f"{MAX_TEXT_READ:,} 个字符中识别陈述（结果、对照、失败、配置），其余部分没有读"}, \
                case.source(*key)


def _declared_facts(case: Case) -> Iterator[_Entry]:
    """The facts of the case keys the vocabulary declares (facts/case_keys.py), in its order."""
    for declared in declared_keys():
        if case.data.get(declared.key) is not None:
            for below, fields in facts_of(declared, case.data[declared.key]):
                yield declared.type, fields, case.source(declared.key, *below)


_SECTIONS = (_header_facts, _result_facts, _comparison_facts, _setting_facts, _check_facts, _declared_facts,
             _tail_facts)


def _pasted_facts(data: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any], tuple[str, ...]]]:
    """The platform and the versions a pasted post names outright (pasted_text.py), where the
    case does not give them with a key: a key always wins over the same thing in prose. A text
    naming two platforms gives none (which one runs the model is for the user to say)."""
    texts = [(("symptom",), data.get("symptom") or ""), (("deployment", "notes"), (data.get("deployment") or {}).get("notes") or "")]
    # not in the pasted blocks a tool's reader reads: their march and versions are its facts
    # (probes/pasted_output.py), and the platform is the one the user names around them
    texts = [(key, _outside_read_blocks(text)) for key, text in texts]
    if not data.get("platform"):
        named = {family: (words, key) for key, text in texts for family, words in platforms_named(text)}
        if len(named) == 1:
            ((family, (words, key)),) = named.items()
            yield "platform", {"family": family, "series": attr("platform", family, "series"),
                               "march": attr("platform", family, "march"), "given": words}, key
    given = {resolve_package(str(name), _version_text(value)) for name, value in (data.get("versions") or {}).items()}
    seen: set[str] = set()
    for key, text in texts:
        for package, name, version in versions_printed(text):
            if package not in given and package not in seen:
                seen.add(package)
                yield "version", {"package": package, "given": name, "version": version,
                                  "number": version_number(version)}, key


def _outside_read_blocks(text: str) -> str:
    """The text with the code blocks a pasted reader reads blanked."""
    if "```" not in text:
        return text
    from j6doctor.probes.code_blocks import prose
    from j6doctor.probes.pasted_output import read_blocks

    return prose(text, read_blocks(text))


def _close_matches(word: str, possibilities, n: int = 1, cutoff: float = 0.6) -> list[str]:
    """difflib.get_close_matches, imported when a spelling is to be guessed (not on every run)."""
    import difflib

    return difflib.get_close_matches(word, possibilities, n=n, cutoff=cutoff)
