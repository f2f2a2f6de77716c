"""The run history's tables (SQLAlchemy Core: rows are written in batches, never as objects).

Nothing references the registry's tables: a run's row outlives its tool. Times are epoch
milliseconds, as everywhere in the runtime. The migrations in ``migrations/versions`` create
exactly these; tests/history/test_migrations.py compares the two.
"""

from __future__ import annotations

import sqlalchemy as sa

metadata = sa.MetaData()

ID = 200  # execution ids are ``N-<uuid>`` plus ``.<version>`` per callTool level
WORKSPACE = 40  # [a-z0-9-]{1,40} (SPEC)

runs = sa.Table(
    "history_runs", metadata,
    sa.Column("execution_id", sa.String(ID), primary_key=True),
    sa.Column("root_execution_id", sa.String(ID), nullable=False),
    sa.Column("parent_execution_id", sa.String(ID)),
    sa.Column("depth", sa.Integer, nullable=False),
    sa.Column("tool_id", sa.String(ID), nullable=False),
    sa.Column("published_tool_id", sa.String(ID), nullable=False),
    # the publishedToolId its tree started with (a fork's: the tool it forked)
    sa.Column("root_published_tool_id", sa.String(ID), nullable=False),
    sa.Column("def_hash", sa.String(128)),  # the definition version the run used
    sa.Column("contact_id", sa.String(ID)),
    sa.Column("command_id", sa.String(300), nullable=False),
    sa.Column("status", sa.String(16), nullable=False),  # ok, error, cancelled, timeout
    sa.Column("error_code", sa.String(100)),
    sa.Column("error_message", sa.Text),
    sa.Column("result", sa.Text),
    sa.Column("inputs", sa.JSON),
    sa.Column("started_ms", sa.BigInteger, nullable=False),
    sa.Column("ended_ms", sa.BigInteger, nullable=False),
    sa.Column("duration_ms", sa.Integer, nullable=False),
    # stored; expired (the event log was gone when the event was read); pruned (retention)
    sa.Column("trace", sa.String(16), nullable=False),
    sa.Column("forked_from_execution_id", sa.String(ID)),
    sa.Column("forked_from_block_id", sa.String(ID)),
    # Whose the run is (access control): the workspace its tree was fixed in when it started,
    # read from its execution event; never derived again, so purging or re-creating a tool
    # moves no run. NULL only on rows written before this column (backfilled at start-up).
    sa.Column("workspace", sa.String(WORKSPACE)),
    sa.Index("ix_history_runs_started", "started_ms", "execution_id"),
    sa.Index("ix_history_runs_tool", "tool_id", "started_ms"),
    sa.Index("ix_history_runs_published", "published_tool_id", "started_ms"),
    sa.Index("ix_history_runs_contact", "contact_id", "started_ms"),
    sa.Index("ix_history_runs_status", "status", "started_ms"),
    sa.Index("ix_history_runs_ended", "ended_ms"),
    sa.Index("ix_history_runs_root", "root_execution_id"),
    sa.Index("ix_history_runs_owner", "root_published_tool_id", "started_ms"),
    sa.Index("ix_history_runs_workspace", "workspace", "started_ms"),
)

steps = sa.Table(
    "history_steps", metadata,
    sa.Column("execution_id", sa.String(ID), primary_key=True),
    sa.Column("seq", sa.Integer, primary_key=True),  # position in the execution's event log
    sa.Column("type", sa.String(16), nullable=False),  # started, block, spawned, finished, aborted
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
    sa.Column("writes", sa.JSON),  # variables the block wrote
    sa.Column("detail", sa.JSON),  # started: inputs, variables, context; block: its debug
)

definitions = sa.Table(
    "history_definitions", metadata,
    sa.Column("def_hash", sa.String(128), primary_key=True),
    # the published record as it ran ({id, toolId, name, definition}), secret values masked
    sa.Column("definition", sa.JSON, nullable=False),
    sa.Column("first_seen_ms", sa.BigInteger, nullable=False),
)
