"""The case library (issue 16) on real databases: SQLite files and a throw-away PostgreSQL
cluster. Recording, identical inputs linked, filters, resolutions and statistics, similar
past cases in the report, rediagnosis of every stored case on a changed rule base (exactly
the cases whose verdict moves), concurrent writers, a migration from schema version 1, and
JSON Lines export / import between the two databases."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

from conftest import EXAMPLES, EXAMPLE_CASES
from pg_cluster import Cluster, server_bin
from j6doctor.diagnosis import diagnose_file, load_rulebase
from j6doctor.report import render_markdown
from j6doctor.store.keep import keep
from j6doctor.store.library import open_library

CASES = [p for p in EXAMPLE_CASES if p.suffix == ".yaml"]


@pytest.fixture(scope="session")
def cluster():
    bindir = server_bin()
    if bindir is None:
        if os.environ.get("CI"):
            pytest.fail("PostgreSQL is required in CI (.ci/run installs the Debian package postgresql)")
        pytest.skip("no PostgreSQL server on this machine (apt-get install postgresql)")
    started = Cluster(bindir)
    yield started
    started.stop()


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request, tmp_path):
    """A fresh, empty case library: its location as a user gives it (--store)."""
    if request.param == "sqlite":
        return str(tmp_path / "library.db")
    return request.getfixturevalue("cluster").new_database()


def run(*args, cwd, check=True):
    env = {k: v for k, v in os.environ.items() if k != "J6DOCTOR_DEBUG"}
    proc = subprocess.run([sys.executable, "-m", "j6doctor", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600)
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


def test_identical_inputs_are_one_case_and_runs_are_counted(store, rulebase):
    library = open_library(store)
    assert library.schema_version() == "v2"
    d = diagnose_file(EXAMPLES / "convert_j6m.yaml", rulebase)
    first = keep(d, library)
    again = keep(diagnose_file(EXAMPLES / "convert_j6m.yaml", rulebase), library)
    assert first.new_case and not again.new_case
    assert (again.case_id, again.diagnosis_id, again.times) == (first.case_id, first.diagnosis_id, 2)
    other = keep(diagnose_file(EXAMPLES / "board_integration.yaml", rulebase), library)
    assert other.new_case and other.case_id != first.case_id
    shown = library.show(first.case_id)
    assert shown["verdict"] == d.verdict_json and shown["report_md"].startswith("# j6doctor 诊断报告")
    assert shown["case_text"] == (EXAMPLES / "convert_j6m.yaml").read_text(encoding="utf-8")


def test_filters_resolutions_and_stats(store, rulebase):
    library = open_library(store)
    for path in CASES:
        keep(diagnose_file(path, rulebase), library)
    rows = library.rows()
    assert len(rows) == len(CASES)
    by_title = {r["title"]: r for r in rows}
    assert {r["title"] for r in library.rows(stage="convert")} == {
        p.name for p in CASES if diagnose_file(p, rulebase).verdict_json["stage"] == "convert"}
    assert {r["title"] for r in library.rows(platform="J6E")} == {
        t for t, r in by_title.items() if r["platform"] == "J6E"}
    assert library.rows(flow="ptq") and all(r["flow"] == "ptq" for r in library.rows(flow="ptq"))
    assert all("stage_results" in r["missing"] for r in library.rows(missing="stage_results"))
    assert all("board" in r["candidates"] for r in library.rows(candidate="board"))
    assert library.rows(text="NV12") and library.rows(since="2000-01-01") == rows and library.rows(until="2000-01-01") == []
    convert = by_title["convert_j6m.yaml"]
    library.resolve(convert["id"], "convert", "确认是 requantize")
    library.resolve(by_title["board_integration.yaml"]["id"], "user_side", "NV12 转换")
    stats = library.stats()
    assert stats["per_stage"]["convert"] == {"resolved": 1, "agree": 1}
    assert stats["per_stage"]["user_side"]["resolved"] == 1
    assert sum(e["resolved"] for e in stats["per_rulebase"].values()) == 2


def test_report_lists_similar_past_cases_without_changing_the_verdict(tmp_path):
    store = str(tmp_path / "lib.db")
    for name in ("gap_qat_bc_unverified.yaml", "board_integration.yaml"):
        run("diagnose", str(EXAMPLES / name), "--no-env", "--store", store, cwd=tmp_path)
    run("cases", "resolve", "1", "--stage", "convert", "--note", "qat.bc 其实正常", "--store", store, cwd=tmp_path)
    with_store = run("diagnose", str(EXAMPLES / "convert_j6m.yaml"), "--no-env", "--store", store, cwd=tmp_path).stdout
    without = run("diagnose", str(EXAMPLES / "convert_j6m.yaml"), "--no-env", cwd=tmp_path).stdout
    assert "## 相似的历史案例" in with_store and "#1 gap_qat_bc_unverified.yaml" in with_store
    assert "已确认根因：convert（qat.bc 其实正常）" in with_store
    assert with_store.split("## 结论摘要")[1].split("## ")[0] == without.split("## 结论摘要")[1].split("## ")[0]
    verdict = json.loads(run("diagnose", str(EXAMPLES / "convert_j6m.yaml"), "--no-env", "--store", store,
                             "--format", "json", cwd=tmp_path).stdout)
    plain = json.loads(run("diagnose", str(EXAMPLES / "convert_j6m.yaml"), "--no-env", "--format", "json",
                           cwd=tmp_path).stdout)
    assert verdict == plain  # the verdict never depends on the library


CHANGED_RULE = """\
seed: test
rules:
  - id: map.convert
    title: 候选规则：qat.bc 正常而 quantized.bc 异常时判为 compile（故意改动，只为 rediagnose 测试）
    when:
      - chain_open: {}
      - confirmed: {artifact: qat_bc, status: normal}
      - first_abnormal: {artifact: quantized_bc}
    then:
      - chain_stage: {stage: compile, next_step: 候选}
    examples:
      - case: {results: {qat_bc: {status: normal, evidence: dataset_eval}, quantized_bc: {status: abnormal, evidence: dataset_eval}}}
