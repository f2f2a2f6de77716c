"""Alembic migrations of the run history (``chatflow history upgrade``)."""
