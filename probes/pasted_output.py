"""Tool output a user pasted into their words: a conversion log, hb_verifier output or a
model's description (hb_model_info, hrt_model_exec model_info) in the symptom or the
deployment notes is read by the kind's own parser, and gives the same facts as its file
would (a per-node cosine table, march, input parameters, warnings). Which kinds are read
this way, and by which function, is the `pasted` declaration of each file kind
(facts/vocabulary.yaml); a kind is recognised by its content signatures, as a file is
(probes/artifacts.py), in each Markdown code block of the text (or the whole text where it
has none). The facts' source is the case key whose text holds the output; the block's lines
are in the facts' path ("symptom 第 3–40 行（粘贴的 hb_mapper / hb_compile 转换日志）")."""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from j6doctor.facts import per_vocabulary, vocabulary
from j6doctor.probes.code_blocks import CodeBlock, code_blocks
from j6doctor.probes.input_error import InputError

if TYPE_CHECKING:
    from j6doctor.engine.facts import Source

MAX_PASTED_CHARS = 1024 * 1024  # a block (or a text without blocks) longer than this is not read


@dataclass(frozen=True)
class PastedText:
    """A block of a case key's text read as a tool's output: what a probe's `found` is for a
    file. `origin` is the case key's source, which every fact read from it gets
    (probes/probe_output.py)."""

    display: str
    origin: Any


@per_vocabulary
def _pasted_kinds() -> list[tuple[str, str, tuple]]:
    """(kind, label, signatures) of every kind whose probe declares `pasted`."""
    from j6doctor.probes.artifacts import signatures_of
    from j6doctor.probes.registry import probes

    enum = vocabulary().enums["file_kind"]
    return [(kind, str(enum.attr(kind, "label", kind)), signatures_of(kind))
            for kind, probe in probes().items() if probe.pasted]


def read_blocks(text: str) -> list[CodeBlock]:
    """The code blocks of a text that a declared kind's reader reads."""
    return [block for block, _ in _recognised(text)[1]]


_RECENT: "OrderedDict[str, tuple[Any, tuple[bool, list]]]" = OrderedDict()
RECENT_TEXTS = 8  # texts whose blocks a process remembers (a case has a handful)


def _recognised(text: str) -> tuple[bool, list[tuple[CodeBlock, tuple[str, str]]]]:
    """(whether the text has code blocks, each block a declared kind's reader reads with
    its (kind, label)), found once per text: the case's platform and versions are read
    around them (case_file.py), and the evidence reads them (add_pasted_output)."""
    kinds = _pasted_kinds()
    hit = _RECENT.get(text)
    if hit is not None and hit[0] is kinds:
        _RECENT.move_to_end(text)
        return hit[1]
    blocks = code_blocks(text)
    found = (bool(blocks), [(block, kind) for block in blocks if (kind := _kind_of(block)) is not None])
    _RECENT[text] = (kinds, found)
    while len(_RECENT) > RECENT_TEXTS:
        _RECENT.popitem(last=False)
    return found


def _kind_of(block: CodeBlock) -> tuple[str, str] | None:
    """(kind, label) of the first declared kind whose signatures match the block's head, as
    they match a file's (its first HEAD_BYTES characters)."""
    from j6doctor.probes.artifacts import HEAD_BYTES

    head = block.text.lstrip("\n")[:HEAD_BYTES]  # (the blank lines standing for the text before it)
    return next(((kind, label) for kind, label, signatures in _pasted_kinds()
                 if any(p.search(head) for p in signatures)), None)


def add_pasted_output(texts: list[tuple[str, str, "Source"]], out,
                      problem: Callable[[str, str, "Source"], None]) -> dict[str, list[CodeBlock]]:
    """Every declared kind's output found in the texts ((case key, text, the key's source)),
    through the kind's `pasted` function. What cannot be read goes to `problem(display,
    message, source)`; the text's other facts stand. Returns the code blocks recognised as a
    tool's output, by text (a text that is one tool's output without a fence is not among
    them: where its prose ends cannot be told)."""
    from j6doctor.probes.registry import pasted

    taken: dict[str, list[CodeBlock]] = {}
    for key, text, origin in texts:
        fenced, recognised = _recognised(text)  # (a block is one tool's output)
        if fenced:
            if recognised:
                taken[text] = [block for block, _ in recognised]
        else:
            whole = CodeBlock(1, text.count("\n") + 1, text)
            whole_kind = _kind_of(whole)
            recognised = [(whole, whole_kind)] if whole_kind is not None else []
        for block, (kind, label) in recognised:
            found = PastedText(f"{key} 第 {block.first_line}–{block.last_line} 行（粘贴的{label}）", origin)
            if len(block.text) > MAX_PASTED_CHARS:
                problem(found.display, f"longer than {MAX_PASTED_CHARS // 1024} KB: not read", origin)
                continue
            try:
                pasted(kind)(block.text, found, out)
            except InputError as error:
                problem(found.display, (f"第 {error.line} 行：" if error.line else "") + error.message, origin)
    return taken


__all__ = ["MAX_PASTED_CHARS", "PastedText", "add_pasted_output", "read_blocks"]
