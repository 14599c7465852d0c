"""Run logs of horizon_plugin_pytorch (`.horizon_plugin_pytorch_logs/*.log`, docs/file_formats.md R8).

One message per line:

    2026-03-01 14:02:11,204 INFO [/usr/lib/python3.10/site-packages/horizon_plugin_pytorch/<module>.py:123] <message>

Lines without that prefix continue the previous message (tracebacks, the tables of the
model-check warnings, multi-line warnings). From the messages this probe takes, each with
its 1-based file line:

* the Python version of the user's environment, from the site-packages folder in the
  source path (POSIX `lib/pythonX.Y/site-packages` or `dist-packages`: system, conda,
  venv, user site; Windows `PythonXY\\Lib\\site-packages` and pyenv-win `X.Y.Z\\Lib\\...`);
* the plugin module and source line of each message;
* versions the messages print (`<name> version: <version>`) and the march they name
  (`current march: nash-m`, `march=nash-e`, `March.NASH_E`);
* the model-check summary statements, the file the full check result went to and the
  qconfig template choices;
* every WARNING / ERROR / CRITICAL message verbatim.

The probe knows the log format and nothing about rules. Logs are pasted and excerpted: a
line that starts like a message but is cut or garbled, and text before the first message,
are skipped with the lines that continue them and named in `PluginLog.skipped` (lines and
why). A file without a message of the plugin raises InputError naming the file, the line
and what was expected.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from j6doctor.probes.input_error import InputError, Skips, quoted
from j6doctor.probes.text_file import load_text, split_lines
from j6doctor.probes.text_tables import is_psql_start, is_simple_start, parse_psql, parse_simple

WHAT = "a horizon_plugin_pytorch run log (.horizon_plugin_pytorch_logs/*.log)"
EXAMPLE = "'<YYYY-MM-DD HH:MM:SS,mmm> <LEVEL> [<...>/horizon_plugin_pytorch/<module>.py:<N>] <message>'"
LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
PROBLEM_LEVELS = ("WARNING", "ERROR", "CRITICAL")
PACKAGE = "horizon_plugin_pytorch"

_TIMESTAMP = r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:[,.]\d{3})?"
_LEVEL = "(?:" + "|".join(LEVELS) + ")"

# A message line (any source file; messages of other Horizon packages may share the log).
_MESSAGE = re.compile(
    rf"^(?P<time>{_TIMESTAMP}) +(?P<level>{_LEVEL}) +"
    r"\[(?P<path>[^\]\n]*?\.pyx?):(?P<lineno>\d+)\](?: (?P<text>.*))?$")
# A line that starts like a message; if _MESSAGE does not match it, it is cut or garbled.
_STARTS_LIKE_MESSAGE = re.compile(r"^\d{4}-\d{2}-\d{2}[ T]")
_TIMESTAMP_ONLY = re.compile(rf"^{_TIMESTAMP}(?= |$)")
_LEVEL_WORD = re.compile(r" +(\S+)")

# Site-packages folder (the last one in the path) and the part of the path below it.
_SITE = re.compile(r"^(?P<site>.*/(?:site|dist)-packages)/(?P<rest>.+)$", re.IGNORECASE)
# Without a site-packages folder (an editable install from a source tree), the module starts
# at the last folder named like a Horizon package ("<repo>/horizon_plugin_pytorch/<pkg>/...").
_PACKAGE_DIR = re.compile(r"^(?:.*/)?((?:horizon_plugin_pytorch|horizon_plugin_profiler|hbdk4?)/.+)$")
# Python version in the site-packages folder, most specific layout first.
_PYTHON_IN_SITE = (
    # /usr/lib, /usr/local/lib, conda, venv, ~/.local, macOS frameworks (optional 't' build).
    (re.compile(r"/lib(?:64)?/python(\d+\.\d+)t?/(?:site|dist)-packages$"), "{0}"),
    # Windows: C:\Python310\Lib\site-packages, ...\Python311\site-packages (user site).
    (re.compile(r"/python(3)(\d{1,2})t?(?:-32|-arm64)?/(?:lib/)?site-packages$", re.IGNORECASE),
     "{0}.{1}"),
    # pyenv-win and similar: ...\versions\3.10.11\Lib\site-packages.
    (re.compile(r"/(\d+\.\d+)(?:\.\d+)?[\w.\-]*/lib/site-packages$", re.IGNORECASE), "{0}"),
)

_VERSION = re.compile(
    r"(?<![\w.\-])(?P<name>[A-Za-z][\w.\-]*) version\s*(?:[:=]|\bis\b)?\s*"
    r"['\"]?(?P<version>v?\d+\.\d+[\w.+\-]*)")
_CURRENT_MARCH = re.compile(r"\bcurrent march\s*[:=]\s*['\"]?(?P<value>[^\s'\",;]+)", re.IGNORECASE)
_MARCH_SETTING = re.compile(
    r"\bmarch\b\s*(?:[:=]|\bis\b|\bto\b)\s*['\"]?"
    r"(?P<value>(?:bernoulli2?|bayes|nash)(?:[-_][A-Za-z0-9]+)?)\b", re.IGNORECASE)
_MARCH_ENUM = re.compile(r"\bMarch\.(?P<value>(?:BERNOULLI2?|BAYES|NASH)(?:_[A-Z0-9]+)?)\b")

_RESULT_FILE_IN = re.compile(r"^Check full result in\s+['\"]?(?P<path>.+?\.txt)['\"]?\.?$")
# A path token (quotes, brackets and spaces end it) naming a model-check result file.
_PATH_TOKEN = re.compile(r"[^\s'\"`()\[\]]+")
_RESULT_STEM = "model_check_result"

_TEMPLATE_TEXT = re.compile(r"template|qconfig_?setter", re.IGNORECASE)
_TEMPLATE_MODULE = re.compile(r"template|qconfig_setter", re.IGNORECASE)
_TEMPLATE_NAMES = re.compile(r"\b(?:[A-Z][A-Za-z0-9]*Template|\w+_qconfig_setter|QconfigSetter)\b")

# Model-check summary wording (one message each; the negative ones carry a table below).
_CHECK_STATEMENTS = {
    "All fusable modules are fused in model!": ("fusion", True),
    "Fusable modules are listed below:": ("fusion", False),
    "All modules in the model run exactly once.": ("module_calls", True),
    "Modules below are not used:": ("module_calls", False),
    "Modules below are used multi times:": ("module_calls", False),
    "No obvious abnormal qconfig in the model.": ("qconfig", True),
    "Please check these modules qconfig if expected:": ("qconfig", False),
    "Please check if these OPs qconfigs are expected..": ("qconfig", False),
    "To check full result info, set `save_results=True`.": ("result_file", False),
}
_CHECK_PATTERNS = (
    (re.compile(r"^Output module '(?P<module>[^']*)' support high precision output, but is "
                r"not configured to enable it\.?$"), "high_precision_output", False),
    (re.compile(r"^\S+ input module (?P<module>\S+) has no qconfig\b"), "qconfig", False),
    (_RESULT_FILE_IN, "result_file", True),
)
# Start / end markers of a check; not statements.
_CHECK_MARKERS = re.compile(r"^(?:Begin|Start|End) (?:model )?check\b", re.IGNORECASE)
# Messages from a source file with this in its name that match no known wording are kept
# verbatim as statements of topic "other".
_CHECK_MODULE = re.compile(r"check[^/]*\.pyx?$", re.IGNORECASE)


@dataclass(frozen=True)
class LogMessage:
    line: int            # 1-based file line of the message prefix
    end_line: int        # last file line of the message (continuation lines included)
    time: str            # "2026-03-01 14:02:11,204"
    level: str           # DEBUG | INFO | WARNING | ERROR | CRITICAL
    path: str            # source file as printed between the brackets
    module: str          # from the package folder on, '/'-separated: "horizon_plugin_pytorch/x/y.py"
    source_line: int     # line in that source file
    python: str | None   # "3.10", from the site-packages folder in `path`
    text: str            # the message; continuation lines joined with "\n", trailing spaces removed
    raw: str             # the prefixed file line verbatim, trailing spaces removed

    @property
    def headline(self) -> str:
        """The text on the prefixed line."""
        return self.text.split("\n", 1)[0]

    @property
    def package(self) -> str:
        return self.module.split("/", 1)[0]


@dataclass(frozen=True)
class PythonSighting:
    version: str         # "3.10"
    site_packages: str   # the folder as printed, e.g. "/usr/lib/python3.10/site-packages"
    line: int


@dataclass(frozen=True)
class VersionFact:
    name: str            # as printed: "horizon_plugin_pytorch", "hbdk4_compiler", "torch"
    version: str         # as printed, local suffix included: "3.0.5+cu126.torch260"
    line: int


@dataclass(frozen=True)
class MarchFact:
    value: str           # as printed: "nash-m", "NASH_E"
    march: str           # normalised: lower case, '-' separator ("nash-e")
    line: int


@dataclass(frozen=True)
class CheckStatement:
    topic: str           # fusion | module_calls | qconfig | high_precision_output | result_file | other
    ok: bool | None      # True: the clean wording; False: problems listed; None: unknown wording
    text: str            # the message headline verbatim
    line: int
    modules: tuple[str, ...] = ()  # module names the statement lists (table below it), if any


@dataclass(frozen=True)
class ResultFile:
    path: str            # as printed, e.g. ".model_check_results/model_check_result_261101_0942_31337.txt"
    line: int


@dataclass(frozen=True)
class TemplateChoice:
    names: tuple[str, ...]  # template / setter names in the message ("ConvDtypeTemplate", ...)
    text: str               # the message verbatim
    line: int


@dataclass(frozen=True)
class PluginLog:
    display: str
    messages: tuple[LogMessage, ...]
    python_versions: tuple[PythonSighting, ...]  # first sighting of each distinct version
    versions: tuple[VersionFact, ...]            # first sighting of each (name, version)
    marches: tuple[MarchFact, ...]               # first sighting of each normalised march
    checks: tuple[CheckStatement, ...]
    result_files: tuple[ResultFile, ...]
    templates: tuple[TemplateChoice, ...]
    warnings: tuple[LogMessage, ...]             # WARNING, ERROR and CRITICAL messages
    skipped: Skips = field(default_factory=Skips, compare=False)   # lines that could not be read, and why

    @property
    def python(self) -> PythonSighting | None:
        """The first Python version seen in a source path."""
        return self.python_versions[0] if self.python_versions else None

    @property
    def python_differs(self) -> bool:
        """True when the source paths name more than one Python version."""
        return len(self.python_versions) > 1

    @property
    def march(self) -> MarchFact | None:
        return self.marches[0] if self.marches else None

    @property
    def result_file(self) -> ResultFile | None:
        """Where the last check wrote its full result."""
        return self.result_files[-1] if self.result_files else None

    def version(self, name: str) -> VersionFact | None:
        """The first version printed for `name` (case, '-' and '_' ignored)."""
        wanted = _package_key(name)
        return next((v for v in self.versions if _package_key(v.name) == wanted), None)

    def check(self, topic: str) -> CheckStatement | None:
        """The last statement on `topic` (a log may hold several checks)."""
        return next((c for c in reversed(self.checks) if c.topic == topic), None)


# ---------------------------------------------------------------- entry points

def read_plugin_log(path: Path, display: str | None = None) -> PluginLog:
    path = Path(path)
    display = display or path.name
    return parse_plugin_log(load_text(path, display, WHAT), display)


def parse_plugin_log(text: str, display: str) -> PluginLog:
    skips = Skips()
    messages = _messages(text, display, skips)
    if not messages:
        first = skips.kept[0]   # a non-blank line exists: it was skipped
        raise InputError(display, first.reason, first.line)
    if not any(m.package == PACKAGE for m in messages):
        raise InputError(display, f"no message logged from {PACKAGE}: the source paths are not "
                                  f"[<...>/{PACKAGE}/<module>.py:<N>]; expected {WHAT}",
                         messages[0].line)
    checks, results = _checks(messages)
    return PluginLog(
        display=display,
        messages=messages,
        python_versions=_python_versions(messages),
        versions=_versions(messages),
        marches=_marches(messages),
        checks=checks,
        result_files=results,
        templates=_templates(messages),
        warnings=tuple(m for m in messages if m.level in PROBLEM_LEVELS),
        skipped=skips,
    )


# ---------------------------------------------------------------- lines → messages

def _messages(text: str, display: str, skips: Skips) -> tuple[LogMessage, ...]:
    """The messages, each with its continuation lines; a garbled message line or text before
    the first message is skipped together with the lines continuing it (noted in `skips`)."""
    nul = text.find("\x00")
    if nul >= 0:
        raise InputError(display, f"binary data (NUL byte); expected {WHAT}", text.count("\n", 0, nul) + 1)
    lines = split_lines(text.removeprefix("\ufeff"))
    if not any(line.strip() for line in lines):
        raise InputError(display, f"empty file; expected {WHAT}")
    messages: list[LogMessage] = []
    start: int | None = None          # index of the current message's prefixed line
    match: re.Match | None = None
    body: list[str] = []
    unread: tuple[int, str] | None = None   # (index, why) of the first line of a part not read
    for i, raw in enumerate(lines):
        line = raw.rstrip()
        found = _MESSAGE.match(line)
        problem = None
        if not found and _STARTS_LIKE_MESSAGE.match(line):
            problem = f"message line cut off or garbled: {_what_is_wrong(line)}; expected {EXAMPLE}"
        elif not found and match is None and unread is None and line:
            problem = f"expected a message line {EXAMPLE}, found {quoted(line)}"
        if found or problem:
            if match is not None:
                messages.append(_message(start, match, body))
            _note_unread(skips, unread, i)
            start, match, body = (i, found, []) if found else (None, None, [])
            unread = (i, problem) if problem else None
        elif match is not None:
            body.append(line)
    if match is not None:
        messages.append(_message(start, match, body))
    _note_unread(skips, unread, len(lines))
    return tuple(messages)


def _note_unread(skips: Skips, unread: tuple[int, str] | None, end: int) -> None:
    """A skipped part: its first line, why, and the lines it spans up to `end` (an index)."""
    if unread is not None:
        first, why = unread
        span = f"; lines {first + 1}-{end} not read" if end > first + 1 else ""
        skips.add(first + 1, why + span)


def _message(start: int, match: re.Match, body: list[str]) -> LogMessage:
    while body and not body[-1]:
        body.pop()
    path = match["path"]
    module, site = _split_source(path)
    return LogMessage(
        line=start + 1,
        end_line=start + 1 + len(body),
        time=match["time"],
        level=match["level"],
        path=path,
        module=module,
        source_line=int(match["lineno"]),
        python=_python_of(site),
        text="\n".join([match["text"] or "", *body]),
        raw=match.group(0),
    )


def _what_is_wrong(line: str) -> str:
    """Which part of a line that starts with a date breaks the message prefix."""
    stamp = _TIMESTAMP_ONLY.match(line)
    if not stamp:
        return f"incomplete timestamp in {quoted(line)}"
    level = _LEVEL_WORD.match(line, stamp.end())
    if not level:
        return "no level after the timestamp"
    if level.group(1) not in LEVELS:
        return f"unknown level {level.group(1)!r} (expected one of {', '.join(LEVELS)})"
    rest = line[level.end():].lstrip(" ")
    if not re.match(r"\[[^\]]*\.pyx?:\d+\]", rest):
        return f"no complete [<source>.py:<line>] after the level, found {quoted(rest)}"
    return f"no space between the [<source>.py:<line>] and the message in {quoted(line)}"



def _split_source(path: str) -> tuple[str, str | None]:
    """(module below the package folder, site-packages folder as '/'-path or None)."""
    posix = path.replace("\\", "/")
    site = _SITE.match(posix)
    if site:
        return site["rest"], site["site"]
    package = _PACKAGE_DIR.match(posix)
    return (package.group(1) if package else posix), None


def _python_of(site: str | None) -> str | None:
    if site is None:
        return None
    for pattern, shape in _PYTHON_IN_SITE:
        found = pattern.search(site)
        if found:
            return shape.format(*found.groups())
    return None


def _site_as_printed(message: LogMessage) -> str:
    posix = message.path.replace("\\", "/")
    return message.path[:_SITE.match(posix).end("site")]


def _text_lines(message: LogMessage):
    """(file line, text line) of the message's own text and its continuation lines."""
    for offset, text in enumerate(message.text.split("\n")):
        yield message.line + offset, text


