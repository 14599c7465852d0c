"""Filling a conclusion's `${alias.field}` placeholders: one way for fact rules and text rules.

A placeholder becomes text (numbers short and stable, None as "—"), except in a field of a
number or true/false type whose whole value is one placeholder: that takes the value as it is
typed, so that `pos: "${m.artifact|chain}"` stays a number. Filters: `|label` (an enum value's label),
`|lower`, and `|<attribute>` (any attribute of an enum value, as the vocabulary declares).
"""

from __future__ import annotations

from typing import Any, Callable

from j6doctor.engine.rule_model import PLACEHOLDER
from j6doctor.engine.vocabulary import EnumSpec

# (alias, field) -> (the raw value, the enum it is a value of, or None)
Lookup = Callable[[str, str], tuple[Any, EnumSpec | None]]


def fill(value: Any, lookup: Lookup, typed: bool = False) -> Any:
    """`value` with its placeholders filled; `typed`: the field is not text."""
    if not isinstance(value, str) or "${" not in value:
        return value
    whole = PLACEHOLDER.fullmatch(value) if typed else None
    if whole is not None:
        return _filtered(whole, lookup)
    return PLACEHOLDER.sub(lambda m: _text(_filtered(m, lookup)), value)


def _filtered(placeholder, lookup: Lookup) -> Any:
    raw, enum = lookup(placeholder.group(1), placeholder.group(2))
    shown = (placeholder.group(3) or "")[1:]
    if not shown:
        return raw
    if shown == "lower":
        return _text(raw).lower()
    if enum is None:
        return raw if shown == "label" else None
    return enum.attr(raw, shown, raw if shown == "label" else None)


def _text(value: Any) -> str:
    """A field value inside a conclusion's text: short and stable."""
    if value is None:
        return "—"
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        return format(value, ".6g")
    return str(value)
