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

is read as the call's line and, on the line right after it, "RuntimeError: Unsupported op: ...".
Every other character keeps its place (a span of the result is the same span of the text)."""

from __future__ import annotations

import re

_HEAD = re.compile(r"traceback \(most recent call last\):", re.IGNORECASE)
_FRAME = re.compile(r'(?P<indent>[ \t]*)File "(?P<path>[^"\n]*)", line \d+(?:, in \S+)?[ \t]*')
# where installed code lives: a package's folder, the standard library (POSIX and Windows),
# frozen modules
_INSTALLED = re.compile(r"site-packages|dist-packages|/lib/python\d|\\Lib\\|^<frozen ")
# the markers under a code line ("    ^^^^^^^^^^^^")
_MARKERS = re.compile(r"[ \t]*[\^~]+[\^~ \t]*")
# a line that stands for frames left out: "...", "[Previous line repeated 996 more times]"
_ELIDED = re.compile(r"[ \t]*(?:\.\.\.|…|\[previous line repeated \d+ more times?\])[ \t]*", re.IGNORECASE)
# an exception's line, never a frame's code ("ModuleNotFoundError: No module named 'hbdk4'")
_EXCEPTION = re.compile(r"[ \t]*[\w.]*(?:Error|Exception|Exit|Interrupt|Warning)(?::|$)")


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
    for frames left out. A frame's code line is indented deeper than the frame's line (a frozen
    module's frame has none); a traceback ends at its exception's line."""
    spans: list[tuple[int, int]] = []
    inside = False
    frame: tuple[int, bool] | None = None  # the last frame's (indent, installed?), while its code may follow
    markers_of: bool | None = None         # markers may follow a code line ("    ^^^^"): of installed code?
    at = 0
    for raw in text.split("\n"):
        span, at = (at, min(at + len(raw) + 1, len(text))), at + len(raw) + 1
        line = raw.rstrip("\r")
        if _HEAD.search(line):
            inside, frame, markers_of = True, None, None
        elif not inside or not line.strip():
            continue
        elif (found := _FRAME.fullmatch(line)) is not None:
            frame, markers_of = (len(found["indent"]), bool(_INSTALLED.search(found["path"]))), None
            spans.append(span)
        elif _ELIDED.fullmatch(line):
            frame, markers_of = None, None
            spans.append(span)
        elif frame is not None and _indent(line) > frame[0] and not _EXCEPTION.match(line):
            if frame[1]:
                spans.append(span)
            frame, markers_of = None, frame[1]
        elif markers_of is not None and _MARKERS.fullmatch(line):
            if markers_of:
                spans.append(span)
        else:
            inside, frame, markers_of = False, None, None  # the exception's line
    return spans


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


__all__ = ["frames_blanked"]