# ---------------------------------------------------------------- facts in the messages

def _python_versions(messages: tuple[LogMessage, ...]) -> tuple[PythonSighting, ...]:
    seen: dict[str, PythonSighting] = {}
    for m in messages:
        if m.python and m.python not in seen:
            seen[m.python] = PythonSighting(m.python, _site_as_printed(m), m.line)
    return tuple(seen.values())


def _versions(messages: tuple[LogMessage, ...]) -> tuple[VersionFact, ...]:
    seen: dict[tuple[str, str], VersionFact] = {}
    for m in messages:
        for line, text in _text_lines(m):
            for found in _VERSION.finditer(text):
                version = found["version"].rstrip(".-+")
                key = (_package_key(found["name"]), version)
                if key not in seen:
                    seen[key] = VersionFact(found["name"], version, line)
    return tuple(seen.values())


def _package_key(name: str) -> str:
    return name.lower().replace("-", "_")


def _marches(messages: tuple[LogMessage, ...]) -> tuple[MarchFact, ...]:
    seen: dict[str, MarchFact] = {}
    for m in messages:
        for line, text in _text_lines(m):
            hits = [*_CURRENT_MARCH.finditer(text), *_MARCH_SETTING.finditer(text),
                    *_MARCH_ENUM.finditer(text)]
            for found in sorted(hits, key=lambda h: h.start()):
                value = found["value"]
                name = value.lower().replace("_", "-")
                if name not in seen:
                    seen[name] = MarchFact(value, name, line)
    return tuple(seen.values())


