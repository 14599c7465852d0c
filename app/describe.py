"""Facts in words (Chinese), for the report and `explain`: each fact type's `described_as`
template of the vocabulary (facts/vocabulary.yaml), rendered over the fact's fields in a
sandbox; a type without one is shown as type（field=value，…）."""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, Any

from j6doctor.engine import Fact, VocabularyError
from j6doctor.facts import attr, label, per_vocabulary, vocabulary

if TYPE_CHECKING:
    import jinja2


def artifact_label(artifact: str, ptq: bool = False) -> str:
    """An artifact as its flow calls it (PTQ: 校准模型, 定点模型 ...)."""
    if ptq:
        return str(attr("artifact", artifact, "ptq_label", label("artifact", artifact)))
    return label("artifact", artifact)


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
    """type → its compiled `described_as`, for the vocabulary in use."""
    import jinja2

    out = {}
    for name, ftype in vocabulary().types.items():
        if ftype.described_as:
            try:
                out[name] = _environment().from_string(ftype.described_as)
            except jinja2.TemplateSyntaxError as exc:
                raise VocabularyError(f"type {name!r}: described_as is no valid template: {exc.message}") from None
    return out


@lru_cache(maxsize=1)
def _environment() -> "jinja2.Environment":
    """A sandbox (a pack's vocabulary brings templates too): fields in, text out, nothing else
    reachable; a field a template names that the fact lacks is an error, not an empty text."""
    import jinja2
    from jinja2.sandbox import SandboxedEnvironment

    env = SandboxedEnvironment(autoescape=False, undefined=jinja2.StrictUndefined, keep_trailing_newline=False)
    env.filters["label"] = lambda value, enum: label(enum, value)
    env.filters["artifact"] = lambda value, ptq=False: artifact_label(value, bool(ptq))
    return env
