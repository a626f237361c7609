"""The Landlock sandbox: policies (sandbox.yaml), path checks, and sandboxed spawning.

Its names load with their module at first use (PEP 562): naming a `Policy` type needs neither Landlock's rules nor
the spawn machinery, which the first tool call loads.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ollie.lazyexports import lazy_exports

if TYPE_CHECKING:
    from ollie.sandbox.errors import SandboxError, SandboxUnavailableError
    from ollie.sandbox.policy import NetworkPolicy, Policy, load_policy, parse_policy, policy_file
    from ollie.sandbox.process import SandboxedProcess
    from ollie.sandbox.rules import landlock_abi
    from ollie.sandbox.spawn import spawn_sandboxed

_HOMES = {
    "SandboxError": "errors", "SandboxUnavailableError": "errors",
    "NetworkPolicy": "policy", "Policy": "policy", "load_policy": "policy",
    "parse_policy": "policy", "policy_file": "policy", "SandboxedProcess": "process", "landlock_abi": "rules",
    "spawn_sandboxed": "spawn",
}

__all__ = [
    "NetworkPolicy", "Policy", "SandboxError", "SandboxUnavailableError", "SandboxedProcess",
    "landlock_abi", "load_policy", "parse_policy", "policy_file", "spawn_sandboxed",
]


__getattr__ = lazy_exports(__name__, _HOMES)
