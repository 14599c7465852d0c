"""Python tracebacks pasted into a user's text, as the text rules read them: the frames of
installed code (site-packages, dist-packages, the standard library) and every frame's
location line blanked, with the line breaks between them, so that the user's own call into a
library stands next to the exception it raised:

    Traceback (most recent call last):
      File "tools/export_hbir.py", line 88, in <module>
        qat_bc = export(qat_model, example_inputs)
      File "/usr/lib/python3.10/site-packages/horizon_plugin_pytorch/.../export_hbir.py", line 412, in export
        ...
    RuntimeError: Unsupported op: aten::index_put_

is read as "qat_bc = export(qat_model, example_inputs)  RuntimeError: Unsupported op: ...".
Every other character keeps its place (a span of the result is the same span of the text)."""

from __future__ import annotations

import re

_HEAD = re.compile(r"traceback \(most recent call last\):", re.IGNORECASE)
_FRAME = re.compile(r'[ \t]*File "(?P<path>[^"\n]*)", line \d+(?:, in \S+)?[ \t]*')
# where installed code lives: a package's folder, the standard library, frozen modules
_INSTALLED = re.compile(r"site-packages|dist-packages|[\\/]lib[\\/]python\d|[\\/]Lib[\\/]|^<frozen ", re.IGNORECASE)
# the markers under a code line ("    ^^^^^^^^^^^^")
_MARKERS = re.compile(r"[ \t]*[\^~]+[\^~ \t]*")
# a line that stands for frames left out: "...", "[Previous line repeated 996 more times]"
_ELIDED = re.compile(r"[ \t]*(?:\.\.\.|…|\[previous line repeated \d+ more times?\])[ \t]*", re.IGNORECASE)


def frames_blanked(text: str) -> str:
    """`text` with the frames of its tracebacks blanked as the module says (the text itself
    when it holds none)."""
    if not _HEAD.search(text):
        return text
    chars = list(text)
    for start, end in _blanked_spans(text):
        chars[start:end] = " " * (end - start)
    return "".join(chars)


def _blanked_spans(text: str) -> list[tuple[int, int]]:
    """The spans (with their line breaks) of every frame's location line, of the code line
    under a frame of installed code (and the markers under it), and of every line that stands
    for frames left out. A traceback ends at its exception's line."""
    spans: list[tuple[int, int]] = []
    inside = False
    code_of: bool | None = None     # a frame's code line comes next: is the frame installed code's?
    markers_of: bool | None = None  # markers may follow a code line ("    ^^^^"): of installed code?
    at = 0
    for line in text.split("\n"):
        span, at = (at, min(at + len(line) + 1, len(text))), at + len(line) + 1
        if _HEAD.search(line):
            inside, code_of, markers_of = True, None, None
        elif not inside or not line.strip():
            continue
        elif (frame := _FRAME.fullmatch(line)) is not None:
            code_of, markers_of = bool(_INSTALLED.search(frame["path"])), None
            spans.append(span)
        elif _ELIDED.fullmatch(line):
            code_of, markers_of = None, None
            spans.append(span)
        elif code_of is not None:
            if code_of:
                spans.append(span)
            code_of, markers_of = None, code_of
        elif markers_of is not None and _MARKERS.fullmatch(line):
            if markers_of:
                spans.append(span)
        else:
            inside, markers_of = False, None  # the exception's line
    return spans


__all__ = ["frames_blanked"]
