"""The run history: runs, their traces, the definitions they ran.

Revision ID: r0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "r0001"
down_revision = None
branch_labels = None
depends_on = None

ID = 200


def upgrade() -> None:
    op.create_table(
        "history_runs",
        sa.Column("execution_id", sa.String(ID), primary_key=True),
        sa.Column("root_execution_id", sa.String(ID), nullable=False),
        sa.Column("parent_execution_id", sa.String(ID)),
        sa.Column("depth", sa.Integer, nullable=False),
        sa.Column("tool_id", sa.String(ID), nullable=False),
        sa.Column("published_tool_id", sa.String(ID), nullable=False),
        sa.Column("root_published_tool_id", sa.String(ID), nullable=False),
        sa.Column("def_hash", sa.String(128)),
        sa.Column("contact_id", sa.String(ID)),
        sa.Column("command_id", sa.String(300), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("error_code", sa.String(100)),
        sa.Column("error_message", sa.Text),
        sa.Column("result", sa.Text),
        sa.Column("inputs", sa.JSON),
        sa.Column("started_ms", sa.BigInteger, nullable=False),
        sa.Column("ended_ms", sa.BigInteger, nullable=False),
        sa.Column("duration_ms", sa.Integer, nullable=False),
        sa.Column("trace", sa.String(16), nullable=False),
        sa.Column("forked_from_execution_id", sa.String(ID)),
        sa.Column("forked_from_block_id", sa.String(ID)),
    )
    for name, cols in (("started", ["started_ms", "execution_id"]),
                       ("tool", ["tool_id", "started_ms"]),
                       ("published", ["published_tool_id", "started_ms"]),
                       ("contact", ["contact_id", "started_ms"]),
                       ("status", ["status", "started_ms"]),
                       ("ended", ["ended_ms"]),
                       ("root", ["root_execution_id"]),
                       ("owner", ["root_published_tool_id", "started_ms"])):
        op.create_index(f"ix_history_runs_{name}", "history_runs", cols)
    op.create_table(
        "history_steps",
        sa.Column("execution_id", sa.String(ID), primary_key=True),
        sa.Column("seq", sa.Integer, primary_key=True),
        sa.Column("type", sa.String(16), nullable=False),
        sa.Column("at_ms", sa.BigInteger, nullable=False),
        sa.Column("block_id", sa.String(ID)),
        sa.Column("block_type", sa.String(64)),
        sa.Column("duration_ms", sa.Integer),
        sa.Column("ok", sa.Boolean),
        sa.Column("error_code", sa.String(100)),
        sa.Column("error_message", sa.Text),
        sa.Column("matched_condition_id", sa.String(ID)),
        sa.Column("next_block", sa.String(ID)),
        sa.Column("child_execution_id", sa.String(ID)),
        sa.Column("http_method", sa.String(16)),
        sa.Column("http_url", sa.Text),
        sa.Column("http_status", sa.Integer),
        sa.Column("result", sa.Text),
        sa.Column("writes", sa.JSON),
        sa.Column("detail", sa.JSON),
    )
    op.create_table(
        "history_definitions",
        sa.Column("def_hash", sa.String(128), primary_key=True),
        sa.Column("definition", sa.JSON, nullable=False),
        sa.Column("first_seen_ms", sa.BigInteger, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("history_definitions")
    op.drop_table("history_steps")
    op.drop_table("history_runs")
