"""The `described_as` templates of the vocabulary (how the report and `explain` word a fact of
a type), checked and compiled once.

A template is data (a pack's vocabulary brings its own), so it may do only what wording
needs: print its type's fields, `ptq` and `local`, choose with if / elif / else, `set` a name,
compare and test (`is none`), and apply the filters `label(enum)` and `artifact(ptq)`. No
attribute or item access, no calls, no arithmetic or concatenation, no loops: a template
cannot reach anything but its fields, and its text is never longer than its parts.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, Any

from j6doctor.engine.errors import VocabularyError

if TYPE_CHECKING:
    import jinja2
    from j6doctor.engine.vocabulary import FactType, Vocabulary

CONTEXT = ("ptq", "local")  # what every template may use besides its type's fields
FILTERS = ("label", "artifact")
_ALLOWED_NODES = ("Template", "Output", "TemplateData", "Name", "Const", "Filter", "If", "CondExpr", "Compare",
                  "Operand", "And", "Or", "Not", "Assign", "Test", "Tuple", "Pos", "Neg")


def compile_described(vocab: "Vocabulary", ftype: "FactType") -> "jinja2.Template":
    """The type's template, compiled; VocabularyError saying what is wrong with it."""
    import jinja2
    from jinja2 import meta, nodes

    where = f"types.{ftype.name}.described_as"
    env = environment()
    try:
        tree = env.parse(ftype.described_as)
    except jinja2.TemplateSyntaxError as exc:
        raise VocabularyError(f"{where}: not a valid template ({exc.message}); write the fields as {{{{ field }}}}") \
            from None
    for node in tree.find_all(nodes.Node):
        kind = type(node).__name__
        if kind not in _ALLOWED_NODES:
            raise VocabularyError(f"{where}: {kind} is not allowed in a described_as template (fields, if / elif / "
                                  f"else, set, comparisons and the filters {', '.join(FILTERS)} only)")
        if isinstance(node, nodes.Filter):
            _check_filter(vocab, node, where)
    clash = sorted(set(CONTEXT) & set(ftype.fields))
    if clash:
        raise VocabularyError(f"{where}: the type has a field named {clash[0]!r}, which templates use for the case")
    unknown = sorted(meta.find_undeclared_variables(tree) - set(ftype.fields) - set(CONTEXT) - {"none", "true",
                                                                                                   "false"})
    if unknown:
        raise VocabularyError(f"{where}: {unknown[0]!r} is no field of {ftype.name} "
                              f"(fields: {', '.join(ftype.fields)}; also {', '.join(CONTEXT)})")
    return env.from_string(tree)


def _check_filter(vocab: "Vocabulary", node: Any, where: str) -> None:
    from jinja2 import nodes

    if node.name not in FILTERS:
        raise VocabularyError(f"{where}: no filter {node.name!r} (filters: {', '.join(FILTERS)})")
    if node.name == "label":
        enum = node.args[0].value if len(node.args) == 1 and isinstance(node.args[0], nodes.Const) else None
        if enum not in vocab.enums:
            raise VocabularyError(f"{where}: label takes the name of an enum of the vocabulary, e.g. "
                                  f"label('status'); got {enum!r}")


@lru_cache(maxsize=1)
def environment() -> "jinja2.Environment":
    """A sandbox, and text only: a field a template names that the fact lacks is an error,
    not an empty text. The filters read the vocabulary in use when the template renders."""
    import jinja2
    from jinja2.sandbox import SandboxedEnvironment

    from j6doctor.facts import attr, label

    def artifact(value: str, ptq: Any = False) -> str:
        """An artifact as its flow calls it (PTQ: 校准模型, 定点模型 ...)."""
        return str(attr("artifact", value, "ptq_label", label("artifact", value))) if ptq else label("artifact", value)

    env = SandboxedEnvironment(autoescape=False, undefined=jinja2.StrictUndefined)
    env.filters = {"label": lambda value, enum: label(enum, value), "artifact": artifact}
    return env
