"""What the text rules read with, as data: the context triggers and the term classes.

Generic: the words live in the vocabulary files (facts/text_context.yaml,
facts/text_terms.yaml); this module only checks their shape and builds patterns from them.

- *Context* (the ConText algorithm): how text is cut into clauses and parts, the trigger
  categories (negation, suspicion, hypothesis ...) and the readings a text rule may ask for
  (`context: asserted` fires on a statement no trigger modifies; `uncertain` on one a
  suspicion or question modifies; ...).
- *Term classes*: named lists of phrases, each phrase standing for a value (often a value of
  an enum: the phrases that name the artifact `board` in prose). A text rule's pattern writes
  `{artifact}` for "any phrase of the class artifact", captured under that name, `{artifact as
  a}` to capture it under `a`, `{~artifact}` for the phrases without capturing them, and
  `{~status=abnormal}` for the phrases of one value. The match then gives the value the
  phrase stands for, not the words.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from j6doctor.engine.errors import VocabularyError

# {class}, {class as name}, {~class}, {~class=value}: never a regex quantifier ({2}, {0,16}).
MACRO = re.compile(r"\{(~?)([A-Za-z_]\w*)(?:=([\w.-]+))?(?:\s+as\s+([A-Za-z_]\w*))?\}")
_NAMED_GROUP = re.compile(r"\(\?P<")


@dataclass(frozen=True)
class ContextReading:
    """A reading a text rule may ask for: the trigger categories that block it, and the
    categories of which one must be present (empty: none needed)."""

    name: str
    meaning: str
    blocked_by: tuple[str, ...]
    needs: tuple[str, ...] = ()

    def admits(self, present: set[str]) -> bool:
        if any(c in present for c in self.blocked_by):
            return False
        return not self.needs or any(c in present for c in self.needs)


@dataclass(frozen=True)
class TextContext:
    clause_ends: str = r"[\n\r]"
    part_ends: str = r"$^"
    categories: tuple[tuple[str, str], ...] = ()  # (name, one alternation of its triggers)
    readings: dict[str, ContextReading] = field(default_factory=dict)
    default: str = ""  # the reading a rule without `context:` takes (the first declared)


@dataclass(frozen=True)
class TermClass:
    """Phrases standing for values, tried in the order written (a more specific phrase first)."""

    name: str
    meaning: str
    enum: str | None
    values: tuple[tuple[str, tuple[str, ...]], ...]  # (value, its phrases)
    default: str = ""  # the value of the class when its group took no part in a match

    def alternation(self, group: str | None) -> str:
        """The regex of every phrase; with a group name, captured under it and under one
        inner group per value (`_t_<group>_<i>`), which tells the value back."""
        if group is None:
            return "(?:" + "|".join(f"(?:{p})" for _, phrases in self.values for p in phrases) + ")"
        inner = "|".join(f"(?P<{value_group(group, i)}>{'|'.join(f'(?:{p})' for p in phrases)})"
                         for i, (_, phrases) in enumerate(self.values))
        return f"(?P<{group}>{inner})"


def value_group(group: str, index: int) -> str:
    return f"_t_{group}_{index}"


def flexible_spaces(pattern: str) -> str:
    """A space in a pattern matches any run of whitespace: a post wrapped by hand or by the page
    breaks "never set the march" across lines. A space before a quantifier (" ?", " *"), or
    inside a look-behind (which must keep a fixed width), stands for one whitespace character;
    spaces inside a character class or escaped stay as written."""
    out: list[str] = []
    in_class = False
    groups: list[bool] = []  # for each open group: is it a look-behind
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            out.append(pattern[index:index + 2])
            index += 2
            continue
        if in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
        elif char == "(":
            groups.append(pattern.startswith(("(?<=", "(?<!"), index))
        elif char == ")" and groups:
            groups.pop()
        elif char == " ":
            single = any(groups) or (index + 1 < len(pattern) and pattern[index + 1] in "?*+{")
            out.append(r"\s" if single else r"\s+")
            index += 1
            continue
        out.append(char)
        index += 1
    return "".join(out)


@dataclass(frozen=True)
class TextLexicon:
    context: TextContext = field(default_factory=TextContext)
    terms: dict[str, TermClass] = field(default_factory=dict)

    def expand(self, pattern: str) -> tuple[str, dict[str, str]]:
        """`pattern` with its term macros replaced by their regexes, and the groups they
        capture (group name → class name). Raises ValueError naming an unknown class or a
        group captured twice."""
        groups: dict[str, str] = {}

        def replace(m: re.Match) -> str:
            silent, name, value, alias = m.group(1), m.group(2), m.group(3), m.group(4)
            term = self.terms.get(name)
            if term is None:
                known = ", ".join(sorted(self.terms)) or "none"
                raise ValueError(f"unknown term class {{{name}}} (term classes: {known}; facts/text_terms.yaml)")
            if value is not None:
                phrases = dict(term.values).get(value)
                if not silent or alias or phrases is None:
                    raise ValueError(f"{m.group(0)}: one value's phrases are written {{~{name}=value}} "
                                     f"(values of {name}: {', '.join(v for v, _ in term.values)})")
                return "(?:" + "|".join(f"(?:{p})" for p in phrases) + ")"
            if silent:
                if alias:
                    raise ValueError(f"{{~{name} as {alias}}}: a class written with ~ captures nothing")
                return term.alternation(None)
            group = alias or name
            if group in groups:
                raise ValueError(f"{{{name}}} is captured twice as {group!r}: write {{{name} as other_name}}")
            groups[group] = name
            return term.alternation(group)

        return flexible_spaces(MACRO.sub(replace, pattern)), groups

    def value_of(self, hit: re.Match, group: str, class_name: str) -> str:
        """The value a captured phrase stands for (the class default when the group took no part)."""
        term = self.terms[class_name]
        for index, (value, _) in enumerate(term.values):
            if hit.group(value_group(group, index)) is not None:
                return value
        return term.default


# ---------------------------------------------------------------------------- loading

def lexicon_from_data(context: Any, terms: Any, enums: dict[str, Any], origin: str) -> TextLexicon:
    return TextLexicon(_context(context, origin) if context is not None else TextContext(),
                       _terms(terms, enums, origin))


def _compiles(pattern: Any, where: str) -> str:
    if not isinstance(pattern, str) or not pattern:
        raise VocabularyError(f"{where}: expected a regular expression, got {pattern!r}")
    try:
        re.compile(pattern, re.IGNORECASE)
    except re.error as exc:
        raise VocabularyError(f"{where}: not a valid regular expression: {exc}") from None
    return pattern


def _context(raw: Any, origin: str) -> TextContext:
    where = f"{origin}: text_context"
    if not isinstance(raw, dict):
        raise VocabularyError(f"{where}: expected a mapping with clause_ends, part_ends, categories, contexts")
    categories = []
    for name, spec in _mapping(raw.get("categories"), f"{where}.categories").items():
        spec = _mapping(spec, f"{where}.categories.{name}")
        patterns = [_compiles(p, f"{where}.categories.{name}.patterns") for p in spec.get("patterns") or []]
        # Latin words or phrases: whole words only ("if" is no trigger inside "different")
        words = [_compiles(w, f"{where}.categories.{name}.words") for w in spec.get("words") or []]
        if words:
            patterns.append("(?<![a-z])(?:" + "|".join(words) + ")(?![a-z])")
        if not patterns:
            raise VocabularyError(f"{where}.categories.{name}: lists no patterns or words")
        categories.append((str(name), flexible_spaces("|".join(f"(?:{p})" for p in patterns))))
    names = {n for n, _ in categories}
    readings: dict[str, ContextReading] = {}
    for name, spec in _mapping(raw.get("contexts"), f"{where}.contexts").items():
        spec = _mapping(spec, f"{where}.contexts.{name}")
        blocked = tuple(spec.get("blocked_by") or ())
        needs = tuple(spec.get("needs") or ())
        unknown = [c for c in blocked + needs if c not in names]
        if unknown:
            raise VocabularyError(f"{where}.contexts.{name}: no trigger category {unknown[0]!r}; "
                                  f"categories: {', '.join(sorted(names))}")
        readings[str(name)] = ContextReading(str(name), str(spec.get("meaning", "")), blocked, needs)
    if not readings:
        raise VocabularyError(f"{where}.contexts: declares no reading")
    return TextContext(_compiles(raw.get("clause_ends"), f"{where}.clause_ends"),
                       _compiles(raw.get("part_ends"), f"{where}.part_ends"),
                       tuple(categories), readings, next(iter(readings)))


def _terms(raw: Any, enums: dict[str, Any], origin: str) -> dict[str, TermClass]:
    out: dict[str, TermClass] = {}
    for name, spec in _mapping(raw, f"{origin}: text_terms").items():
        where = f"{origin}: text_terms.{name}"
        spec = _mapping(spec, where)
        enum = spec.get("enum")
        allowed = None
        if enum is not None:
            if enum not in enums:
                raise VocabularyError(f"{where}.enum: no enum {enum!r}")
            allowed = enums[enum]
        values = []
        for value, phrases in _mapping(spec.get("values"), f"{where}.values").items():
            value = str(value)
            if allowed is not None and value not in allowed:
                raise VocabularyError(f"{where}.values.{value}: not a value of enum {enum} ({', '.join(allowed)})")
            if not isinstance(phrases, list) or not phrases:
                raise VocabularyError(f"{where}.values.{value}: expected a list of phrases (regular expressions)")
            checked = []
            for phrase in phrases:
                phrase = _compiles(phrase, f"{where}.values.{value}")
                if _NAMED_GROUP.search(phrase):
                    raise VocabularyError(f"{where}.values.{value}: {phrase!r}: a phrase may not name a group")
                checked.append(phrase)
            values.append((value, tuple(checked)))
        if not values:
            raise VocabularyError(f"{where}: lists no values")
        default = spec.get("default", "")
        if default and allowed is not None and default not in allowed:
            raise VocabularyError(f"{where}.default: not a value of enum {enum}")
        out[str(name)] = TermClass(str(name), str(spec.get("meaning", "")), enum, tuple(values), str(default or ""))
    return out


def _mapping(value: Any, where: str) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise VocabularyError(f"{where}: expected a mapping")
    return value
