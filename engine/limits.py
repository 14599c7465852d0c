"""Static check of a compiled ruleset against durable-rules' fixed tables.

durable-rules 2.0.28 has compile-time limits whose overflow hangs the process inside C
code holding the GIL, segfaults, or fails with a bare error code (docs/engine_notes.md
§3). A rule base is checked here before registration, so an expert's YAML can never hang
the tool. The alpha network is modelled as the engine builds it: one node per test, in
pattern order, shared between patterns with the same prefix.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from j6doctor.engine.errors import RuleBaseError

if TYPE_CHECKING:
    from j6doctor.engine.compiler import Partition
    from j6doctor.engine.vocabulary import Vocabulary

# Engine constants (docs/engine_notes.md §3) and the margins this checker keeps below them.
MAX_RULES = 4096
MAX_POSITIVE_PATTERNS = 16  # MAX_MESSAGE_FRAMES
MAX_CHILD_TESTS = 500  # NEXT_BUCKET_LENGTH 512: at 512 the first assert hangs
MAX_IDENTICAL_CHAINS = 250  # BETA_LIST_LENGTH 256: at 256 the engine segfaults
MAX_PENDING_MATCHES = 60  # MAX_STACK_SIZE 64: error 303 at assert time
MAX_BETA_EXPRESSIONS = 31  # MAX_SEQUENCE_EXPRESSIONS 32
MAX_FACT_KEYS = 200  # MAX_OBJECT_PROPERTIES 255, minus what the engine adds


@dataclass
class _Node:
    children: dict[str, "_Node"] = field(default_factory=dict)
    ends: list[str] = field(default_factory=list)  # rule ids whose pattern ends here
    joins: list[str] = field(default_factory=list)  # ... of those, the patterns that compare with other facts


def _is_equality(test: dict) -> bool:
    (key, value), = test.items()
    return not key.startswith("$") and not isinstance(value, dict)


def _is_join(test: dict) -> bool:
    (key, value), = test.items()
    if key.startswith("$") and key not in ("$or", "$and"):
        (_, operand), = value.items()
        return isinstance(operand, dict)
    return isinstance(value, dict) and not key.startswith("$")


def _tests(expr: dict) -> list[dict]:
    if "$and" in expr:
        return list(expr["$and"])
    return [expr]


def _beta_count(tests: list[dict]) -> int:
    count = 2 if len(tests) > 1 else 0
    for test in tests:
        if _is_join(test):
            count += 1
        elif "$or" in test or "$and" in test:
            count += 2
    return count


def check_partition(part: "Partition", vocab: "Vocabulary") -> list[RuleBaseError]:
    errors: list[RuleBaseError] = []

    def fail(message: str, crule: Any = None, hint: str = "") -> None:
        rule = crule.rule if crule is not None else None
        errors.append(RuleBaseError(
            message,
            file=rule.file if rule else None,
            line=rule.line if rule else None,
            rule_id=rule.id if rule else None,
            hint=hint or None,
        ))

    if len(part.rules) + 1 > MAX_RULES:
        everyone = {c.rule.id for c in part.rules}
        fail(f"ruleset {part.name} has {len(part.rules)} rules; durable-rules allows {MAX_RULES - 1}; "
             f"{_from_files(part, everyone)}", _latest(part, everyone))

    root = _Node()
    for crule in part.rules:
        positives = 0
        for pattern in crule.definition["all"]:
            (alias, expr), = pattern.items()
            if not alias.endswith("$not"):
                positives += 1
            tests = _tests(expr)
            if _beta_count(tests) > MAX_BETA_EXPRESSIONS:
                fail(f"a condition has too many comparisons with other facts "
                     f"(durable-rules allows {MAX_BETA_EXPRESSIONS} per condition)", crule,
                     "split the condition into several rules")
            node = root
            joins = 0
            for test in tests:
                if _is_join(test):
                    joins += 1
                    continue
                key = json.dumps(test, sort_keys=True, ensure_ascii=False)
                node = node.children.setdefault(key, _Node())
            node.ends.append(crule.rule.id)
            if joins:
                # each such pattern is one pending match when a fact reaches this node
                # (measured: 64 patterns with joins on one node pass, the 65th gives 303)
                node.joins.append(crule.rule.id)
        if positives > MAX_POSITIVE_PATTERNS:
            fail(f"{positives} positive conditions; durable-rules allows {MAX_POSITIVE_PATTERNS} "
                 "facts per match", crule, "split the rule")

    def walk(node: _Node, pending: int, path: list[str]) -> None:
        # An `in` list is one `$or` test whose every value the engine hangs off this node
        # (measured: one list of 512 values, or two rules with 300 each, hang it).
        if _branches(node) > MAX_CHILD_TESTS:
            # blame the rules that bring the most values (with their count), not whichever
            # rule sorts first: a bundled rule testing one value on the same field is not the
            # cause of a pack's 512-value list, nor of 40 pack rules with 16 values each
            share: dict[str, int] = {}
            for key, child in node.children.items():
                for rid in _owners(child):
                    share[rid] = share.get(rid, 0) + _alternatives(key)
            culprits = sorted(share, key=lambda rid: (-share[rid], rid))
            big = [rid for rid in culprits if share[rid] * 10 >= _branches(node)]
            named = ", ".join(f"{rid} ({share[rid]})" for rid in (big or culprits)[:3])
            first = next(c for c in part.rules if c.rule.id == (big or culprits)[0])
            fail(f"{_branches(node)} different tests on the same condition prefix, counting every value "
                 f"of `in` lists (most of them in {named}); durable-rules hangs "
                 f"at 512 (limit used here: {MAX_CHILD_TESTS})", first,
                 "test a coarser field (compute a category upstream) instead of listing hundreds of values")
            return
        if len(node.children) > MAX_CHILD_TESTS:
            sample = sorted(node.children)[:3]
            owners = {rid for child in node.children.values() for rid in _owners(child)}
            fail(f"{len(node.children)} different tests on the same condition prefix "
                 f"(e.g. {', '.join(sample)}); durable-rules hangs at 512 "
                 f"(limit used here: {MAX_CHILD_TESTS}); {_from_files(part, owners)}", _latest(part, owners),
                 "test a coarser field (compute a category upstream) instead of one rule per value")
        if len(node.ends) > MAX_IDENTICAL_CHAINS:
            fail(f"{len(node.ends)} conditions with identical tests "
                 f"({' & '.join(path) or 'no test'}); durable-rules corrupts memory at 256 "
                 f"(limit used here: {MAX_IDENTICAL_CHAINS}); {_from_files(part, set(node.ends))}",
                 _latest(part, set(node.ends)), "merge these rules or make their conditions more specific")
        ranged = [key for key in node.children if not _is_equality(json.loads(key))]
        here = pending + len(ranged)
        if here + len(node.joins) > MAX_PENDING_MATCHES:
            # the rules testing here: the range / inequality tests below this node and the
            # patterns with joins ending at it (the ones above it are named where they are)
            involved = set(node.joins).union(*(_owners(node.children[key]) for key in ranged))
            fail(f"{here + len(node.joins)} range / inequality / join tests can match one "
                 f"fact at once under {' & '.join(path) or 'the root'} ({len(node.joins)} conditions that "
                 f"compare with other facts end there); durable-rules fails above 64 (limit used here: "
                 f"{MAX_PENDING_MATCHES}); {_from_files(part, involved)}", _latest(part, involved),
                 "replace ladders of thresholds by an equality on a computed band; give conditions that "
                 "compare with other facts an equality test of their own (`field: value`), so that they do "
                 "not all end on one node, or merge rules that compare alike")
            return
        for key, child in sorted(node.children.items()):
            walk(child, here, path + [key])

    walk(root, 0, [])

    for type_name in sorted(part.consumes | part.negates):
        ftype = vocab.types.get(type_name)
        if ftype is not None and len(ftype.fields) + 5 > MAX_FACT_KEYS:
            readers = {c.rule.id for c in part.rules if type_name in c.rule.consumes() | c.rule.negates()}
            fail(f"fact type {type_name!r} has {len(ftype.fields)} fields; durable-rules "
                 f"allows about {MAX_FACT_KEYS}; {_from_files(part, readers)}", _latest(part, readers),
                 "a pack's vocabulary.yaml declares the type: keep its fields below the limit")
    return errors


def _alternatives(key: str) -> int:
    test = json.loads(key)
    alternatives = test.get("$or") if isinstance(test, dict) else None
    return len(alternatives) if isinstance(alternatives, list) else 1


def _branches(node: _Node) -> int:
    """Distinct tests under a node, each value of an `$or` counted as one."""
    seen: set[str] = set()
    for key in node.children:
        test = json.loads(key)
        alternatives = test.get("$or") if isinstance(test, dict) else None
        if isinstance(alternatives, list):
            seen.update(json.dumps(a, sort_keys=True, ensure_ascii=False) for a in alternatives)
        else:
            seen.add(key)
    return len(seen)


def _latest(part: "Partition", rule_ids: set[str]) -> Any:
    """Of these rules, the one loaded last (a pack's override, else the last in load order):
    the one whose addition crossed the limit, where the message is placed."""
    involved = [(bool(c.rule.overrides), n, c) for n, c in enumerate(part.rules) if c.rule.id in rule_ids]
    return max(involved, key=lambda x: x[:2])[2] if involved else None


def _from_files(part: "Partition", rule_ids: set[str]) -> str:
    """`rules involved: 60 in pack/a.yaml (site.j0, site.j1, ...), 1 in rules/55.yaml (reading.x)`."""
    by_file: dict[str, list[str]] = {}
    for crule in part.rules:
        if crule.rule.id in rule_ids and crule.rule.id not in by_file.get(crule.rule.file, ()):
            by_file.setdefault(crule.rule.file, []).append(crule.rule.id)
    shown = [f"{len(ids)} in {file} ({', '.join(ids[:3])}{', ...' if len(ids) > 3 else ''})"
             for file, ids in sorted(by_file.items(), key=lambda x: -len(x[1]))]
    return "rules involved: " + "; ".join(shown)


def _owners(node: _Node) -> set[str]:
    found = set(node.ends)
    for child in node.children.values():
        found |= _owners(child)
    return found


def check_rulebase(compiled: Any, vocab: "Vocabulary") -> list[RuleBaseError]:
    """The whole compiled rule base against durable-rules' fixed tables. Pure Python: `rules
    lint` checks a pack against them even where durable-rules is not installed (the pack
    may run on it elsewhere)."""
    errors = list(compiled.expansion_errors)
    for part in compiled.partitions():
        errors.extend(check_partition(part, vocab))
    return errors
