"""`cases rediagnose`: every stored case's input facts through the current (or a candidate)
rule base — no original files needed — and what would change: stage, candidates, missing
items, mistakes, with the rules behind the old and the new verdict.

The parent hands out chunks of case ids to a process pool (app/process_pool.py: nothing left
behind, also when interrupted); each worker reads its chunk from the store itself, so neither
the parent nor a pipe ever holds the whole library."""

from __future__ import annotations

import os
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

from j6doctor.engine import EngineRunError, Fact, Source, VocabularyError
from j6doctor.facts import using
from j6doctor.process_pool import ProcessPool
from j6doctor.store.library import StoreError, open_library
from j6doctor.verdict import build_verdict

COMPARED = ("stage", "candidates", "missing", "mistakes")
CHUNK = 200  # cases per task: enough to amortise the hand-over, small enough to spread

_WORKER: dict[str, Any] = {}  # in a pool process: its rule base and its own store connection


def _load(packs: tuple[str, ...], engine: str | None):
    from j6doctor.diagnosis import load_rulebase

    return load_rulebase([Path(p) for p in packs], engine)


def _init(store: str, packs: tuple[str, ...], engine: str | None) -> None:
    os.environ["J6DOCTOR_ENGINE_PROCESS"] = "inline"  # the pool process is the engine's process
    try:
        _WORKER["rulebase"] = _load(packs, engine)
        _WORKER["library"] = open_library(store, schema=None, write=False)  # the parent has migrated it
    except Exception as exc:  # said by the first task, in the parent, as the store's problem
        _WORKER["error"] = f"{store}: a rediagnose worker could not start: {str(exc)[:500]}"


class NotRediagnosable(Exception):
    """A stored fact the rule base's vocabulary no longer (or does not yet) accept."""


def _facts(stored: list[dict[str, Any]], vocab):
    """The stored input facts as engine facts, checked against the rule base's vocabulary and
    completed with the defaults of fields added since they were stored."""
    out = []
    for f in stored:
        try:
            fields = vocab.complete(f["type"], f["fields"])
        except VocabularyError as exc:
            raise NotRediagnosable(f"stored fact {f['id']} ({f['type']}): {exc}") from None
        out.append(Fact(f["id"], f["type"], fields, Source(**f["source"]) if f["source"] else None))
    return out


def _stored_view(verdict: dict[str, Any]) -> dict[str, Any]:
    """What is compared, from a stored JSON verdict."""
    return {"stage": verdict["stage"], "candidates": [c["stage"] for c in verdict["candidates"]],
            "missing": list(verdict["missing"]), "mistakes": [m["id"] for m in verdict["mistakes"]],
            "rules": sorted({c["rule"] for c in verdict["conclusion"]})}


def _view(verdict) -> dict[str, Any]:
    """The same, from a fresh typed verdict (no JSON built for it)."""
    return {"stage": verdict.stage, "candidates": [c.stage for c in verdict.candidates],
            "missing": list(verdict.missing), "mistakes": [m.id for m in verdict.mistakes],
            "rules": sorted({c.rule for c in verdict.conclusion})}


def rediagnose_one(case: dict[str, Any], rulebase) -> dict[str, Any] | None:
    """The change for one stored case, or None when its verdict stays as stored."""
    old = _stored_view(case["verdict"])
    try:
        result = rulebase.run(_facts(case["facts"], rulebase.vocab))
    except (NotRediagnosable, EngineRunError) as exc:  # e.g. stored under a pack whose values this rule base lacks
        return {"id": case["id"], "title": case["title"], "changed": ["facts"], "before": old, "after": None,
                "error": str(exc)}
    new = _view(build_verdict(result, rulebase))
    changed = [k for k in COMPARED if old[k] != new[k]]
    if not changed:
        return None
    return {"id": case["id"], "title": case["title"], "changed": changed, "before": old, "after": new}


def _changes(library, ids: list[int], rulebase) -> list[dict[str, Any]]:
    with using(rulebase.vocab):  # the stored facts are judged in the rule base's words (a pack's values)
        return [change for case in library.stored(ids) if (change := rediagnose_one(case, rulebase)) is not None]


def _chunk(ids: list[int]) -> list[dict[str, Any]]:
    if "error" in _WORKER:
        raise StoreError(_WORKER["error"] + "; try fewer workers (--jobs 1 opens one connection)")
    return _changes(_WORKER["library"], ids, _WORKER["rulebase"])


def rediagnose(library, packs: tuple[str, ...] = (), engine: str | None = None,
               jobs: int | None = None) -> tuple[int, list[dict[str, Any]]]:
    """(cases checked, changes in case order) for every case of `library`, in a process pool
    of `jobs` (default: all cores)."""
    ids = library.case_ids()
    chunks = [ids[i:i + CHUNK] for i in range(0, len(ids), CHUNK)]
    jobs = min(jobs or os.cpu_count() or 1, max(1, len(chunks)))
    if jobs == 1:
        rulebase = _load(packs, engine)
        changes = [c for part in chunks for c in _changes(library, part, rulebase)]
    else:
        library.engine.dispose()  # no pooled connection of the parent is carried into a worker
        try:
            with ProcessPool(jobs, _init, (library.given, packs, engine)) as pool:
                changes = [c for part in pool.map(_chunk, chunks) for c in part]
        except BrokenProcessPool:  # a worker could not start (say, no connection left on the server)
            raise StoreError(f"{library.given}: a rediagnose worker stopped (its message is above); try fewer "
                             "workers (--jobs 1 opens one connection)") from None
    return len(ids), changes
