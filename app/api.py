"""The Python API: the command line's diagnosis, called from an evaluation script.

    import j6doctor
    verdict = j6doctor.diagnose("case.yaml")
    verdict.stage, verdict.candidates, verdict.missing, verdict.evidence
    verdict.to_markdown()   # the bytes `j6doctor diagnose case.yaml` prints
    verdict.to_json()       # the bytes `j6doctor diagnose case.yaml --format json` prints

It runs exactly what `j6doctor diagnose` runs (app/commands/inputs.py: the case folder's
j6doctor.toml, the packs, the engine, the checks of every input), so the reports are the same
byte for byte; whatever the command line refuses is one exception, J6DoctorError, carrying the
line the command line prints and its exit status.
"""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any, Iterable, Mapping

from j6doctor.api_errors import J6DoctorError

PathLike = str | os.PathLike


class Verdict:
    """One diagnosis: the stage and why (docs/CONTRACT.md, the JSON verdict)."""

    def __init__(self, diagnosis: Any):
        self._diagnosis = diagnosis

    @property
    def stage(self) -> str:
        """The concluded stage id (convert, compile, ...), or "undetermined" (暂不能判断)."""
        return self._diagnosis.verdict_json["stage"]

    @property
    def candidates(self) -> list[dict[str, Any]]:
        """The stages still possible, each with the one check that confirms or clears it."""
        return self._diagnosis.verdict_json["candidates"]

    @property
    def missing(self) -> list[str]:
        """The info-gate items still needed (ids: stage_results, badcase, platform, ...)."""
        return self._diagnosis.verdict_json["missing"]

    @property
    def evidence(self) -> list[dict[str, Any]]:
        """The evidence chain: every fact with its source or the rule that derived it."""
        return self._diagnosis.verdict_json["trace"]

    def to_dict(self) -> dict[str, Any]:
        """The JSON verdict as Python data."""
        return self._diagnosis.verdict_json

    def to_json(self) -> str:
        return self._render("json")

    def to_markdown(self, detail: bool = False) -> str:
        """The Markdown report; `detail`: with the engine's bookkeeping (the command line's -v)."""
        return self._render("md", detail)

    def to_html(self) -> str:
        return self._render("html")

    def _render(self, fmt: str, detail: bool = False) -> str:
        from j6doctor.commands.inputs import render_report

        return render_report(self._diagnosis, fmt, detail)

    def __repr__(self) -> str:
        return f"<j6doctor.Verdict stage={self.stage!r} missing={self.missing!r}>"


def diagnose(case: PathLike | Mapping[str, Any] | Any | None = None, *, workdirs: Iterable[PathLike] = (),
             metrics: PathLike | None = None, rules: Iterable[PathLike] = (), engine: str | None = None,
             environment: bool | None = None, tolerance: float | None = None) -> Verdict:
    """Diagnose a case file (or a post saved as .md / .txt, or a Case being recorded into),
    case data given as a mapping, and/or work folders of artifacts.

    The options are the command line's: `workdirs` (--workdir), `metrics` (--metrics),
    `rules` (--rules, rule pack folders), `engine` ("durable" / "clips"), `environment`
    (--env / --no-env; None: the config's, which reads the installed packages),
    `tolerance` (--tolerance). Raises J6DoctorError for what the command line refuses."""
    from j6doctor.commands.console import Console, Refusal
    from j6doctor.commands.inputs import Inputs, diagnose_inputs

    if isinstance(case, Mapping):
        return _diagnose_data(dict(case), rules, engine)
    path = getattr(case, "path", case)  # a recorder's Case
    inputs = Inputs(Path(path) if path is not None else None, tuple(Path(w) for w in workdirs),
                    Path(metrics) if metrics is not None else None, tolerance, env=environment,
                    rule_packs=tuple(Path(r) for r in rules), engine=engine)
    quiet = Console(io.StringIO(), io.StringIO(), verbosity=-1)  # no progress line, no notes
    try:
        return Verdict(diagnose_inputs(inputs, quiet).diagnosis)
    except Refusal as refusal:
        raise J6DoctorError(refusal.message, refusal.code) from None


def _diagnose_data(data: dict[str, Any], rules: Iterable[PathLike], engine: str | None) -> Verdict:
    """Case data (a mapping, as a case file holds), checked like a file."""
    from j6doctor.commands.console import Refusal
    from j6doctor.commands.inputs import load_rules
    from j6doctor.diagnosis import diagnose_data
    from j6doctor.probes import InputError

    try:
        rulebase = load_rules(tuple(Path(r) for r in rules), engine)
        return Verdict(diagnose_data(data, rulebase, display="<case data>", base=Path.cwd()))
    except Refusal as refusal:
        raise J6DoctorError(refusal.message, refusal.code) from None
    except InputError as exc:
        raise J6DoctorError(exc.render(), 2) from None
