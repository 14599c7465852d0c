"""How far a rule's join can grow before it runs: the partial matches the engine may hold
for several positive conditions on one fact type.

Both engines match a rule's conditions left to right and keep every partial match. Two
conditions on one type, with nothing tying the second to the fact the first bound, pair
every fact of the type with every other; k such conditions over n facts make up to
n·(n−1)·…·(n−k+1) partial matches (a fact never fills two conditions of one rule). A
literal test (`status: normal`) narrows that only when the facts differ in that field,
which is not known before a run; an equality with a field of a fact bound before
(`{ref: a.name}`) ties the condition to that fact. 16 open conditions over 20 facts are
about 10^17 partial matches: the engine runs out of its memory cap long before.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from math import perm

from j6doctor.engine.rule_model import Rule

# Facts of one type in a rich case: tried fixes, a compare table's breaks, script findings.
FACTS_ASSUMED = 20
# More open conditions on one type than this is flagged by `rules lint`: 3 over 20 facts is
# 6,840 partial matches (milliseconds); 4 is 116,280, 5 is 1.9 million, each a copy of its facts.
MAX_OPEN_CONDITIONS = 3


@dataclass(frozen=True)
class JoinGrowth:
    """The fact type of a rule with the most open conditions, and how many."""

    rule: Rule
    type: str
    open: int  # positive conditions on the type that no equality ties to a fact bound before

    def matches(self, facts: int = FACTS_ASSUMED) -> int:
        """Partial matches the open conditions can make over `facts` facts of the type."""
        return perm(facts, min(self.open, facts))

    def describe(self) -> str:
        return (f"{self.open} conditions on {self.type!r} that no equality with an earlier fact ties "
                f"(`{{ref: alias.field}}`): over {FACTS_ASSUMED} {self.type} facts the engine can hold up to "
                f"{self.matches():,} partial matches ({FACTS_ASSUMED}·{FACTS_ASSUMED - 1}·… for each open "
                "condition; a literal test narrows them only where the facts differ in that field)")


def growth(rule: Rule) -> JoinGrowth | None:
    """The rule's fact type with the most open conditions (None for a text rule or a rule
    with no two open conditions on one type)."""
    if rule.text is not None:
        return None
    bound: set[str] = set()
    open_conditions: Counter[str] = Counter()
    for cond in rule.when:
        if cond.negated:
            continue
        if not any(t.is_join and t.op == "eq" and t.value.alias in bound for t in cond.tests):
            open_conditions[cond.type] += 1
        if cond.alias:
            bound.add(cond.alias)
    if not open_conditions:
        return None
    type_name, count = max(open_conditions.items(), key=lambda item: (item[1], item[0]))
    return JoinGrowth(rule, type_name, count) if count >= 2 else None


def largest(rules: list[Rule], count: int = 3) -> list[JoinGrowth]:
    """The rules whose joins can grow the most, largest first: what to name when the engine
    ran out of time or memory."""
    found = [g for g in map(growth, rules) if g is not None]
    return sorted(found, key=lambda g: (-g.open, g.rule.id))[:count]


def suspects(rules: list[Rule]) -> str:
    """`; most likely <rule> (<file>:<line>: ...)`: the rules to name when the engine ran out of
    its time or memory on a rule base (engine/worker.py), or "" when no rule joins openly."""
    found = largest(rules)
    flagged = [g for g in found if g.open > MAX_OPEN_CONDITIONS]
    found = flagged or found  # the rules lint warns about, when there are such
    if not found:
        return ""
    return "; most likely " + ", ".join(
        f"{g.rule.id} ({g.rule.file}:{g.rule.line}: {g.open} conditions on {g.type} joined with each other)"
        for g in found)
