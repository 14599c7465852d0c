"""A case library never takes the place of a user's file (issue 32): an existing file that is
not a SQLite database (a case file, an empty file) is refused, not turned into a database; an
in-memory database is refused (it keeps nothing); the files SQLite keeps beside a library are
never an output. In process, on real SQLite files."""

from __future__ import annotations

import pytest

from conftest import write_case
from j6doctor.cli import main


def _run(tmp_path, monkeypatch, capsys, *args: str) -> tuple[int, str]:
    monkeypatch.chdir(tmp_path)
    try:
        main(list(args))
        code = 0
    except SystemExit as exit_:
        code = exit_.code
    return code, capsys.readouterr().err


@pytest.mark.parametrize("content,what", [(b"", "an empty file"), (b"symptom: x\n", "not a SQLite database")])
def test_a_store_that_is_another_file_is_refused_and_left_as_it_was(tmp_path, monkeypatch, capsys, content, what):
    write_case(tmp_path, "symptom: quantized.bc 掉点\n")
    (tmp_path / "mine.yaml").write_bytes(content)
    code, err = _run(tmp_path, monkeypatch, capsys, "diagnose", "case.yaml", "--store", "mine.yaml", "--no-env")
    assert code == 2
    assert f"mine.yaml: exists and is {what}, not a case library" in err
    assert (tmp_path / "mine.yaml").read_bytes() == content


def test_the_case_itself_as_its_store_is_refused(tmp_path, monkeypatch, capsys):
    path = write_case(tmp_path, "")
    code, err = _run(tmp_path, monkeypatch, capsys, "diagnose", "case.yaml", "--store", "case.yaml", "--no-env")
    assert code == 2 and "case.yaml: exists and is an empty file" in err
    assert path.read_bytes() == b""


@pytest.mark.parametrize("url", ["sqlite://", "sqlite:///:memory:"])
def test_an_in_memory_store_is_refused(tmp_path, monkeypatch, capsys, url):
    write_case(tmp_path, "symptom: x\n")
    code, err = _run(tmp_path, monkeypatch, capsys, "diagnose", "case.yaml", "--store", url, "--no-env")
    assert code == 2 and "an in-memory database keeps nothing" in err


@pytest.mark.parametrize("side", ["-wal", "-shm", "-journal", ".lock"])
def test_the_files_beside_a_library_are_never_an_output(tmp_path, monkeypatch, capsys, side):
    write_case(tmp_path, "symptom: x\n")
    assert _run(tmp_path, monkeypatch, capsys, "diagnose", "case.yaml", "--store", "s.db", "--no-env")[0] == 0
    code, err = _run(tmp_path, monkeypatch, capsys, "diagnose", "case.yaml", "--store", "s.db", "--no-env",
                     "-o", f"s.db{side}")
    assert code == 2 and f"s.db{side}" in err
    # the library still opens and holds the case
    assert _run(tmp_path, monkeypatch, capsys, "diagnose", "case.yaml", "--store", "s.db", "--no-env")[0] == 0


def test_a_library_of_a_newer_schema_is_named_not_an_internal_error(tmp_path, monkeypatch, capsys):
    import sqlite3

    connection = sqlite3.connect(tmp_path / "newer.db")
    connection.execute("CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL)")
    connection.execute("INSERT INTO alembic_version VALUES ('f00dfacecafe')")
    connection.execute("CREATE TABLE cases (id INTEGER PRIMARY KEY)")  # a library, of a later layout
    connection.commit()
    connection.close()
    code, err = _run(tmp_path, monkeypatch, capsys, "cases", "stats", "--store", "newer.db")
    assert code == 2 and "newer.db: the case library has a schema this j6doctor does not know" in err
    connection = sqlite3.connect(tmp_path / "newer.db")
    assert connection.execute("SELECT version_num FROM alembic_version").fetchall() == [("f00dfacecafe",)]
    assert [t for (t,) in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")] == \
        ["alembic_version", "cases"]  # nothing migrated into it
    assert connection.execute("PRAGMA journal_mode").fetchone() == ("delete",)  # not even its journal changed
    connection.close()


def test_a_corrupt_library_is_named(tmp_path, monkeypatch, capsys):
    write_case(tmp_path, "symptom: x\n")
    assert _run(tmp_path, monkeypatch, capsys, "diagnose", "case.yaml", "--store", "s.db", "--no-env")[0] == 0
    raw = (tmp_path / "s.db").read_bytes()
    (tmp_path / "bad.db").write_bytes(raw[:100] + bytes(range(256)) * ((len(raw) - 100) // 256))
    code, err = _run(tmp_path, monkeypatch, capsys, "cases", "stats", "--store", "bad.db")
    assert code == 2 and err.startswith("j6doctor: error: bad.db: cannot open the case library")


@pytest.mark.parametrize("given,expected", [
    ("", "argument --store: empty; give a SQLite file path or a postgresql:// URL"),
    ("libs/", "libs/: is a folder; give the SQLite file of the library (e.g. libs/cases.db)"),
    ("existing", "existing: is a folder; give the SQLite file of the library (e.g. existing/cases.db)"),
])
def test_a_store_that_names_no_file_is_refused(tmp_path, monkeypatch, capsys, given, expected):
    write_case(tmp_path, "symptom: x\n")
    (tmp_path / "existing").mkdir()
    code, err = _run(tmp_path, monkeypatch, capsys, "diagnose", "case.yaml", "--store", given, "--no-env")
    assert code == 2 and expected in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["case.yaml", "existing"]  # nothing created
