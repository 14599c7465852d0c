"""The diagnosis pipeline: probes → facts → rule engine → verdict."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from .engine import Fact, RuleBase, RunResult
from .facts import vocabulary
from .probes.case_file import Case, case_facts, case_from_data, read_case
from .rules import BUNDLED_RULES_DIR
from .verdict import build_verdict


@dataclass
class Diagnosis:
    case: Case
    facts: list[Fact]
    run: RunResult
    rulebase: RuleBase
    verdict: dict


@lru_cache(maxsize=8)
def _rulebase(extra: tuple[Path, ...]) -> RuleBase:
    directories = [BUNDLED_RULES_DIR, *extra]
    return RuleBase.load(directories, vocabulary(), {BUNDLED_RULES_DIR: "rules"})


def load_rulebase(extra_rule_dirs: list[Path] | tuple[Path, ...] = ()) -> RuleBase:
    """The bundled rule base plus rule packs (a later pack overrides rules by id)."""
    return _rulebase(tuple(Path(p).resolve() for p in extra_rule_dirs))


def diagnose(case: Case, rulebase: RuleBase | None = None) -> Diagnosis:
    rulebase = rulebase or load_rulebase()
    facts = case_facts(case)
    result = rulebase.run(facts)
    return Diagnosis(case, facts, result, rulebase, build_verdict(result, rulebase))


def diagnose_file(path: Path, rulebase: RuleBase | None = None) -> Diagnosis:
    return diagnose(read_case(path), rulebase)


def diagnose_data(data: dict, rulebase: RuleBase | None = None, display: str = "<example>") -> Diagnosis:
    return diagnose(case_from_data(data, display), rulebase)
