"""Each run carries the workspace its tree started in.

Rows written before this revision get NULL; the history projection fills them once at
start-up from the registry (``handlers.history.backfill``), the last time a run's workspace is
derived rather than recorded.

Revision ID: r0002
Revises: r0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "r0002"
down_revision = "r0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("history_runs") as batch:
        batch.add_column(sa.Column("workspace", sa.String(40)))
    op.create_index("ix_history_runs_workspace", "history_runs", ["workspace", "started_ms"])


def downgrade() -> None:
    op.drop_index("ix_history_runs_workspace", "history_runs")
    with op.batch_alter_table("history_runs") as batch:
        batch.drop_column("workspace")
