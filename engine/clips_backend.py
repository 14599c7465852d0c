"""The CLIPS backend (clipspy): one CLIPS environment per stratum of a compiled rule base.

CLIPS has none of durable-rules' fixed tables; a rule base that is too costly to match
(a self-join over many facts) is stopped by the worker's wall-clock and memory limits like
any other (worker.py). Facts are asserted through clipspy's template API (values, never
source text); each assertion is followed by a run whose right-hand sides only report
their matches to the session.
"""

from __future__ import annotations

import weakref
from typing import Any

import clips

from j6doctor.engine.clips_compiler import FIRE_FUNCTION, FUNCTIONS, READY_TEMPLATE, Names, clips_value, defrule, templates
from j6doctor.engine.compiler import CompiledRuleBase
from j6doctor.engine.errors import EngineRunError, RuleBaseError
from j6doctor.engine.facts import Fact
from j6doctor.engine.vocabulary import Vocabulary

NAME = "clips"


# Modules whose files identify the installed build (backends.build_id).
NATIVE_MODULES = ("clips._clips", "clips.environment")


def prepare(compiled: CompiledRuleBase) -> None:
    """Nothing to precompute: CLIPS constructs are built per environment (clips_compiler.py)."""


def describe() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"CLIPS 6.4 (clipspy {version('clipspy')})"
    except PackageNotFoundError:  # pragma: no cover - imported from a source tree
        return "CLIPS 6.4"


# Measured (benchmarks/bench_all.py section 3, tests/test_engine_wall.py): CLIPS builds a
# rule in time linear in the values its tests list, about 8 µs per value, and matches in time
# linear in them; 20,000 values in one rule base take about 0.2 s. Beyond this a pack is
# refused at load, naming its largest rules (CLIPS has no fixed tables to overflow: this is
# a time bound, as durable-rules' fan-out bound is a hang bound).
MAX_LISTED_VALUES = 20_000


def check(compiled: CompiledRuleBase, vocab) -> list[RuleBaseError]:
    """The rule base against CLIPS' bound: the values listed in `in` / `not_in` tests."""
    sizes = sorted(((sum(len(t.value) for c in rule.when for t in c.tests if t.op in ("in", "not_in")), rule)
                    for rule in compiled.rules if rule.text is None), key=lambda x: -x[0])
    total = sum(size for size, _ in sizes)
    if total <= MAX_LISTED_VALUES:
        return []
    named = ", ".join(f"{rule.id} ({size})" for size, rule in sizes[:3])
    first = sizes[0][1]
    return [RuleBaseError(
        f"the rule base lists {total} values in `in` / `not_in` tests (most of them in {named}); the CLIPS "
        f"engine builds and matches them in time proportional to their number and allows {MAX_LISTED_VALUES}",
        file=first.file, line=first.line, rule_id=first.id, field="when",
        hint="test a field that names the group (an enum value or a derived fact) instead of listing every value")]


def _short(exc: Exception) -> str:
    return " ".join(str(exc).split())[:500]


def _environment(names: Names) -> "clips.Environment":
    env = clips.Environment()
    for construct in templates(names) + list(FUNCTIONS):
        _build(env, construct)
    return env


def _build(env: "clips.Environment", construct: str) -> None:
    """Build generated CLIPS text. clipspy's error router is a Python callback that CLIPS
    queries for every character it parses (10x the build time): it is off while our own
    text is parsed, and on again to report what a refused construct was refused for."""
    routers = [r for r in env.routers() if r.name == "python-error-router"]
    for router in routers:
        router.deactivate()
    try:
        env.build(construct)
        return
    except clips.CLIPSError:
        pass
    finally:
        for router in routers:
            router.activate()
    env.build(construct)  # again, with the error router on: raises with CLIPS' message


# CLIPS (6.4, through clipspy) matches more slowly the more facts an environment has ever
# seen while its rules fired, even after they are retracted or reset: measured on the 2,187
# chain combinations, 20 ms a diagnosis in fresh environments, 60 ms after 900 diagnoses
# and 300 ms after 1,200 (a pytest run or a batch). A stratum's environment is built again
# after this many assertions: 2,000 keeps a diagnosis at ~10 ms (20,000: 12 -> 29 ms).
REBUILD_AFTER = 2_000


