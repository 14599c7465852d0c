"""Tool output a user pasted into their words: a conversion log, hb_verifier output or a
model's description (hb_model_info, hrt_model_exec model_info) in the symptom or the
deployment notes is read by the kind's own parser, and gives the same facts as its file
would (a per-node cosine table, march, input parameters, warnings). Which kinds are read this way, and by which function, is the `pasted` declaration of each file
kind (facts/vocabulary.yaml); a kind is recognised by its content signatures, as a file is
(probes/artifacts.py), in each Markdown code block of the text (or the whole text where it
has none). The facts' source is the case key whose text holds the output; the
line within that text is in the words of each fact ("symptom（粘贴的转换日志）:13")."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from j6doctor.facts import per_vocabulary, vocabulary
from j6doctor.probes.input_error import InputError

if TYPE_CHECKING:
    from j6doctor.engine.facts import Source

MAX_PASTED_CHARS = 1024 * 1024  # a text longer than this is not searched for pasted output


@dataclass(frozen=True)
class PastedText:
    """A case key's text read as a tool's output: what a probe's `found` is for a file."""

    kind: str
    key: str        # the case key whose text holds it ("symptom", "deployment.notes")
    label: str      # the kind's label
    origin: Any     # the case key's Source: every fact read from the text has it
    sha256: None = None

    @property
    def display(self) -> str:
        return f"{self.key}（粘贴的{self.label}）"


@per_vocabulary
def _pasted_kinds() -> list[tuple[str, str, str, tuple]]:
    """(kind, label, function name, signatures) of every kind whose probe declares `pasted`."""
    from j6doctor.probes.artifacts import signatures_of
    from j6doctor.probes.registry import probes

    enum = vocabulary().enums["file_kind"]
    return [(kind, str(enum.attr(kind, "label", kind)), probe.pasted, signatures_of(kind))
            for kind, probe in probes().items() if probe.pasted]


def add_pasted_output(texts: list[tuple[str, str, "Source"]], out, problem) -> None:
    """Every declared kind's output found in the texts ((case key, text, the key's source)),
    through the kind's `pasted` function; a part its parser refuses goes to
    `problem(display, error)`, and the text's other facts stand."""
    from j6doctor.probes.registry import module_of

    for key, text, origin in texts:
        if not text or len(text) > MAX_PASTED_CHARS:
            continue
        for block in _blocks(text):
            for kind, label, function, signatures in _pasted_kinds():
                if not any(p.search(block) for p in signatures):
                    continue
                found = PastedText(kind, key, label, origin)
                try:
                    getattr(module_of(kind), function)(block, found, out)
                except InputError as error:
                    problem(found.display, error)


_FENCE = re.compile(r"^[ \t]*```[^\n]*\n(.*?)^[ \t]*```", re.DOTALL | re.MULTILINE)


def _blocks(text: str) -> list[str]:
    """The Markdown code blocks of a text, each with the lines before it blanked (a line
    keeps its number in the text); the whole text where it has none. (The prose after a
    pasted table is no garbled row of it.)"""
    blocks = [text.count("\n", 0, m.start(1)) * "\n" + m.group(1) for m in _FENCE.finditer(text)]
    return blocks or [text]


__all__ = ["MAX_PASTED_CHARS", "PastedText", "add_pasted_output"]
