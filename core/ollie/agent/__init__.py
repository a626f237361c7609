"""The agent engine: Core API, runtime, loop, sessions, hooks, commands."""