class Program:
    """The rule base as CLIPS environments, one per stratum, built once per process and
    again after REBUILD_AFTER assertions."""

    def __init__(self, compiled: CompiledRuleBase, vocab: Vocabulary):
        self.compiled = compiled
        self.names = Names.of(vocab)
        self._session: Session | None = None
        number_of = {id(rule): n for n, rule in enumerate(compiled.rules)}
        # per stratum: its rules, as CLIPS text (durable-rules' expansions of one rule are one)
        self.rule_text: list[list[tuple[str, str]]] = [
            [(rule.id, defrule(rule, number, self.names)) for number, rule in sorted(
                {number_of[id(c.rule)]: c.rule for part in stratum for c in part.rules}.items())]
            for stratum in compiled.strata]
        self.environments: list[Any] = [None] * len(compiled.strata)
        self.templates: list[Any] = [None] * len(compiled.strata)
        self.assertions = [0] * len(compiled.strata)
        for stratum in range(len(compiled.strata)):
            self.build(stratum)

    def build(self, stratum: int) -> None:
        names = self.names
        env = _environment(names)
        env.define_function(_reporter(self), FIRE_FUNCTION)
        for rule_id, text in self.rule_text[stratum]:
            try:
                _build(env, text)
            except clips.CLIPSError as exc:
                raise EngineRunError(f"CLIPS refused rule {rule_id}: {_short(exc)}") from None
        self.environments[stratum] = env
        self.templates[stratum] = ({t: env.find_template(n) for t, n in names.template.items()},
                                   {t: env.find_template(n) for t, n in names.shadow.items()},
                                   env.find_template(READY_TEMPLATE))
        self.assertions[stratum] = 0

    def _report(self, number: int, *premises: str) -> None:
        if self._session is not None:
            self._session.pending.append((int(number), tuple(str(p) for p in premises)))

    def session(self, stratum: int) -> "Session":
        if self.assertions[stratum] > REBUILD_AFTER:
            self.build(stratum)
        return Session(self, stratum)


def _reporter(program: Program):
    """The function a rule's right-hand side calls, reporting to `program`. clipspy keeps the
    functions an environment defines in a module-level registry until the Environment object
    is deleted; the program's own method there would keep the program, and so its
    environments, reachable for as long as the process runs (~2 MB for each one-off program
    of condition_match.py)."""
    owner = weakref.ref(program)

    def report(number: int, *premises: str) -> None:
        program = owner()
        if program is not None:
            program._report(number, *premises)

    return report


class Session:
    """One stratum's run on its environment. Every fact it asserts is retracted when it ends,
    newest first (so no rule is left activated): CLIPS' reset keeps the memory of retracted
    facts that clipspy has seen, and a long-lived worker would slow down run after run."""

    def __init__(self, program: Program, stratum: int):
        self.program = program
        self.stratum = stratum
        self.env = program.environments[stratum]
        self._templates, self._shadows, self._ready = program.templates[stratum]
        self.pending: list[tuple[int, tuple[str, ...]]] = []
        self._asserted: list[Any] = []

    def __enter__(self) -> "Session":
        self.program._session = self
        return self

    def __exit__(self, *exc) -> None:
        self.program._session = None  # from here on, a firing reports to no one
        try:
            for fact in reversed(self._asserted):
                fact.retract()
            self.env.run()  # drains the agenda, should anything be left on it
        except clips.CLIPSError:  # the environment is unusable: build it again
            self.program.build(self.stratum)
        self.program.assertions[self.stratum] += len(self._asserted)
        self._asserted = []

    def _assert(self, template, what: str, **slots: Any) -> list[tuple[int, tuple[str, ...]]]:
        """Assert one fact and run: the matches it completed."""
        try:
            self._asserted.append(template.assert_fact(**slots))
            self.env.run()
        except clips.CLIPSError as exc:
            raise EngineRunError(f"CLIPS failed on {what}: {_short(exc)}") from None
        out, self.pending = self.pending, []
        return out

    def _slots(self, fact: Fact, fact_id: str) -> dict[str, Any]:
        slots = self.program.names.slot[fact.type]
        values: dict[str, Any] = {"id": fact_id}
        for name, value in fact.fields.items():
            if value is not None and name in slots:
                values[slots[name]] = clips_value(value)
        return values

    def assert_shadow(self, fact: Fact) -> list[tuple[int, tuple[str, ...]]]:
        return self._assert(self._shadows[fact.type], f"fact {fact.id} ({fact.type})",
                            **self._slots(fact, "~" + fact.id))

    def ready(self) -> list[tuple[int, tuple[str, ...]]]:
        return self._assert(self._ready, "the ready marker")

    def assert_fact(self, fact: Fact) -> list[tuple[int, tuple[str, ...]]]:
        return self._assert(self._templates[fact.type], f"fact {fact.id} ({fact.type})",
                            **self._slots(fact, fact.id))
