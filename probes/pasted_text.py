"""What a pasted post, issue or note names outright, in the forms tools and people print them:
the platform (a board, a chip, a march: "RDK X5", "nash-e", "current march: bayes-e") and the
versions tools and runtimes print ("[HBRT] set log level as 0. version = 3.15.54.0", "HBDK
版本: 4.2.11", "horizon_plugin_pytorch version: 3.0.5", "hb_mapper 1.24.3"). Names are the
vocabulary's spellings (facts/vocabulary.yaml: platform and package aliases); this module knows
how they are printed, nothing about what they mean for a diagnosis."""

from __future__ import annotations

import re

from j6doctor.engine.text_rules import MAX_TEXT_READ  # the text rules' bound: a text is read as far as they read it
from j6doctor.engine.vocabulary import alias_key
from j6doctor.facts import attr, vocabulary

MAX_VERSIONS = 32  # versions read from one text (a pasted pip freeze is not evidence)


def mentions(enum_name: str, text: str) -> list[tuple[str, str]]:
    """The values of an enum that a free text names, with the words that name each, in the
    order they are first named: a spelling (the value or an alias) found inside the text, the
    longest spellings first so that a longer one hides the shorter ones it contains; spaces,
    '-', '_' and '.' inside a spelling match any of them or nothing; a spelling that starts or
    ends with a Latin letter or digit matches only as a whole word there."""
    text = text[:MAX_TEXT_READ]
    enum = vocabulary().enums[enum_name]
    spellings = sorted(((s, v) for v in enum.values for s in enum.spellings(v)),
                       key=lambda sv: -len(alias_key(sv[0])))
    taken = [False] * len(text)
    found: list[tuple[int, str, str]] = []
    for spelling, value in spellings:
        parts = [re.escape(p) for p in re.split(r"[\s_\-.]+", spelling.strip()) if p]
        if not parts:
            continue
        pattern = r"[\s_\-.]*".join(parts)
        if spelling.strip()[0].isascii() and spelling.strip()[0].isalnum():
            pattern = r"(?<![a-z0-9])" + pattern
        if spelling.strip()[-1].isascii() and spelling.strip()[-1].isalnum():
            pattern += r"(?![a-z0-9])"
        for match in re.finditer(pattern, text, re.IGNORECASE):
            if match.end() > match.start() and not any(taken[match.start():match.end()]):
                taken[match.start():match.end()] = [True] * (match.end() - match.start())
                found.append((match.start(), value, match.group(0)))
    ordered: dict[str, str] = {}
    for _, value, words in sorted(found):
        ordered.setdefault(value, words)
    return list(ordered.items())


def platforms_named(text: str) -> list[tuple[str, str]]:
    """(family, words) of every platform the text names; several J6 variants named together
    ("J6E/M") count as the J6 family without a variant."""
    named = mentions("platform", text)
    series = {attr("platform", family, "series") for family, _ in named}
    if len(named) > 1 and series == {"J6"}:
        return [("J6", " / ".join(words for _, words in named))]
    return named


# "<name> 版本: 4.2.11", "<name> version = 3.15.54.0", "<name>: 1.24.3", "<name>==2.0.1",
# "<name> v3.2", "<name> 1.24.3"; the name is the last words before the number.
_VERSION = re.compile(
    r"(?P<name>[A-Za-z\u4e00-\u9fff][\w .+\-/\u4e00-\u9fff]{0,48}?)\s*"
    r"(?:(?:版本号?|version|ver\.?)\s*(?:号)?\s*(?:[:：=]|is)?|[:：=]{1,2}|\bv(?=\d))?\s*"
    r"[(（]?v?(?P<version>\d+\.\d+(?:\.\d+)*(?:[+_-][\w.]+)?)", re.IGNORECASE)
# a runtime's log line: "[HBRT] set log level as 0. version = 3.15.54.0", "[UCP]: UCP version = 3.7.4"
_LOG_VERSION = re.compile(r"\[(?P<name>[A-Za-z_]+)\][^\n\[]{0,60}?version\s*[=:]\s*(?P<version>\d+(?:\.\d+)+)",
                          re.IGNORECASE)


def versions_printed(text: str) -> list[tuple[str, str, str]]:
    """(package, name as printed, version) of each known package whose version the text
    prints, the first time it is printed."""
    from j6doctor.probes.case_file import resolve_package

    text = text[:MAX_TEXT_READ]
    found: dict[str, tuple[str, str, str]] = {}
    for pattern in (_LOG_VERSION, _VERSION):
        for match in pattern.finditer(text):
            version = match.group("version")
            package, name = _package_named(match.group("name"), version, resolve_package)
            if package and package not in found:
                found[package] = (package, name, version)
            if len(found) >= MAX_VERSIONS:
                return list(found.values())
    return list(found.values())


def _package_named(words: str, version: str, resolve) -> tuple[str | None, str]:
    """The package named by the last one to three words before a version number."""
    parts = [w for w in re.split(r"[\s:：=/]+", words.strip()) if w]
    for width in (3, 2, 1):
        if len(parts) >= width:
            name = " ".join(parts[-width:])
            package = resolve(name, version)
            if package:
                return package, name
    return None, ""
