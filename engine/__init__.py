"""The rule engine: YAML rules compiled onto durable-rules or CLIPS, with provenance.

It knows nothing about the diagnostic domain: fact types come from a Vocabulary, rules
from YAML files, facts from whoever calls `RuleBase.run`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from j6doctor.engine.compiler import CompiledRuleBase
from j6doctor.engine.backends import ENGINES, EngineUnavailableError, available, resolve
from j6doctor.engine.backends import build_id
from j6doctor.engine.backends import describe as describe_engine
from j6doctor.engine.differential import cross_check_enabled, first_difference
from j6doctor.engine.errors import EngineError, EngineRunError, RuleBaseError, RuleBaseErrors, VocabularyError
from j6doctor.engine.facts import Derivation, Fact, Source
from j6doctor.engine.rule_files import rule_file_bytes
from j6doctor.engine.rulebase_cache import cache_dir, cache_key, load_or_build
from j6doctor.engine.rule_model import Rule
from j6doctor.engine.text_rules import read_texts
from j6doctor.engine.runtime import RunResult, run
from j6doctor.engine.worker import EngineLimitError, shared_worker
from j6doctor.engine.vocabulary import Vocabulary

def _parsed(directories: list[Path], vocab: Vocabulary, display: dict[Path, str] | None) -> list[Rule]:
    """The rules of the folders, checked; RuleBaseErrors with every problem."""
    from j6doctor.engine.rule_loader import load_rule_dirs

    rules, errors = load_rule_dirs(directories, vocab, display)
    if errors:
        raise RuleBaseErrors(errors)
    return rules


def _without_examples(built: tuple[list[Rule], CompiledRuleBase], key: str) -> tuple[list[Rule], CompiledRuleBase]:
    """The rules without their examples, which go into a cache entry of their own."""
    from j6doctor.engine.rule_model import EXAMPLES_NOT_LOADED

    rules, compiled = built
    examples = [rule.examples for rule in rules]
    load_or_build(key, lambda: examples, kind="examples")
    for rule in rules:
        rule.examples = EXAMPLES_NOT_LOADED
    return rules, compiled


def rule_file_schema() -> dict:
    """The JSON schema of a rule file (engine/rule_schema.json)."""
    from j6doctor.engine.rule_loader import rule_file_schema as schema

    return schema()


__all__ = [
    "ENGINES", "Derivation", "EngineError", "EngineUnavailableError", "describe_engine", "EngineLimitError", "EngineRunError", "Fact", "RuleBase", "RuleBaseError",
    "RuleBaseErrors", "RunResult", "Source", "Vocabulary", "VocabularyError", "rule_file_schema",
]


@dataclass
class RuleBase:
    """The rule files of one run, validated and compiled for the engine, with their vocabulary."""

    vocab: Vocabulary
    rules: list[Rule]
    compiled: CompiledRuleBase
    sources: tuple[str, ...] = ()  # the rule folders, as shown to the user
    # (cache key, folders, display) of rules loaded without their examples
    examples_from: tuple | None = None

    @classmethod
    def load(cls, directories: list[Path], vocab: Vocabulary,
             display: dict[Path, str] | None = None, engine: str | None = None) -> "RuleBase":
        """Load, check and compile rule folders for an engine (None: the default one, see
        backends.resolve); raise RuleBaseErrors with every problem. A rule base loaded before,
        from the same files, is taken from the user's cache (rulebase_cache.py)."""
        engine = resolve(engine)
        shown = tuple((display or {}).get(d, str(d)) for d in directories)

        def build() -> tuple[list[Rule], CompiledRuleBase]:
            # parsed, checked and compiled only when the cache has no such rule base
            from j6doctor.engine.compiler import compile_rules

            rules = _parsed(directories, vocab, display)
            return rules, compile_rules(rules, vocab, engine)

        try:
            files = rule_file_bytes(directories, display)
        except (OSError, RuleBaseErrors):  # unreadable or refused files: the uncached load says why
            files = None
        if files is None or cache_dir() is None:
            rules, compiled = build()
            return cls(vocab, rules, compiled, shown)
        key = cache_key(files, vocab, engine, build_id(engine))
        # a diagnosis never reads the rules' examples: they are cached apart (with_examples)
        rules, compiled = load_or_build(key, lambda: _without_examples(build(), key))
        return cls(vocab, rules, compiled, shown, (key, tuple(directories), display))

    def with_examples(self) -> "RuleBase":
        """This rule base with every rule's examples in place (rules test, rules list / show):
        from their cache entry, or the rule files read again."""
        if self.examples_from is None:
            return self
        key, directories, display = self.examples_from

        def parsed() -> list:
            return [rule.examples for rule in _parsed(list(directories), self.vocab, display)]

        for rule, examples in zip(self.rules, load_or_build(key, parsed, kind="examples")):
            rule.examples = examples
        self.examples_from = None
        return self

    @property
    def engine(self) -> str:
        """The backend this rule base runs on: `durable` or `clips`."""
        return self.compiled.engine

    def rule(self, rule_id: str) -> Rule:
        """The rule with this id (after packs have overridden bundled rules)."""
        for rule in self.rules:
            if rule.id == rule_id:
                return rule
        raise KeyError(rule_id)

    def warm_up(self) -> None:
        """Get the engine ready for a run that follows soon (its worker process started and
        registering this rule base), so that it works while the caller gathers the facts."""
        if os.environ.get("J6DOCTOR_ENGINE_PROCESS") != "inline":
            shared_worker().warm_up(self.compiled, self.vocab)

    def run(self, facts: list[Fact], read_as: dict[str, str] | None = None, **limits) -> RunResult:
        """Forward-chain the facts, in the engine's worker process (engine/worker.py) unless
        J6DOCTOR_ENGINE_PROCESS=inline asks for this process (debugging). The free texts the
        text rules read are read here, once (text_reader.py), and handed to the engine with the
        facts; a text in `read_as` is read as the same-length text given there (parts of it
        another reader took, blanked). With J6DOCTOR_CROSS_CHECK=1 the run is repeated on the
        other installed engine and any difference is an EngineRunError (engine/differential.py)."""
        limits.setdefault("readings", read_texts(self.compiled.text_fields, facts, self.vocab.text, read_as))
        result = self._run_on(self.compiled, facts, **limits)
        if cross_check_enabled():
            other = self._other_engine()
            if other is not None:
                difference = first_difference(result, self._run_on(other, facts, **limits))
                if difference:
                    raise EngineRunError(f"the engines disagree on the rule base {self.compiled.fingerprint}: "
                                         f"{difference}")
        return result

    def _run_on(self, compiled: CompiledRuleBase, facts: list[Fact], **limits) -> RunResult:
        if os.environ.get("J6DOCTOR_ENGINE_PROCESS") == "inline":
            return run(compiled, self.vocab, facts, **limits)
        what = "the rule base " + (", ".join(self.sources) if self.sources else f"{compiled.fingerprint}")
        return shared_worker().run(compiled, self.vocab, facts, what=what, **limits)

    def _other_engine(self) -> CompiledRuleBase | None:
        """This rule base compiled for the other installed engine (None if there is none)."""
        cached = self.__dict__.get("_other")
        if cached is None:
            from j6doctor.engine.compiler import compile_rules

            others = [e for e in ENGINES if e != self.engine and available(e)]
            try:
                cached = (compile_rules(self.rules, self.vocab, others[0]),) if others else (None,)
            except RuleBaseErrors:  # beyond the other engine's bounds: nothing to compare with
                cached = (None,)
            self.__dict__["_other"] = cached
        return cached[0]
