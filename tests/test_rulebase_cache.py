"""The compiled rule base cached between runs (engine/rulebase_cache.py): reused when
nothing changed, rebuilt when any rule file, pack or engine changes, only ever read from a
folder of the user's own, off with J6DOCTOR_CACHE=0, never storing a broken rule base."""

from __future__ import annotations

import os
import stat
import textwrap

import pytest

from j6doctor.engine import RuleBase, RuleBaseErrors, describe_engine
from j6doctor.engine.backends import resolve
from j6doctor.engine.rule_files import rule_file_bytes
from j6doctor.engine.rulebase_cache import cache_key
from j6doctor.facts import vocabulary
from j6doctor.rules import BUNDLED_RULES_DIR

pytestmark = pytest.mark.skipif(not hasattr(os, "getuid"), reason="the cache is off where owners cannot be checked")

PACK = """\
seed: test
rules:
  - id: site.note
    title: a pack rule
    when: [{symptom: {}}]
    then: [{warning: {text: "WORD"}}]
    examples:
      - name: fires
        case: {symptom: x}
"""


@pytest.fixture
def cache(tmp_path, monkeypatch):
    home = tmp_path / "cache-home"
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    monkeypatch.delenv("J6DOCTOR_CACHE", raising=False)
    return home / "j6doctor"


def _pack(tmp_path, word="first"):
    folder = tmp_path / "pack"
    folder.mkdir(exist_ok=True)
    (folder / "p.yaml").write_text(PACK.replace("WORD", word), encoding="utf-8")
    return folder


def _load(folder):
    return RuleBase.load([BUNDLED_RULES_DIR, folder], vocabulary(), {BUNDLED_RULES_DIR: "rules", folder: "pack"})


def _entries(cache):
    return sorted(cache.glob("rulebase-*.pickle")) if cache.exists() else []


def test_second_load_comes_from_the_cache_and_is_private(tmp_path, cache):
    folder = _pack(tmp_path)
    first = _load(folder)
    (entry,) = _entries(cache)
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700 and stat.S_IMODE(entry.stat().st_mode) == 0o600
    stamp = entry.stat().st_mtime_ns
    second = _load(folder)
    assert entry.stat().st_mtime_ns == stamp  # read, not rewritten
    assert second.compiled.fingerprint == first.compiled.fingerprint
    assert [r.id for r in second.rules] == [r.id for r in first.rules]
    # the cached rule base runs, and its rules are the compiled ones (same objects)
    assert {id(r) for r in second.rules} == {id(r) for r in second.compiled.rules}
    facts = [f for f in second.rules if f.id == "site.note"]
    assert facts and facts[0].file == "pack/p.yaml"


def test_any_change_of_a_rule_file_is_a_new_entry(tmp_path, cache):
    folder = _pack(tmp_path, "first")
    before = _load(folder)
    _pack(tmp_path, "second")
    after = _load(folder)
    assert len(_entries(cache)) == 2
    assert before.compiled.fingerprint != after.compiled.fingerprint
    note = next(r for r in after.rules if r.id == "site.note")
    assert note.then[0].fields["text"] == "second"
    (folder / "q.yaml").write_text(PACK.replace("site.note", "site.other").replace("WORD", "x"), encoding="utf-8")
    assert "site.other" in {r.id for r in _load(folder).rules}


def test_the_engine_is_part_of_the_key(tmp_path, cache):
    folder = _pack(tmp_path)
    files = rule_file_bytes([BUNDLED_RULES_DIR, folder], {BUNDLED_RULES_DIR: "rules", folder: "pack"})
    keys = {cache_key(files, vocabulary(), e, describe_engine(e)) for e in ("clips", resolve())}
    assert len(keys) == (1 if resolve() == "clips" else 2)
    clips = RuleBase.load([folder], vocabulary(), {folder: "pack"}, engine="clips")
    assert clips.engine == "clips"