"""


def test_rediagnose_lists_exactly_the_cases_a_rule_change_moves(store, tmp_path, rulebase):
    run("triage", *map(str, CASES), "--store", store, "--no-progress", cwd=tmp_path)
    assert len(open_library(store).rows()) == len(CASES)
    same = run("cases", "rediagnose", "--store", store, "--jobs", "2", cwd=tmp_path)
    assert "0 个的结论会改变" in same.stdout
    pack = tmp_path / "candidate"
    pack.mkdir()
    (pack / "change.yaml").write_text(CHANGED_RULE, encoding="utf-8")
    changed = run("cases", "rediagnose", "--store", store, "--rules", str(pack), "--diff", "--format", "json",
                  cwd=tmp_path, check=False)
    assert changed.returncode == 1, changed.stderr  # findings: verdicts would change
    result = json.loads(changed.stdout)
    candidate = load_rulebase([pack])
    expected = sorted(p.name for p in CASES
                      if diagnose_file(p, candidate).verdict_json["stage"] != diagnose_file(p, rulebase).verdict_json["stage"]
                      or [c["stage"] for c in diagnose_file(p, candidate).verdict_json["candidates"]]
                      != [c["stage"] for c in diagnose_file(p, rulebase).verdict_json["candidates"]])
    assert expected and sorted(c["title"] for c in result["changed"]) == expected
    moved = next(c for c in result["changed"] if c["title"] == "convert_j6m.yaml")
    assert (moved["before"]["stage"], moved["after"]["stage"]) == ("convert", "compile")
    assert "verdict.from_chain" in moved["before"]["rules"]
    text = run("cases", "rediagnose", "--store", store, "--rules", str(pack), cwd=tmp_path, check=False).stdout
    assert "#" in text and "convert_j6m.yaml：convert → compile" in text


def test_rediagnose_in_a_pool_over_many_chunks(store, tmp_path, rulebase):
    """More cases than one chunk, two workers each reading its own chunks from the store:
    every case is checked once, and exactly the copies of the cases the change moves are listed."""
    from synthetic import library_copies

    from j6doctor.store.rediagnose import CHUNK

    seed = str(tmp_path / "seed.db")
    run("triage", *map(str, CASES), "--store", seed, "--no-progress", cwd=tmp_path)
    export = tmp_path / "seed.jsonl"
    run("cases", "export", "--store", seed, "-o", str(export), cwd=tmp_path)
    count = 2 * CHUNK + 5
    library = open_library(store)
    assert library.import_jsonl(library_copies(export.read_text(encoding="utf-8").splitlines(), count),
                                "copies.jsonl") == (count, 0)
    pack = tmp_path / "candidate"
    pack.mkdir()
    (pack / "change.yaml").write_text(CHANGED_RULE, encoding="utf-8")
    candidate = load_rulebase([pack])
    moved = {p.name for p in CASES
             if diagnose_file(p, candidate).verdict_json["stage"] != diagnose_file(p, rulebase).verdict_json["stage"]}
    result = run("cases", "rediagnose", "--store", store, "--rules", str(pack), "--jobs", "2", "--format", "json",
                 cwd=tmp_path, check=False)
    assert result.returncode == 1, result.stderr
    changed = json.loads(result.stdout)
    assert changed["cases"] == count
    titles = [row["title"] for row in library.rows()]
    expected = [t for t in titles if t.rsplit(" #", 1)[0] in moved]
    assert expected and [c["title"] for c in changed["changed"] if "stage" in c["changed"]] == expected
    assert [c["id"] for c in changed["changed"]] == sorted(c["id"] for c in changed["changed"])


def _record(args):
    store, name = args
    os.environ["J6DOCTOR_ENGINE_PROCESS"] = "inline"
    rulebase = load_rulebase()
    library = open_library(store)
    d = diagnose_file(EXAMPLES / name, rulebase)
    return library.record(d, render_markdown(d)).case_id


def test_concurrent_writers_lose_nothing(store):
    names = [p.name for p in CASES[:6]] * 4
    with ProcessPoolExecutor(6) as pool:
        ids = list(pool.map(_record, [(store, n) for n in names]))
    library = open_library(store)
    rows = library.rows()
    assert len(rows) == 6 and len(set(ids)) == 6
    with library.engine.connect() as connection:
        from sqlalchemy import text
        times = connection.execute(text("SELECT SUM(times), COUNT(*) FROM diagnoses")).one()
    assert tuple(times) == (24, 6)


def test_a_writer_waits_for_a_library_still_being_made(tmp_path):
    """A library read at the newest version but still without its tables (what a read of the
    file as it is on disk can show while another j6doctor makes it): a writer waits at the
    migration lock until the maker is done, instead of writing into missing tables."""
    import sqlite3
    import threading
    import time

    import sqlalchemy

    from j6doctor.atomic_write import locked
    from j6doctor.store.library import HEAD, metadata

    store = tmp_path / "library.db"
    with sqlite3.connect(store) as connection:  # the maker's first step: the version table, stamped
        connection.execute("CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL PRIMARY KEY)")
        connection.execute("INSERT INTO alembic_version VALUES (?)", (HEAD,))
    opened: dict = {}

    def writer() -> None:
        try:
            opened["rows"] = open_library(str(store)).rows()
        except Exception as exc:  # (reported by the assertion below)
            opened["error"] = exc

    with locked(Path(f"{store}.lock")):  # the maker holds the migration lock
        thread = threading.Thread(target=writer)
        thread.start()
        time.sleep(1.0)
        assert thread.is_alive() and not opened, opened  # waiting, not writing
        engine = sqlalchemy.create_engine(f"sqlite:///{store}")
        metadata.create_all(engine, tables=[t for name, t in metadata.tables.items() if name != "alembic_version"])
        engine.dispose()
    thread.join(60)
    assert opened == {"rows": []}


def test_migration_from_schema_version_1_keeps_the_cases(store, rulebase):
    old = open_library(store, schema="v1")
    assert old.schema_version() == "v1"
    with old.engine.begin() as connection:
        from sqlalchemy import inspect
        assert "resolutions" not in inspect(connection).get_table_names()
    d = diagnose_file(EXAMPLES / "convert_j6m.yaml", rulebase)
    from j6doctor.store.library import content_hash, stored_facts
    from j6doctor.store import similar
    facts = stored_facts(f for f in d.run.facts if f.derivation is None)
    with old.engine.begin() as connection:
        from sqlalchemy import text
        connection.execute(text(
            "INSERT INTO cases (content_hash, title, case_text, facts_json, platform, flow, signature_json, created_at)"
            " VALUES (:h, 'v1 case', NULL, :f, 'J6M', 'qat', :s, '2026-11-01T00:00:00Z')"),
            {"h": content_hash(facts), "f": json.dumps(facts), "s": json.dumps(similar.signature(d.run.facts))})
        connection.execute(text(
            "INSERT INTO diagnoses (case_id, rulebase, engine, tool_version, stage, candidates_json, missing_json,"
            " verdict_json, report_md, first_seen, last_seen, times) VALUES (1, 'old', 'durable', '0.0.9', 'convert',"
            " '[]', '[]', :v, '# old', '2026-11-01T00:00:00Z', '2026-11-01T00:00:00Z', 3)"), {"v": json.dumps(d.verdict_json)})
    new = open_library(store)
    assert new.schema_version() == "v2"
    (row,) = new.rows()
    assert (row["title"], row["stage"], row["rulebase"]) == ("v1 case", "convert", "old")
    new.resolve(row["id"], "convert", "ok")  # the table version 2 added
    assert keep(d, new).case_id == row["id"]  # the same inputs: the stored case, a new diagnosis under this rule base


def test_export_and_import_between_sqlite_and_postgresql(tmp_path, rulebase, cluster):
    source = str(tmp_path / "site_a.db")
    for path in CASES[:5]:
        keep(diagnose_file(path, rulebase), open_library(source))
    open_library(source).resolve(1, "convert", "确认")
    exported = tmp_path / "library.jsonl"
    run("cases", "export", "--store", source, "-o", str(exported), cwd=tmp_path)
    lines = exported.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 5 and all(json.loads(line)["format"] == "j6doctor-case-library/1" for line in lines)
    target = cluster.new_database()
    keep(diagnose_file(CASES[0], rulebase), open_library(target))  # one of them is there already
    proc = run("cases", "import", str(exported), "--store", target, cwd=tmp_path)
    assert "导入 4 个新案例，1 个已在案例库中" in proc.stderr
    rows = open_library(target).rows()
    assert sorted(r["title"] for r in rows) == sorted(p.name for p in CASES[:5])
    assert next(r for r in rows if r["title"] == CASES[0].name)["resolved_stage"] == "convert"
    bad = tmp_path / "bad.jsonl"
    bad.write_text(lines[0] + "\n{\"format\": \"something else\"}\n", encoding="utf-8")
    refused = run("cases", "import", str(bad), "--store", target, cwd=tmp_path, check=False)
    assert refused.returncode == 2 and "bad.jsonl:2: not a case-library line" in refused.stderr


def test_cli_list_show_search_and_errors(tmp_path):
    store = str(tmp_path / "lib.db")
    run("triage", str(EXAMPLES), "--store", store, "--no-progress", cwd=tmp_path)
    listing = run("cases", "list", "--store", store, "--stage", "convert", cwd=tmp_path).stdout
    assert "convert_j6m.yaml" in listing and "个案例" in listing
    as_json = json.loads(run("cases", "list", "--store", store, "--format", "json", cwd=tmp_path).stdout)
    first = as_json[0]["id"]
    assert run("cases", "show", str(first), "--store", store, cwd=tmp_path).stdout.startswith("# j6doctor 诊断报告")
    assert json.loads(run("cases", "show", str(first), "--store", store, "--format", "json",
                          cwd=tmp_path).stdout)["schema_version"]
    found = run("cases", "search", "NV12", "--store", store, cwd=tmp_path).stdout
    assert {line.split()[-1] for line in found.splitlines()[1:-1]} == {
        p.name for p in CASES if "NV12" in p.read_text(encoding="utf-8")}
    missing = run("cases", "show", "9999", "--store", store, cwd=tmp_path, check=False)
    assert missing.returncode == 2 and "no case 9999" in missing.stderr
    nowhere = run("diagnose", str(EXAMPLES / "empty.yaml"), "--store", str(tmp_path / "no" / "lib.db"), cwd=tmp_path,
                  check=False)
    assert nowhere.returncode == 2 and "does not exist" in nowhere.stderr
    no_store = run("cases", "list", cwd=tmp_path, check=False)
    assert no_store.returncode == 2 and "--store" in no_store.stderr
    (tmp_path / "j6doctor.toml").write_text('store = "lib.db"\n', encoding="utf-8")
    assert "convert_j6m.yaml" in run("cases", "list", cwd=tmp_path).stdout  # the config names the store


def test_a_case_from_standard_input_is_stored_with_its_text(tmp_path):
    """The case as it was diagnosed (here a GBK file on stdin), not a file read again later."""
    store = str(tmp_path / "lib.db")
    text = (EXAMPLES / "user_side_layout.yaml").read_text(encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "J6DOCTOR_DEBUG"}
    proc = subprocess.run([sys.executable, "-m", "j6doctor", "diagnose", "-", "--no-env", "--store", store],
                          cwd=EXAMPLES, env=env, input=text.encode("gbk"), capture_output=True, timeout=600)
    assert proc.returncode == 0, proc.stderr.decode()
    library = open_library(store)
    (row,) = library.rows()
    assert library.show(row["id"])["case_text"] == text
    assert library.rows(text="NV12") == [row]  # searchable like any stored case


def test_op_type_filter_and_similarity_follow_the_error_origin(tmp_path):
    """Two work folders whose first divergent layer is a ReLU: found by --op-type, and each
    other's closest past case; the bundled cases (no compare table) are not."""
    from synthetic import write_workdir

    store = str(tmp_path / "lib.db")
    run("triage", str(EXAMPLES), "--store", store, "--no-progress", cwd=tmp_path)
    first = write_workdir(tmp_path / "qa_first", 600)
    run("diagnose", "--workdir", str(first), "--no-env", "--store", store, cwd=tmp_path)
    listed = json.loads(run("cases", "list", "--store", store, "--op-type", "ReLU", "--format", "json",
                            cwd=tmp_path).stdout)
    assert [row["title"] for row in listed] == ["工作目录 qa_first"]
    assert json.loads(run("cases", "list", "--store", store, "--op-type", "Conv2d", "--format", "json",
                          cwd=tmp_path).stdout) == []
    second = write_workdir(tmp_path / "qa_second", 900)
    report = run("diagnose", "--workdir", str(second), "--no-env", "--store", store, cwd=tmp_path).stdout
    similar = report.split("## 相似的历史案例")[1].split("\n## ")[0]
    first_listed = next(line for line in similar.splitlines() if line.startswith("- "))
    assert "qa_first" in first_listed, similar


