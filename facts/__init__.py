"""The fact vocabulary of j6doctor, as data (vocabulary.yaml), and the helpers that
read domain constants out of it (chain positions, labels, gate order)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from ..engine.rulebase_cache import key_of, load_or_build
from ..engine.strict_yaml import load_yaml
from ..engine.vocabulary import Vocabulary

VOCABULARY_FILE = "vocabulary.yaml"


@lru_cache(maxsize=1)
def vocabulary() -> Vocabulary:
    """The vocabulary, parsed once and kept in the user's private cache, keyed by the
    file's bytes (parsing the YAML with line numbers costs more than the rest of a start)."""
    data = (Path(__file__).resolve().parent / VOCABULARY_FILE).read_bytes()

    def build() -> Vocabulary:
        text = data.decode("utf-8")
        return Vocabulary.from_data(load_yaml(text).data, origin=VOCABULARY_FILE)

    return load_or_build(key_of("vocabulary", data), build, kind="vocabulary")


def enum_values(name: str) -> tuple[str, ...]:
    return vocabulary().enums[name].values


def label(enum: str, value: str) -> str:
    return str(vocabulary().enums[enum].attr(value, "label", value))


def attr(enum: str, value: str, key: str, default=None):
    return vocabulary().enums[enum].attr(value, key, default)


def resolve(enum: str, text: str) -> str | None:
    """The value of `enum` that `text` names (the value itself or an alias, ignoring case,
    spaces, '-', '_' and '.'), or None when it names none or several."""
    found = vocabulary().enums[enum].resolve(text)
    return found[0] if len(found) == 1 else None
