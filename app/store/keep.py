"""What `diagnose --store` and `triage --store` do with a diagnosis: find the stored cases
most like it (shown in its report, never used for its verdict), then record it."""

from __future__ import annotations

from j6doctor.store.library import CaseLibrary, Recorded, RunInputs, open_library, run_inputs

_OPEN: dict[tuple[object, bool], CaseLibrary] = {}  # one open library per store, use and process


def library(given: str, write: bool = True) -> CaseLibrary:
    """The library `given` names, opened once per process to write, or to read only
    (CaseLibrary): keyed by where it is (a relative path names another library once the
    working folder changed, as in a Python API caller)."""
    from sqlalchemy.exc import ArgumentError

    from j6doctor.store.library import store_url

    try:
        key = (store_url(given), write)
    except (ArgumentError, ValueError):
        return open_library(given, write=write)  # refused there, with what is wrong
    if key not in _OPEN:
        _OPEN[key] = open_library(given, write=write)
    return _OPEN[key]


def forget_connections() -> None:
    """In a forked process (a triage pool): drop the parent's pooled connections without
    closing them (they are the parent's), so that this process opens its own."""
    for opened in _OPEN.values():
        opened.engine.dispose(close=False)
    _OPEN.clear()


def close_libraries() -> None:
    """Close every library this process opened: SQLite then folds its write-ahead log into
    the file and removes the files it kept beside it."""
    for opened in _OPEN.values():
        opened.engine.dispose()
    _OPEN.clear()


def attach_similar(diagnosis, store: CaseLibrary, inputs: RunInputs | None = None) -> RunInputs:
    """The similar past cases onto the diagnosis (for its report); the run's inputs as the
    library keeps them, for recording it."""
    inputs = inputs or run_inputs(diagnosis)
    diagnosis.similar = store.similar(inputs)
    return inputs


def keep(diagnosis, store: CaseLibrary) -> Recorded:
    """Attach the similar past cases, then record the diagnosis with its Markdown report."""
    from j6doctor.facts import using
    from j6doctor.report import render_markdown

    with using(diagnosis.rulebase.vocab):  # its features in the rule base's words (a pack's similar_by)
        inputs = attach_similar(diagnosis, store)
        return store.record(diagnosis, render_markdown(diagnosis), inputs)
