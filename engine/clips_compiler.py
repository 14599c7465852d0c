"""Compile the rule model onto CLIPS constructs (deftemplates, deffunctions, defrules).

The same semantics as the durable-rules translation (compiler.py), written for CLIPS:
- every fact type is a deftemplate `t<n>` with one slot per vocabulary field (`f<n>`) and
  an `id` slot; an empty field is the symbol nil (text is always a CLIPS string, so the
  text "nil" is not empty); negated conditions match shadow templates `s<n>`, asserted
  before any positive fact, as for durable-rules; a rule that only negates waits for the
  ready marker `j6ready`;
- `eq` / `in` compare numbers numerically and everything else by identity; `ne` and
  `not_in` hold on an empty field unless they name null; `lt`..`ge` hold only on numbers;
  `contains` is a case-insensitive substring; a comparison with another fact's field
  holds only when both fields are filled, and a field other conditions compare with must
  be filled for its fact to match at all (the durable-rules translation's guards);
- one fact never matches two positive patterns of one rule (as in durable-rules);
- a rule's right-hand side only reports the match: `(j6fire <rule number> <premise ids>)`.

Names are generated from positions (no vocabulary name reaches the CLIPS text) and every
literal is written as a quoted CLIPS string or a number, so no rule text can inject code.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from j6doctor.engine.engine_json import engine_text
from j6doctor.engine.rule_model import Condition, Ref, Rule, Test
from j6doctor.engine.vocabulary import Vocabulary

FIRE_FUNCTION = "j6fire"
READY_TEMPLATE = "j6ready"

# Helpers every program defines: equality of two filled values, and ordering of numbers.
FUNCTIONS = (
    "(deffunction j6-same (?a ?b) (if (and (numberp ?a) (numberp ?b)) then (= ?a ?b) else (eq ?a ?b)))",
    "(deffunction j6-filled (?a) (neq ?a nil))",
)
_ORDER = {"lt": "<", "le": "<=", "gt": ">", "ge": ">="}
_INT64 = range(-(1 << 63), 1 << 63)


@dataclass(frozen=True)
class Names:
    """Generated CLIPS names of the vocabulary's fact types and fields."""

    template: dict[str, str]  # fact type -> t<n>
    shadow: dict[str, str]  # fact type -> s<n>
    slot: dict[str, dict[str, str]]  # fact type -> field -> f<n>

    @classmethod
    def of(cls, vocab: Vocabulary) -> "Names":
        template, shadow, slot = {}, {}, {}
        for n, (type_name, ftype) in enumerate(vocab.types.items()):
            template[type_name] = f"t{n}"
            shadow[type_name] = f"s{n}"
            slot[type_name] = {name: f"f{k}" for k, name in enumerate(ftype.fields)}
        return cls(template, shadow, slot)


def templates(names: Names) -> list[str]:
    out = [f"(deftemplate {READY_TEMPLATE})"]
    for type_name, tname in names.template.items():
        slots = " ".join(f"(slot {s})" for s in names.slot[type_name].values())
        out.append(f"(deftemplate {tname} (slot id) {slots})")
        out.append(f"(deftemplate {names.shadow[type_name]} (slot id) {slots})")
    return out


