"""Site and user defaults: `j6doctor.toml` (or `[tool.j6doctor]` in a `pyproject.toml`) found
upward from the case's folder, then the user's `~/.config/j6doctor/config.toml`.

A support desk diagnosing other people's reports sets `environment = false`, so that the
machine it runs on never stands in for the reporter's environment. Command-line options
win over both files; the project file wins over the user file.
"""

from __future__ import annotations

import math
import os
import sys
from pathlib import Path
from typing import Any, NamedTuple

from j6doctor.probes import InputError


PROJECT_FILE = "j6doctor.toml"
# key -> the types its value may have
KEYS: dict[str, tuple[type, ...]] = {
    "environment": (bool,), "engine": (str,), "format": (str,), "rules": (list,),
    "tolerance": (float, int), "absolute": (bool,), "lower_is_better": (bool,), "store": (str,),
}
CHOICES = {"engine": ("durable", "clips"), "format": ("md", "json", "html")}  # one of a few words
MAX_LEVELS = 32  # folders walked upward looking for a project file


class Config(NamedTuple):
    """The settings of j6doctor.toml / [tool.j6doctor] / the user's config.toml."""

    environment: bool = True
    engine: str | None = None  # the rule engine (None: durable-rules where it loads, else CLIPS)
    format: str | None = None  # the report format of diagnose / explain / ask (None: md)
    rules: tuple[Path, ...] = ()  # rule packs always used, relative to the file that names them
    tolerance: float | None = None  # the allowed drop from the qat.pt baseline (None: 0.01)
    absolute: bool = False  # the tolerance is in metric units
    lower_is_better: bool = False  # the metric is an error
    store: str | None = None  # the case library: a SQLite file (relative to this file) or a database URL
    sources: tuple[str, ...] = ()  # the files the values came from


def user_config_path(environ: dict[str, str] | None = None) -> Path:
    environ = os.environ if environ is None else environ
    base = environ.get("XDG_CONFIG_HOME") or str(Path(environ.get("HOME", "~")).expanduser() / ".config")
    return Path(base) / "j6doctor" / "config.toml"


def _read(path: Path, table: tuple[str, ...]) -> dict[str, Any] | None:
    """The settings table of one file, or None when the file has none."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InputError(str(path), f"cannot read: {exc.strerror}; expected a readable TOML file") from None
    if table and not _may_hold_table(raw, table):
        # a pyproject.toml that cannot hold the table is not parsed (most projects': parsing
        # costs a cold start a tenth of its time, and its TOML errors are not ours)
        return None
    toml = _toml()
    try:
        data = toml.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise InputError(str(path), "not UTF-8 text; expected a TOML file") from None
    except toml.TOMLDecodeError as exc:
        raise InputError(str(path), *_toml_problem(str(exc))) from None
    for key in table:
        data = data.get(key) if isinstance(data, dict) else None
        if data is None:
            return None
    if not isinstance(data, dict):
        raise InputError(str(path), f"[{'.'.join(table)}] must be a table", _line_of(raw, table[-1]))
    return data


def _setting_line(path: Path, key: str, table: tuple[str, ...]) -> int | None:
    try:
        return _line_of(path.read_bytes(), key, table)
    except OSError:
        return None


def _toml_problem(text: str) -> tuple[str, int | None]:
    """tomllib's `Invalid value (at line 3, column 10)` as a message and its line."""
    import re

    found = re.search(r"\s*\(at line (\d+), column (\d+)\)$", text)
    if found is None:
        return f"not valid TOML: {text}; expected key = value lines, e.g. engine = \"clips\"", None
    return (f"not valid TOML: {text[:found.start()]} (column {found.group(2)}); expected key = value lines, "
            f"e.g. engine = \"clips\"", int(found.group(1)))


def _line_of(raw: bytes, key: str, table: tuple[str, ...] = ()) -> int | None:
    """The line that sets `key` (after the `[table]` header, when there is one), for a message;
    None when it is written in a way this simple search does not find (an inline table)."""
    import re

    lines = raw.decode("utf-8", "replace").splitlines()
    start = 0
    if table:
        header = re.compile(r"^\s*\[\s*" + r"\s*\.\s*".join(rf"[\"']?{re.escape(t)}[\"']?" for t in table) + r"\s*\]")
        start = next((i + 1 for i, line in enumerate(lines) if header.match(line)), 0)
    setting = re.compile(rf"^\s*(\[\s*)?[\"']?{re.escape(key)}[\"']?\s*[=.\]]")  # key = ..., key.x = ..., [key]
    return next((i + 1 for i, line in enumerate(lines[start:], start) if setting.match(line)), None)


