"""The Markdown code blocks of a user's text (```-fenced): where people paste tool output and
logs. Each block comes with the lines before it blanked, so that a line keeps its number in
the text; `prose` is the text with some of its blocks blanked (what the user wrote around
them), every other character in its place."""

from __future__ import annotations

import re
from dataclasses import dataclass

_FENCE = re.compile(r"^[ \t]*```[^\n]*\n(.*?)^[ \t]*```", re.DOTALL | re.MULTILINE)


@dataclass(frozen=True)
class CodeBlock:
    first_line: int   # the block's first and last line in the text (1-based)
    last_line: int
    text: str         # its lines, after as many empty lines as come before it in the text


def code_blocks(text: str) -> list[CodeBlock]:
    out = []
    for found in _FENCE.finditer(text):
        before = text.count("\n", 0, found.start(1))
        body = found.group(1)
        out.append(CodeBlock(before + 1, before + max(body.count("\n"), 1), before * "\n" + body))
    return out


def prose(text: str, blocks: list[CodeBlock]) -> str:
    """The text with the content of `blocks` (code blocks of it) blanked: what the user wrote
    around them. The line breaks are kept and a blanked line keeps its length in spaces, so
    that a span of the prose is the same span of the text."""
    lines = text.split("\n")
    for block in blocks:
        for number in range(block.first_line, block.last_line + 1):
            lines[number - 1] = " " * len(lines[number - 1])
    return "\n".join(lines)


__all__ = ["CodeBlock", "code_blocks", "prose"]
