"""sandbox.yaml: template expansion and path checks (its file: `paths.policy_file`; its schema: `policy_schema`)."""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from ollie import paths, regularfile
from ollie.errors import ConfigError
from ollie.sandbox.sizes import size_bytes

if TYPE_CHECKING:
    from ollie.sandbox.policy_schema import PolicySpec

TOOLS_DIRS = "OLLIE_TOOLS_DIRS"
_TEMPLATE = re.compile(r"\{([A-Za-z_]+)\}")


@dataclass(frozen=True)
class NetworkPolicy:
    """Network rules. `mode` "proxy": the step's own network namespace, out only through the egress proxy
    (`allow`/`deny` host patterns, asking about the rest; at most `max_sent` bytes sent, 0: no cap); "open":
    the host's network, where `enabled` false blocks all inet sockets and `unrestricted` false allows only
    TCP to/on the listed ports (no UDP); "nonet" is "open" with `enabled` false. `unix` allows creating unix
    sockets (connecting to tmux, docker, ssh-agent...)."""

    enabled: bool = True
    unrestricted: bool = True
    bind_tcp: tuple[int, ...] = ()
    connect_tcp: tuple[int, ...] = ()
    unix: bool = False
    mode: str = "open"
    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    max_sent: int = 0

    @property
    def proxied(self) -> bool:
        """True when the step's only way out is the egress proxy."""
        return self.mode == "proxy" and self.enabled

    @property
    def restricted(self) -> bool:
        """True when TCP needs Landlock rules at all."""
        return not self.enabled or not self.unrestricted


@dataclass(frozen=True)
class Policy:
    """One session's expanded sandbox policy: absolute, existing paths per access kind."""

    name: str
    source: Path
    ro: tuple[Path, ...] = ()
    rox: tuple[Path, ...] = ()
    rw: tuple[Path, ...] = ()
    rwx: tuple[Path, ...] = ()
    network: NetworkPolicy = field(default_factory=NetworkPolicy)
    env: Mapping[str, str] = field(default_factory=dict)
    best_effort: bool = True
    log_level: str = ""
    ldd: bool = False
    max_processes: int = 512
    max_memory: int = 0  # bytes for the whole step (0: none); see `limits` in sandbox.yaml
    max_file_size: int = 0  # bytes per file written (0: none)
    # Read paths by what they led to when the policy was checked (writers.pinned): a step is refused where one leads
    # elsewhere (a link another step swapped in since).
    pinned: Mapping[str, str] = field(default_factory=dict)

    def readable(self) -> tuple[Path, ...]:
        """Every path the sandboxed code may read."""
        return self.ro + self.rox + self.rw + self.rwx

    def writable(self) -> tuple[Path, ...]:
        """Every path the sandboxed code may write."""
        return self.rw + self.rwx

    def extended(self, *, ro: Sequence[Path] = (), rox: Sequence[Path] = (), rw: Sequence[Path] = (),
                 rwx: Sequence[Path] = ()) -> Policy:
        """A copy that also grants these paths (e.g. a session's own dirs); missing ones are skipped."""
        def add(current: tuple[Path, ...], extra: Sequence[Path]) -> tuple[Path, ...]:
            return current + tuple(p for p in map(Path, extra) if p.is_absolute() and p.exists() and p not in current)

        return replace(self, ro=add(self.ro, ro), rox=add(self.rox, rox), rw=add(self.rw, rw), rwx=add(self.rwx, rwx))

    def reading(self, keep: Sequence[Path]) -> Policy:
        """A copy that writes nothing but `keep` (a private tmp dir, devices) and has no network: every other granted
        path only read."""
        # LESSSECURE: a reading `less` runs no input preprocessor (the LESSOPEN the session's or the policy's env may
        # name: a command the line never showed), shell command or log file. No network: what a clone's config makes
        # a reader run (a `git status`'s core.fsmonitor program) would send what it reads to a host the policy lists.
        return replace(self, network=replace(self.network, enabled=False),
                       ro=self.ro + tuple(p for p in self.rw if p not in keep),
                       rox=self.rox + tuple(p for p in self.rwx if p not in keep),
                       rw=tuple(p for p in self.rw if p in keep), rwx=tuple(p for p in self.rwx if p in keep),
                       env={**self.env, "LESSSECURE": "1"})

    def child_env(self, env: Mapping[str, str]) -> dict[str, str]:
        """`env` plus the policy's own variables (the policy's values win)."""
        return {**env, **self.env}