def _may_hold_table(raw: bytes, table: tuple[str, ...]) -> bool:
    """Whether TOML text can define the dotted `table`: its parent and its name joined by a
    dot (`[tool.j6doctor]`, `[ tool . "j6doctor" ]`, `tool.j6doctor.engine = ...`), or the
    parent table opened alone (`[tool]`, whose keys may then name it) or given inline
    (`tool = {...}`). False only when none of these spellings occurs."""
    import re

    if len(table) < 2:
        return True
    parent, name = (re.escape(part.encode()) for part in table[-2:])
    quote = rb"[\"']?"
    return bool(re.search(parent + quote + rb"[ \t]*\.[ \t]*" + quote + name, raw)
                or re.search(rb"(?m)^[ \t]*\[[ \t]*" + quote + parent + quote + rb"[ \t]*\]", raw)
                or re.search(rb"(?m)^[ \t]*" + quote + parent + quote + rb"[ \t]*=", raw))


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except OSError:  # a name the file system cannot hold: no config there
        return False


def _project_file(start: Path) -> tuple[Path, tuple[str, ...]] | None:
    folder = Path(os.path.abspath(start))
    for _ in range(MAX_LEVELS):
        if _is_file(folder / PROJECT_FILE):
            return folder / PROJECT_FILE, ()
        pyproject = folder / "pyproject.toml"
        if _is_file(pyproject) and _read(pyproject, ("tool", "j6doctor")) is not None:
            return pyproject, ("tool", "j6doctor")
        if folder.parent == folder:
            break
        folder = folder.parent
    return None


def load_config(start: Path | None, environ: dict[str, str] | None = None) -> Config:
    """Merge the user file and the project file found upward from `start` (a folder)."""
    found: list[tuple[Path, tuple[str, ...]]] = []
    user = user_config_path(environ)
    if user.is_file():
        found.append((user, ()))
    project = _project_file(start) if start is not None else None
    if project is not None:
        found.append(project)
    values: dict[str, Any] = {}
    sources: list[str] = []
    for path, table in found:
        data = _read(path, table) or {}
        for key, value in data.items():
            try:
                values[key] = _value(path, key, value)
            except InputError as exc:  # placed on the line that sets the key
                raise InputError(exc.file, exc.message, _setting_line(path, str(key), table)) from None
        sources.append(str(path))
    return Config(**values, sources=tuple(sources))


def _value(path: Path, key: str, value: Any) -> Any:
    """A setting checked against what it may be; `rules` paths resolved from the file's folder."""
    expected = KEYS.get(key)
    if expected is None:
        raise InputError(str(path), f"unknown setting {key!r}; known: {', '.join(KEYS)}")
    if not isinstance(value, expected) or (isinstance(value, bool) and bool not in expected):
        names = " or ".join({"str": "a string", "bool": "true or false", "list": "a list", "float": "a number",
                             "int": "a number"}[t.__name__] for t in expected)
        raise InputError(str(path), f"{key}: expected {names}, got {value!r}")
    if key in CHOICES:
        if value.strip().lower() not in CHOICES[key]:
            raise InputError(str(path), f"{key}: expected one of {', '.join(CHOICES[key])}, got {value!r}")
        return value.strip().lower()
    if key == "store":
        return value if "://" in value else str(path.parent / value)
    if key == "tolerance" and not (math.isfinite(value) and value > 0):
        raise InputError(str(path), f"tolerance: expected a finite number greater than 0, got {value!r}")
    if key == "rules":
        if not all(isinstance(item, str) and item.strip() for item in value):
            raise InputError(str(path), f"rules: expected a list of rule pack folders, got {value!r}")
        return tuple(path.parent / item for item in value)
    return float(value) if key == "tolerance" else value


def _toml():
    """The TOML reader, imported only when a config file is found."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    return tomllib
