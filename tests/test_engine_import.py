"""Importing the engine does no work a run may not need: the engine's sources are hashed for
a cache key when a key is first made (engine/rulebase_cache.py), not at import."""

from __future__ import annotations

import subprocess
import sys


def test_importing_the_engine_hashes_nothing_until_a_cache_key_is_made():
    code = ("import j6doctor.engine, j6doctor.facts, j6doctor.diagnosis\n"
            "from j6doctor.engine.rulebase_cache import _engine_sources, key_of\n"
            "print(_engine_sources.cache_info().currsize)\n"
            "key_of('x')\n"
            "print(_engine_sources.cache_info().currsize)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.split() == ["0", "1"], done.stdout + done.stderr
