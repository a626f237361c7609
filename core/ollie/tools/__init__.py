"""The tool system: the dispatcher and the execute server."""
