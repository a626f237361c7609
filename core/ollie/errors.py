"""The root of every error ollie raises on purpose."""

from __future__ import annotations


class OllieError(Exception):
    """Base class: every deliberate ollie error derives from it."""


class ConfigError(OllieError):
    """A config file is malformed; the message names the file and the key."""
