"""Whether a document certainly satisfies a JSON Schema, without importing a validator.

jsonschema is what checks documents and explains what is wrong with them
(schema_errors.py); importing it costs more than the rest of reading a case. Most documents
are valid, and the schemas j6doctor writes use a handful of keywords. `certainly_valid`
walks a document with the schema and answers True only when every keyword it meets is one
it knows and every value passes it, judged at least as strictly as Draft 2020-12 does
(an integer written as 1.0, an enum value that is not a string, a key that is not a string:
it does not decide). Anything else is False, and the caller asks jsonschema, which
decides and says why. So this check can make a run faster, never more permissive:
tests/test_schema_certain.py holds it to that against jsonschema on generated documents.
"""

from __future__ import annotations

from typing import Any, Callable

_MAX_DEPTH = 64  # deeper documents go to jsonschema (it bounds them itself)


def certainly_valid(document: Any, schema: dict[str, Any]) -> bool:
    return _valid(document, schema, 0)


def _valid(value: Any, schema: Any, depth: int) -> bool:
    if schema is True:
        return True
    if not isinstance(schema, dict) or depth > _MAX_DEPTH:
        return False
    for keyword, expected in schema.items():
        check = _KEYWORDS.get(keyword)
        if check is None:
            if keyword in _ANNOTATIONS:
                continue
            return False  # a keyword this check does not know: jsonschema decides
        if not check(value, expected, schema, depth):
            return False
    return True


def _type(value: Any, expected: Any, schema: dict, depth: int) -> bool:
    names = expected if isinstance(expected, list) else [expected]
    return any(_is(value, name) for name in names)


def _is(value: Any, name: str) -> bool:
    kind = type(value)
    if name == "string":
        return kind is str
    if name == "integer":
        return kind is int
    if name == "number":
        return kind is int or kind is float
    if name == "boolean":
        return kind is bool
    if name == "object":
        return kind is dict and all(type(k) is str for k in value)
    if name == "array":
        return kind is list
    if name == "null":
        return value is None
    return False


def _enum(value: Any, expected: Any, schema: dict, depth: int) -> bool:
    return type(value) is str and isinstance(expected, list) and value in expected


def _const(value: Any, expected: Any, schema: dict, depth: int) -> bool:
    return type(value) is str and type(expected) is str and value == expected


def _properties(value: Any, expected: Any, schema: dict, depth: int) -> bool:
    if type(value) is not dict:
        return True  # applies to objects only
    return all(_valid(value[name], sub, depth + 1) for name, sub in expected.items() if name in value)


def _additional(value: Any, expected: Any, schema: dict, depth: int) -> bool:
    if type(value) is not dict:
        return True
    if schema.get("patternProperties"):
        return False
    known = schema.get("properties") or {}
    extra = [k for k in value if k not in known]
    if expected is False:
        return not extra
    return all(_valid(value[k], expected, depth + 1) for k in extra)


def _required(value: Any, expected: Any, schema: dict, depth: int) -> bool:
    return type(value) is not dict or all(name in value for name in expected)


def _items(value: Any, expected: Any, schema: dict, depth: int) -> bool:
    if type(value) is not list:
        return True
    return all(_valid(item, expected, depth + 1) for item in value)


def _counted(bound: Callable[[int, int], bool], kind: type) -> Callable[..., bool]:
    def check(value: Any, expected: Any, schema: dict, depth: int) -> bool:
        return type(value) is not kind or (type(expected) is int and bound(len(value), expected))
    return check


def _ranged(bound: Callable[[Any, Any], bool]) -> Callable[..., bool]:
    def check(value: Any, expected: Any, schema: dict, depth: int) -> bool:
        if type(value) not in (int, float):
            return True  # applies to numbers only
        return type(expected) in (int, float) and value == value and bound(value, expected)
    return check


def _any_of(value: Any, expected: Any, schema: dict, depth: int) -> bool:
    return any(_valid(value, sub, depth + 1) for sub in expected)


def _all_of(value: Any, expected: Any, schema: dict, depth: int) -> bool:
    return all(_valid(value, sub, depth + 1) for sub in expected)


def _not(value: Any, expected: Any, schema: dict, depth: int) -> bool:
    return _invalid(value, expected, depth + 1)


def _invalid(value: Any, schema: Any, depth: int) -> bool:
    """Whether a value certainly fails a schema: told only for the plainest ones (a
    required key missing from a mapping, a value of another type or outside an enum, the
    negation of a schema it certainly meets)."""
    if isinstance(schema, dict) and set(schema) == {"not"}:
        return _valid(value, schema["not"], depth + 1)
    if not isinstance(schema, dict) or not schema or not set(schema) <= {"required", "type", "enum"}:
        return False
    if "required" in schema and type(value) is dict and isinstance(schema["required"], list):
        if any(name not in value for name in schema["required"]):
            return True
    if "type" in schema and type(value) in (str, bool, dict, list, type(None)):
        names = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(_is(value, name) for name in names) and all(isinstance(n, str) for n in names):
            return True
    if "enum" in schema and type(value) is str and isinstance(schema["enum"], list):
        return value not in schema["enum"]
    return False


def _if(value: Any, expected: Any, schema: dict, depth: int) -> bool:
    """`if` / `then` / `else`: the branch the condition certainly takes must certainly hold;
    a condition this check cannot settle leaves the document to jsonschema."""
    if _valid(value, expected, depth + 1):
        return _valid(value, schema.get("then", True), depth + 1)
    if _invalid(value, expected, depth + 1):
        return _valid(value, schema.get("else", True), depth + 1)
    return False


def _applied_by_if(value: Any, expected: Any, schema: dict, depth: int) -> bool:
    return "if" in schema  # `then` / `else` are judged by `if`


_KEYWORDS: dict[str, Callable[[Any, Any, dict, int], bool]] = {
    "type": _type, "enum": _enum, "const": _const,
    "properties": _properties, "additionalProperties": _additional, "required": _required,
    "items": _items,
    "maxItems": _counted(lambda n, m: n <= m, list), "minItems": _counted(lambda n, m: n >= m, list),
    "maxProperties": _counted(lambda n, m: n <= m, dict), "minProperties": _counted(lambda n, m: n >= m, dict),
    "maxLength": _counted(lambda n, m: n <= m, str), "minLength": _counted(lambda n, m: n >= m, str),
    "minimum": _ranged(lambda v, m: v >= m), "maximum": _ranged(lambda v, m: v <= m),
    "exclusiveMinimum": _ranged(lambda v, m: v > m), "exclusiveMaximum": _ranged(lambda v, m: v < m),
    "anyOf": _any_of, "allOf": _all_of, "not": _not,
    "if": _if, "then": _applied_by_if, "else": _applied_by_if,
}
# keywords that say nothing about validity
_ANNOTATIONS = frozenset({"$schema", "$id", "title", "description", "default", "examples", "$comment",
                          "deprecated", "readOnly", "writeOnly"})

__all__ = ["certainly_valid"]
