"""The JSON Schema of the public verdict, derived from its typed record (verdict_model.py),
so that the record and the published schema cannot drift apart."""

from __future__ import annotations

import types
import typing
from typing import Any

from j6doctor import verdict_model
from j6doctor.facts import enum_values
from j6doctor.verdict_model import SCHEMA_VERSION, Verdict

_SCALARS = {str: {"type": "string"}, int: {"type": "integer"}, float: {"type": "number"},
            bool: {"type": "boolean"}, type(None): {"type": "null"}}
_DESCRIPTIONS = {
    "schema_version": "The version of this layout: a new key raises the minor number, a removed or changed key the major one.",
    "trace": "Every fact of the rule run: input facts with their source, derived facts with the rule and premises.",
    "evidence": "The input facts the concluded stage rests on, with their sources.",
}


def _type_schema(hint: Any, defs: dict[str, Any]) -> dict[str, Any]:
    origin = typing.get_origin(hint)
    if hint in _SCALARS:
        return dict(_SCALARS[hint])
    if hint is Any:
        return {}
    if origin in (typing.Union, types.UnionType):
        return {"anyOf": [_type_schema(arg, defs) for arg in typing.get_args(hint)]}
    if origin is list:
        (item,) = typing.get_args(hint)
        return {"type": "array", "items": _type_schema(item, defs)}
    if origin is dict:
        return {"type": "object"}
    if verdict_model.is_record(hint):
        name = hint.__name__
        if name not in defs:
            defs[name] = {}  # placeholder: a record met again while being built
            defs[name] = _record_schema(hint, defs)
        return {"$ref": f"#/$defs/{name}"}
    raise TypeError(f"no JSON Schema for {hint!r}")


def _record_schema(cls: type, defs: dict[str, Any]) -> dict[str, Any]:
    hints = typing.get_type_hints(cls, vars(verdict_model))
    properties = {}
    for name in cls._fields:
        properties[name] = _type_schema(hints[name], defs)
        if cls is Verdict and name in _DESCRIPTIONS:
            properties[name]["description"] = _DESCRIPTIONS[name]
    return {"type": "object", "properties": properties, "required": list(properties),
            "additionalProperties": False}


def verdict_schema() -> dict[str, Any]:
    defs: dict[str, Any] = {}
    root = _record_schema(Verdict, defs)
    root["properties"]["schema_version"]["const"] = SCHEMA_VERSION
    # the values the vocabulary allows (with the packs' of this run)
    root["properties"]["stage"]["enum"] = list(enum_values("stage"))
    root["properties"]["missing"]["items"]["enum"] = list(enum_values("gate_item"))
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"https://j6doctor.invalid/schema/verdict-{SCHEMA_VERSION}.json",
        "title": "j6doctor verdict",
        "description": "The JSON verdict of `j6doctor diagnose --format json` (docs/CONTRACT.md).",
        **root,
        "$defs": dict(sorted(defs.items())),
    }
