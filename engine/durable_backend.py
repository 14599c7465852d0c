"""The durable-rules backend: compiled partitions registered on one synchronous host.

Runtime pattern (docs/engine_notes.md §7): one host per process without background
threads, rulesets registered once per compiled rule base, one sid per stratum run deleted
at the end. Actions never assert: they report the match (rule, premise fact ids) to the
session, and the driver (runtime.py) decides what it derives.
"""

from __future__ import annotations

import itertools
import threading
from typing import Any

import durable_rules_engine
from durable.engine import Host, MessageNotHandledException, MessageObservedException, Promise, Ruleset

from j6doctor.engine import engine_json
from j6doctor.engine.compiler import READY_TYPE, SHADOW_PREFIX, START_TYPE, CompiledRule, CompiledRuleBase, Partition
from j6doctor.engine.errors import EngineRunError
from j6doctor.engine.facts import Fact

NAME = "durable"

# durable-rules error codes (rules.h) in words, for messages a rule author can act on.
_ERROR_CODES = {
    101: "too many diagnoses alive at once (sid table full)",
    102: "a rule attribute has the wrong type",
    105: "unknown key in a compiled rule",
    106: "too many rules in one ruleset",
    107: "too many inequality / or tests under one condition",
    108: "too many identical conditions",
    113: "too many comparisons in one condition",
    302: "a fact has too many fields",
    303: "too many range / join tests match one fact at once",
    304: "a rule matches more than 16 facts",
    311: "a rule compares with a field that a fact does not have",
}

# Modules whose files identify the installed build (backends.build_id).
NATIVE_MODULES = ("durable_rules_engine", "durable.engine")


def describe() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"durable-rules {version('durable-rules')}"
    except PackageNotFoundError:  # pragma: no cover - imported from a source tree
        return "durable-rules"


def prepare(compiled: CompiledRuleBase) -> None:
    """Encode every rule's definition once (engine_json is slow on thousands of nodes)."""
    for part in compiled.partitions():
        for crule in part.rules:
            crule.encoded = engine_json.dumps(crule.definition)


def check(compiled: CompiledRuleBase, vocab) -> list:
    """The rule base against durable-rules' fixed tables (limits.py)."""
    from j6doctor.engine.limits import check_rulebase  # at compile time only, never from the cache

    return check_rulebase(compiled, vocab)


class _EngineTextRuleset(Ruleset):
    """A durable-rules ruleset whose rules and facts reach its C engine as engine_json text.

    Upstream (durable-rules 2.0.28, durable/engine.py, Ruleset.__init__ and assert_fact)
    writes both with the json module, which writes small and large floats with an exponent
    (`1e-05`, `1e+16`); the C engine's number parser reads positional notation only, so such
    a fact fails with error 204 and such a threshold gets its ruleset refused. These two steps
    are therefore ours; the rest (actions, state) is durable-rules' own
    (tests/test_engine_wall.py: the upstream behaviour, and thresholds written with exponents)."""

    def __init__(self, name: str, host: "_SyncHost", definition: dict[str, Any]):
        # What Ruleset.__init__ does for rules whose action is named, with our encoding.
        self._name = name
        self._host = host
        self._actions = {rule_name: Promise(host.get_action(rule.pop("run"))) for rule_name, rule in definition.items()}
        self._handle = durable_rules_engine.create_ruleset(name, engine_json.dumps(definition))
        self._definition = definition

    def assert_fact(self, fact: dict[str, Any]):
        return self._handle_result(durable_rules_engine.assert_fact(self._handle, engine_json.dumps(fact)), fact)


class _SyncHost(Host):
    """A Host without the two background threads the stock one starts (docs/engine_notes.md §5.1),
    holding _EngineTextRuleset rulesets."""

    def __init__(self) -> None:
        self._handlers: dict[str, Any] = {}
        self._rulesets: dict[str, _EngineTextRuleset] = {}
        super().__init__()

    def _run(self) -> None:  # no dispatch / timer threads: everything runs synchronously
        pass

    def get_action(self, action_name: str):
        return self._handlers[action_name]

    def add_ruleset(self, name: str, definition: dict[str, Any]) -> None:
        if name in self._rulesets:
            raise EngineRunError(f"durable-rules ruleset {name} is registered already")
        self._rulesets[name] = _EngineTextRuleset(name, self, definition)

    def get_ruleset(self, ruleset_name: str) -> _EngineTextRuleset:
        return self._rulesets[ruleset_name]


_HOST_LOCK = threading.RLock()
_HOST: _SyncHost | None = None
_REGISTERED: set[str] = set()
_SIDS = itertools.count(1)
_ACTIVE = threading.local()