def template_values(*, cwd: Path, environ: Mapping[str, str]) -> dict[str, str]:
    """The single-valued template variables for one session."""
    home = environ.get("HOME") or str(Path.home())

    def xdg(var: str, default: str) -> str:
        value = environ.get(var, "")
        return value if os.path.isabs(value) else default

    return {
        "CWD": str(cwd),
        "HOME": home,
        "TMPDIR": environ.get("TMPDIR") or "/tmp",
        "XDG_CONFIG_HOME": xdg("XDG_CONFIG_HOME", f"{home}/.config"),
        "XDG_DATA_HOME": xdg("XDG_DATA_HOME", f"{home}/.local/share"),
        "XDG_CACHE_HOME": xdg("XDG_CACHE_HOME", f"{home}/.cache"),
        "XDG_STATE_HOME": xdg("XDG_STATE_HOME", f"{home}/.local/state"),
        "XDG_RUNTIME_DIR": xdg("XDG_RUNTIME_DIR", f"/run/user/{os.getuid()}"),
        "OLLIE_CFG_PATH": str(paths.config_dir()),
        "OLLIE_DATA_PATH": str(paths.data_dir()),
    }


def _expand(text: str, values: Mapping[str, str], key: str, source: str) -> str:
    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in values:
            known = ", ".join(f"{{{n}}}" for n in [*values, TOOLS_DIRS])
            raise ConfigError(f"{source}: key '{key}': unknown template variable {{{name}}} (known: {known})")
        return values[name]

    return _TEMPLATE.sub(replace, text)


def _expand_paths(entries: Sequence[str], values: Mapping[str, str], tools_dirs: list[str], kind: str,
                  source: str) -> list[Path]:
    out: list[Path] = []
    for index, entry in enumerate(entries):
        key = f"filesystem.{kind}[{index}]"
        token = "{" + TOOLS_DIRS + "}"
        variants = [entry.replace(token, d) for d in tools_dirs] if token in entry else [entry]
        for variant in variants:
            path = Path(os.path.expanduser(_expand(variant, values, key, source)))
            if not path.is_absolute():
                raise ConfigError(f"{source}: key '{key}': {entry!r} is not an absolute path")
            if path.exists() and path not in out:
                out.append(path)
    return out


def _expand_env(entries: Sequence[str], values: Mapping[str, str], environ: Mapping[str, str],
                source: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for index, entry in enumerate(entries):
        name, sep, value = entry.partition("=")
        if not name.isidentifier():
            raise ConfigError(f"{source}: key 'env[{index}]': {entry!r} is not KEY=VALUE or KEY")
        if sep:
            out[name] = _expand(value, values, f"env[{index}]", source)
        elif name in environ:
            out[name] = environ[name]
    return out


def parse_policy(text: str, *, source: str, name: str, cwd: Path,
                 env: Mapping[str, str] | None = None) -> Policy:
    """Parse sandbox.yaml text and expand it for a session in `cwd`; errors name `source` and the key."""
    spec = _parsed(text, source)
    environ = {**os.environ, **(env or {})}
    values = template_values(cwd=Path(cwd), environ=environ)
    tools_dirs = [str(d) for d in paths.tools_path()]
    fs = spec.filesystem
    kinds = {k: _expand_paths(getattr(fs, k), values, tools_dirs, k, source) for k in ("ro", "rox", "rw", "rwx")}
    if spec.advanced.add_exec:
        kinds = {"ro": [], "rox": kinds["ro"] + kinds["rox"], "rw": [], "rwx": kinds["rw"] + kinds["rwx"]}
    net = spec.network
    return Policy(
        name=name,
        source=Path(source),
        ro=tuple(kinds["ro"]), rox=tuple(kinds["rox"]), rw=tuple(kinds["rw"]), rwx=tuple(kinds["rwx"]),
        network=NetworkPolicy(net.enabled and net.mode != "nonet", net.unrestricted, net.bind_tcp, net.connect_tcp,
                              unix=net.unix, mode=net.mode, allow=net.allow, deny=net.deny,
                              max_sent=size_bytes(net.max_sent)),
        env=_expand_env(spec.env, values, environ, source),
        best_effort=spec.general.best_effort,
        log_level=spec.general.log_level,
        ldd=spec.advanced.ldd,
        max_processes=spec.limits.processes,
        max_memory=size_bytes(spec.limits.memory),
        max_file_size=size_bytes(spec.limits.file_size),
    )


@functools.lru_cache(maxsize=32)
def _parsed(text: str, source: str) -> PolicySpec:
    """The checked file, kept by its text: every sandboxed command loads its policy."""
    from ollie.sandbox.policy_schema import load_spec  # its shapes at the first policy read, not at start-up

    return load_spec(text, source)


def load_policy(name: str = "default", *, cwd: Path, env: Mapping[str, str] | None = None) -> Policy:
    """Load named policy `name`, expanded for a session in `cwd` (`env` overlays os.environ for templates)."""
    file = paths.policy_file(name)
    try:
        text = regularfile.read_config_sync(file)
    except OSError as exc:
        raise ConfigError(f"{file}: cannot read the sandbox policy: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{file}: the sandbox policy is not UTF-8 text (byte {exc.start})") from exc
    return parse_policy(text, source=str(file), name=name, cwd=Path(cwd), env=env)
