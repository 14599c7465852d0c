"""The case library's data access: open (and migrate) a store, record a diagnosis, list,
show, search, resolve, compare, export and import. One SQLAlchemy Core layer for SQLite (a
file path) and PostgreSQL (a postgresql:// URL).

Identical inputs (the same input facts, file hashes included) are one case; diagnosing it
again under the same rule base and engine counts the diagnosis instead of adding one.
Concurrent writers (a triage pool, several engineers) lose nothing: a case or diagnosis row
another writer added first is found and counted, not written twice."""

from __future__ import annotations

import datetime
import hashlib
import json
import os
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, TextIO

from j6doctor.store import similar
from j6doctor.store.schema import cases, diagnoses, metadata, resolutions

HEAD = "v2"  # the newest schema version (migrations/versions)
OLDER = ("v1",)  # the versions a migration brings to HEAD
EXPORT_FORMAT = "j6doctor-case-library/1"


class StoreError(Exception):
    """The store cannot be opened or used: the message names it and what to do."""


SQLITE_HEADER = b"SQLite format 3\x00"
SQLITE_MAX_INT = 2 ** 63 - 1  # the largest INTEGER of SQLite (and BIGINT of PostgreSQL)
SQLITE_SIDE_FILES = ("-wal", "-shm", "-journal", ".lock")  # what SQLite and the migration lock add
# an empty file named like one of these is a user's document (a case not written yet), never a library
DOCUMENT_SUFFIXES = (".yaml", ".yml", ".json", ".md", ".markdown", ".txt", ".text", ".csv", ".py", ".toml")


def _check_not_another_file(given: str, file: Path) -> None:
    """An existing file is used only when it is a SQLite database, or an empty file not named
    like a document: SQLite would turn any other file (a case file, an empty case.yaml) into
    a database, and the user's file would be lost."""
    try:
        if not file.exists():
            return
        with open(file, "rb") as handle:
            head = handle.read(len(SQLITE_HEADER))
    except OSError as exc:
        raise StoreError(f"{given}: cannot read: {exc.strerror or exc}") from None
    if not head and file.suffix.lower() not in DOCUMENT_SUFFIXES:
        return  # an empty file made for the library (`touch cases.db`): SQLite starts it
    if head != SQLITE_HEADER:
        what = "an empty file" if not head else "not a SQLite database"
        raise StoreError(f"{given}: exists and is {what}, not a case library; j6doctor never writes over another "
                         "file: give a new path or a library j6doctor made")


def store_url(given: str):
    """The database's SQLAlchemy URL: a postgresql:// URL as given (with the psycopg driver),
    another URL as given, else a file path for SQLite. A URL object, never a string parsed
    again: a `?`, `#` or `%` in a file name is part of the name, never a query or an escape
    (SQLAlchemy 2.0 does not quote them when it renders a URL)."""
    from sqlalchemy.engine import URL, make_url

    if "://" in given:
        if given.startswith("postgresql://") or given.startswith("postgres://"):
            return make_url("postgresql+psycopg://" + given.split("://", 1)[1])
        return make_url(given)
    path = os.path.realpath(Path(given).expanduser())  # a link loop: kept as given
    return URL.create("sqlite", database=path)


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


@dataclass(frozen=True)
class Recorded:
    case_id: int
    new_case: bool
    diagnosis_id: int
    times: int


@dataclass(frozen=True)
class RunInputs:
    """What the library keeps of one run's inputs: its input facts as stored, their content
    hash (the case's identity) and its similarity features."""
    facts: list[dict[str, Any]]
    digest: str
    features: list[str]


def run_inputs(diagnosis) -> RunInputs:
    facts = stored_facts(f for f in diagnosis.run.facts if f.derivation is None)
    return RunInputs(facts, content_hash(facts), similar.signature(diagnosis.run.facts))


def stored_facts(facts: Iterable[Any]) -> list[dict[str, Any]]:
    """The input facts of a run as the store keeps them (engine Fact → plain data)."""
    return [{"id": f.id, "type": f.type, "fields": dict(f.fields),
             "source": f.source.as_dict() if f.source is not None else None} for f in facts]