def test_a_folder_others_can_write_is_never_read(tmp_path, cache):
    folder = _pack(tmp_path)
    _load(folder)
    (entry,) = _entries(cache)
    entry.write_bytes(b"not a pickle: would fail if read")
    os.chmod(cache, 0o777)
    try:
        loaded = _load(folder)  # ignores the folder: builds, and writes nothing there
        assert loaded.compiled.fingerprint
        assert entry.read_bytes() == b"not a pickle: would fail if read"
        os.chmod(cache, 0o700)
        os.chmod(entry, 0o644)  # a readable-by-others entry is not ours alone either
        assert _load(folder).compiled.fingerprint == loaded.compiled.fingerprint
    finally:
        os.chmod(cache, 0o700)


def test_a_damaged_entry_is_rebuilt(tmp_path, cache):
    folder = _pack(tmp_path)
    first = _load(folder)
    (entry,) = _entries(cache)
    entry.write_bytes(entry.read_bytes()[:100])
    assert _load(folder).compiled.fingerprint == first.compiled.fingerprint
    assert entry.stat().st_size > 1000  # written again


def test_broken_packs_are_never_stored_and_the_cache_can_be_off(tmp_path, cache, monkeypatch):
    folder = tmp_path / "broken"
    folder.mkdir()
    (folder / "b.yaml").write_text(textwrap.dedent("""\
        seed: t
        rules:
          - id: site.bad
            title: bad
            when: [{no_such_type: {}}]
            then: [{warning: {text: x}}]
        """), encoding="utf-8")
    for _ in range(2):
        with pytest.raises(RuleBaseErrors, match="no_such_type"):
            _load(folder)
    assert _entries(cache) == []
    monkeypatch.setenv("J6DOCTOR_CACHE", "0")
    _load(_pack(tmp_path))
    assert _entries(cache) == []


def test_the_cli_fills_and_uses_the_cache(cli, tmp_path):
    home = tmp_path / "cli-cache"
    case = tmp_path / "case.yaml"
    case.write_text("symptom: x\nresults: {qat_pt: normal, qat_bc: abnormal}\n", encoding="utf-8")
    env = {"XDG_CACHE_HOME": str(home), "J6DOCTOR_CACHE": "1"}
    first = cli("diagnose", str(case), "--no-env", "--format", "json", env=env)
    entries = sorted((home / "j6doctor").glob("rulebase-*.pickle"))
    assert first.returncode == 0 and entries, first.stderr
    second = cli("diagnose", str(case), "--no-env", "--format", "json", env=env)
    assert second.stdout == first.stdout


@pytest.mark.parametrize("enabled", [True, False])
def test_an_entry_read_back_is_frozen_and_the_collector_left_as_it_was(cache, enabled):
    import gc

    from j6doctor.engine.rulebase_cache import load_or_build

    value = {"rows": [[i, str(i)] for i in range(2000)]}
    assert load_or_build("k1", lambda: value, folder=cache) == value  # built and stored
    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        frozen = gc.get_freeze_count()
        again = load_or_build("k1", lambda: pytest.fail("read from the cache"), folder=cache)
        assert again == value and again is not value
        assert gc.isenabled() is enabled
        assert gc.get_freeze_count() >= frozen + 2000  # the entry's lists, never walked again
    finally:
        gc.unfreeze()
        (gc.enable if was else gc.disable)()


def test_an_entry_that_is_a_link_is_never_read(cache, tmp_path):
    import pickle

    from j6doctor.engine.rulebase_cache import load_or_build

    load_or_build("k2", lambda: "built", folder=cache)  # the folder, private
    elsewhere = tmp_path / "elsewhere.pickle"
    elsewhere.write_bytes(pickle.dumps("read through the link"))
    os.chmod(elsewhere, 0o600)
    entry = cache / "rulebase-k3.pickle"
    entry.symlink_to(elsewhere)
    assert load_or_build("k3", lambda: "built again", folder=cache) == "built again"
