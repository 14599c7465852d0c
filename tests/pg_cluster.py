"""A throw-away PostgreSQL cluster for the case-library tests: initdb into a temporary folder,
a server listening on a Unix socket only (no TCP port), one fresh database per test. As root
the server runs as the `postgres` user (PostgreSQL refuses root). Not available: the tests
on PostgreSQL are skipped here and fail in CI (.ci/run installs the Debian package)."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
import uuid
from pathlib import Path


def server_bin() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


class Cluster:
    def __init__(self, bindir: Path):
        self.bindir = bindir
        self.root = Path(tempfile.mkdtemp(prefix="j6doctor-pg-"))
        os.chmod(self.root, 0o755)
        self.data = self.root / "data"
        self.socket = self.root / "socket"
        self.socket.mkdir()
        self.as_user: list[str] = []
        if os.geteuid() == 0:
            shutil.chown(self.root, "postgres")
            shutil.chown(self.socket, "postgres")
            self.as_user = ["runuser", "-u", "postgres", "--"]
        self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", "j6", "--no-sync", "-E", "UTF8")
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.root / "server.log"), "-w", "-o",
                  f"-k {self.socket} -c listen_addresses='' -c fsync=off -c max_connections=60", "start")

    def _run(self, tool: str, *args: str) -> None:
        subprocess.run([*self.as_user, str(self.bindir / tool), *args], check=True, capture_output=True, timeout=120)

    def new_database(self) -> str:
        name = "t" + uuid.uuid4().hex[:12]
        self._run("createdb", "-h", str(self.socket), "-U", "j6", name)
        return f"postgresql://j6@/{name}?host={self.socket}"

    def stop(self) -> None:
        try:
            self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "stop")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)
