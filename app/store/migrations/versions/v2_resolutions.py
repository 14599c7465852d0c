"""Schema version 2: the confirmed root cause of a case (`cases resolve`)."""

import sqlalchemy as sa
from alembic import op

revision = "v2"
down_revision = "v1"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "resolutions",
        sa.Column("case_id", sa.Integer, sa.ForeignKey("cases.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("stage", sa.String(40), nullable=False),
        sa.Column("note", sa.Text, nullable=False),
        sa.Column("resolved_at", sa.String(32), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("resolutions")
