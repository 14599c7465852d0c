"""The fact vocabulary of j6doctor, as data (vocabulary.yaml), and the helpers that
read domain constants out of it (chain positions, labels, gate order).

A rule pack may add to the vocabulary with its own `vocabulary.yaml` (new values, new
attributes, new fact types). The vocabulary a rule base was loaded with is in use only
inside `using(vocab)` — the diagnosis, its rendering, a prompt — and only in that context
(a context variable: another thread or task keeps its own); outside, the bundled one is.
Nothing sets it for the rest of the process.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from functools import lru_cache, wraps
from pathlib import Path
from typing import Any, Callable, Iterator, TypeVar

from j6doctor.engine.errors import VocabularyError
from j6doctor.engine.rulebase_cache import key_of, load_or_build
from j6doctor.engine.strict_yaml import YamlInputError, load_yaml
from j6doctor.engine.vocabulary import PACK_VOCABULARY, Vocabulary, extend_data

VOCABULARY_FILE = "vocabulary.yaml"
# The vocabulary is these files together: the fact types and enums, how text is read in
# context (ConText triggers), the term classes of prose, and the table of the tools' known
# messages (an enum of its own). A top-level mapping two files hold (enums,
# enum_attributes) is their union; an entry defined in both is an error.
VOCABULARY_FILES = (VOCABULARY_FILE, "text_context.yaml", "text_terms.yaml", "known_messages.yaml")

# the vocabulary of the `using` block this context runs in (None: the bundled one)
_in_use: ContextVar[Vocabulary | None] = ContextVar("j6doctor_vocabulary", default=None)


def _bundled_files() -> list[tuple[str, bytes]]:
    folder = Path(__file__).resolve().parent
    return [(name, (folder / name).read_bytes()) for name in VOCABULARY_FILES]


def _bundled_data(files: list[tuple[str, bytes]]) -> dict[str, Any]:
    """The bundled vocabulary files as one mapping (each file holds its own top-level keys)."""
    data: dict[str, Any] = {}
    for name, raw in files:
        try:
            part = load_yaml(raw.decode("utf-8")).data or {}
        except YamlInputError as exc:  # a bundled file: a defect to report, named precisely
            raise VocabularyError(f"{name}{f':{exc.line}' if exc.line else ''}: {exc.message}") from None
        for key, value in part.items():
            if key not in data:
                data[key] = value
            elif isinstance(value, dict) and isinstance(data[key], dict):
                twice = sorted(set(value) & set(data[key]))
                if twice:
                    raise VocabularyError(f"{name}: {key}.{twice[0]} is already defined in another vocabulary file")
                data[key] = {**data[key], **value}
            else:
                raise VocabularyError(f"{name}: top-level key {key!r} is already in another vocabulary file")
    return data


@lru_cache(maxsize=1)
def bundled() -> Vocabulary:
    """The bundled vocabulary, parsed once and kept in the user's private cache, keyed by the
    file's bytes (parsing the YAML with line numbers costs more than the rest of a start)."""
    files = _bundled_files()

    def build() -> Vocabulary:
        return Vocabulary.from_data(_bundled_data(files), origin=VOCABULARY_FILE)

    return load_or_build(key_of("vocabulary", *(raw for _, raw in files)), build, kind="vocabulary")


def vocabulary() -> Vocabulary:
    """The vocabulary in use: the one of the innermost `using` block, else the bundled one."""
    vocab = _in_use.get()
    return vocab if vocab is not None else bundled()


def pack_vocabulary_files(packs: list[Path] | tuple[Path, ...]) -> list[Path]:
    return [p / PACK_VOCABULARY for p in packs if (p / PACK_VOCABULARY).is_file()]


def with_packs(packs: list[Path] | tuple[Path, ...], display: dict[Path, str] | None = None) -> Vocabulary:
    """The bundled vocabulary plus the additions of each pack's vocabulary.yaml, in order.
    Raises VocabularyError naming the pack file and what is wrong."""
    files = pack_vocabulary_files(packs)
    if not files:
        return bundled()
    parts = [(f, f.read_bytes()) for f in files]
    bundled_files = _bundled_files()

    def build() -> Vocabulary:
        data = _bundled_data(bundled_files)
        for path, raw in parts:
            shown = f"{(display or {}).get(path.parent, str(path.parent))}/{PACK_VOCABULARY}"
            try:
                extension = load_yaml(raw.decode("utf-8")).data
            except UnicodeDecodeError:
                raise VocabularyError(f"{shown}: not UTF-8 text") from None
            except YamlInputError as exc:
                raise VocabularyError(f"{shown}{f':{exc.line}' if exc.line else ''}: {exc.message}") from None
            data = extend_data(data, extension, shown)
            _check_no_probe(extension, shown)
            # checked after each pack, so that a problem names the pack file that made it
            vocab = Vocabulary.from_data(data, origin=shown)
            _check_described_as(extension, vocab, shown)
            _check_read_from(vocab, shown)
        return vocab

    return load_or_build(key_of("vocabulary", *(raw for _, raw in bundled_files), *(raw for _, raw in parts)), build,
                         kind="vocabulary")


