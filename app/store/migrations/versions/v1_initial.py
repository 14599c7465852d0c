"""Schema version 1: cases and their diagnoses."""

import sqlalchemy as sa
from alembic import op

revision = "v1"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "cases",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("content_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("title", sa.Text, nullable=False),
        sa.Column("case_text", sa.Text, nullable=True),
        sa.Column("facts_json", sa.Text, nullable=False),
        sa.Column("platform", sa.String(40), nullable=False),
        sa.Column("flow", sa.String(20), nullable=False),
        sa.Column("signature_json", sa.Text, nullable=False),
        sa.Column("created_at", sa.String(32), nullable=False),
    )
    op.create_table(
        "diagnoses",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("case_id", sa.Integer, sa.ForeignKey("cases.id", ondelete="CASCADE"), nullable=False),
        sa.Column("rulebase", sa.String(64), nullable=False),
        sa.Column("engine", sa.String(20), nullable=False),
        sa.Column("tool_version", sa.String(20), nullable=False),
        sa.Column("stage", sa.String(40), nullable=False),
        sa.Column("candidates_json", sa.Text, nullable=False),
        sa.Column("missing_json", sa.Text, nullable=False),
        sa.Column("verdict_json", sa.Text, nullable=False),
        sa.Column("report_md", sa.Text, nullable=False),
        sa.Column("first_seen", sa.String(32), nullable=False),
        sa.Column("last_seen", sa.String(32), nullable=False),
        sa.Column("times", sa.Integer, nullable=False),
        sa.UniqueConstraint("case_id", "rulebase", "engine", name="uq_diagnosis_case_rulebase"),
    )
    op.create_index("ix_diagnoses_stage", "diagnoses", ["stage"])


def downgrade() -> None:
    op.drop_index("ix_diagnoses_stage", "diagnoses")
    op.drop_table("diagnoses")
    op.drop_table("cases")
