"""Which facts of a finished run meet a set of rule conditions: asked of the engine.

`explain --why-not` and `rules test` say which condition of a rule holds on a run's facts,
with which facts, and which does not. They do not match facts themselves: each question (a
tuple of conditions) is compiled as a rule that concludes nothing, by the compiler the rule
base went through (compiler.py), onto the backend that ran it, and run by the same driver
(runtime.py) over the run's facts; the question's firings are the answer. So an explanation
means what a run means: distinct facts for distinct positive conditions, joins, empty
fields, `in` / `ne` / comparisons, negation.

The run's final facts are the right ones to ask about: a rule runs in a stratum after every
producer of the types it negates and no earlier than the producers of the types it consumes
(compiler.stratify), so it matches the final facts exactly when it matched during the run
(unless the run was cut short by its firing budget).
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

from j6doctor.engine.backends import load_backend
from j6doctor.engine.compiler import compile_rules
from j6doctor.engine.errors import EngineRunError, RuleBaseErrors
from j6doctor.engine.facts import Fact
from j6doctor.engine.rule_model import Condition, Rule
from j6doctor.engine.runtime import RunResult, run
from j6doctor.engine.vocabulary import Vocabulary

# Firings one batch of questions may record. A question without a match in a batch cut
# short is asked again alone, so "no match" is always a complete answer; a list of matches
# may be partial (explanations show a few).
QUERY_BUDGET = 20_000

Match = tuple[str, ...]  # the fact ids a question's positive conditions matched, in order


def bound_aliases(conditions: Sequence[Condition]) -> set[str]:
    """The aliases the positive conditions among `conditions` bind."""
    return {c.alias for c in conditions if c.alias and not c.negated}


def refers_outside(cond: Condition, bound: set[str]) -> bool:
    """Whether the condition compares with an alias that is not in `bound`."""
    return any(t.is_join and t.value.alias not in bound for t in cond.tests)


def answerable(conditions: Sequence[Condition]) -> tuple[Condition, ...]:
    """The conditions as the engine can be asked them, together: a positive condition without
    its comparisons with aliases no condition here binds, and without the `not:` conditions
    that compare with such an alias (they are left undecided, not asked)."""
    bound = bound_aliases(conditions)
    out = []
    for cond in conditions:
        if not refers_outside(cond, bound):
            out.append(cond)
        elif not cond.negated:
            kept = tuple(t for t in cond.tests if not (t.is_join and t.value.alias not in bound))
            out.append(cond._replace(tests=kept))
    return tuple(out)


class FactMatcher:
    """Questions about one run's facts, answered by the engine it ran on (and remembered)."""

    def __init__(self, facts: Sequence[Fact], vocab: Vocabulary, engine: str):
        self.facts = list(facts)
        self.vocab = vocab
        self.engine = engine
        self.place = {f.id: n for n, f in enumerate(self.facts)}
        self._answers: dict[str, list[Match] | None] = {}

    def matches(self, questions: Sequence[Sequence[Condition]]) -> list[list[Match] | None]:
        """For each question (conditions that must hold together), every way the run's facts
        meet it: the ids of the facts its positive conditions match, in order, the matches in
        the facts' order. None: the engine cannot be asked this question (beyond its bounds)."""
        asked = [answerable(q) for q in questions]
        keys = [repr(q) for q in asked]
        new = dict(zip(keys, asked))
        todo = [(k, q) for k, q in new.items() if k not in self._answers]
        if todo:
            self._ask(todo)
        return [self._answers[k] for k in keys]

    def holds(self, questions: Sequence[Sequence[Condition]]) -> list[bool | None]:
        """For each question, whether some facts meet it (None: it cannot be asked)."""
        return [None if m is None else bool(m) for m in self.matches(questions)]

    def facts_at(self, matches: list[Match] | None, position: int) -> list[str]:
        """The distinct facts a positive condition (its place among the question's positive
        conditions) matched, in the run's order."""
        found = {m[position] for m in matches or ()}
        return sorted(found, key=self.place.__getitem__)

    def _ask(self, items: list[tuple[str, tuple[Condition, ...]]]) -> None:
        for key, question in items:
            if not question:
                self._answers[key] = [()]  # nothing to meet: met, by no fact
        items = [(k, q) for k, q in items if q]
        if not items:
            return
        try:
            result, refused = self._run([q for _, q in items])
        except (RuleBaseErrors, EngineRunError):  # beyond an engine bound: fewer at a time
            if len(items) == 1:
                self._answers[items[0][0]] = None
                return
            middle = len(items) // 2
            self._ask(items[:middle])
            self._ask(items[middle:])
            return
        found: dict[str, set[Match]] = {}
        for firing in result.firings:
            found.setdefault(firing.rule, set()).add(firing.premises)
        again = []
        for number, (key, question) in enumerate(items):
            matches = found.get(f"q{number}", set())
            if f"q{number}" in refused:
                self._answers[key] = None
            elif not matches and result.truncated and len(items) > 1:
                again.append((key, question))
            else:
                self._answers[key] = sorted(matches, key=lambda m: [self.place[i] for i in m])
        for item in again:
            self._ask([item])

    def _run(self, questions: list[tuple[Condition, ...]]) -> tuple[RunResult, set[str]]:
        """One engine run of the questions, each a rule `q<n>` that concludes nothing, over the
        facts of the types they name (the vocabulary cut to those types: a CLIPS environment
        then defines only their templates); and the questions the compiler could not expand
        into durable-rules rules (compiler.MAX_EXPANSIONS), which neither engine answers."""
        rules = [Rule(f"q{n}", "", "", "<question>", None, q, ()) for n, q in enumerate(questions)]
        types = {c.type for q in questions for c in q}
        vocab = dataclasses.replace(self.vocab, types={n: t for n, t in self.vocab.types.items() if n in types})
        compiled = compile_rules(rules, vocab, self.engine)
        program = load_backend(self.engine).Program(compiled, vocab)  # not kept: a question is asked once
        facts = [f for f in self.facts if f.type in types]
        refused = {e.rule_id for e in compiled.expansion_errors if e.rule_id}
        return run(compiled, vocab, facts, max_firings=QUERY_BUDGET, program=program), refused
