"""Which facts a stratum's rules could match at all, so that a run asserts only those.

A fact that no condition of a stratum admits by its literal tests can neither fire a rule
of that stratum nor block one: asserting it there only costs the engine's time. For each
fact type the stratum's conditions name, the *gate* is one field that every such condition
tests against literals with `eq` or `in`, with every value those tests admit; a fact passes
when its field holds one of them. A type with a condition that tests no such field has no
gate (all its facts pass). Positive and negated conditions have gates of their own: a
shadow (runtime.py) matters only to a negation that could see it.

A gate only ever lets through more than the conditions admit (other tests, joins and the
other conditions still decide in the engine), so what a run derives and fires is the same
with gates as without them.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from j6doctor.engine.rule_model import Condition

Gate = tuple[str, frozenset]  # (field, the values a fact's field may hold to pass)
Gates = dict[str, "Gate | None"]  # fact type → its gate (None: every fact of the type passes)


def gates_of(conditions: Iterable[Condition]) -> Gates:
    """The gate of each fact type the conditions name."""
    by_type: dict[str, list[Condition]] = defaultdict(list)
    for condition in conditions:
        by_type[condition.type].append(condition)
    return {type_name: _gate(conds) for type_name, conds in sorted(by_type.items())}


def _literal_values(condition: Condition) -> dict[str, set]:
    """field → the values its `eq` / `in` tests against literals admit (all of them at once)."""
    tested: dict[str, set] = {}
    for test in condition.tests:
        if test.is_join or test.op not in ("eq", "in"):
            continue
        values = {test.value} if test.op == "eq" else set(test.value)
        tested[test.field] = tested[test.field] & values if test.field in tested else values
    return tested


def _gate(conditions: list[Condition]) -> Gate | None:
    """The most selective field every condition tests against literals, else None."""
    try:
        per_condition = [_literal_values(c) for c in conditions]
    except TypeError:  # a literal that cannot be hashed: no gate
        return None
    common = set.intersection(*(set(tested) for tested in per_condition))
    best: Gate | None = None
    for field_name in sorted(common):
        values = frozenset().union(*(tested[field_name] for tested in per_condition))
        if best is None or len(values) < len(best[1]):
            best = (field_name, values)
    return best


def passes(gates: Gates, type_name: str, fields: dict[str, Any]) -> bool:
    """Whether a fact of `type_name` with these fields gets through its type's gate."""
    gate = gates.get(type_name)
    if gate is None:
        return True
    try:
        return fields.get(gate[0]) in gate[1]
    except TypeError:  # an unhashable field value (a list): let the engine decide
        return True
