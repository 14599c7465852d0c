"""`cases rediagnose`: every stored case's input facts through the current (or a candidate)
rule base — no original files needed — and what would change: stage, candidates, missing
items, mistakes, with the rules behind the old and the new verdict."""

from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, Iterable

COMPARED = ("stage", "candidates", "missing", "mistakes")
CHUNK = 200  # cases per task: enough to amortise the hand-over, small enough to spread

_RULEBASE = None


def _load(packs: tuple[str, ...], engine: str | None):
    from j6doctor.diagnose import load_rulebase

    return load_rulebase([Path(p) for p in packs], engine)


def _init(packs: tuple[str, ...], engine: str | None) -> None:
    global _RULEBASE
    os.environ["J6DOCTOR_ENGINE_PROCESS"] = "inline"  # the pool process is the engine's process
    _RULEBASE = _load(packs, engine)


def _facts(stored: list[dict[str, Any]]):
    from j6doctor.engine import Fact, Source

    return [Fact(f["id"], f["type"], f["fields"], Source(**f["source"]) if f["source"] else None) for f in stored]


def _view(verdict: dict[str, Any]) -> dict[str, Any]:
    return {"stage": verdict["stage"], "candidates": [c["stage"] for c in verdict["candidates"]],
            "missing": list(verdict["missing"]), "mistakes": [m["id"] for m in verdict["mistakes"]],
            "rules": sorted({c["rule"] for c in verdict["conclusion"]})}


def rediagnose_one(case: dict[str, Any], rulebase=None) -> dict[str, Any] | None:
    """The change for one stored case, or None when its verdict stays as stored."""
    from j6doctor.verdict import build_verdict

    rulebase = rulebase or _RULEBASE
    result = rulebase.run(_facts(case["facts"]))
    new = _view(build_verdict(result, rulebase).to_json())
    old = _view(case["verdict"])
    changed = [k for k in COMPARED if old[k] != new[k]]
    if not changed:
        return None
    return {"id": case["id"], "title": case["title"], "changed": changed, "before": old, "after": new}


def _chunk(cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [change for case in cases if (change := rediagnose_one(case)) is not None]


def rediagnose(cases: Iterable[dict[str, Any]], packs: tuple[str, ...] = (), engine: str | None = None,
               jobs: int | None = None) -> tuple[int, list[dict[str, Any]]]:
    """(cases checked, changes in case order), in a process pool of `jobs` (default: all cores)."""
    batch: list[list[dict[str, Any]]] = [[]]
    count = 0
    for case in cases:
        if len(batch[-1]) >= CHUNK:
            batch.append([])
        batch[-1].append(case)
        count += 1
    jobs = min(jobs or os.cpu_count() or 1, max(1, len(batch)))
    if jobs == 1 or count <= CHUNK:
        rulebase = _load(packs, engine)
        changes = [c for case in (x for b in batch for x in b) if (c := rediagnose_one(case, rulebase)) is not None]
    else:
        with ProcessPoolExecutor(jobs, initializer=_init, initargs=(packs, engine)) as pool:
            changes = [c for part in pool.map(_chunk, batch) for c in part]
    return count, sorted(changes, key=lambda c: c["id"])
