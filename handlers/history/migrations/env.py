"""Alembic's environment: always handed a live connection by ``chatflow.handlers.history.db``
(which opens it with the async driver and runs the migration on its sync facade)."""

from __future__ import annotations

from alembic import context

from chatflow.handlers.history.db import VERSION_TABLE
from chatflow.handlers.history.schema import metadata

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=metadata,
                  version_table=VERSION_TABLE, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