def test_bad_library_inputs_are_refused_with_their_place(tmp_path):
    """An import line whose parts do not hold what an export writes is refused before anything
    of it is stored; a file that is no database, and -o onto the store itself, are refused."""
    store = str(tmp_path / "lib.db")
    run("diagnose", str(EXAMPLES / "convert_j6m.yaml"), "--no-env", "--store", store, cwd=tmp_path)
    export = tmp_path / "one.jsonl"
    run("cases", "export", "--store", store, "-o", str(export), cwd=tmp_path)
    line = json.loads(export.read_text(encoding="utf-8"))
    broken = [({**line, "case": {**line["case"], "signature_json": "not json"}}, "case.signature_json: not JSON text"),
              ({**line, "diagnoses": [{**line["diagnoses"][0], "verdict_json": "{}"}]}, "diagnoses[].verdict_json"),
              ({**line, "diagnoses": [{**line["diagnoses"][0], "times": "many"}]}, "diagnoses[].times: expected int"),
              ({**line, "diagnoses": [{**line["diagnoses"][0], "times": 10 ** 40}]},
               "diagnoses[].times: expected a count from 1 to 9223372036854775807"),
              ({**line, "diagnoses": [{**line["diagnoses"][0], "candidates_json": '{"convert": 1}'}]},
               "diagnoses[].candidates_json: expected a JSON list of texts"),
              ({**line, "case": {**line["case"], "facts_json": json.dumps([{"id": "f1", "type": "symptom",
                                                                            "fields": {}, "source": "case.yaml"}])}},
               "case.facts_json[0]: expected a fact {id, type, fields, source}")]
    for number, (item, message) in enumerate(broken):
        bad = tmp_path / f"bad{number}.jsonl"
        bad.write_text(export.read_text(encoding="utf-8") + json.dumps(item, ensure_ascii=False) + "\n",
                       encoding="utf-8")
        other = str(tmp_path / f"other{number}.db")
        done = run("cases", "import", str(bad), "--store", other, cwd=tmp_path, check=False)
        assert done.returncode == 2 and f"bad{number}.jsonl:2: not a case-library line ({message}" in done.stderr
        assert "(1 new, 0 known)" in done.stderr
        assert len(open_library(other).rows()) == 1  # the good line is in, the bad one is not
    latin = tmp_path / "latin.jsonl"
    latin.write_bytes(export.read_bytes() + "café\n".encode("latin-1"))
    done = run("cases", "import", str(latin), "--store", str(tmp_path / "l.db"), cwd=tmp_path, check=False)
    assert done.returncode == 2 and "latin.jsonl:2: not UTF-8 text" in done.stderr
    (tmp_path / "notes.txt").write_text("hello\n", encoding="utf-8")
    done = run("cases", "list", "--store", "notes.txt", cwd=tmp_path, check=False)
    assert done.returncode == 2 and "notes.txt: exists and is not a SQLite database, not a case library" in done.stderr
    assert (tmp_path / "notes.txt").read_text(encoding="utf-8") == "hello\n"  # never turned into a database
    before = Path(store).read_bytes()
    done = run("cases", "export", "--store", store, "-o", store, cwd=tmp_path, check=False)
    assert done.returncode == 2 and "refusing to overwrite" in done.stderr
    done = run("diagnose", str(EXAMPLES / "convert_j6m.yaml"), "--no-env", "--store", store, "-o", store,
               cwd=tmp_path, check=False)
    assert done.returncode == 2 and Path(store).read_bytes()[:16] == before[:16] == b"SQLite format 3\x00"
    assert run("cases", "rediagnose", "--store", store, "--jobs", "-1", cwd=tmp_path, check=False).returncode == 2
