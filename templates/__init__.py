"""Jinja templates of the reports and the next-step scripts, and the environments that
render them, built by one function with the shared settings: once per process, templates
compiled once (Jinja's own cache)."""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:  # jinja2 is imported only by a run that renders a template
    import jinja2

TEMPLATES_DIR = Path(__file__).resolve().parent


def _build(folder: Path, autoescape: Any, finalize: Callable[[Any], Any] | None = None) -> "jinja2.Environment":
    """The settings every template of the project is rendered with (one place for them):
    strict undefined values, trimmed block lines, kept trailing newline, no reload."""
    import jinja2

    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(folder)),
        autoescape=autoescape,
        finalize=finalize,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
        auto_reload=False,  # templates ship with the package: no stat() per render
    )


# In a Markdown report, text from the user that opens raw HTML as CommonMark reads it (a tag
# name then a space, `/`, `>` or the end: `<script>`, `<img src`, `</p>`; `<!--`, `<?`) would be
# markup to a Markdown viewer: its `<` is written `\<` (shown as a literal "<"). Any other `<`
# ("cosine < 0.9", "pos<a.pos") is no tag and stays, and so does one escaped already (after an
# odd run of backslashes: a stored report shown again is not escaped twice, and `\\<b>`, an
# escaped backslash before a tag, is still escaped).
_TAG_START = re.compile(r"(?<!\\)((?:\\\\)*)<(?=/?[A-Za-z][A-Za-z0-9-]*(?:[\s/>]|$)|!|\?)")


def inert_markdown(text: str) -> str:
    """Markdown text with no raw HTML tag: each tag's `<` written `\\<`."""
    return _TAG_START.sub(r"\1\\<", text)


def _inert_markdown(eval_ctx: Any, value: Any) -> Any:
    if eval_ctx.autoescape or not isinstance(value, str):
        return value  # HTML: autoescape writes every value as text
    return inert_markdown(value)


@lru_cache(maxsize=1)
def report_environment() -> "jinja2.Environment":
    """The reports: Markdown as text with no HTML tag from a value, `*.html.j2` with every
    value escaped (autoescape)."""
    import jinja2

    return _build(TEMPLATES_DIR, jinja2.select_autoescape(enabled_extensions=("html.j2", "html", "htm"), default=False),
                  jinja2.pass_eval_context(_inert_markdown))


def script_environment(finalize: Callable[[Any], Any], filters: dict[str, Callable]) -> "jinja2.Environment":
    """The next-step scripts (Python source, templates/next_step): no HTML escaping; every
    output goes through `finalize`, which the caller uses to require Python literals. A
    separate environment from the reports', so that no template (not even one made from a
    string) renders a script without that check."""
    return _script_environment(finalize, tuple(sorted(filters.items())))


@lru_cache(maxsize=2)
def _script_environment(finalize: Callable[[Any], Any], filters: tuple) -> "jinja2.Environment":
    env = _build(TEMPLATES_DIR / "next_step", False, finalize)
    env.filters.update(dict(filters))
    return env
