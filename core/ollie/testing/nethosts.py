"""Host names mapped to addresses for the egress proxy in tests: the test machine has no internet, and the proxy's
resolver (`egress.system_resolve`) keeps only public addresses, so a test's local server is reached by a name.

In this process: `monkeypatch.setattr(egress, "system_resolve", hosts_resolver({"pypi.test": "127.0.0.1"}))`.
In a daemon or `ollie` a test starts: add `env({...})` to its environment (the variable and a PYTHONPATH whose
sitecustomize calls `from_env`); a daemon started with `python -I` calls `from_env` itself.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from pathlib import Path

from ollie.sandbox import egress
from ollie.sandbox.proxyrequest import is_ip, normal_host

HOSTS_ENV = "OLLIE_TEST_NET_HOSTS"  # name=1.2.3.4,name2=127.0.0.1
SITE = Path(__file__).with_name("site")  # holds only the sitecustomize.py that calls from_env


def hosts_resolver(table: dict[str, str]) -> Callable[[str, int], Awaitable[list[str]]]:
    """A resolver by a fixed name → address table; other names fail as unknown."""
    async def resolve(host: str, port: int) -> list[str]:
        if is_ip(host):
            return [host]
        if host not in table:
            raise OSError(f"unknown host {host}")
        return [table[host]]

    return resolve


def env(table: dict[str, str]) -> dict[str, str]:
    """The environment entries that make a daemon (or `ollie`) started with them resolve by `table`."""
    return {HOSTS_ENV: ",".join(f"{name}={address}" for name, address in table.items()), "PYTHONPATH": str(SITE)}


def from_env() -> None:
    """Resolve by OLLIE_TEST_NET_HOSTS from now on, when it is set (in the daemon a test started)."""
    pairs = [item.partition("=") for item in os.environ.get(HOSTS_ENV, "").split(",") if "=" in item]
    if pairs:
        egress.system_resolve = hosts_resolver({normal_host(name): address.strip() for name, _, address in pairs})
