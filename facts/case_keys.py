"""Case keys declared in the vocabulary: an input fact type's `read_from` says which top-level
key of a case file its facts are read from, the JSON Schema of that key's value, and which
part of the value fills each field. probes/case_file.py adds the keys to the case schema,
normalises their enum values and reads their facts; a rule pack declares keys for its own
fact types the same way. (Keys whose facts derive values — results, versions, platform,
input_parameters, … — are read by case_file.py's own code.)

    read_from:
      key: bc_flow_check              # the top-level case key
      schema:                         # JSON Schema of its value; {enum_of: <enum>} stands
        type: object                  # for the enum's values (matched ignoring case and
        required: [outcome]           # through its aliases, like every enum of a case)
        properties: {outcome: {enum_of: diag_outcome}, note: {type: string}}
      shorthand: outcome              # a scalar written instead of the object is this sub-key
      fields: {outcome: outcome, note: note}   # `.`: the value itself; a name: its sub-key
      each: true                      # the value is a list: one fact per item

A text value is read stripped; a fact whose `.` text is empty is no fact (`tried: [""]`).
"""

from __future__ import annotations

from typing import Any, Iterator, NamedTuple, TYPE_CHECKING

from j6doctor.engine.errors import VocabularyError

if TYPE_CHECKING:
    from j6doctor.engine.vocabulary import FactType, Vocabulary

WHOLE = "."  # a field filled by the key's value (or list item) itself
_SPEC_KEYS = frozenset({"key", "schema", "fields", "shorthand", "each"})
Place = tuple[str, ...]  # a key path below the case key ("*": any list item)


class CaseKey(NamedTuple):
    key: str
    type: str                          # the fact type read from it
    schema: dict[str, Any]             # JSON Schema, enum_of expanded
    fields: tuple[tuple[str, str], ...]  # (field, WHOLE or a sub-key)
    shorthand: str | None
    each: bool
    enum_places: tuple[tuple[Place, str], ...]  # where enum values sit, below the key
    number_places: tuple[Place, ...]            # where numbers sit (YAML 1.1 reads `1e-05` as text)


def case_keys(vocab: "Vocabulary", check_schemas: bool = False) -> tuple[CaseKey, ...]:
    """The declared case keys of `vocab`, in the order of its fact types; VocabularyError
    naming the type and what is wrong. `check_schemas`: each schema against JSON Schema's own
    (done when a pack's vocabulary is loaded, and by the tests for the bundled one; a
    diagnosis does not import jsonschema for a valid case)."""
    out: list[CaseKey] = []
    for ftype in vocab.types.values():
        if ftype.read_from is not None:
            out.append(compile_case_key(vocab, ftype, check_schemas))
    taken = [k.key for k in out]
    for index, key in enumerate(taken):
        if key in taken[:index]:
            raise VocabularyError(f"types.{out[index].type}.read_from.key: {key!r} is read by another type "
                                  f"({out[taken.index(key)].type}) too; one case key feeds one fact type")
    return tuple(out)


def compile_case_key(vocab: "Vocabulary", ftype: "FactType", check_schema: bool = False) -> CaseKey:
    where = f"types.{ftype.name}.read_from"
    spec = ftype.read_from
    unknown = sorted(str(k) for k in spec if k not in _SPEC_KEYS)
    if unknown:
        raise VocabularyError(f"{where}: unknown key {unknown[0]!r}; expected {', '.join(sorted(_SPEC_KEYS))}")
    key = spec.get("key")
    if not isinstance(key, str) or not key.isidentifier():
        raise VocabularyError(f"{where}.key: expected the name of a top-level case key (letters, digits, _)")
    each = spec.get("each", False)
    if not isinstance(each, bool):
        raise VocabularyError(f"{where}.each: expected true or false")
    raw = spec.get("schema")
    if not isinstance(raw, dict) or not raw:
        raise VocabularyError(f"{where}.schema: expected a JSON Schema (a mapping, e.g. {{type: string}})")
    _check_raw(raw, vocab, f"{where}.schema", reached=True)
    schema = _expanded(raw, vocab)
    if check_schema:
        _check_schema(schema, f"{where}.schema")
    value = raw.get("items") if each else raw
    if each and (raw.get("type") != "array" or not isinstance(value, dict)):
        raise VocabularyError(f"{where}.schema: `each: true` reads a list: give type: array and the schema of "
                              "its items")
    properties = value.get("properties") if isinstance(value.get("properties"), dict) else {}
    shorthand = spec.get("shorthand")
    if shorthand is not None and (each or not isinstance(shorthand, str) or shorthand not in properties):
        raise VocabularyError(f"{where}.shorthand: expected the name of a property of the schema's object "
                              "(a scalar written instead of the object is that property; not with `each`)")
    fields = _fields(spec.get("fields"), ftype, value, properties, where)
    enums, numbers = _places(raw, ())
    return CaseKey(key, ftype.name, schema, tuple(fields.items()), shorthand, each, tuple(enums), tuple(numbers))


# the JSON Schema types a value may have to fill a field of each type
_FILLS = {"str": ("string",), "int": ("integer",), "number": ("number", "integer"), "bool": ("boolean",)}