def _check_no_probe(extension: dict[str, Any], shown: str) -> None:
    """A pack's file kinds are recorded, never read: a probe is j6doctor's code, which a pack
    (YAML) cannot add."""
    kinds = ((extension.get("enums") or {}).get("file_kind") or {}).get("values") or {}
    for kind, attrs in kinds.items():
        declared = sorted(set(attrs) & {"probe", "reader", "summary", "read_together", "scanned", "pasted"}) \
            if isinstance(attrs, dict) else []
        if declared:
            raise VocabularyError(f"{shown}: enums.file_kind.values.{kind}.{declared[0]}: a pack cannot declare a probe "
                                  "(the code that reads a file kind is j6doctor's); leave it out: the files of "
                                  "the kind are then found and recorded (path, size, sha256), not read")


def _check_described_as(extension: dict[str, Any], vocab: Vocabulary, shown: str) -> None:
    """A pack's `described_as` templates compile, name only their type's fields and do only
    what wording needs (facts/described.py)."""
    from j6doctor.facts.described import compile_described

    for name, spec in (extension.get("types") or {}).items():
        if isinstance(spec, dict) and spec.get("described_as"):
            try:
                compile_described(vocab, vocab.types[name])
            except VocabularyError as exc:
                raise VocabularyError(f"{shown}: {exc}") from None


def _check_read_from(vocab: Vocabulary, shown: str) -> None:
    """The case keys the vocabulary declares (a pack's among them) compile, with valid JSON
    Schemas, one fact type per key (facts/case_keys.py)."""
    from j6doctor.facts.case_keys import case_keys

    try:
        case_keys(vocab, check_schemas=True)
    except VocabularyError as exc:
        raise VocabularyError(f"{shown}: {exc}") from None


@contextmanager
def using(vocab: Vocabulary) -> Iterator[None]:
    """`vocab` is the vocabulary in use inside the block (a rule base's, with its packs'
    platforms, stages and labels); what was in use before comes back after: a pack's rule
    base and the bundled one diagnose side by side in one process."""
    token = _in_use.set(None if vocab is bundled() else vocab)
    try:
        yield
    finally:
        _in_use.reset(token)


T = TypeVar("T")


def per_vocabulary(build: Callable[[], T]) -> Callable[[], T]:
    """Cache what `build` derives from the vocabulary, once per vocabulary in use."""
    memo: dict[int, tuple[Vocabulary, Any]] = {}

    @wraps(build)
    def get() -> T:
        vocab = vocabulary()
        hit = memo.get(id(vocab))
        if hit is None or hit[0] is not vocab:
            if len(memo) > 4:
                memo.clear()
            hit = memo[id(vocab)] = (vocab, build())
        return hit[1]

    return get


def enum_values(name: str) -> tuple[str, ...]:
    return vocabulary().enums[name].values


def label(enum: str, value: str) -> str:
    return str(vocabulary().enums[enum].attr(value, "label", value))


def attr(enum: str, value: str, key: str, default=None):
    return vocabulary().enums[enum].attr(value, key, default)


class _Unsaid(dict):
    def __missing__(self, key: str) -> str:
        return "…"


def written_value(type_name: str, field: str, value: Any) -> str:
    """A field value as a case writes it: an enum value's `written` form when it has one."""
    spec = vocabulary().types[type_name].fields.get(field)
    if spec is not None and spec.type == "enum" and isinstance(value, str):
        return str(attr(spec.enum, value, "written", value))
    if isinstance(value, bool):
        return "true" if value else "false"
    return "…" if value is None or value == "" else str(value)


def written_form(type_name: str, values: dict[str, str]) -> str | None:
    """The fact type's `written_as` (how a case gives it) with `values` filled in ("…" for the
    others); None when the type has no written form."""
    ftype = vocabulary().types.get(type_name)
    if ftype is None or not ftype.written_as:
        return None
    return ftype.written_as.format_map(_Unsaid(values))


def gate_answer_key(item: str) -> tuple[str, ...]:
    """The case key a gate item's answer is written to: its `key` attribute (dotted), else
    answers.<item> (the case's `answers:` mapping)."""
    return tuple(str(attr("gate_item", item, "key") or f"answers.{item}").split("."))


def resolve(enum: str, text: str) -> str | None:
    """The value of `enum` that `text` names (the value itself or an alias, ignoring case,
    spaces, '-', '_' and '.'), or None when it names none or several."""
    found = vocabulary().enums[enum].resolve(text)
    return found[0] if len(found) == 1 else None


def threshold(name: str) -> float:
    """A probe's threshold, from the vocabulary's `threshold` enum (where it is explained)."""
    value = attr("threshold", name, "value")
    if value is None:
        raise VocabularyError(f"{VOCABULARY_FILE}: threshold {name!r} has no value")
    return value
