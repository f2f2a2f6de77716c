"""Run history in SQL: every execution of ``stream:tool-executions`` and its trace, kept in
SQLite (``chatflow up``) or PostgreSQL (``CHATFLOW_HISTORY_URL``) long after Valkey's TTLs.

``schema`` the tables, ``db`` the engine and the Alembic migrations, ``capture`` turns
execution events and their event logs into rows (secrets masked), ``writer`` the batched
idempotent writes and the retention pruning, ``runner`` the consumer group
(``chatflow-history``), ``queries`` what the API and the CLI read. docs/history.md.
"""