def _fields(fields: Any, ftype: "FactType", value: dict[str, Any], properties: dict[str, Any],
            where: str) -> dict[str, str]:
    """`fields:` checked: each names a field of the type and `.` or a property of the schema
    whose values fit the field, and every required field is filled by a value that is there."""
    if not isinstance(fields, dict) or not fields:
        raise VocabularyError(f"{where}.fields: expected a mapping of the type's fields to `.` or a sub-key")
    for name, part in fields.items():
        if name not in ftype.fields:
            raise VocabularyError(f"{where}.fields.{name}: {ftype.name} has no such field; fields: "
                                  f"{', '.join(ftype.fields)}")
        filled = value if part == WHOLE else properties.get(part) if isinstance(part, str) else None
        if not isinstance(filled, dict):
            raise VocabularyError(f"{where}.fields.{name}: {part!r} is neither `.` nor a property of the schema")
        _check_fill(ftype.fields[name], filled, f"{where}.fields.{name}")
        if ftype.fields[name].required and part != WHOLE and part not in (value.get("required") or []):
            raise VocabularyError(f"{where}.fields.{name}: the field is required, so the schema must require "
                                  f"{part!r} (list it under required)")
    missing = [f.name for f in ftype.fields.values() if f.required and f.name not in fields]
    if missing:
        raise VocabularyError(f"{where}.fields: the required field {missing[0]!r} is filled by nothing")
    return fields


def _check_fill(field: Any, schema: dict[str, Any], where: str) -> None:
    """The schema of what fills `field` admits only values of the field's type."""
    if field.type == "enum":
        if schema.get("enum_of") != field.enum:
            raise VocabularyError(f"{where}: the field is a value of the enum {field.enum}; give its schema "
                                  f"{{enum_of: {field.enum}}}")
        return
    if field.type == "str" and "enum_of" in schema:
        return
    if schema.get("type") not in _FILLS[field.type]:
        raise VocabularyError(f"{where}: the field is {field.type}; give its schema type: "
                              f"{' or '.join(_FILLS[field.type])} (it has {schema.get('type')!r})")


def _check_raw(node: Any, vocab: "Vocabulary", where: str, reached: bool) -> None:
    """No `$ref` (write the schema out), and every {enum_of: <enum>} names an enum and stands
    where values are normalised: under `properties` and `items` only."""
    if isinstance(node, list):
        for item in node:
            _check_raw(item, vocab, where, False)
        return
    if not isinstance(node, dict):
        return
    if "$ref" in node:
        raise VocabularyError(f"{where}: $ref is not read; write the schema out")
    if "enum_of" in node:
        name = node["enum_of"]
        if not isinstance(name, str) or name not in vocab.enums:
            raise VocabularyError(f"{where}: enum_of names no enum: {name!r}")
        if not reached:
            raise VocabularyError(f"{where}: enum_of is read only under properties and items (its values are "
                                  "normalised there)")
    for key, child in node.items():
        if key == "properties" and isinstance(child, dict):
            for name, sub in child.items():
                _check_raw(sub, vocab, f"{where}.properties.{name}", reached)
        else:
            _check_raw(child, vocab, f"{where}.{key}", reached and key == "items")


def _expanded(node: Any, vocab: "Vocabulary") -> Any:
    """The schema with every {enum_of: name} replaced by {enum: [its values]} (checked above)."""
    if isinstance(node, dict):
        rest = {k: _expanded(v, vocab) for k, v in node.items() if k != "enum_of"}
        return {**rest, "enum": list(vocab.enums[node["enum_of"]].values)} if "enum_of" in node else rest
    if isinstance(node, list):
        return [_expanded(v, vocab) for v in node]
    return node


def _check_schema(schema: Any, where: str) -> None:
    import jsonschema

    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        place = ".".join(str(p) for p in exc.absolute_path)
        raise VocabularyError(f"{where}{'.' + place if place else ''}: not a valid JSON Schema "
                              f"({exc.message})") from None


def _places(node: Any, place: Place) -> tuple[list[tuple[Place, str]], list[Place]]:
    """Where the declared schema puts enum values and numbers (the raw schema: enum_of kept)."""
    enums: list[tuple[Place, str]] = []
    numbers: list[Place] = []
    for at, schema in _subschemas(node, place):
        if "enum_of" in schema:
            enums.append((at, schema["enum_of"]))
        if schema.get("type") == "number":
            numbers.append(at)
    return enums, numbers


def _subschemas(node: Any, place: Place) -> Iterator[tuple[Place, dict]]:
    if not isinstance(node, dict):
        return
    yield place, node
    for name, child in (node.get("properties") or {}).items():
        yield from _subschemas(child, place + (name,))
    yield from _subschemas(node.get("items"), place + ("*",))


def facts_of(declared: CaseKey, value: Any) -> Iterator[tuple[tuple, dict[str, Any]]]:
    """(key path below the case key, fields) of each fact the key's (validated) value gives."""
    items = [((index,), item) for index, item in enumerate(value)] if declared.each else [((), value)]
    for below, item in items:
        fields: dict[str, Any] = {}
        for name, part in declared.fields:
            found = item if part == WHOLE else (item.get(part) if isinstance(item, dict) else None)
            if isinstance(found, str):
                found = found.strip()
                if part == WHOLE and not found:
                    break  # an empty text says nothing
            if found is not None:
                fields[name] = found
        else:
            yield below, fields


__all__ = ["CaseKey", "WHOLE", "case_keys", "compile_case_key", "facts_of"]
