"""The case file as a user may write it, as a JSON Schema (what `j6doctor schema case`
publishes for editors and other tools).

The reader checks a case against `case_file.case_schema()` only after normalising it:
shorthands (`results: {qat_bc: normal}`, `metrics: eval.csv`, `bc_flow_check: consistent`,
`layout: mismatch`), aliases of keys and values compared ignoring case, spaces, '-', '_'
and '.' (`calibrated_model`, `Quantized-BC`, `掉点`), and numbers YAML left as text
(`1e-05`). This schema is derived from the same tables the normaliser uses
(case_file._KEY_PLACES, enum_places(), number_places(), the declared keys' shorthands), so that a case the tool accepts is
valid here; what it still cannot say (the meaning checks, e.g. a platform naming two
chips) is left to the tool's own messages."""

from __future__ import annotations

import copy
from typing import Any

from j6doctor.engine.strict_yaml import EXPONENT_NUMBER_PATTERN
from j6doctor.engine.vocabulary import alias_key
from j6doctor.facts import per_vocabulary, vocabulary
from j6doctor.probes.case_file import _KEY_PLACES, case_schema, declared_keys, enum_places, number_places

_NOISE = r"[\s_\-.]*"  # what alias_key ignores, between any two characters
_SPECIAL = set("\\^$.|?*+()[]{}/")


def _spelling_pattern(key: str) -> str:
    """An ECMA regular expression matching every text whose alias_key is `key`."""
    parts = []
    for ch in key:
        if ch.lower() != ch.upper():
            parts.append(f"[{ch.lower()}{ch.upper()}]")
        else:
            parts.append("\\" + ch if ch in _SPECIAL else ch)
    return _NOISE.join(parts)


def _spelled(enum: str, allowed: list[str] | None = None) -> dict[str, Any]:
    """A text naming a value of `enum` (of those `allowed` there, where the place takes only
    some: a case leaves `evidence: unspecified` out): the value or an alias, in any case and
    spacing."""
    spec = vocabulary().enums[enum]
    values = [v for v in spec.values if allowed is None or v in allowed]
    keys = sorted({alias_key(s) for v in values for s in spec.spellings(v) if alias_key(s)})
    return {"type": "string",
            "pattern": f"^{_NOISE}(?:{'|'.join(_spelling_pattern(k) for k in keys)}){_NOISE}$",
            "description": f"one of {', '.join(values)} (enum {enum}; its aliases too; case, spaces, "
                           "'-', '_' and '.' do not matter)"}


def _at(node: dict[str, Any], key: str) -> list[dict[str, Any]]:
    """The schemas of the value under `key` ("*": any key or index) of a value `node` describes."""
    found: list[dict[str, Any]] = []
    for branch in (node, *(node.get(k) for k in ("then", "else")), *node.get("anyOf", ())):
        if not isinstance(branch, dict):
            continue
        if key == "*":
            found += [s for s in (branch.get("items"), branch.get("additionalProperties")) if isinstance(s, dict)]
            found += list((branch.get("properties") or {}).values())
        elif key in (branch.get("properties") or {}):
            found.append(branch["properties"][key])
    unique: list[dict[str, Any]] = []
    for schema in found:  # shared sub-schemas (every artifact's result) once
        if all(schema is not u for u in unique):
            unique.append(schema)
    return unique


def _nodes(schema: dict[str, Any], place: tuple[str, ...]) -> list[dict[str, Any]]:
    nodes = [schema]
    for key in place:
        nodes = [child for node in nodes for child in _at(node, key)]
    return nodes


def _replace(node: dict[str, Any], new: dict[str, Any]) -> None:
    node.clear()
    node.update(new)


@per_vocabulary
def written_case_schema() -> dict[str, Any]:
    schema = copy.deepcopy(case_schema())
    schema["type"] = ["object", "null"]  # an empty file is an empty case
    for place, enum in enum_places():
        for node in _nodes(schema, place):
            _replace(node, _spelled(enum, node.get("enum")))
    for place in number_places():
        for node in _nodes(schema, place):
            _replace(node, {"anyOf": [dict(node), {"type": "string", "pattern": EXPONENT_NUMBER_PATTERN}]})
    props = schema["properties"]
    # shorthands: a bare value stands for the object holding it under one key
    for key, under in ((k.key, k.shorthand) for k in declared_keys() if k.shorthand):
        props[key] = {"anyOf": [props[key], props[key]["properties"][under]]}
    props["metrics"] = {"anyOf": [props["metrics"], props["metrics"]["properties"]["file"]]}
    shorthand = {("results",): "status", ("deployment", "checklist"): "status", ("user_checks",): "status"}
    for place, enum in _KEY_PLACES:
        for mapping in _nodes(schema, place):
            values = list(mapping.pop("properties").values())
            value = values[0] if values else {}
            if place in shorthand:
                value = {"anyOf": [value, value["properties"][shorthand[place]]]}
            mapping["propertyNames"] = _spelled(enum)
            mapping["additionalProperties"] = value
    return schema
