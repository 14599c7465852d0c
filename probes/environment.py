"""The machine j6doctor runs on: installed Horizon package versions and the board type.

Versions come from importlib.metadata (nothing is imported); the board type from a
`.horizon/.env.board` file (KEY=VALUE lines) or BOARD_TYPE-style environment variables.
Both only report what is there; absence is not an error.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from j6doctor.probes.input_error import InputError

# Distributions of the Horizon toolchains (QAT: plugin, profiler, hbdk4; PTQ: hbdk 3.x,
# hb_mapper / hb_compile in horizon-tc-ui, horizon-nn / hmct).
PACKAGES = ("horizon-plugin-pytorch", "horizon-plugin-profiler", "hbdk4-compiler", "hbdk",
            "horizon-tc-ui", "horizon-nn", "hmct")
BOARD_KEYS = ("BOARD_TYPE", "HORIZON_BOARD_TYPE", "J6_BOARD_TYPE", "BOARD", "MARCH", "HORIZON_MARCH")
BOARD_FILE = Path(".horizon") / ".env.board"


@dataclass(frozen=True)
class InstalledVersion:
    package: str
    version: str


@dataclass(frozen=True)
class BoardSetting:
    value: str
    origin: str  # "env:BOARD_TYPE" or a file path
    line: int | None


def installed_versions(packages: tuple[str, ...] = PACKAGES) -> list[InstalledVersion]:
    from importlib import metadata  # only when the environment is read (--env)

    found = []
    for name in packages:
        try:
            found.append(InstalledVersion(name, metadata.version(name)))
        except metadata.PackageNotFoundError:
            continue
    return found


def read_board_file(path: Path, display: str | None = None) -> list[BoardSetting]:
    display = display or str(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InputError(display, f"cannot read: {exc.strerror}") from None
    if b"\x00" in raw or len(raw) > 64 * 1024:
        raise InputError(display, "not a KEY=VALUE text file")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(display, "not UTF-8 text") from None
    settings = []
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.partition("=")
        key = key.strip().removeprefix("export ").strip()
        if key.upper() in BOARD_KEYS and value.strip().strip("\"'"):
            settings.append(BoardSetting(value.strip().strip("\"'"), display, number))
    return settings


def board_from_environment(environ: dict[str, str] | None = None) -> list[BoardSetting]:
    environ = os.environ if environ is None else environ
    return [BoardSetting(environ[k].strip(), f"env:{k}", None) for k in BOARD_KEYS if environ.get(k, "").strip()]
