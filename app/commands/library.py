"""The case library (--store PATH|URL, or `store` in j6doctor.toml) as the commands use it:
opened and migrated, its failures refused with what to do."""

from __future__ import annotations

from pathlib import Path

from j6doctor.commands.console import Console, Refusal


def open_library(given: str | None, write: bool = True):
    """The case library at `given`, opened and migrated (to write), or opened to read only
    (nothing created or written beside it); None without one."""
    if not given:
        return None
    from j6doctor.store.keep import library
    from j6doctor.store.library import StoreError

    try:
        return library(given, write)
    except StoreError as exc:
        raise Refusal(str(exc)) from None


def open_required(store: str | None, write: bool = True):
    """The library of --store, else of the current folder's config: the `cases` commands
    (write=False: those that only read it)."""
    if not store:
        from j6doctor.config import load_config
        from j6doctor.probes import InputError

        try:
            store = load_config(Path.cwd()).store
        except InputError as exc:
            raise Refusal(exc.render()) from None
    library = open_library(store, write)
    if library is None:
        raise Refusal("give the case library with --store PATH|URL (or `store` in j6doctor.toml)")
    return library


def store_call(library, function, *args):
    """function(*args) on `library`; a database that fails mid-way (gone, full, read-only,
    damaged) is refused with the library's name and why."""
    import sqlalchemy

    from j6doctor.store.library import StoreError, failure

    try:
        return function(*args)
    except StoreError as exc:
        raise Refusal(str(exc)) from None
    except sqlalchemy.exc.SQLAlchemyError as exc:  # the database went away or refused mid-way
        raise Refusal(str(failure(library.given, exc))) from None


def store_files(library) -> list[Path]:
    """The files of a SQLite case library, with those SQLite keeps beside it: never an output (-o)."""
    if library is None or library.file is None:
        return []
    from j6doctor.store.library import SQLITE_SIDE_FILES  # (SQLAlchemy: only with a library)

    return [library.file] + [library.file.with_name(library.file.name + side) for side in SQLITE_SIDE_FILES]


def keep_diagnosis(diagnosis, given: str | None, console: Console):
    """With a case library (`given`): the similar past cases go into the diagnosis's report,
    and the diagnosis into the library. The library, or None."""
    library = open_library(given)
    if library is None:
        return None
    from j6doctor.store.keep import keep

    recorded = store_call(library, keep, diagnosis, library)
    console.say_verbose(f"j6doctor: 案例库 {library.given}：案例 #{recorded.case_id}"
                        f"{'（新）' if recorded.new_case else f'（第 {recorded.times} 次）'}")
    return library
