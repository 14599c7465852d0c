"""How text is normalised before it is read: one form for the user's words and for the phrases
of the term lists, so that a phrase matches however the words were typed.

- *Characters* (length-preserving): full-width ASCII as ASCII ("ＮＣＨＷ", "，" → ","), the
  ideographic and other odd spaces as a space, curly quotes as straight ones, lower case.
- *Compaction*: a run of whitespace is one space, and none at all next to a CJK character
  (Chinese is written without spaces; "量化后的 onnx" and "量化后的onnx" are the same words);
  Markdown's emphasis and code marks (`*`, `` ` ``) count as whitespace ("**identical** input"),
  and so does a web address.

`compact` keeps, for every character it keeps, its index in the text, so that what is found
in the compact form is shown with its span in the user's own text.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from functools import lru_cache

# Full-width forms U+FF01..U+FF5E are ASCII shifted by 0xFEE0; the rest one by one. Every
# replacement is one character, so indexes do not move.
_CHARS = {chr(code): chr(code - 0xFEE0) for code in range(0xFF01, 0xFF5F)}
_CHARS.update({c: " " for c in "\u00a0\u2002\u2003\u2009\u200b\u3000\t\r\f\v"})
# control characters are no words (and no engine should see a NUL in a value); the Unicode
# line and paragraph separators and NEL end a line
_CHARS.update({chr(code): " " for code in [*range(0x00, 0x09), *range(0x0e, 0x20), 0x7f]})
_CHARS.update({c: "\n" for c in "\u0085\u2028\u2029"})
_CHARS.update({c: "'" for c in "\u2018\u2019\u2032"})  # (a backtick is Markdown: compaction reads it as a space)
_CHARS.update({c: '"' for c in "\u201c\u201d\u300c\u300d"})
_CHARS.update({"\u2013": "-", "\u2212": "-", "\u0130": "i"})  # en dash, minus; İ lowers to two characters
_ODD = re.compile("[" + re.escape("".join(_CHARS)) + "]")

# Compaction first makes every line break and Markdown mark a space (no index moves), then
# changes only the runs that change length: two spaces or more, a space next to a CJK
# character, a space at either end (a single space between two Latin words costs nothing).
# Every branch starts with the space itself, so that the search skips to the next space; a
# space next to any other than ASCII is found, and compact() keeps it unless that is CJK
# (a class of the CJK ranges would cost a cold run milliseconds to compile).
_BLANKS = re.compile(r"[\n*`]")
# A web address reads as a space: its words are no statement ("…/examples/onnx/…" names no
# ONNX model), and a sentence around a long link keeps its terms near each other.
_RUNS = r" (?: +|(?=[^\x00-\x7f])|$|(?<=[^\x00-\x7f] )|(?<=^ ))"
_ADDRESS_CHARS = r"(?a:[\w.~:/?#@!$&*+=%-])+ *"
_ADDRESS = rf"(?:(?:https?://|www\.){_ADDRESS_CHARS})"  # (addresses in a row: one run)
_CHANGED = re.compile(_RUNS)


@lru_cache(maxsize=1)
def _changed_or_address() -> re.Pattern:
    """_CHANGED with web addresses (spaces, then addresses), for a text that holds one
    (compiled when one is first seen). Each alternative opens with one character (a space,
    h, w), so that the search skips every other one instead of trying each place."""
    return re.compile(rf"  *{_ADDRESS}+|https?://{_ADDRESS_CHARS}{_ADDRESS}*|www\.{_ADDRESS_CHARS}{_ADDRESS}*|{_RUNS}")


def is_cjk(char: str) -> bool:
    """A CJK ideograph or CJK punctuation (the scripts written without spaces)."""
    code = ord(char)
    return 0x4E00 <= code <= 0x9FFF or 0x3000 <= code <= 0x303F or 0x3400 <= code <= 0x4DBF


def normal(text: str) -> str:
    """The text with its characters normalised; as long as the text."""
    mapped = _ODD.sub(lambda m: _CHARS[m.group()], text)
    out = mapped.lower()
    if len(out) != len(text):  # a character whose lower case is longer: keep it as it was
        out = "".join(c if len(c.lower()) != 1 else c.lower() for c in mapped)
    return out


class Compact:
    """A normalised text with its whitespace compacted, and the way back to the text's indexes:
    the compact text is the normalised one cut into segments that map one to one, each
    (compact start, normalised start)."""

    __slots__ = ("text", "length", "c_starts", "n_starts")

    def __init__(self, text: str, length: int, c_starts: list[int], n_starts: list[int]):
        self.text = text          # the compact form
        self.length = length      # length of the normalised text
        self.c_starts = c_starts  # segment starts in the compact text (the first is 0)
        self.n_starts = n_starts  # ... and in the normalised text

    def start_in_text(self, index: int) -> int:
        """Index in the text of the character at compact index `index` (the text's end past it)."""
        if index >= len(self.text):
            return self.length
        at = bisect_right(self.c_starts, index) - 1
        return self.n_starts[at] + index - self.c_starts[at]

    def end_in_text(self, index: int) -> int:
        """Index in the text just after the character at compact index `index - 1`."""
        return self.start_in_text(index - 1) + 1 if index > 0 else 0

    def index_of(self, text_index: int) -> int:
        """The first compact index whose character is at or after text index `text_index`."""
        at = bisect_right(self.n_starts, text_index) - 1
        if at < 0:
            return 0
        index = self.c_starts[at] + text_index - self.n_starts[at]
        following = self.c_starts[at + 1] if at + 1 < len(self.c_starts) else len(self.text)
        return min(index, following)

    def kept(self, text_index: int) -> bool:
        """Whether the character at text index `text_index` is in the compact text."""
        index = self.index_of(text_index)
        return index < len(self.text) and self.start_in_text(index) == text_index


def compact(normalised: str) -> Compact:
    """Whitespace runs as one space, none next to a CJK character or at either end."""
    spaced = _BLANKS.sub(" ", normalised)
    pieces: list[str] = []
    c_starts, n_starts = [0], [0]
    kept = 0       # index in `normalised` of the first character not yet copied
    length = 0     # length of the compact text so far
    runs = _changed_or_address() if "://" in spaced or "www." in spaced else _CHANGED
    for run in runs.finditer(spaced):
        start, end = run.span()
        drop = start == 0 or end == len(spaced) or is_cjk(spaced[start - 1]) or is_cjk(spaced[end])
        if not drop and end - start == 1:
            continue  # one space next to a character that is not CJK: kept as it is, no new segment
        pieces.append(spaced[kept:start])
        length += start - kept
        if not drop:
            pieces.append(" ")
            length += 1
        kept = end
        c_starts.append(length)
        n_starts.append(end)
    pieces.append(spaced[kept:])
    return Compact("".join(pieces), len(normalised), c_starts, n_starts)


def compact_phrase(phrase: str) -> str:
    """A phrase in the form it is looked up in: normalised and compacted like the text."""
    return compact(normal(phrase)).text