def _checks(messages: tuple[LogMessage, ...]) -> tuple[tuple[CheckStatement, ...], tuple[ResultFile, ...]]:
    checks: list[CheckStatement] = []
    results: list[ResultFile] = []
    for index, m in enumerate(messages):
        headline = m.headline.strip()
        statement = _statement(m, headline)
        if statement is not None:
            topic, ok, named = statement
            modules = named or (_listed_modules(messages, index) if ok is False else ())
            checks.append(CheckStatement(topic, ok, headline, m.line, modules))
        for line, text in _text_lines(m):
            inside = _RESULT_FILE_IN.match(text.strip())
            path = inside["path"] if inside else _result_path(text)
            if path and _RESULT_STEM in path:
                results.append(ResultFile(path, line))
    return tuple(checks), tuple(results)


def _result_path(text: str) -> str | None:
    """The first token naming a result file, cut after the `.txt` of its last component.
    Done with str.find rather than one regex: a regex with the stem in the middle rescans a
    long token from every position (quadratic on a megabyte-long warning line)."""
    if _RESULT_STEM not in text:
        return None
    for token in _PATH_TOKEN.finditer(text):
        word = token.group()
        stem = word.rfind(_RESULT_STEM)
        if stem < 0:
            continue
        ends = [k for k in (word.find("/", stem), word.find("\\", stem)) if k >= 0]
        suffix = word.rfind(".txt", stem, min(ends) if ends else len(word))
        if suffix >= 0:
            return word[:suffix + 4]
    return None


