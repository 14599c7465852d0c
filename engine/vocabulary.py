"""A typed fact vocabulary: fact types, their fields and enumerations.

Generic: the domain's vocabulary is data (a YAML file) handed to `Vocabulary.from_data`.
The rule compiler type-checks every rule literal against it, because durable-rules
silently coerces numbers to strings when they are compared with strings.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from j6doctor.engine.errors import VocabularyError
from j6doctor.engine.text_lexicon import TextLexicon, lexicon_from_data

FIELD_TYPES = ("str", "int", "number", "bool", "enum")
# Attributes every enum value may carry; a vocabulary declares its own others under
# `enum_attributes:` (a typo or a stray comma in YAML must not pass silently).
ATTRIBUTE_KINDS = ("str", "int", "number", "bool", "list", "enum")
# ... and `enum:<name>`: a value of the enum <name> (checked once every enum is loaded); `enum`
# alone: the name of an enum.
# A rule pack's additions to the vocabulary: this file in the pack's folder (not a rule file).
PACK_VOCABULARY = "vocabulary.yaml"
_EXTENSION_KEYS = ("enum_attributes", "enums", "types", "text_terms")
# Keys the engine puts on every fact it hands to durable-rules.
RESERVED_FIELDS = frozenset({"id", "type", "sid", "_k", "_d"})


_ALIAS_NOISE = re.compile(r"[\s_\-.]+")


def _fingerprint(data: Any) -> str:
    return hashlib.sha256(json.dumps(_str_keys(data), sort_keys=True, ensure_ascii=False, default=str).encode()).hexdigest()


def _str_keys(data: Any) -> Any:
    """`data` with every mapping key a string (YAML keys may be numbers, dates or null, which
    json.dumps cannot sort among strings); a key that is not one keeps its type in the text."""
    if isinstance(data, dict):
        return {(k if isinstance(k, str) else f"{type(k).__name__}:{k!r}"): _str_keys(v) for k, v in data.items()}
    if isinstance(data, list):
        return [_str_keys(v) for v in data]
    return data


def alias_key(text: str) -> str:
    """How an alias is compared: case, spaces, '-', '_' and '.' do not matter."""
    return _ALIAS_NOISE.sub("", text).lower()


@dataclass(frozen=True)
class EnumSpec:
    """A closed set of values, with per-value attributes (labels, order, ...)."""

    name: str
    meaning: str
    values: tuple[str, ...]
    attributes: dict[str, dict[str, Any]]
    closed: bool = False  # the code handles exactly these values: a rule pack may not add any

    def attr(self, value: str, key: str, default: Any = None) -> Any:
        return self.attributes.get(value, {}).get(key, default)

    def spellings(self, value: str) -> tuple[str, ...]:
        """The value and its aliases: every attribute named `aliases` or `<kind>_aliases`."""
        found = [value]
        for key, names in self.attributes.get(value, {}).items():
            if key == "aliases" or key.endswith("_aliases"):
                found += [str(n) for n in names]
        return tuple(found)

    def resolve(self, text: str) -> list[str]:
        """The values `text` names: a value itself or one of its aliases, compared by
        alias_key. Several values may share an alias; they come in vocabulary order."""
        index = self.__dict__.get("_resolved")
        if index is None:  # built on first use (a case resolves hundreds of names)
            index = {}
            for value in self.values:
                for spelling in self.spellings(value):
                    named = index.setdefault(alias_key(spelling), [])
                    if value not in named:
                        named.append(value)
            self.__dict__["_resolved"] = index  # not a field: no part of equality or pickles
        return list(index.get(alias_key(text), ()))

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "_resolved"}

    def alias_keys(self) -> dict[str, str]:
        """Every spelling (alias_key) → the first value it names, for did-you-mean hints."""
        out: dict[str, str] = {}
        for value in self.values:
            for spelling in self.spellings(value):
                out.setdefault(alias_key(spelling), value)
        return out


class FieldSpec(NamedTuple):
    """One field of a fact type."""

    name: str
    type: str
    enum: str | None = None
    required: bool = False
    default: Any = None
    meaning: str = ""


WRITTEN_PLACEHOLDER = re.compile(r"(?<!\{)\{(\w+)\}")  # {field} in a written_as text, not {{


@dataclass(frozen=True)
class FactType:
    """A fact type: its fields and what it means."""

    name: str
    origin: str
    meaning: str
    fields: dict[str, FieldSpec]
    exclusive: tuple[str, ...] = ()  # fields that must take one value per run (e.g. a verdict's stage)
    # how a user gives such a fact, with {field} placeholders (explain --why-not says what to add)
    written_as: str = ""
    # feature name -> the fields whose values make two runs alike (the case library's similarity)
    similar_by: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # an input type: the modules that write its facts (probes/<name>.py; `evidence`: app/evidence.py)
    probes: tuple[str, ...] = ()
    # how a report words such a fact: a template over its fields (rendered by the application)
    described_as: str = ""
    # an input type: where in the user's input its facts are read from, as data the reading
    # probe interprets (facts/case_keys.py); None: its probe's code knows
    read_from: Any = field(default=None, compare=False)

    @property
    def written_fields(self) -> list[str]:
        """The fields `written_as` names, in order ({{ and }} are literal braces)."""
        return WRITTEN_PLACEHOLDER.findall(self.written_as)


@dataclass
class Vocabulary:
    """Every fact type and enum the rules may use (facts/vocabulary.yaml)."""

    enums: dict[str, EnumSpec] = field(default_factory=dict)
    types: dict[str, FactType] = field(default_factory=dict)
    text: TextLexicon = field(default_factory=TextLexicon)  # what text rules read with (text_lexicon.py)
    # a hash of the data it was made from: the same in every process (a pickle of the
    # vocabulary is not: the order of its sets follows the process's string hashing)
    fingerprint: str = ""

    # ------------------------------------------------------------------ loading
    @classmethod
    def from_data(cls, data: Any, origin: str = "vocabulary") -> "Vocabulary":
        if not isinstance(data, dict) or not isinstance(data.get("types"), dict):
            raise VocabularyError(f"{origin}: expected a mapping with 'enums' and 'types'")
        vocab = cls(fingerprint=_fingerprint(data))
        declared = _declared_attributes(data.get("enum_attributes"), origin)
        naming: list[tuple[str, str, Any]] = []  # (where, kind, value) of attributes naming an enum (value)
        for name, spec in (data.get("enums") or {}).items():
            vocab.enums[name] = _enum_spec(name, spec, declared, naming, origin)
        for where, kind, value in naming:  # once every enum is known
            _check_enum_attribute(vocab, where, kind, value)
        for tname, tspec in data["types"].items():
            vocab.types[tname] = _fact_type(tname, tspec, vocab.enums, origin)
        vocab.text = lexicon_from_data(data.get("text_context"), data.get("text_terms"), vocab.enums, origin)
        return vocab

    # ------------------------------------------------------------------ checks
    def enum_within(self, inner: str, outer: str) -> bool:
        """Every value of enum `inner` is a value of enum `outer` (a copy is always valid)."""
        return set(self.enums[inner].values) <= set(self.enums[outer].values)

    def check_value(self, spec: FieldSpec, value: Any) -> str | None:
        """Return a description of what is wrong with `value` for `spec`, or None."""
        if value is None:
            return None if not spec.required else "a value is required"
        if spec.type == "str":
            return None if isinstance(value, str) else f"expected a string, got {value!r}"
        if spec.type == "bool":
            return None if isinstance(value, bool) else f"expected true or false, got {value!r}"
        if spec.type == "int":
            ok = isinstance(value, int) and not isinstance(value, bool)
            return None if ok else f"expected an integer, got {value!r}"
        if spec.type == "number":
            ok = isinstance(value, (int, float)) and not isinstance(value, bool)
            if ok and isinstance(value, float) and not math.isfinite(value):
                return f"expected a finite number, got {value!r}"
            return None if ok else f"expected a number, got {value!r}"
        allowed = self.enums[spec.enum].values  # type: ignore[index]
        if value in allowed:
            return None
        return f"{value!r} is not one of: {', '.join(allowed)}"

    def complete(self, type_name: str, fields: dict[str, Any]) -> dict[str, Any]:
        """Validate `fields` for `type_name` and fill defaults; raise VocabularyError."""
        ftype = self.types.get(type_name)
        if ftype is None:
            raise VocabularyError(f"unknown fact type {type_name!r}")
        unknown = sorted(set(fields) - set(ftype.fields))
        if unknown:
            raise VocabularyError(
                f"fact type {type_name!r} has no field {unknown[0]!r}; "
                f"fields: {', '.join(ftype.fields)}"
            )
        out: dict[str, Any] = {}
        for name, spec in ftype.fields.items():
            value = fields.get(name, spec.default)
            problem = self.check_value(spec, value)
            if problem:
                raise VocabularyError(f"{type_name}.{name}: {problem}")
            out[name] = value
        return out


def _enum_spec(name: str, spec: Any, declared: dict[str, str], naming: list[tuple[str, str, Any]],
               origin: str) -> EnumSpec:
    """An enum with its values' attributes, each of a declared kind. Attributes that name an
    enum (or one of its values) are added to `naming`: they are checked once all enums exist."""
    if not isinstance(spec, dict) or not isinstance(spec.get("values"), dict):
        raise VocabularyError(f"{origin}: enum {name!r} needs a 'values' mapping")
    attrs = {str(k): dict(v or {}) for k, v in spec["values"].items()}
    for value, value_attrs in attrs.items():
        for key, attr_value in value_attrs.items():
            kind = declared.get(key)
            if kind is None:
                raise VocabularyError(
                    f"{origin}: enum {name}.{value}: unknown attribute {key!r} "
                    f"(quote values that contain commas); declared: {', '.join(sorted(declared))}"
                )
            if kind.startswith("enum"):
                naming.append((f"{origin}: enum {name}.{value}.{key}", kind, attr_value))
            elif not _attribute_ok(kind, attr_value):
                raise VocabularyError(f"{origin}: enum {name}.{value}.{key}: expected {kind}, got {attr_value!r}")
        for key in [k for k in value_attrs if k == "aliases" or k.endswith("_aliases")]:
            value_attrs[key] = tuple(str(a) for a in value_attrs[key])
    return EnumSpec(name, str(spec.get("meaning", "")), tuple(str(v) for v in spec["values"]), attrs,
                    closed=spec.get("closed") is True)


def _field_spec(origin: str, tname: str, fname: str, fspec: Any, enums: dict[str, EnumSpec]) -> FieldSpec:
    where = f"{origin}: {tname}"
    if fname in RESERVED_FIELDS:
        raise VocabularyError(f"{origin}: type {tname!r}: field name {fname!r} is reserved")
    if not isinstance(fspec, dict):
        raise VocabularyError(f"{where}.{fname}: expected a mapping with the field's type")
    ftype = fspec.get("type")
    if ftype not in FIELD_TYPES:
        raise VocabularyError(f"{where}.{fname}: type must be one of {', '.join(FIELD_TYPES)}")
    enum = fspec.get("enum")
    if ftype == "enum" and enum not in enums:
        raise VocabularyError(f"{where}.{fname}: unknown enum {enum!r}")
    return FieldSpec(name=fname, type=ftype, enum=enum, required=bool(fspec.get("required", False)),
                     default=fspec.get("default"), meaning=str(fspec.get("meaning", "")))


def _fact_type(tname: str, tspec: Any, enums: dict[str, EnumSpec], origin: str) -> FactType:
    where = f"{origin}: type {tname!r}"
    if not isinstance(tspec, dict):
        raise VocabularyError(f"{where} must be a mapping")
    fields = {fname: _field_spec(origin, tname, fname, fspec, enums) for fname, fspec in (tspec.get("fields") or {}).items()}
    origin_kind = tspec.get("origin", "derived")
    if origin_kind not in ("input", "derived"):
        raise VocabularyError(f"{where}: origin must be input or derived")
    exclusive = tuple(tspec.get("exclusive") or ())
    unknown_fields = [f for f in exclusive if f not in fields]
    if unknown_fields:
        raise VocabularyError(f"{where}: exclusive field {unknown_fields[0]!r} is not a field")
    written = tspec.get("written_as", "")
    if not isinstance(written, str):
        raise VocabularyError(f"{where}: written_as must be text with {{field}} placeholders")
    unknown_placeholders = [f for f in WRITTEN_PLACEHOLDER.findall(written) if f not in fields]
    if unknown_placeholders:
        raise VocabularyError(f"{where}: written_as names no field {unknown_placeholders[0]!r}")
    described = tspec.get("described_as", "")
    if not isinstance(described, str):
        raise VocabularyError(f"{where}: described_as must be text (a template over the type's fields)")
    read_from = tspec.get("read_from")
    if read_from is not None and (origin_kind != "input" or not isinstance(read_from, dict)):
        raise VocabularyError(f"{where}: read_from must be a mapping, on an input type")
    return FactType(tname, origin_kind, str(tspec.get("meaning", "")), fields, exclusive, written,
                    _similar_by(tspec.get("similar_by"), fields, where), _probes(tspec.get("probes"), origin_kind, where),
                    described, read_from)


def _probes(raw: Any, origin_kind: str, where: str) -> tuple[str, ...]:
    """`probes: [name, ...]` of an input type: who writes its facts (docs/AUTHORING.md §1)."""
    if raw is None:
        return ()
    if origin_kind != "input":
        raise VocabularyError(f"{where}: probes: only an input type is written by probes (rules derive the others)")
    if not isinstance(raw, list) or not raw or not all(isinstance(n, str) and n.isidentifier() for n in raw):
        raise VocabularyError(f"{where}: probes: expected a list of probe names, e.g. [case_file]")
    return tuple(raw)


def _similar_by(raw: Any, fields: dict[str, FieldSpec], where: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """`similar_by: {feature: field | [field, ...]}` of a fact type, checked against its fields."""
    if raw is None:
        return ()
    if not isinstance(raw, dict) or not raw:
        raise VocabularyError(f"{where}: similar_by must map feature names to a field or a list of fields")
    out = []
    for feature, names in raw.items():
        names = [names] if isinstance(names, str) else names
        if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
            raise VocabularyError(f"{where}: similar_by.{feature}: expected a field name or a list of field names")
        unknown = [n for n in names if n not in fields]
        if unknown:
            raise VocabularyError(f"{where}: similar_by.{feature}: no field {unknown[0]!r}; fields: {', '.join(fields)}")
        out.append((str(feature), tuple(names)))
    return tuple(out)


def _declared_attributes(raw: Any, origin: str) -> dict[str, str]:
    """`enum_attributes: {name: kind}` of a vocabulary file, plus the base attributes."""
    declared = {"meaning": "str", "label": "str", "aliases": "list"}
    if raw is None:
        return declared
    if not isinstance(raw, dict):
        raise VocabularyError(f"{origin}: enum_attributes must map attribute names to a kind "
                              f"({', '.join(ATTRIBUTE_KINDS)})")
    for key, kind in raw.items():
        if kind not in ATTRIBUTE_KINDS and not (isinstance(kind, str) and kind.startswith("enum:")):
            raise VocabularyError(f"{origin}: enum_attributes.{key}: kind must be one of "
                                  f"{', '.join(ATTRIBUTE_KINDS)} or enum:<an enum's name>")
        declared[str(key)] = kind
    return declared


def _check_enum_attribute(vocab: "Vocabulary", where: str, kind: str, value: Any) -> None:
    """An attribute of kind `enum` names an enum; of kind `enum:<name>`, a value of <name>."""
    if kind == "enum":
        if value not in vocab.enums:
            raise VocabularyError(f"{where}: expected the name of an enum, got {value!r}; enums: "
                                  f"{', '.join(sorted(vocab.enums))}")
        return
    spec = vocab.enums.get(kind[len("enum:"):])
    if spec is None:
        raise VocabularyError(f"{where}: its kind {kind!r} names no enum")
    if value not in spec.values:
        raise VocabularyError(f"{where}: expected one of {', '.join(spec.values)} (enum {spec.name}), got {value!r}")


def _attribute_ok(kind: str, value: Any) -> bool:
    if kind == "list":
        return isinstance(value, list) and all(isinstance(v, (str, int, float)) and not isinstance(v, bool)
                                               for v in value)
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if kind == "bool":
        return isinstance(value, bool)
    return isinstance(value, (str, int, float)) and not isinstance(value, bool)


def extend_data(base: dict[str, Any], extension: Any, origin: str) -> dict[str, Any]:
    """The vocabulary data `base` plus a rule pack's `extension`: new attribute kinds, new
    enums, new values of existing enums and new fact types. Nothing of `base` may be
    redefined (a pack that silently changed a bundled value would change every report)."""
    if extension is None:
        return base
    if not isinstance(extension, dict):
        raise VocabularyError(f"{origin}: expected a mapping with any of {', '.join(_EXTENSION_KEYS)}")
    unknown = [k for k in extension if k not in _EXTENSION_KEYS]
    if unknown:
        raise VocabularyError(f"{origin}: unknown key {unknown[0]!r}; a pack's vocabulary may hold "
                              f"{', '.join(_EXTENSION_KEYS)}")
    out = dict(base)
    attributes = dict(base.get("enum_attributes") or {})
    for key, kind in (extension.get("enum_attributes") or {}).items():
        if key in attributes and attributes[key] != kind:
            raise VocabularyError(f"{origin}: enum_attributes.{key}: already declared as {attributes[key]}")
        attributes[key] = kind
    out["enum_attributes"] = attributes
    enums = dict(base.get("enums") or {})
    for name, spec in _mapping(extension.get("enums"), f"{origin}: enums").items():
        if name not in enums:
            enums[name] = spec
            continue
        values = _mapping(spec, f"{origin}: enums.{name}").get("values")
        added = _mapping(values, f"{origin}: enums.{name}.values")
        if enums[name].get("closed") is True and added:
            raise VocabularyError(f"{origin}: enums.{name}: a closed enum (j6doctor's code handles exactly "
                                  f"its values: {', '.join(enums[name]['values'])}); a pack cannot add "
                                  f"{next(iter(added))!r}")
        merged = dict(enums[name]["values"])
        for value, attrs in added.items():
            if value in merged:
                raise VocabularyError(f"{origin}: enums.{name}.values.{value}: already defined; "
                                      "a pack adds values, it does not change them")
            merged[value] = attrs
        enums[name] = {**enums[name], "values": merged}
    out["enums"] = enums
    out["types"] = _added_entries(base, extension, "types", origin, "fact types")
    out["text_terms"] = _added_entries(base, extension, "text_terms", origin,
                                       "term classes", " (a bundled rule reads with them)")
    return out


def _added_entries(base: dict[str, Any], extension: dict[str, Any], section: str, origin: str,
                   what: str, why: str = "") -> dict[str, Any]:
    """The base's entries of `section` with the pack's new ones; redefining one is an error."""
    merged = dict(base.get(section) or {})
    for name, spec in _mapping(extension.get(section), f"{origin}: {section}").items():
        if name in merged:
            raise VocabularyError(f"{origin}: {section}.{name}: already defined; a pack adds {what}, "
                                  f"it does not change them{why}")
        merged[name] = spec
    return merged


def _mapping(value: Any, where: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise VocabularyError(f"{where}: expected a mapping")
    return value
