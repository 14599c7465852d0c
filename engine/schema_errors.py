"""One translation of jsonschema validation errors into messages a person can act on: the
unknown key with its closest allowed spelling, the allowed values, the expected kind of
value in words. Used for every document checked against a JSON Schema (rule files, case
files); a caller adds what only its format knows before falling back to this.

Messages carry no key path: the caller places them (`file:line: key: message`).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Iterator

if TYPE_CHECKING:  # jsonschema is imported by the callers that validate, not on every start
    import jsonschema

_WORDS = {"object": "a mapping", "array": "a list", "string": "a string", "number": "a number",
          "boolean": "true or false", "integer": "a whole number", "null": "nothing",
          "string or number": "a string", "string or array": "a string or a list"}
_TYPE_NAMES = {bool: "boolean", int: "number", float: "number", str: "string", list: "list",
               dict: "mapping", type(None): "nothing (null)"}


def shown(value: Any, limit: int | None = None) -> str:
    """JSON-like text of a value; YAML also gives dates, bytes and sets."""
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except (RecursionError, ValueError, TypeError):  # nested too deeply, circular, keys YAML made (dates)
        text = f"<{type(value).__name__}>"
    return text if limit is None or len(text) <= limit else text[:limit] + " …"


def describe_type(value: Any) -> str:
    """`string "abc"`, `list [1, 2]`: what a value is, for "expected X, got Y"."""
    return f"{_TYPE_NAMES.get(type(value), type(value).__name__)} {shown(value)[:60]}"


def suggestion(word: Any, allowed: list[str]) -> str:
    """` (did you mean 'x'?)` for a close allowed spelling, else ''."""
    import difflib  # imported when a spelling is to be guessed, not on every run

    close = difflib.get_close_matches(str(word), allowed, n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def key_of(path: tuple) -> str:
    return ".".join(str(p) for p in path) or "(top level)"


def messages(err: "jsonschema.ValidationError") -> Iterator[tuple[tuple, str]]:
    """(key path, message) per problem of one validation error: an object with three unknown
    keys gives three."""
    path = tuple(err.absolute_path)
    if err.validator == "additionalProperties" and isinstance(err.instance, dict):
        yield from _unknown_keys(err, path)
        return
    explain = _EXPLAIN.get(err.validator)
    yield path, explain(err) if explain is not None else err.message


def _unknown_keys(err: "jsonschema.ValidationError", path: tuple) -> Iterator[tuple[tuple, str]]:
    allowed = [str(k) for k in (err.schema.get("properties") or {})]
    where = f"under {key_of(path)}" if path else "at the top level"
    for name in sorted(set(err.instance) - set(allowed), key=str):  # YAML keys: str, int, null, date
        if allowed:
            yield path + (name,), f"unknown key {name!r} {where}{suggestion(name, allowed)}; allowed: {', '.join(allowed)}"
        else:
            yield path + (name,), f"unknown key {name!r} {where}; nothing is allowed there"


def _not_allowed(err: "jsonschema.ValidationError") -> str:
    allowed = [str(v) for v in err.validator_value]
    return (f"{shown(err.instance)} is not allowed{suggestion(str(err.instance).lower(), allowed)}; "
            f"allowed: {', '.join(allowed)}")


def _wrong_type(err: "jsonschema.ValidationError") -> str:
    expected = err.validator_value
    expected = " or ".join(expected) if isinstance(expected, list) else expected
    extra = ""
    if expected == "string" and isinstance(err.instance, (int, float)) and not isinstance(err.instance, bool):
        extra = " (quote it, e.g. \"4.4.2\": YAML reads 4.4 as a number)"
    return f"expected {_WORDS.get(expected, expected)}, got {describe_type(err.instance)}{extra}"


def _missing(err: "jsonschema.ValidationError") -> str:
    missing = err.message.split("'")[1] if "'" in err.message else err.message
    return f"{missing!r} is required"


def _too_many(err: "jsonschema.ValidationError") -> str:
    what = "entries" if err.validator == "maxItems" else "keys"
    return (f"{len(err.instance)} {what}; at most {err.validator_value} are read "
            "(keep the ones that matter for this report)")


def _too_few(err: "jsonschema.ValidationError") -> str:
    what = "entries" if err.validator == "minItems" else "keys"
    return f"{len(err.instance)} {what}; at least {err.validator_value} needed"


_BOUND_WORDS = {"minimum": "at least", "exclusiveMinimum": "greater than",
                "maximum": "at most", "exclusiveMaximum": "less than"}


def _out_of_range(err: "jsonschema.ValidationError") -> str:
    return f"must be {_BOUND_WORDS[err.validator]} {err.validator_value}"


def _too_long(err: "jsonschema.ValidationError") -> str:
    return f"at most {err.validator_value} characters; this one has {len(err.instance)}"


# The message of each JSON-Schema keyword that has one of ours (others: jsonschema's own).
_EXPLAIN = {"enum": _not_allowed, "type": _wrong_type, "required": _missing,
            "maxItems": _too_many, "maxProperties": _too_many, "minItems": _too_few, "minProperties": _too_few,
            **{keyword: _out_of_range for keyword in _BOUND_WORDS}, "maxLength": _too_long}