def clips_value(value: Any) -> Any:
    """A field value as the engine sees it (as durable-rules sees it: text cut and made
    UTF-8-safe, integers beyond 64 bits as the nearest double)."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return value if value in _INT64 else float(value)
    if isinstance(value, str):
        return engine_text(value)
    return value


def literal(value: Any) -> str:
    """A literal in CLIPS source text."""
    value = clips_value(value)
    if value is None:
        return "nil"
    if value is True:
        return "TRUE"
    if value is False:
        return "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isinf(value):  # a huge integer threshold: beyond every finite number
            return "(float 1e308)" if value > 0 else "(float -1e308)"
        return repr(value)  # a finite float's repr always has a "." or an exponent: CLIPS reads a FLOAT
    text = str(value).replace("\\", "\\\\").replace('"', '\\"')
    return f'"{text}"'


def _equal(var: str, value: Any) -> str:
    if value is None:
        return f"(eq {var} nil)"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"(and (numberp {var}) (= {var} {literal(value)}))"
    return f"(eq {var} {literal(value)})"


def _any(parts: list[str]) -> str:
    return parts[0] if len(parts) == 1 else "(or " + " ".join(parts) + ")"


def _predicate(test: Test, var: str, bound: dict[tuple[str, str], str]) -> str:
    if test.is_join:
        ref: Ref = test.value
        other = bound[(ref.alias, ref.field)]
        filled = f"(j6-filled {var}) (j6-filled {other})"
        if test.op == "eq":
            return f"(and {filled} (j6-same {var} {other}))"
        if test.op == "ne":
            return f"(and {filled} (not (j6-same {var} {other})))"
        return f"(and (numberp {var}) (numberp {other}) ({_ORDER[test.op]} {var} {other}))"
    value = test.value
    if test.op == "eq":
        return _equal(var, value)
    if test.op == "ne":
        return f"(neq {var} nil)" if value is None else f"(not {_equal(var, value)})"
    if test.op == "in":
        return _any([_equal(var, v) for v in value])
    if test.op == "not_in":
        return f"(not {_any([_equal(var, v) for v in value])})"
    if test.op in _ORDER:
        return f"(and (numberp {var}) ({_ORDER[test.op]} {var} {literal(value)}))"
    if test.op == "contains":
        return f"(and (stringp {var}) (integerp (str-index (lowcase {literal(str(value))}) (lowcase {var}))))"
    raise ValueError(f"operator {test.op!r} has no CLIPS translation")  # the loader admits no other


def _pattern(cond: Condition, index: int, names: Names, bound: dict[tuple[str, str], str],
             referenced: set[str], same_type: tuple[int, ...] = ()) -> str:
    slots = names.slot[cond.type]
    tests: dict[str, list[Test]] = {}
    for test in cond.tests:
        tests.setdefault(test.field, []).append(test)
    parts: list[str] = []
    if not cond.negated:
        # durable-rules never binds one fact to two patterns of a rule: neither does this.
        others = "".join(f"&~?p{k}" for k in same_type)
        parts.append(f"(id ?p{index}{others})")
    local: dict[tuple[str, str], str] = {}
    for name in [n for n in slots if n in tests or n in referenced]:
        var = f"?v{index}_{slots[name][1:]}"
        predicates = [_predicate(t, var, bound) for t in tests.get(name, ())]
        if name in referenced:
            predicates.append(f"(j6-filled {var})")
        parts.append(f"({slots[name]} {var}" + "".join(f"&:{p}" for p in predicates) + ")")
        if cond.alias:
            local[(cond.alias, name)] = var
    bound.update(local)
    template = names.shadow[cond.type] if cond.negated else names.template[cond.type]
    pattern = f"({template}" + "".join(" " + p for p in parts) + ")"
    return f"(not {pattern})" if cond.negated else pattern


def defrule(rule: Rule, number: int, names: Names) -> str:
    """One rule as a CLIPS defrule named r<number>."""
    referenced = rule.referenced()
    bound: dict[tuple[str, str], str] = {}
    lhs: list[str] = []
    if not rule.positive:
        lhs.append(f"({READY_TEMPLATE})")
    positives = [i for i, c in enumerate(rule.when) if not c.negated]
    for n, index in enumerate(positives):
        cond = rule.when[index]
        same_type = tuple(k for k in positives[:n] if rule.when[k].type == cond.type)
        lhs.append(_pattern(cond, index, names, bound, referenced.get(cond.alias, set()) if cond.alias else set(),
                            same_type))
    for index, cond in enumerate(rule.when):
        if cond.negated:
            lhs.append(_pattern(cond, index, names, bound, set()))
    premises = " ".join(f"?p{i}" for i in positives)
    return f"(defrule r{number} " + " ".join(lhs) + f" => ({FIRE_FUNCTION} {number} {premises}))"
