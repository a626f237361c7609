"""From a Policy to a Landlock ruleset for this kernel's ABI, with the warnings best_effort allows."""

from __future__ import annotations

import functools
import os

from ollie.sandbox import landlock
from ollie.sandbox.errors import SandboxUnavailableError
from ollie.sandbox.policy import Policy

# Tests set this to force a lower ABI (0 = a kernel without Landlock); it can never raise the real one.
FORCE_ABI_ENV = "OLLIE_LANDLOCK_ABI"
NETWORK_ABI = 4


@functools.cache
def _kernel_abi() -> int:
    return landlock.kernel_abi()


def landlock_abi() -> int:
    """The Landlock ABI to use: the kernel's, or lower when `$OLLIE_LANDLOCK_ABI` says so; 0 = unsupported."""
    real = _kernel_abi()
    forced = os.environ.get(FORCE_ABI_ENV, "").strip()
    return min(real, int(forced)) if forced.isdigit() else real


def _shortfall(policy: Policy, reason: str, consequence: str, warnings: list[str]) -> None:
    if not policy.best_effort:
        raise SandboxUnavailableError(
            f"{reason}, and sandbox policy {policy.name!r} ({policy.source}) has best_effort: false: refusing to run")
    warnings.append(f"{reason}: {consequence} (best_effort)")


def ruleset_for(policy: Policy, abi: int, *, extra_fs: list[tuple[str, int]] = ()) -> tuple[dict | None, list[str]]:
    """The ruleset spec for `landlock.apply_ruleset` (None: run unsandboxed) and the warnings to show."""
    warnings: list[str] = []
    if abi < 1:
        _shortfall(policy, "Landlock unavailable", "running unsandboxed", warnings)
        return None, warnings
    fs = [[str(path), access] for kind, access in landlock.ACCESS_BY_KIND.items() for path in getattr(policy, kind)]
    fs.extend([path, access] for path, access in extra_fs)
    net: list[list[int]] = []
    handled_net = 0
    if policy.network.restricted:
        if abi < NETWORK_ABI:
            _shortfall(policy, f"Landlock ABI {abi} cannot restrict TCP (needs {NETWORK_ABI})",
                       "network unrestricted", warnings)
        else:
            handled_net = landlock.handled_net(abi)
            if policy.network.enabled:
                net += [[port, landlock.NET_BIND_TCP] for port in policy.network.bind_tcp]
                net += [[port, landlock.NET_CONNECT_TCP] for port in policy.network.connect_tcp]
    spec = {"abi": abi, "handled_fs": landlock.handled_fs(abi), "handled_net": handled_net,
            "scoped": landlock.scopes(abi), "fs": fs, "net": net}
    return spec, warnings
