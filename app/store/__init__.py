"""The case library: every diagnosis kept (SQLite by default, PostgreSQL for a team), past
cases found by similarity, and rule changes checked against all of them (`cases rediagnose`).

schema.py — the tables (SQLAlchemy Core); migrations/ — their versions (Alembic);
library.py — recording and reading diagnoses; similar.py — the normalised facts cases are
compared by; rediagnose.py — stored facts through a (candidate) rule base."""
