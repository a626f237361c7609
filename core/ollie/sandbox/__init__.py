"""The Landlock sandbox: policies (sandbox.yaml), path checks, and sandboxed spawning."""

from __future__ import annotations

from ollie.sandbox.errors import PolicyError, SandboxError, SandboxUnavailableError
from ollie.sandbox.policy import NetworkPolicy, Policy, check_path, load_policy, parse_policy, policy_file
from ollie.sandbox.process import SandboxedProcess
from ollie.sandbox.rules import landlock_abi
from ollie.sandbox.spawn import spawn_sandboxed

__all__ = [
    "NetworkPolicy", "Policy", "PolicyError", "SandboxError", "SandboxUnavailableError", "SandboxedProcess",
    "check_path", "landlock_abi", "load_policy", "parse_policy", "policy_file", "spawn_sandboxed",
]