def _statement(m: LogMessage, headline: str) -> tuple[str, bool | None, tuple[str, ...]] | None:
    if headline in _CHECK_STATEMENTS:
        topic, ok = _CHECK_STATEMENTS[headline]
        return topic, ok, ()
    for pattern, topic, ok in _CHECK_PATTERNS:
        found = pattern.match(headline)
        if found:
            named = (found["module"],) if "module" in pattern.groupindex else ()
            return topic, ok, named
    if headline and _CHECK_MODULE.search(m.module) and not _CHECK_MARKERS.match(headline) \
            and not _VERSION.search(headline) and not _CURRENT_MARCH.search(headline):
        return "other", None, ()
    return None


def _listed_modules(messages: tuple[LogMessage, ...], index: int) -> tuple[str, ...]:
    """Names in the first column of the table(s) under a statement: in its own continuation
    lines, then in the following messages that have no headline (the fusion warning logs
    each group of unfused modules as a message of its own)."""
    names = list(_table_names(messages[index]))
    for position in range(index + 1, len(messages)):  # no slice: a copy per statement is quadratic
        follower = messages[position]
        if follower.headline.strip() or follower.path != messages[index].path:
            break
        names += _table_names(follower)
    return tuple(dict.fromkeys(names))


def _table_names(message: LogMessage) -> list[str]:
    lines = message.text.split("\n")[1:]
    names: list[str] = []
    i = 0
    while i < len(lines):
        try:
            if is_psql_start(lines, i):
                table = parse_psql(lines, i, message.line + 1, "log")
            elif is_simple_start(lines, i):
                table = parse_simple(lines, i, message.line + 1, "log")
            else:
                i += 1
                continue
        except InputError:  # a garbled table in a message: keep the statement, not the names
            return names
        names += [row.cells[0] for row in table.rows if row.cells and row.cells[0]]
        i = max(table.end, i + 1)
    return names


