"""Saved sessions: the log (`session`, `persist`), the registry (`registry`: kinds, channels, Info), their stores
(SQLite and files, or PostgreSQL with OLLIE_STORE: `pg`)."""
