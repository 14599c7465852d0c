"""What a pasted post, issue or note names outright, in the forms tools and people print them:
the platform (a board, a chip, a march: "RDK X5", "nash-e", "current march: bayes-e") and the
versions tools and runtimes print ("[HBRT] set log level as 0. version = 3.15.54.0", "HBDK
版本: 4.2.11", "horizon_plugin_pytorch version: 3.0.5", "hb_mapper 1.24.3"). Names are the
vocabulary's spellings (facts/vocabulary.yaml: platform and package aliases), found by the one
reader of free text (engine/text_reader.py: the term classes `platform`, `stage` and
`version_number` of facts/text_terms.yaml); this module knows how names and versions are
printed, nothing about what they mean for a diagnosis."""

from __future__ import annotations

import re
from bisect import bisect_left

from j6doctor.facts import attr, vocabulary

MAX_VERSIONS = 32  # versions read from one text (a pasted pip freeze is not evidence)


def _reading(text: str):
    """The one reading of a text (engine/text_reader.py), shared with the text rules."""
    from j6doctor.engine.text_reader import read_cached

    return read_cached(text, vocabulary().text.index)


def mentions(enum_name: str, text: str, skip: re.Pattern | None = None) -> list[tuple[str, str]]:
    """The values of an enum that a free text names, with the words that name each, in the
    order they are first named. The words are the term class named after the enum
    (facts/text_terms.yaml, spelled by the enum's values and aliases): a longer spelling hides
    the shorter ones it contains; spaces, '-', '_' and '.' inside a spelling match any of them
    or nothing; a Latin spelling matches whole words only. A name the words right after it
    match `skip` for is left out."""
    if not text.strip():
        return []
    reading = _reading(text)
    ordered: dict[str, str] = {}
    for index in reading.by_class.get(enum_name, ()):
        start, end, _, value = reading.tags[index]
        if skip is not None and skip.match(reading.compact.text, end):
            continue
        ordered.setdefault(str(value), reading.words(start, end))
    return list(ordered.items())


def platforms_named(text: str) -> list[tuple[str, str]]:
    """(family, words) of every platform the text names; several J6 variants named together
    ("J6E/M") count as the J6 family without a variant. A text that names a board or chip
    names the platform by it: a march spelled beside it ("S100P 板子，march 用的 nash-e") is
    what the model was compiled for, which may be another; a board named as where some code
    came from ("J5 项目留下来的") is not where the model runs."""
    named = mentions("platform", text, skip=_ANOTHER_PROJECT)
    boards = [(family, words) for family, words in named if not _spells_march(family, words)]
    if boards:
        named = boards
    series = {attr("platform", family, "series") for family, _ in named}
    if len(named) > 1 and series == {"J6"}:
        return [("J6", " / ".join(words for _, words in named))]
    return named


def _spells_march(family: str, words: str) -> bool:
    """Whether `words` spell the platform's march ("nash-e", "march nash-e", "bayes"), not a
    board or chip name."""
    march = attr("platform", family, "march")
    return bool(march) and _MARCH_SPACING.sub("-", march) in _MARCH_SPACING.sub("-", words.lower())


_MARCH_SPACING = re.compile(r"[\s_.-]+")
# a board named as where some code came from is not where the model runs: "set_march 是从 J5 的老工程
# 拷过来的", "之前 J5 项目留下来的", "ported from our J5 code base", "left over from our X5 project"
# ... nor one the model is moved away from: "ported from J5 to J6E", "从 X5 迁移到 S100"
_ANOTHER_PROJECT = re.compile(r"\s?(?:的)?(?:老|旧)?(?:项目|工程|代码|仓库)"
                              r"|\s?(?:project|code ?base|repo\b|codebase)"
                              r"|\s?(?:to|->|→|=>|迁移到|移植到|切换到|换到|转到|升级到|到)\s?(?=(?:rdk\s?)?[a-z]{1,3}\d)")


# What stands between a name and its version: "<name> 版本: 4.2.11", "<name> version = 3.15.54.0",
# "<name>: 1.24.3", "<name>==2.0.1", "<name> v3.2", "<name> 1.24.3" (anchored at the end of a
# short window: linear). A runtime's log line names itself in brackets before the version:
# "[HBRT] set log level as 0. version = 3.15.54.0", "[UCP]: UCP version = 3.7.4".
_LEAD = re.compile(r"(?:\s*(?:版本号?|version|ver\.?|号|is|[:=(]))*\s*$")
_BRACKETED = re.compile(r"\[([a-z_]+)\]")
_BEFORE = 60  # characters before a version where its name is looked for