def _host() -> _SyncHost:
    global _HOST
    if _HOST is None:
        _HOST = _SyncHost()
    return _HOST


def _translate(exc: Exception) -> str:
    text = str(exc)
    code = None
    if "error code:" in text:
        try:
            code = int(text.rsplit(":", 1)[1].strip())
        except ValueError:
            code = None
    if code in _ERROR_CODES:
        return f"{_ERROR_CODES[code]} (durable-rules error {code})"
    return text


def _noop(c) -> None:
    return None


def _make_action(crule: CompiledRule, rule_number: int):
    def action(c) -> None:
        session = getattr(_ACTIVE, "session", None)
        if session is not None:
            matched = c._m
            session.pending.append((rule_number, tuple(matched[alias]["id"] for alias, _ in crule.positive_aliases)))
    return action


def _encoded_definition(part: Partition) -> dict:
    """The partition's ruleset with each rule body pre-encoded (CompiledRule.encoded)."""
    definition = part.definition()
    for crule in part.rules:
        if crule.encoded:
            definition[crule.key] = engine_json.PreEncoded(definition[crule.key], crule.encoded)
    return definition


class Program:
    """A compiled rule base registered on the host (once per process)."""

    def __init__(self, compiled: CompiledRuleBase, vocab=None):
        self.compiled = compiled
        number_of = {id(rule): n for n, rule in enumerate(compiled.rules)}
        with _HOST_LOCK:
            if compiled.fingerprint in _REGISTERED:
                return
            host = _host()
            for part in compiled.partitions():
                host._handlers[f"{part.name}:__start"] = _noop
                for crule in part.rules:
                    host._handlers[f"{part.name}:{crule.key}"] = _make_action(crule, number_of[id(crule.rule)])
                try:
                    host.add_ruleset(part.name, _encoded_definition(part))
                except Exception as exc:  # durable raises its own error type with a code
                    raise EngineRunError(
                        f"durable-rules refused ruleset {part.name}: {_translate(exc)}"
                    ) from None
            _REGISTERED.add(compiled.fingerprint)

    def session(self, stratum: int) -> "Session":
        return Session(self.compiled.strata[stratum])


class Session:
    """One stratum's run: a fresh sid on each of its partitions."""

    def __init__(self, partitions: list[Partition]):
        self.partitions = partitions
        self.pending: list[tuple[int, tuple[str, ...]]] = []
        self.sid = str(next(_SIDS))
        self.opened: list[Partition] = []

    def __enter__(self) -> "Session":
        _HOST_LOCK.acquire()
        _ACTIVE.session = self
        try:
            for part in self.partitions:
                self._assert(part, {"id": START_TYPE, "type": START_TYPE, "sid": self.sid})
                self.opened.append(part)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc) -> None:
        try:
            for part in self.opened:
                try:
                    _host().delete_state(part.name, self.sid)
                except Exception:  # nothing left to clean if the engine already dropped it
                    pass
        finally:
            _ACTIVE.session = None
            _HOST_LOCK.release()

    def _assert(self, part: Partition, payload: dict[str, Any]) -> None:
        payload["sid"] = self.sid
        try:
            _host().assert_fact(part.name, payload)
        except (MessageNotHandledException, MessageObservedException):
            pass  # a fact no rule of this ruleset matches, or already stored: both fine
        except durable_rules_engine.error as exc:
            raise EngineRunError(
                f"durable-rules failed on fact {payload.get('id')} ({payload.get('type')}): {_translate(exc)}"
            ) from None

    def _take(self) -> list[tuple[int, tuple[str, ...]]]:
        out, self.pending = self.pending, []
        return out

    def _encoded(self, payload: dict[str, Any]) -> dict[str, Any]:
        """The payload with its text made once, for every partition it goes to (the
        engine reads the same text; durable-rules would encode it once per partition)."""
        payload["sid"] = self.sid
        return engine_json.PreEncoded(payload, engine_json.dumps(payload))

    def assert_shadow(self, fact: Fact) -> list[tuple[int, tuple[str, ...]]]:
        payload = None
        for part in self.partitions:
            if fact.type in part.negates:
                payload = payload or self._encoded(fact.engine_payload(SHADOW_PREFIX + fact.type))
                self._assert(part, payload)
        return self._take()

    def ready(self) -> list[tuple[int, tuple[str, ...]]]:
        for part in self.partitions:
            self._assert(part, {"id": READY_TYPE, "type": READY_TYPE, "_k": 1})
        return self._take()

    def assert_fact(self, fact: Fact) -> list[tuple[int, tuple[str, ...]]]:
        payload = None
        for part in self.partitions:
            if fact.type in part.consumes:
                payload = payload or self._encoded(fact.engine_payload())
                self._assert(part, payload)
        return self._take()
