"""Conditions and input facts in the words of the case file: what a user would write to add a
fact (`results.quantized_bc: {status: normal, evidence: dataset_eval}`) and where a fact that
blocks a rule came from (`results.qat_bc: normal`, case.yaml line 11). Each input fact type
says how it is written (`written_as` in the vocabulary); a type without it keeps the
engine's wording."""

from __future__ import annotations

from typing import Any

from j6doctor.engine import Fact, RunResult
from j6doctor.engine.explain import RuleCheck, simplified, walk_checks
from j6doctor.engine.rule_model import Condition, Ref
from j6doctor.facts import label, vocabulary, written_form, written_value as _value
from j6doctor.verdict import supporting_inputs

_SYMBOLS = {"lt": "<", "le": "≤", "gt": ">", "ge": "≥"}


MAX_INSTEAD = 3


def condition_words(cond: Condition) -> str:
    """What to write in the case so that an input fact meets `cond`."""
    ftype = vocabulary().types.get(cond.type)
    if ftype is None or not ftype.written_as:
        return cond.describe()
    values: dict[str, list[str]] = {}
    for test in cond.tests:
        if test.op == "eq":
            text = _value(cond.type, test.field, test.value)
        elif test.op == "in":
            text = " / ".join(_value(cond.type, test.field, v) for v in test.value)
        elif test.op == "ne":
            text = f"不是 {_value(cond.type, test.field, test.value)}"
        elif test.op == "not_in":
            text = "不是 " + " / ".join(_value(cond.type, test.field, v) for v in test.value)
        elif test.op == "contains":
            text = f"含「{test.value}」"
        else:
            text = f"{_SYMBOLS[test.op]} {test.value}"
        values.setdefault(test.field, []).append(text)
    words = {k: "，".join(v) for k, v in values.items()}
    text = written_form(cond.type, words)
    placed = set(ftype.written_fields)
    extra = [f"{k}: {v}" for k, v in words.items() if k not in placed]
    return text + (f"（且 {'，'.join(extra)}）" if extra else "")


def _plain_value(type_name: str, field: str, value: Any) -> str:
    if isinstance(value, Ref):
        return f"{value.alias} 的 {value.field}"
    spec = vocabulary().types[type_name].fields.get(field) if type_name in vocabulary().types else None
    if spec is not None and spec.type == "enum" and isinstance(value, str):
        return label(spec.enum, value)
    if isinstance(value, (list, tuple)):
        return " / ".join(_plain_value(type_name, field, v) for v in value)
    return "true" if value is True else "false" if value is False else str(value)


_OPS = {**_SYMBOLS, "eq": "=", "ne": "≠", "in": "∈", "not_in": "∉", "contains": "含"}


def meaning_words(cond: Condition) -> str:
    """A condition on a fact the rules derive, in the vocabulary's words: its type's meaning
    and each test with enum labels (`链路上最早的已确认异常产物：artifact = qat.bc`)."""
    ftype = vocabulary().types.get(cond.type)
    meaning = ftype.meaning if ftype is not None and ftype.meaning else cond.type
    tests = "，".join(f"{t.field} {_OPS.get(t.op, t.op)} {_plain_value(cond.type, t.field, t.value)}"
                     for t in cond.tests)
    return ("不存在" if cond.negated else "") + meaning + (f"（{tests}）" if tests else "")


def fact_words(fact: Fact) -> str:
    """An input fact as the case (or the file) gave it, with where: `results.qat_bc: {...}
    （case.yaml:11 results.qat_bc）`."""
    text = written_form(fact.type, {k: _value(fact.type, k, v) for k, v in fact.fields.items()})
    if text is None:
        text = f"{fact.type}（" + "，".join(f"{k}={v}" for k, v in fact.fields.items() if v not in ("", None)) + "）"
    return f"{text}（{fact.source.describe()}）" if fact.source is not None else text


def annotate(checks: list[RuleCheck], result: RunResult) -> None:
    """Fill each unmet input condition with what to write, and each failing `not:` with the
    input facts its blockers came from."""
    for cond in walk_checks(checks):
        if cond.pattern is not None:
            ftype = vocabulary().types.get(cond.pattern.type)
            written = ftype is not None and ftype.origin == "input" and ftype.written_as
            literal = Condition(cond.pattern.type,
                                simplified(tuple(t for t in cond.pattern.tests if not isinstance(t.value, Ref))))
            cond.words = (("案例中没有 " if cond.negated else "案例中 ") + condition_words(literal) if written
                          else meaning_words(cond.pattern))
        if cond.satisfied:
            continue
        if cond.needs is not None:
            cond.written = condition_words(cond.needs)
            entries = [result.fact(fid) for fid in cond.instead_facts]  # the same case entry (results.{artifact})
            cond.instead = [fact_words(f) for f in entries if f.derivation is None][:MAX_INSTEAD]
        if cond.negated and cond.facts:
            blockers = [result.fact(fid) for fid in cond.facts]
            cond.blocked_by = list(dict.fromkeys(fact_words(f) for f in supporting_inputs(result, blockers)))