def versions_printed(text: str) -> list[tuple[str, str, str]]:
    """(package, name as printed, version) of each known package whose version the text
    prints, the first time it is printed. The versions are the reading's `version_number`
    terms; the name is the last one to three words before one (or the bracketed name of
    the log line it is on)."""
    if not text.strip():
        return []
    found: dict[str, tuple[str, str, str]] = {}
    for _, _, package, name, version in _named_versions(_reading(text)):
        if package not in found:
            found[package] = (package, name, version)
        if len(found) >= MAX_VERSIONS:
            break
    return list(found.values())


def version_ends(text: str) -> set[int]:
    """Where (in the compact form of the reading) each version a package's name stands
    before ends: such a number is that package's version, whatever else it looks like."""
    if not text.strip():
        return set()
    return {end for _, end, *_ in _named_versions(_reading(text))}


def _named_versions(reading) -> list[tuple[int, int, str, str, str]]:
    """(start, end, package, name as printed, version) of each `version_number` term that
    a known package's name stands before; worked out once per reading (the case's versions
    and the scores' probe both ask)."""
    found = reading.derived.get(("named versions",))
    if found is None:
        found = reading.derived[("named versions",)] = list(_find_named_versions(reading))
    return found


def a_models_score(reading, name_start: int, name_end: int, value: float) -> bool:
    """Whether a number after a package's name [name_start, name_end) is a model's score, not
    the package's version: the name is part of a model's name and the number is below 1 or from
    10 up ("QDQ ONNX 0.645", "fake-quant torch 37.3"; "onnx 1.14", "CUDA 11.8" stay versions).
    (A class's terms do not overlap each other: only the last one starting before the name's
    end can hold it.)"""
    if 1 <= value < 10:
        return False
    at = bisect_left(reading.class_starts.get("mention", []), name_end) - 1
    return at >= 0 and reading.tags[reading.by_class["mention"][at]][1] > name_start


def _find_named_versions(reading):
    from j6doctor.probes.case_file import resolve_package

    compact = reading.compact.text
    for index in reading.by_class.get("version_number", ()):
        start, end, _, printed = reading.tags[index]
        version = str(printed).removeprefix("v")
        lo = max(0, start - _BEFORE)
        before = compact[lo:start]
        named = _LEAD.search(before)
        words_end = lo + (named.start() if named else len(before))
        package, name = _package_named(reading, lo, words_end, version, resolve_package)
        if package is None:
            bracketed = list(_BRACKETED.finditer(before))
            if bracketed:
                last = bracketed[-1]
                package, name = _package_named(reading, lo + last.start(1), lo + last.end(1), version,
                                               resolve_package)
        if package and not _scored_model(reading, lo, start, version):
            yield start, end, package, name, version


def _scored_model(reading, lo: int, start: int, version: str) -> bool:
    """Whether the number at `start` is the score of a model whose name ends in the package's
    name right before it ("fake-quant torch 37.3")."""
    try:
        value = float(version)
    except ValueError:
        return False  # "3.1.2" is a version
    named = reading.tags_in("software", lo, start)
    return bool(named) and a_models_score(reading, *reading.tags[named[-1]][:2], value)


# a word of a name: Chinese around it is not part of it ("用hb_mapper 1.24转换"), nor the mark
# that ends the sentence before it ("从哪里开始查？plugin 3.0.1")
_WORD = re.compile(r"[^\s:=/\[\](),;?!\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff]+")
_CLOSED = re.compile(r"[)\]]")


def _package_named(reading, lo: int, hi: int, version: str, resolve) -> tuple[str | None, str]:
    """The package named by the last one to three words of the compact span [lo, hi), with
    the words as the user wrote them."""
    span = reading.compact.text[lo:hi]
    words = list(_WORD.finditer(span))
    if words and _CLOSED.search(span, words[-1].end()):
        return None, ""  # the name stands in an aside closed before the number: "qat.bc（hbdk4 推理）0.809"
    for width in (3, 2, 1):
        if len(words) >= width:
            first, last = words[-width], words[-1]
            name = reading.words(lo + first.start(), lo + last.end())
            package = resolve(" ".join(m.group() for m in words[-width:]), version)
            if package:
                return package, " ".join(name.split())
    return None, ""