def _templates(messages: tuple[LogMessage, ...]) -> tuple[TemplateChoice, ...]:
    choices = []
    for m in messages:
        # Decided on the headline and the source file, so that a traceback that merely
        # passes through a template module is not taken for a choice.
        if _TEMPLATE_TEXT.search(m.headline) or _TEMPLATE_MODULE.search(m.module.rsplit("/", 1)[-1]):
            names = tuple(dict.fromkeys(_TEMPLATE_NAMES.findall(m.text)))
            choices.append(TemplateChoice(names, m.text, m.line))
    return tuple(choices)


# --- facts (probes/probe_output.py) -------------------------------------------------------

def add_facts(found, out) -> None:
    from j6doctor.probes.probe_output import warning_text

    log = read_plugin_log(found.path, found.display)
    out.skipped(found, log.skipped)
    facts = out.facts
    for fact in log.versions:
        facts.add_version(fact.name, fact.version, out.source(found, line=fact.line, key=fact.name),
                          f"{found.display}:{fact.line} 记录")
    if log.python is not None:
        facts.add_version("python", log.python.version, out.source(found, line=log.python.line, key="python"),
                          f"{found.display}:{log.python.line} 记录的用户环境")
    if log.march is not None:
        source = out.source(found, line=log.march.line, key="march")
        facts.add("artifact_march", {"path": found.display, "march": log.march.march,
                                     "what": "plugin 运行时的 march"}, source)
        facts.add_platform(log.march.march, source, f"{found.display}:{log.march.line} 记录的 march", note=False)
    for message in log.warnings[:out.limit]:
        out.add("tool_warning", {"path": found.display, "tool": "horizon_plugin_pytorch",
                                 "text": warning_text(f"{message.level} {message.headline}")},
                found, line=message.line, key=message.module)
