"""The recorder: an evaluation loop writes each artifact's result into the case file itself,
so that diagnosing again needs no typing.

    case = j6doctor.Case.open("case.yaml")
    case.record("quantized_bc", metric="mAP", value=36.0, evidence="dataset_eval")

Each record is checked as the case file is (the whole case, new entry included, must read)
before anything is written; it is written through case_writer (only `results`, and on a
replacement `replaced_results`, are written anew, every other line stays as it was) in one
rename, under a lock, so that two processes recording into one case lose nothing. An entry
carries where it came from (`recorded: {script, at}`). A result already in the case is never
overwritten silently: the same result again is no change, another one is refused unless
`replace=True`, and then the old entry is kept under `replaced_results`.

A case that uses a rule pack's vocabulary (its artifacts, platforms, case keys) is opened
with the pack: `Case.open("case.yaml", rules=["my_pack"])`; its records are checked and
written in that vocabulary, and `case.diagnose()` uses the pack.

A status may be left to j6doctor: given a metric and a value, the result is judged against
the nearest earlier artifact on the chain (the float model first) with a normal result of the
same metric, with the tolerance j6doctor judges metric drops by (the case's `metrics:`
settings, else 1 % relative).
"""

from __future__ import annotations

import datetime
import json
import math
import os
import sys
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any, Iterable, Iterator

from j6doctor.api_errors import J6DoctorError
from j6doctor.case_writer import with_replacement, with_updates
from j6doctor.exit_codes import EXIT_INPUT

CASE_SUFFIXES = (".yaml", ".yml", ".json")


class Case:
    """A case file an evaluation loop records results into (created by the first record)."""

    def __init__(self, path: Path, rules: tuple[Path, ...] = ()):
        self.path = path
        self.rules = rules  # rule pack folders whose vocabulary the case is written in

    @classmethod
    def open(cls, path: str | os.PathLike, rules: Iterable[str | os.PathLike] = ()) -> "Case":
        """The case file at `path`; it need not exist yet. `rules`: rule pack folders whose
        vocabulary the case uses. J6DoctorError when it is no case file (or a pack is refused)."""
        path = Path(path)
        if path.suffix.lower() not in CASE_SUFFIXES:
            raise J6DoctorError(f"{path}: a case file to record into ends in .yaml, .yml or .json", EXIT_INPUT)
        if path.exists() and not path.is_file():
            raise J6DoctorError(f"{path}: not a regular file; expected a YAML or JSON case file", EXIT_INPUT)
        if not path.parent.is_dir():
            raise J6DoctorError(f"{path}: the folder {path.parent} does not exist", EXIT_INPUT)
        packs = [rules] if isinstance(rules, (str, os.PathLike)) else rules  # one folder given alone
        case = cls(path, tuple(Path(r) for r in packs))
        if path.exists():
            with case._words():
                _read(path, path.read_text(encoding="utf-8"))  # refused now if it cannot be read
        return case

    @contextmanager
    def _words(self) -> Iterator[None]:
        """The vocabulary of the case's rule packs in use (the bundled one without packs)."""
        from j6doctor.facts import using

        if not self.rules:
            yield
            return
        from j6doctor.commands.console import Refusal
        from j6doctor.commands.inputs import load_rules

        try:
            vocab = load_rules(self.rules, None).vocab
        except Refusal as refusal:
            raise J6DoctorError(refusal.message, refusal.code) from None
        with using(vocab):
            yield

    def record(self, artifact: str, status: str | None = None, *, metric: str | None = None,
               value: float | None = None, evidence: str | None = None, by: str | None = None,
               note: str | None = None, failure: str | None = None, message: str | None = None,
               replace: bool = False, script: str | None = None) -> dict[str, Any]:
        """Write one artifact's result into the case; returns the entry as written.

        `artifact`: an artifact id or a usual name of it (qat.bc, quantized_model, bin ...).
        Either a `status` (normal / abnormal, or their aliases), a `metric` and `value` to be
        judged, or a `failure` (compile_error / load_error / runtime_error) with its message.
        `script`: where the result came from (default: the running script)."""
        with self._words():
            key = _artifact_id(artifact)
            entry = _entry(status, metric, value, evidence, by, note, failure, message)
            _check_entry(key, entry)
            with _locked(self.path):
                text = self.path.read_text(encoding="utf-8") if self.path.exists() else ""
                case = _read(self.path, text) if text.strip() else None
                results = case.data.get("results", {}) if case is not None else {}
                if "status" not in entry and "failure" not in entry:
                    entry = {"status": _judged(self.path, case, key, entry), **entry}
                entry["recorded"] = {"script": script or _running_script(), "at": _now()}
                previous = results.get(key)
                if previous is not None and _same(previous, entry):
                    return previous
                if previous is not None and not replace:
                    raise J6DoctorError(
                        f"{self.path.name}:{case.doc.line_of(case.written(('results', key))) or 1}: results.{key} "
                        f"is already recorded ({json.dumps(previous, ensure_ascii=False)}); record(..., "
                        "replace=True) replaces it and keeps the old entry under replaced_results", EXIT_INPUT)
                new_text = _with_entry(text, self.path.suffix, case, key, entry, previous)
                _read(self.path, new_text)  # the case as it would be written must read
                from j6doctor.atomic_write import write_atomic

                write_atomic(self.path, new_text)
        return entry

    def diagnose(self, **options: Any):
        """j6doctor.diagnose of this case file (the same options; `rules`: the case's packs)."""
        from j6doctor.api import diagnose

        return diagnose(self.path, **{"rules": self.rules, **options})


