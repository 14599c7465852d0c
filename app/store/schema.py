"""The tables of the case library. Text columns hold JSON (portable between SQLite and
PostgreSQL); every change of these tables comes with a migration (migrations/versions)."""

from __future__ import annotations

from sqlalchemy import Column, ForeignKey, Index, Integer, MetaData, String, Table, Text, UniqueConstraint

metadata = MetaData()

# One row per distinct set of inputs (content hash of the input facts): a case diagnosed
# again, by anyone, is the same case.
cases = Table(
    "cases", metadata,
    Column("id", Integer, primary_key=True),
    Column("content_hash", String(64), nullable=False, unique=True),
    Column("title", Text, nullable=False),
    Column("case_text", Text, nullable=True),        # the case file as given (None: work folders only)
    Column("facts_json", Text, nullable=False),      # the input facts with their sources and file hashes
    Column("platform", String(40), nullable=False, default=""),
    Column("flow", String(20), nullable=False, default=""),
    Column("signature_json", Text, nullable=False),  # the normalised facts similarity compares (similar.py)
    Column("created_at", String(32), nullable=False),
)

# One row per diagnosis of a case under one rule base (fingerprint + engine); seeing the same
# case under the same rule base again counts, it does not add a row.
diagnoses = Table(
    "diagnoses", metadata,
    Column("id", Integer, primary_key=True),
    Column("case_id", Integer, ForeignKey("cases.id", ondelete="CASCADE"), nullable=False),
    Column("rulebase", String(64), nullable=False),
    Column("engine", String(20), nullable=False),
    Column("tool_version", String(20), nullable=False),
    Column("stage", String(40), nullable=False),
    Column("candidates_json", Text, nullable=False),
    Column("missing_json", Text, nullable=False),
    Column("verdict_json", Text, nullable=False),
    Column("report_md", Text, nullable=False),
    Column("first_seen", String(32), nullable=False),
    Column("last_seen", String(32), nullable=False),
    Column("times", Integer, nullable=False, default=1),
    UniqueConstraint("case_id", "rulebase", "engine", name="uq_diagnosis_case_rulebase"),
)
Index("ix_diagnoses_stage", diagnoses.c.stage)

# The confirmed root cause, once it is known (added in schema version 2).
resolutions = Table(
    "resolutions", metadata,
    Column("case_id", Integer, ForeignKey("cases.id", ondelete="CASCADE"), primary_key=True),
    Column("stage", String(40), nullable=False),
    Column("note", Text, nullable=False, default=""),
    Column("resolved_at", String(32), nullable=False),
)
