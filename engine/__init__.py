"""The rule engine: YAML rules compiled onto durable-rules, with provenance.

It knows nothing about the diagnostic domain: fact types come from a Vocabulary, rules
from YAML files, facts from whoever calls `RuleBase.run`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from .compiler import CompiledRuleBase, compile_rules
from .errors import EngineError, EngineRunError, RuleBaseError, RuleBaseErrors, VocabularyError
from .facts import Derivation, Fact, Source
from .rule_loader import load_rule_dirs, rule_file_schema
from .rule_model import Rule
from .runtime import RunResult, run
from .worker import EngineLimitError, shared_worker
from .vocabulary import Vocabulary

__all__ = [
    "Derivation", "EngineError", "EngineLimitError", "EngineRunError", "Fact", "RuleBase", "RuleBaseError",
    "RuleBaseErrors", "RunResult", "Source", "Vocabulary", "VocabularyError", "rule_file_schema",
]


@dataclass
class RuleBase:
    vocab: Vocabulary
    rules: list[Rule]
    compiled: CompiledRuleBase
    sources: tuple[str, ...] = ()  # the rule folders, as shown to the user

    @classmethod
    def load(cls, directories: list[Path], vocab: Vocabulary,
             display: dict[Path, str] | None = None) -> "RuleBase":
        """Load, check and compile rule folders; raise RuleBaseErrors with every problem."""
        rules, errors = load_rule_dirs(directories, vocab, display)
        if errors:
            raise RuleBaseErrors(errors)
        shown = tuple((display or {}).get(d, str(d)) for d in directories)
        return cls(vocab, rules, compile_rules(rules, vocab), shown)

    @classmethod
    def from_rules(cls, rules: list[Rule], vocab: Vocabulary) -> "RuleBase":
        return cls(vocab, rules, compile_rules(rules, vocab))

    def rule(self, rule_id: str) -> Rule:
        for rule in self.rules:
            if rule.id == rule_id:
                return rule
        raise KeyError(rule_id)

    def run(self, facts: list[Fact], **limits) -> RunResult:
        """Forward-chain the facts, in the engine's worker process (engine/worker.py) unless
        J6DOCTOR_ENGINE_PROCESS=inline asks for this process (debugging)."""
        if os.environ.get("J6DOCTOR_ENGINE_PROCESS") == "inline":
            return run(self.compiled, self.vocab, facts, **limits)
        what = "the rule base " + (", ".join(self.sources) if self.sources else f"{self.compiled.fingerprint}")
        return shared_worker().run(self.compiled, self.vocab, facts, what=what, **limits)
