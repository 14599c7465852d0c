"""The phrase syntax of the term lists: literal words, with a shorthand for their variants.

A phrase is looked up literally (after normalisation, text_normalise.py), with two kinds of
shorthand, both expanded here into the literal phrases they stand for:

- `(a|b|c)`: one of the alternatives; an empty one makes the group optional
  ("(没有|没|未)发现" is 没有发现, 没发现, 未发现; "layouts?" is not written, "layout(s|)" is);
- a `*` at the end of a phrase, or of an alternative that ends the phrase: the last word may
  go on ("degrad*" is degrade, degraded, degradation; "(not match*|differ*)"). A word that goes
  on cannot be followed by more words ("(degrad*|worse) result" is refused): the phrase is
  looked up literally, up to where the word stops.

`\\(`, `\\)`, `\\|` and `\\*` are the characters themselves. A phrase that starts (ends) with a
Latin letter or digit matches only at the start (end) of a word there: "if" is not found in
"different", "bin" not in "abnormal_bin_x" ('_' joins words).

Nothing else is special: a phrase is never a regular expression.
"""

from __future__ import annotations

from dataclasses import dataclass

from j6doctor.engine.text_normalise import compact_phrase

MAX_VARIANTS = 512  # literal phrases one written phrase may stand for
_ESCAPES = {"(": "\x01", ")": "\x02", "|": "\x03", "*": "\x04"}
_BACK = {v: k for k, v in _ESCAPES.items()}


class PhraseError(ValueError):
    """A phrase that is not valid shorthand (unbalanced group, too many variants, empty)."""


@dataclass(frozen=True)
class Literal:
    """One literal phrase as looked up: its compact form and how its ends must sit."""

    key: str
    word_start: bool  # starts with a Latin letter / digit: the text's character before it must not be one
    word_end: bool    # likewise at the end, unless the phrase is a stem (`*`)


def expand(phrase: str) -> list[Literal]:
    """The literal phrases `phrase` stands for, in the order written (duplicates dropped)."""
    if not isinstance(phrase, str) or not phrase.strip():
        raise PhraseError("expected a phrase (literal words), got an empty one")
    text = phrase
    for char, mark in _ESCAPES.items():
        text = text.replace("\\" + char, mark)
    seen: dict[str, Literal] = {}
    for variant in _variants(text, phrase):
        stem = variant.endswith("*")
        if stem:
            variant = variant[:-1]
        if "*" in variant:
            raise PhraseError(f"{phrase!r}: '*' may only end the phrase (the last word goes on), or an alternative "
                              "at its end; write \\* for the character")
        for mark, char in _BACK.items():
            variant = variant.replace(mark, char)
        key = compact_phrase(variant)
        if not key:
            continue
        seen.setdefault(key, Literal(key, _is_word(key[0]), _is_word(key[-1]) and not stem))
    if not seen:
        raise PhraseError(f"{phrase!r}: stands for no words (every alternative is empty)")
    return list(seen.values())


def _is_word(char: str) -> bool:
    return char.isascii() and (char.isalnum() or char == "_")


def _variants(text: str, phrase: str) -> list[str]:
    """Every expansion of the `(a|b)` groups of `text` (groups may nest)."""
    out = [""]
    index = 0
    while index < len(text):
        char = text[index]
        if char == ")" or char == "|":
            raise PhraseError(f"{phrase!r}: {char!r} outside a group; write \\{char} for the character")
        if char != "(":
            out = [o + char for o in out]
            index += 1
            continue
        end, alternatives = _group(text, index, phrase)
        out = [o + a for o in out for a in alternatives]
        if len(out) > MAX_VARIANTS:
            raise PhraseError(f"{phrase!r}: stands for more than {MAX_VARIANTS} phrases; split it")
        index = end
    return out


def _group(text: str, start: int, phrase: str) -> tuple[int, list[str]]:
    """The index after the group opening at `start`, and the expansions of its alternatives."""
    depth = 0
    splits = [start]
    for index in range(start, len(text)):
        char = text[index]
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth == 0:
                splits.append(index)
                alternatives: list[str] = []
                for left, right in zip(splits, splits[1:]):
                    alternatives += _variants(text[left + 1:right], phrase)
                return index + 1, alternatives
        elif char == "|" and depth == 1:
            splits.append(index)
    raise PhraseError(f"{phrase!r}: a group '(' is not closed")
