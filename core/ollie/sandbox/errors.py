"""Sandbox errors, each named for what the caller does about it."""

from __future__ import annotations

from ollie.errors import OllieError


class SandboxUnavailableError(OllieError):
    """The policy needs Landlock (best_effort false) and the kernel lacks it: refuse to run."""


class SandboxError(OllieError):
    """The sandboxed child could not be set up (Landlock rules failed, fork server lost): report and stop."""


class HelperDiedError(SandboxError):
    """A helper of ollie's sandbox died under a running step: the step's outcome is unknown, run it again."""


# The step's result when its fork server died under it: the supervisor then stops the step (PDEATHSIG), so the
# tool's "killed by signal 9" would blame the tool, or whoever killed it.
FORK_SERVER_DIED = ("ollie's sandbox helper (its fork server) died while this step ran, so ollie stopped the step: "
                    "the step did not fail by itself, and its output may be cut short; run it again")
SUPERVISOR_DIED = ("ollie's sandbox helper (this step's supervisor) died before it could report how the step ended: "
                   "the step's outcome is unknown and what was left of it was stopped; run it again")
