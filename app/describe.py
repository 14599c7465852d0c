"""Facts in words (Chinese), for the report and `explain`: each fact type's `described_as`
template of the vocabulary (facts/vocabulary.yaml), rendered over the fact's fields in a
sandbox; a type without one is shown as type（field=value，…）."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from j6doctor.engine import Fact
from j6doctor.facts import per_vocabulary, vocabulary

if TYPE_CHECKING:
    import jinja2


def describe(fact: Fact, ptq: bool = False) -> str:
    """A fact in words; `ptq` names the artifacts as a PTQ user does."""
    local = fact.source is not None and fact.source.kind == "environment"
    return words(fact.type, fact.fields, ptq, local)


def words(type_name: str, fields: dict[str, Any], ptq: bool = False, local: bool = False) -> str:
    """A fact of `type_name` with these fields in words (`local`: read from this machine)."""
    template = _templates().get(type_name)
    if template is None:
        shown = "，".join(f"{k}={v}" for k, v in fields.items() if v not in ("", None))
        return f"{type_name}（{shown}）"
    return template.render(**fields, ptq=ptq, local="（本机环境）" if local else "")


def has_words(type_name: str) -> bool:
    """Whether the vocabulary words facts of this type (`described_as`)."""
    return type_name in _templates()


@per_vocabulary
def _templates() -> dict[str, "jinja2.Template"]:
    """type → its compiled `described_as`, for the vocabulary in use (a pack's are checked
    when it loads; the bundled ones by the tests)."""
    from j6doctor.facts.described import compile_described  # (Jinja: only for a run that words facts)

    vocab = vocabulary()
    return {name: compile_described(vocab, ftype) for name, ftype in vocab.types.items() if ftype.described_as}
