"""Sandbox errors, each named for what the caller does about it."""

from __future__ import annotations

from ollie.errors import OllieError


class SandboxUnavailableError(OllieError):
    """The policy needs Landlock (best_effort false) and the kernel lacks it: refuse to run."""


class SandboxError(OllieError):
    """The sandboxed child could not be set up (Landlock rules failed, fork server lost): report and stop."""
