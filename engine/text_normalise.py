"""How text is normalised before it is read: one form for the user's words and for the phrases
of the term lists, so that a phrase matches however the words were typed.

- *Characters* (length-preserving): full-width ASCII as ASCII ("ＮＣＨＷ", "，" → ","), the
  ideographic and other odd spaces as a space, curly quotes as straight ones, lower case.
- *Compaction*: a run of whitespace is one space, and none at all next to a CJK character
  (Chinese is written without spaces; "量化后的 onnx" and "量化后的onnx" are the same words);
  Markdown's emphasis and code marks (`*`, `` ` ``) count as whitespace ("**identical** input").

`compact` keeps, for every character it keeps, its index in the text, so that what is found
in the compact form is shown with its span in the user's own text.
"""

from __future__ import annotations

import re
from array import array
from bisect import bisect_right

# Full-width forms U+FF01..U+FF5E are ASCII shifted by 0xFEE0; the rest one by one. Every
# replacement is one character, so indexes do not move.
_CHARS = {code: code - 0xFEE0 for code in range(0xFF01, 0xFF5F)}
_CHARS.update({ord(c): " " for c in "\u00a0\u2002\u2003\u2009\u200b\u3000\t\r\f\v"})
_CHARS.update({ord(c): "'" for c in "\u2018\u2019\u2032`"})
_CHARS.update({ord(c): '"' for c in "\u201c\u201d\u300c\u300d"})
_CHARS.update({0x2013: "-", 0x2212: "-", 0x0130: "i"})  # en dash, minus; İ lowers to two characters

_SPACES = re.compile(r"[ \n*`]+")


def is_cjk(char: str) -> bool:
    """A CJK ideograph or CJK punctuation (the scripts written without spaces)."""
    code = ord(char)
    return 0x4E00 <= code <= 0x9FFF or 0x3000 <= code <= 0x303F or 0x3400 <= code <= 0x4DBF


def normal(text: str) -> str:
    """The text with its characters normalised; as long as the text."""
    out = text.translate(_CHARS).lower()
    if len(out) != len(text):  # a character whose lower case is longer: keep it as it was
        out = "".join(c if len(c.lower()) != 1 else c.lower() for c in text.translate(_CHARS))
    return out


class Compact:
    """A normalised text with its whitespace compacted, and the way back to the text's indexes."""

    __slots__ = ("text", "origin", "length")

    def __init__(self, text: str, origin: array, length: int):
        self.text = text        # the compact form
        self.origin = origin    # origin[i]: index in the normalised text of text[i]
        self.length = length    # length of the normalised text

    def start_in_text(self, index: int) -> int:
        """Index in the text of compact index `index` (a start: the character's own index)."""
        return self.origin[index] if index < len(self.origin) else self.length

    def end_in_text(self, index: int) -> int:
        """Index in the text just after compact index `index - 1` (an end)."""
        return self.origin[index - 1] + 1 if index > 0 else 0

    def index_of(self, text_index: int) -> int:
        """The first compact index at or after text index `text_index`."""
        return bisect_right(self.origin, text_index - 1)


def compact(normalised: str) -> Compact:
    """Whitespace runs as one space, none next to a CJK character or at either end."""
    pieces: list[str] = []
    origin = array("i")
    kept = 0  # index in `normalised` of the first character not yet copied
    for run in _SPACES.finditer(normalised):
        start, end = run.span()
        if start > kept:
            pieces.append(normalised[kept:start])
            origin.extend(range(kept, start))
        kept = end
        if start == 0 or end == len(normalised):
            continue
        if is_cjk(normalised[start - 1]) or is_cjk(normalised[end]):
            continue
        pieces.append(" ")
        origin.append(start)
    if kept < len(normalised):
        pieces.append(normalised[kept:])
        origin.extend(range(kept, len(normalised)))
    return Compact("".join(pieces), origin, len(normalised))


def compact_phrase(phrase: str) -> str:
    """A phrase in the form it is looked up in: normalised and compacted like the text."""
    return compact(normal(phrase)).text
