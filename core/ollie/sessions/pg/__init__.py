"""The PostgreSQL store (OLLIE_STORE=postgresql://…): the registry, the session logs and their leases."""
