"""Alembic environment: the connection comes from the caller (library.open_library)."""

from alembic import context

from j6doctor.store.schema import metadata

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