def _artifact_id(artifact: str) -> str:
    from j6doctor.facts import enum_values, resolve

    found = resolve("artifact", str(artifact)) if isinstance(artifact, str) else None
    if not found:
        raise J6DoctorError(f"record: unknown artifact {artifact!r}; expected one of "
                            f"{', '.join(enum_values('artifact'))} (or a usual name of one)", EXIT_INPUT)
    return found


def _entry(status, metric, value, evidence, by, note, failure, message) -> dict[str, Any]:
    forms = (status is not None) + (failure is not None)  # a value alone is the third form
    if forms > 1 or (forms == 0 and value is None):
        raise J6DoctorError("record: give a status, a metric and value to judge, or a failure (not several)",
                            EXIT_INPUT)
    if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                              or not math.isfinite(value)):
        raise J6DoctorError(f"record: value must be a finite number, got {value!r}", EXIT_INPUT)
    if value is not None and not metric:
        raise J6DoctorError("record: a value needs the metric it is a value of (metric='mAP')", EXIT_INPUT)
    fields = {"status": status, "evidence": evidence, "metric": metric,
              "value": float(value) if value is not None else None, "by": by, "note": note,
              "failure": failure, "message": message}
    return {k: v for k, v in fields.items() if v is not None}


def _check_entry(key: str, entry: dict[str, Any]) -> None:
    """The entry's values, as the case file would hold them (named by the record's key)."""
    from j6doctor.probes import InputError
    from j6doctor.probes.case_file import case_from_data

    try:
        case_from_data({"results": {key: {"status": "unknown", **entry} if "failure" not in entry and
                                    "status" not in entry else entry}}, display="record")
    except InputError as exc:
        raise J6DoctorError(f"record: {exc.message}", EXIT_INPUT) from None


def _judged(path: Path, case, key: str, entry: dict[str, Any]) -> str:
    """normal / abnormal: the value against the nearest earlier artifact on the chain (the
    float model first) with a normal result of the same metric, with the case's tolerance."""
    from j6doctor.facts import enum_values
    from j6doctor.probes.tolerance import case_tolerance

    results = case.data.get("results", {}) if case is not None else {}
    order = list(enum_values("artifact"))
    earlier = [a for a in order[:order.index(key)] if isinstance(results.get(a), dict)]
    base = next((results[a] for a in reversed(earlier)
                 if results[a].get("status") == "normal" and results[a].get("metric") == entry["metric"]
                 and isinstance(results[a].get("value"), (int, float))), None)
    if base is None:
        raise J6DoctorError(f"{path.name}: no earlier artifact has a normal {entry['metric']} result to judge "
                            f"{key} against; give status= (normal / abnormal)", EXIT_INPUT)
    drop, threshold = case_tolerance(case.data.get("metrics") or {}).drop(base["value"], entry["value"])
    return "abnormal" if drop > threshold else "normal"


def _same(previous: Any, entry: dict[str, Any]) -> bool:
    """The same result again (where and when it was recorded aside)."""
    if not isinstance(previous, dict):
        return False
    strip = lambda d: {k: v for k, v in d.items() if k != "recorded"}  # noqa: E731
    return strip(previous) == strip(entry)


def _with_entry(text: str, suffix: str, case, key: str, entry: dict[str, Any], previous: Any) -> str:
    if previous is None:  # a new key under results: every other line stays as it was
        return with_updates(text, suffix, {"results": {key: entry}})
    written = case.written(("results", key))[-1]  # the key as the user spelt it
    replaced = {"artifact": key, "result": previous, "replaced_at": _now()}
    return with_replacement(text, suffix, ("results", written), entry, ("replaced_results", replaced))


def _read(path: Path, text: str):
    """The case as j6doctor reads it; J6DoctorError with the reader's message."""
    from j6doctor.probes import InputError
    from j6doctor.probes.case_file import case_from_text

    try:
        return case_from_text(text, path)
    except InputError as exc:
        raise J6DoctorError(exc.render(), EXIT_INPUT) from None


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """One recorder at a time per case file (a lock file beside it, kept for the next one)."""
    from j6doctor.atomic_write import locked

    with ExitStack() as stack:
        try:
            stack.enter_context(locked(path.with_name(f".{path.name}.lock")))
        except OSError as exc:
            raise J6DoctorError(f"{path}: cannot record: {exc.strerror or exc}", EXIT_INPUT) from None
        yield


def _running_script() -> str:
    main = sys.modules.get("__main__")
    name = getattr(main, "__file__", None) or (sys.argv[0] if sys.argv and sys.argv[0] else "")
    return os.path.basename(name) if name else "<interactive>"


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