def content_hash(facts: list[dict[str, Any]]) -> str:
    """Identical inputs ⇔ identical hash: the input facts with their sources (file sha256
    included), without the fact ids."""
    canonical = [{k: v for k, v in f.items() if k != "id"} for f in facts]
    return hashlib.sha256(_json(canonical).encode("utf-8")).hexdigest()


class CaseLibrary:
    """`write=False` (the `cases` commands that only read): nothing is created or written
    beside the store — no lock file, no migration unless the schema is older; a library
    that does not exist is refused, and one on a folder or medium this user cannot write is
    read as it is (SQLite read-only)."""

    def __init__(self, given: str, schema: str | None = HEAD, write: bool = True):
        try:
            import sqlalchemy
        except ImportError:  # pragma: no cover - a dependency of j6doctor
            raise StoreError("the case library needs SQLAlchemy (pip install sqlalchemy alembic)") from None
        self.given = given
        if "://" not in given and (given.endswith(("/", os.sep)) or Path(given).expanduser().is_dir()):
            raise StoreError(f"{given}: is a folder; give the SQLite file of the library (e.g. "
                             f"{Path(given) / 'cases.db'}) or a postgresql:// URL")
        try:
            self.url = store_url(given)
        except (sqlalchemy.exc.ArgumentError, ValueError) as exc:  # (a port that is no number)
            raise _unusable_url(given, exc) from None
        self.sqlite = self.url.get_backend_name() == "sqlite"
        if self.sqlite and self.url.database in (None, "", ":memory:"):
            raise StoreError(f"{given}: an in-memory database keeps nothing; give a file path (SQLite) or a "
                             "postgresql:// URL")
        # the SQLite file (never an output of the run), None for a database server
        self.file = Path(self.url.database) if self.sqlite else None
        if self.file is not None:
            self._check_file(write)
        # a SQLite library only read, that this user may not write (a read-only folder or
        # medium, another user's library): opened read-only, nothing written in it or beside it
        self.read_only = not write and self.file is not None and not _writable(self.file)
        try:
            self.engine = self._read_only_engine() if self.read_only else self._writing_engine()
        except (sqlalchemy.exc.ArgumentError, ModuleNotFoundError) as exc:  # (a driver not installed)
            raise _unusable_url(given, exc) from None
        if schema is not None:  # None: a worker of a process that has already migrated it
            self._open(schema, write)

    def _check_file(self, write: bool) -> None:
        """The SQLite file: its folder there, no other file taken for it, and for a reader a
        library that exists."""
        from j6doctor.probes.artifacts import not_found

        given, file = self.given, self.file
        if file.is_symlink() and not file.exists():  # a loop: SQLite says only "unable to open"
            raise StoreError(f"{given}: {not_found(file, 'file')}; give a SQLite file made by j6doctor (or a new path)")
        if not file.parent.is_dir():
            raise StoreError(f"{given}: the folder {file.parent} does not exist; create it or give another --store path")
        _check_not_another_file(given, file)
        if not write and (not file.exists() or file.stat().st_size == 0):
            raise StoreError(f"{given}: no case library there yet; `j6doctor diagnose --store {given}` or "
                             "`triage --store` fills one, or give the path of an existing one")

    def _writing_engine(self):
        import sqlalchemy

        engine = sqlalchemy.create_engine(self.url, connect_args={"timeout": 60} if self.sqlite else {}, future=True)
        if self.sqlite:
            sqlalchemy.event.listen(engine, "connect", _sqlite_pragmas)
        return engine

    def _read_only_engine(self):
        import sqlalchemy

        return sqlalchemy.create_engine("sqlite://", creator=_read_only_connection(self.file))

    def _open(self, schema: str, write: bool) -> None:
        """Bring the store to `schema` (the newest unless a test asks), under the migration
        lock, when it is empty (a writer) or older. Its version is read first without writing
        anything: a library of a newer j6doctor is never touched, and one at `schema` needs
        neither the lock nor a migration."""
        version = self._version_for_reading()
        if version == schema:
            if write and schema == HEAD and self._still_being_made():
                self._migrate(schema)  # another j6doctor is making it: wait for it at the migration lock
            return
        if version not in (None, *OLDER):
            raise StoreError(f"{self.given}: the case library has a schema this j6doctor does not know "
                             f"({version}); it was made by a newer j6doctor: upgrade j6doctor, or give "
                             "another --store")
        if not write and version is None:
            raise StoreError(f"{self.given}: holds no case library yet (an empty database); "
                             "`j6doctor diagnose --store` or `triage --store` fills it")
        if self.read_only:
            raise StoreError(f"{self.given}: the case library has the schema {version} and this j6doctor "
                             f"reads {schema}; it cannot be upgraded here (no write access to it or its "
                             "folder): upgrade it where it can be written, or use the j6doctor that made it")
        self._migrate(schema)

    def _version_for_reading(self) -> str | None:
        """The schema version, read without writing (a SQLite file read-only); None for a
        database without one. A SQLite database with tables but none of a library's is
        someone else's: j6doctor would add its tables to it (and switch its journal to WAL)."""
        import sqlite3

        import sqlalchemy

        query = "SELECT version_num FROM alembic_version"
        try:
            if self.file is not None:
                if not self.file.exists() or self.file.stat().st_size == 0:
                    return None
                connection = _read_only_connection(self.file)()
                try:
                    tables = [row[0] for row in connection.execute(
                        "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
                    self._check_a_library(tables)
                    row = connection.execute(query).fetchone() if tables else None
                    return row[0] if row else None
                finally:
                    connection.close()
            with self.engine.connect() as connection:
                if not sqlalchemy.inspect(connection).has_table("alembic_version"):
                    return None
                return connection.execute(sqlalchemy.text(query)).scalar()
        except sqlite3.Error as exc:
            raise StoreError(f"{self.given}: cannot open the case library: {exc}; {_what_to_do(exc)}") from None
        except sqlalchemy.exc.DBAPIError as exc:
            raise StoreError(f"{self.given}: cannot open the case library: {exc.orig}; {_what_to_do(exc)}") from None

    def _still_being_made(self) -> bool:
        """Whether a SQLite library read at the newest version lacks some of its tables. The
        read without writing may see the file as it is on disk (`immutable`, no locks) while
        another j6doctor is making it; a writer checks through its own connection, which sees
        only what was committed, before it writes without the migration lock."""
        if self.file is None:
            return False
        import sqlalchemy

        try:
            with self.engine.connect() as connection:
                present = set(sqlalchemy.inspect(connection).get_table_names())
        except sqlalchemy.exc.DBAPIError:  # (a file this user cannot write: the write says so, by name)
            return False
        return not set(metadata.tables) <= present

    def _check_a_library(self, tables: list[str]) -> None:
        # (alembic_version alone: another j6doctor is making the library, its migration under
        # way; a writer waits for it at the migration lock)
        if tables and tables != ["alembic_version"] and not {"alembic_version", "cases"} <= set(tables):
            shown = ", ".join(tables[:5]) + (", ..." if len(tables) > 5 else "")
            raise StoreError(f"{self.given}: is a SQLite database of something else (tables: {shown}), not a case "
                             "library; j6doctor never writes into another database: give a new path or a library "
                             "j6doctor made")

    # ------------------------------------------------------------------ schema
    @contextmanager
    def _migration_lock(self):
        """One process migrates at a time: a file lock beside a SQLite file, an advisory lock
        in PostgreSQL."""
        import sqlalchemy

        if self.sqlite:
            from j6doctor.atomic_write import locked

            with ExitStack() as stack:
                try:
                    stack.enter_context(locked(Path(f"{self.file}.lock")))
                except OSError as exc:  # a read-only folder: the library cannot be migrated or written there
                    raise StoreError(f"{self.given}: cannot create {self.file.name}.lock beside it: "
                                     f"{exc.strerror or exc}; the case library needs a writable folder") from None
                with self.engine.begin() as connection:
                    yield connection
        else:
            with self.engine.begin() as connection:
                connection.execute(sqlalchemy.text("SELECT pg_advisory_xact_lock(761526)"))
                yield connection

    def _migrate(self, target: str = HEAD) -> None:
        from alembic import command
        from alembic.config import Config
        from alembic.util.exc import CommandError

        import sqlalchemy

        config = Config()
        config.set_main_option("script_location", str(Path(__file__).parent / "migrations"))
        try:
            with self._migration_lock() as connection:
                config.attributes["connection"] = connection
                command.upgrade(config, target)
        except sqlalchemy.exc.DBAPIError as exc:  # not a database, unreachable, refused, no room
            raise StoreError(f"{self.given}: cannot open the case library: {exc.orig}; {_what_to_do(exc)}") from None
        except CommandError as exc:  # a schema revision this j6doctor does not know: a newer one made it
            raise StoreError(f"{self.given}: the case library has a schema this j6doctor does not know ({exc}); "
                             "it was made by a newer j6doctor: upgrade j6doctor, or give another --store") from None

    def schema_version(self) -> str | None:
        import sqlalchemy

        with self.engine.connect() as connection:
            return connection.execute(sqlalchemy.text("SELECT version_num FROM alembic_version")).scalar()

    # ------------------------------------------------------------------ writing
    def record(self, diagnosis, report_md: str, inputs: RunInputs | None = None) -> Recorded:
        """Keep one diagnosis: its case (once per distinct input), the verdict and report under
        this rule base (once per rule base and engine, counted). `inputs`: run_inputs(diagnosis)
        when the caller has it already."""
        import sqlalchemy

        inputs = inputs or run_inputs(diagnosis)
        facts, digest, features = inputs.facts, inputs.digest, inputs.features
        verdict = diagnosis.verdict_json
        case_text = diagnosis.case.text if diagnosis.case is not None else None  # as diagnosed, stdin too
        platform, flow = similar.feature_value(features, "family"), similar.feature_value(features, "flow")
        now = _now()
        rulebase, engine = verdict["rulebase"]["fingerprint"], verdict["rulebase"]["engine"]
        for _ in range(5):  # a concurrent writer may add the same row between our look and our insert
            try:
                with self.engine.begin() as connection:
                    row = connection.execute(sqlalchemy.select(cases.c.id).where(cases.c.content_hash == digest)).first()
                    new_case = row is None
                    if new_case:
                        case_id = connection.execute(cases.insert().values(
                            content_hash=digest, title=diagnosis.title, case_text=case_text, facts_json=_json(facts),
                            platform=platform, flow=flow, signature_json=_json(features),
                            created_at=now)).inserted_primary_key[0]
                    else:
                        case_id = row[0]
                    found = connection.execute(sqlalchemy.select(diagnoses.c.id, diagnoses.c.times).where(
                        (diagnoses.c.case_id == case_id) & (diagnoses.c.rulebase == rulebase)
                        & (diagnoses.c.engine == engine))).first()
                    if found is None:
                        diagnosis_id = connection.execute(diagnoses.insert().values(
                            case_id=case_id, rulebase=rulebase, engine=engine, tool_version=verdict["tool"]["version"],
                            stage=verdict["stage"], candidates_json=_json([c["stage"] for c in verdict["candidates"]]),
                            missing_json=_json(verdict["missing"]), verdict_json=_json(verdict), report_md=report_md,
                            first_seen=now, last_seen=now, times=1)).inserted_primary_key[0]
                        times = 1
                    else:
                        diagnosis_id, times = found[0], found[1] + 1
                        connection.execute(diagnoses.update().where(diagnoses.c.id == diagnosis_id).values(
                            times=diagnoses.c.times + 1, last_seen=now))
                return Recorded(case_id, new_case, diagnosis_id, times)
            except sqlalchemy.exc.IntegrityError:
                continue
        raise StoreError(f"{self.given}: could not record the diagnosis (other writers kept changing the same row); "
                         "run the command again")

    def resolve(self, case_id: int, stage: str, note: str) -> None:
        import sqlalchemy

        with self.engine.begin() as connection:
            if connection.execute(sqlalchemy.select(cases.c.id).where(cases.c.id == case_id)).first() is None:
                raise StoreError(f"{self.given}: no case {case_id}; `j6doctor cases list` shows the ids")
            connection.execute(resolutions.delete().where(resolutions.c.case_id == case_id))
            connection.execute(resolutions.insert().values(case_id=case_id, stage=stage, note=note,
                                                           resolved_at=_now()))

    # ------------------------------------------------------------------ reading
    def _latest(self, *extra):
        """Per case, its most recent diagnosis (the largest id): the summary columns, plus
        `extra` ones (the large JSON columns only when asked for)."""
        import sqlalchemy

        latest = sqlalchemy.select(diagnoses.c.case_id, sqlalchemy.func.max(diagnoses.c.id).label("id")) \
            .group_by(diagnoses.c.case_id).subquery()
        return sqlalchemy.select(cases.c.id, cases.c.content_hash, cases.c.title, cases.c.platform, cases.c.flow,
                                 cases.c.signature_json, cases.c.created_at, diagnoses.c.stage,
                                 diagnoses.c.candidates_json, diagnoses.c.missing_json, diagnoses.c.rulebase,
                                 diagnoses.c.last_seen, resolutions.c.stage.label("resolved_stage"),
                                 resolutions.c.note.label("resolved_note"), *extra) \
            .join(latest, latest.c.case_id == cases.c.id).join(diagnoses, diagnoses.c.id == latest.c.id) \
            .outerjoin(resolutions, resolutions.c.case_id == cases.c.id)

    def rows(self, stage: str | None = None, candidate: str | None = None, platform: str | None = None,
             flow: str | None = None, finding: str | None = None, op_type: str | None = None,
             missing: str | None = None, since: str | None = None, until: str | None = None,
             text: str | None = None) -> list[dict[str, Any]]:
        """The stored cases with their latest verdict, filtered; oldest first."""
        query = self._latest(*([diagnoses.c.verdict_json] if finding else []),
                             *([cases.c.case_text] if text else []))
        for column, value in ((diagnoses.c.stage, stage), (cases.c.platform, platform), (cases.c.flow, flow)):
            if value:
                query = query.where(column == value)
        if since:
            query = query.where(cases.c.created_at >= since)
        if until:
            query = query.where(cases.c.created_at < until)
        with self.engine.connect() as connection:
            found = [dict(r._mapping) for r in connection.execute(query.order_by(cases.c.id))]
        return [_summary(row) for row in found if _kept(row, candidate, missing, finding, op_type, text)]

    def show(self, case_id: int) -> dict[str, Any]:
        with self.engine.connect() as connection:
            row = connection.execute(self._latest(diagnoses.c.verdict_json, cases.c.case_text)
                                     .where(cases.c.id == case_id)).first()
        if row is None:
            raise StoreError(f"{self.given}: no case {case_id}; `j6doctor cases list` shows the ids")
        row = dict(row._mapping)
        return {**_summary(row), "case_text": row["case_text"],
                "verdict": json.loads(row["verdict_json"]), "report_md": self._report(case_id)}

    def _report(self, case_id: int) -> str:
        import sqlalchemy

        with self.engine.connect() as connection:
            return connection.execute(sqlalchemy.select(diagnoses.c.report_md).where(diagnoses.c.case_id == case_id)
                                      .order_by(diagnoses.c.id.desc()).limit(1)).scalar()

    def similar(self, inputs: RunInputs, limit: int = 3) -> list[dict[str, Any]]:
        """The stored cases closest to a run by their features (similar.py; at least
        MIN_SIMILARITY), the run's own case left out."""
        mine, exclude_hash = inputs.features, inputs.digest
        with self.engine.connect() as connection:
            found = [dict(r._mapping) for r in connection.execute(self._latest())]
        scored = []
        for row in found:
            if row["content_hash"] == exclude_hash:
                continue
            score = similar.similarity(mine, json.loads(row["signature_json"]))
            if score >= similar.MIN_SIMILARITY:
                scored.append((-score, row["id"], row))
        scored.sort(key=lambda s: (s[0], s[1]))
        return [{**_summary(row), "similarity": round(-score, 2)} for score, _, row in scored[:limit]]

    def stats(self) -> dict[str, Any]:
        """Agreement between the latest verdicts and the confirmed root causes, per stage and
        per rule base."""
        per_stage: dict[str, dict[str, int]] = {}
        per_rulebase: dict[str, dict[str, int]] = {}
        rows = self.rows()
        for row in rows:
            if row["resolved_stage"] is None:
                continue
            agree = int(row["stage"] == row["resolved_stage"])
            for table, key in ((per_stage, row["resolved_stage"]), (per_rulebase, row["rulebase"])):
                entry = table.setdefault(key, {"resolved": 0, "agree": 0})
                entry["resolved"] += 1
                entry["agree"] += agree
        return {"cases": len(rows), "per_stage": dict(sorted(per_stage.items())),
                "per_rulebase": dict(sorted(per_rulebase.items()))}

    def case_ids(self) -> list[int]:
        """The ids of the cases that have a diagnosis, in order (rediagnose hands them out in
        chunks; only the chunk being worked on is read)."""
        import sqlalchemy

        with self.engine.connect() as connection:
            return [row[0] for row in connection.execute(
                sqlalchemy.select(diagnoses.c.case_id).distinct().order_by(diagnoses.c.case_id))]

    def stored(self, ids: list[int] | None = None) -> Iterator[dict[str, Any]]:
        """The cases `ids` (default: every case) with their stored input facts and latest
        verdict (for rediagnose), in id order."""
        query = self._latest(cases.c.facts_json, diagnoses.c.verdict_json)
        if ids is not None:
            query = query.where(cases.c.id.in_(ids))
        with self.engine.connect() as connection:
            for row in connection.execute(query.order_by(cases.c.id)):
                row = row._mapping
                yield {"id": row["id"], "title": row["title"], "facts": json.loads(row["facts_json"]),
                       "verdict": json.loads(row["verdict_json"])}

    # ------------------------------------------------------------------ sharing
    def export_jsonl(self, out: TextIO) -> int:
        """One JSON line per case: its inputs, every diagnosis, its resolution. Nothing is
        added beyond what the case and its files gave."""
        import sqlalchemy

        count = 0
        with self.engine.connect() as connection:
            streamed = connection.execution_options(stream_results=True, yield_per=100)  # a server-side cursor
            for case in streamed.execute(sqlalchemy.select(cases).order_by(cases.c.id)):
                case = dict(case._mapping)
                runs = [dict(r._mapping) for r in connection.execute(
                    sqlalchemy.select(diagnoses).where(diagnoses.c.case_id == case["id"]).order_by(diagnoses.c.id))]
                resolution = connection.execute(sqlalchemy.select(resolutions).where(
                    resolutions.c.case_id == case["id"])).first()
                out.write(_json({
                    "format": EXPORT_FORMAT,
                    "case": {k: v for k, v in case.items() if k != "id"},
                    "diagnoses": [{k: v for k, v in r.items() if k not in ("id", "case_id")} for r in runs],
                    "resolution": ({k: v for k, v in resolution._mapping.items() if k != "case_id"}
                                   if resolution is not None else None),
                }) + "\n")
                count += 1
        return count

    def import_jsonl(self, lines: Iterable[str], source: str) -> tuple[int, int]:
        """Cases from an export: (added, already there). A case already stored (same content
        hash) gains the diagnoses and resolution it lacks."""
        import sqlalchemy

        added = known = 0
        for number, line in enumerate(lines, 1):
            try:
                if isinstance(line, bytes):
                    line = line.decode("utf-8")
                if not line.strip():
                    continue
                item = json.loads(line)
                if not isinstance(item, dict) or item.get("format") != EXPORT_FORMAT:
                    raise ValueError(f"format is {item.get('format') if isinstance(item, dict) else None!r}, "
                                     f"expected {EXPORT_FORMAT!r}")
                case = _check_fields(item["case"], _CASE_FIELDS, "case")
                runs = [_check_fields(r, _RUN_FIELDS, "diagnoses[]") for r in _list(item["diagnoses"], "diagnoses")]
                resolution = (_check_fields(item["resolution"], _RESOLUTION_FIELDS, "resolution")
                              if item.get("resolution") is not None else None)
                case["content_hash"] = content_hash(json.loads(case["facts_json"]))  # the identity is the facts
                with self.engine.begin() as connection:
                    row = connection.execute(sqlalchemy.select(cases.c.id).where(
                        cases.c.content_hash == case["content_hash"])).first()
                    if row is None:
                        case_id = connection.execute(cases.insert().values(**case)).inserted_primary_key[0]
                        added += 1
                    else:
                        case_id = row[0]
                        known += 1
                    for run in runs:
                        exists = connection.execute(sqlalchemy.select(diagnoses.c.id).where(
                            (diagnoses.c.case_id == case_id) & (diagnoses.c.rulebase == run["rulebase"])
                            & (diagnoses.c.engine == run["engine"]))).first()
                        if exists is None:
                            connection.execute(diagnoses.insert().values(case_id=case_id, **run))
                    if resolution and connection.execute(sqlalchemy.select(resolutions.c.case_id).where(
                            resolutions.c.case_id == case_id)).first() is None:
                        connection.execute(resolutions.insert().values(case_id=case_id, **resolution))
            except sqlalchemy.exc.IntegrityError:  # another writer added the same case at the same moment
                raise StoreError(f"{source}:{number}: another writer stored this case at the same moment; run the "
                                 f"import again (cases already there are recognised, {added} new so far)") from None
            except UnicodeDecodeError as exc:
                raise StoreError(f"{source}:{number}: not UTF-8 text (byte {exc.start}: {exc.reason}); expected a "
                                 f"line of `j6doctor cases export`; lines before it were imported "
                                 f"({added} new, {known} known)") from None
            except (ValueError, KeyError, TypeError, AttributeError) as exc:
                raise StoreError(f"{source}:{number}: not a case-library line ({str(exc)[:300]}); expected a line of "
                                 f"`j6doctor cases export`; lines before it were imported ({added} new, "
                                 f"{known} known)") from None
        return added, known


def _texts(parsed: Any) -> str | None:
    ok = isinstance(parsed, list) and all(isinstance(v, str) for v in parsed)
    return None if ok else "expected a JSON list of texts"


def _verdict(parsed: Any) -> str | None:
    ok = isinstance(parsed, dict) and all(k in parsed for k in _VERDICT_KEYS)
    return None if ok else f"a verdict has {', '.join(_VERDICT_KEYS)}"


def _stored_facts(parsed: Any) -> str | None:
    if not isinstance(parsed, list):
        return "expected a JSON list of facts"
    for k, fact in enumerate(parsed):
        if not (isinstance(fact, dict) and isinstance(fact.get("type"), str) and isinstance(fact.get("fields"), dict)
                and isinstance(fact.get("id"), str) and isinstance(fact.get("source"), (dict, type(None)))):
            return f"[{k}]: expected a fact {{id, type, fields, source}}"
    return None


# What an export line's parts must hold: field -> (type, check of its JSON content or None).
_VERDICT_KEYS = ("stage", "candidates", "missing", "mistakes", "conclusion")
_CASE_FIELDS = {"title": (str, None), "case_text": ((str, type(None)), None), "facts_json": (str, _stored_facts),
                "platform": (str, None), "flow": (str, None), "signature_json": (str, _texts), "created_at": (str, None)}
_RUN_FIELDS = {"rulebase": (str, None), "engine": (str, None), "tool_version": (str, None), "stage": (str, None),
               "candidates_json": (str, _texts), "missing_json": (str, _texts), "verdict_json": (str, _verdict),
               "report_md": (str, None), "first_seen": (str, None), "last_seen": (str, None), "times": (int, None)}
_RESOLUTION_FIELDS = {"stage": (str, None), "note": (str, None), "resolved_at": (str, None)}


def _list(value: Any, where: str) -> list:
    if not isinstance(value, list):
        raise ValueError(f"{where}: expected a list")
    return value


def _check_fields(part: Any, fields: dict[str, tuple], where: str) -> dict[str, Any]:
    """The known fields of one part of an export line, each of its type (JSON text parsed
    and checked); unknown keys are dropped (a newer export)."""
    if not isinstance(part, dict):
        raise ValueError(f"{where}: expected a mapping")
    out = {}
    for name, (kind, content) in fields.items():
        value = part.get(name)
        if not isinstance(value, kind) or isinstance(value, bool):
            raise ValueError(f"{where}.{name}: expected {getattr(kind, '__name__', 'text or null')}, got {value!r:.60}")
        if kind is int and not 0 < value <= SQLITE_MAX_INT:  # a count, that a database column can hold
            raise ValueError(f"{where}.{name}: expected a count from 1 to {SQLITE_MAX_INT}, got {str(value)[:30]}")
        if content is not None:
            try:
                parsed = json.loads(value)
            except ValueError:
                raise ValueError(f"{where}.{name}: not JSON text") from None
            problem = content(parsed)
            if problem is not None:
                raise ValueError(f"{where}.{name}{'' if problem.startswith('[') else ': '}{problem}")
        out[name] = value
    return out


def _kept(row: dict[str, Any], candidate: str | None, missing: str | None, finding: str | None,
          op_type: str | None, text: str | None) -> bool:
    """Whether a stored case passes the filters the database does not apply (values inside
    its JSON columns, words in its title or text)."""
    if candidate and candidate not in json.loads(row["candidates_json"]):
        return False
    if missing and missing not in json.loads(row["missing_json"]):
        return False
    if finding and not any(finding == f["topic"] or finding in f["text"]
                           for f in json.loads(row["verdict_json"])["findings"]):
        return False
    if op_type and f"origin_op:{op_type}" not in json.loads(row["signature_json"]):
        return False
    return not text or text in row["title"] or text in (row["case_text"] or "")


def _summary(row: dict[str, Any]) -> dict[str, Any]:
    from j6doctor.facts import label

    return {"id": row["id"], "title": row["title"], "created_at": row["created_at"], "platform": row["platform"],
            "flow": row["flow"], "stage": row["stage"], "stage_label": label("stage", row["stage"]),
            "candidates": json.loads(row["candidates_json"]), "missing": json.loads(row["missing_json"]),
            "rulebase": row["rulebase"], "resolved_stage": row["resolved_stage"],
            "resolved_note": row["resolved_note"] or ""}


def _unusable_url(given: str, exc: Exception) -> StoreError:
    return StoreError(f"{given}: not a usable database URL ({exc}); give a file path (SQLite) or "
                      "postgresql://user@host/db")


def _reason(exc: Exception) -> str:
    """A database error's own words (the driver's, under SQLAlchemy's wrapper)."""
    return str(getattr(exc, "orig", None) or exc)


def _what_to_do(exc: Exception) -> str:
    """The advice for a database error at opening: the disk, the permissions, or the file."""
    reason = _reason(exc).lower()
    if "disk i/o error" in reason or "full" in reason:
        return "check that its disk has room and can be written, then run the command again"
    if "readonly" in reason or "read-only" in reason:
        return "it or its folder cannot be written here: give a --store this user can write"
    return "give a SQLite file made by j6doctor (or a new path) or a reachable postgresql:// URL"


def failure(given: str, exc: Exception) -> StoreError:
    """A database error met mid-way (the server gone, a full disk, a read-only or damaged
    file) as the refusal that names the library."""
    reason = (_reason(exc).strip().splitlines() or [type(exc).__name__])[0]
    return StoreError(f"{given}: the case library failed: {reason[:300]}; check that the database is reachable, "
                      "writable and has room, then run the command again")


def _writable(file: Path) -> bool:
    """Whether this user can write the SQLite file and the folder its side files go in."""
    return os.access(file, os.W_OK) and os.access(file.parent, os.W_OK | os.X_OK)


def _read_only_connection(file: Path):
    """A connection factory for a SQLite file read where nothing may be written: read-only,
    and for a WAL library whose side files cannot be made there, the file as it is on disk
    (`immutable`: what a reader sees of a library nobody writes at that moment)."""
    import sqlite3
    from urllib.parse import quote

    uri = "file:" + quote(str(file))

    def connect() -> sqlite3.Connection:
        connection = sqlite3.connect(f"{uri}?mode=ro", uri=True, timeout=60)
        try:
            connection.execute("SELECT count(*) FROM sqlite_master").fetchone()
            return connection
        except sqlite3.OperationalError as exc:
            connection.close()
            if "readonly" not in str(exc) and "unable to open" not in str(exc):
                raise  # (a lock held past the timeout, a damaged file: said as it is)
            return sqlite3.connect(f"{uri}?immutable=1", uri=True)

    return connect


def _sqlite_pragmas(connection, _record) -> None:
    """WAL lets readers run beside a writer; synchronous=NORMAL is WAL's usual pairing (no
    corruption on a crash, only the last commits may be lost on a power cut, and an fsync per
    recorded diagnosis is saved); foreign keys on, as PostgreSQL has them."""
    cursor = connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def open_library(given: str | os.PathLike, schema: str | None = HEAD, write: bool = True) -> CaseLibrary:
    return CaseLibrary(str(given), schema, write)


__all__ = ["CaseLibrary", "HEAD", "Recorded", "RunInputs", "StoreError", "content_hash", "failure", "metadata",
           "open_library",
           "run_inputs", "store_url", "stored_facts"]
