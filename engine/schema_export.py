"""The rule-file JSON Schema with the fact vocabulary folded in, for editors: fact type
names, their fields and enum values complete and validate as you type."""

from __future__ import annotations

import copy
from typing import Any

from j6doctor.engine.rule_loader import rule_file_schema
from j6doctor.engine.vocabulary import Vocabulary


def _field_schema(vocab: Vocabulary, spec) -> dict[str, Any]:
    described: dict[str, Any] = {"description": spec.meaning or spec.type}
    if spec.type == "enum":
        values = list(vocab.enums[spec.enum].values)
        empty = [*values, None]  # `field: null` / `eq: null` / `ne: null` test an empty field
        described["anyOf"] = [
            {"enum": empty},
            {"$ref": "#/$defs/ref"},
            # (eq / ne compare with a value of the enum or with another fact's field: {ref: a.f})
            {"type": "object", "properties": {op: {"anyOf": [{"enum": empty}, {"$ref": "#/$defs/ref"}]}
                                              for op in ("eq", "ne")}
             | {op: {"type": "array", "items": {"enum": values}} for op in ("in", "not_in")},
             "additionalProperties": False, "minProperties": 1, "maxProperties": 1},
        ]
    else:
        described["$ref"] = "#/$defs/test"
    return described


def vocabulary_schema(vocab: Vocabulary) -> dict[str, Any]:
    schema = copy.deepcopy(rule_file_schema())
    defs = schema["$defs"]
    tests = {}
    for name, ftype in sorted(vocab.types.items()):
        tests[name] = {
            "type": ["object", "null"],
            "description": ftype.meaning,
            "properties": {f: _field_schema(vocab, spec) for f, spec in ftype.fields.items()},
            "additionalProperties": False,
        }
    defs["fact_tests"] = tests
    type_names = sorted(vocab.types)
    derived = sorted(n for n, t in vocab.types.items() if t.origin == "derived")
    condition = defs["condition"]
    condition["propertyNames"] = {"enum": ["as", "not", *type_names]}
    condition["properties"].update({n: {"$ref": f"#/$defs/fact_tests/{n}"} for n in type_names})
    defs["pattern"]["propertyNames"] = {"enum": type_names}
    defs["pattern"]["properties"] = {n: {"$ref": f"#/$defs/fact_tests/{n}"} for n in type_names}
    defs["conclusion"]["propertyNames"] = {"enum": derived}
    return schema
