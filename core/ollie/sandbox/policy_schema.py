"""sandbox.yaml's shape, declared once (`ollie.shapes`): checked at every load, errors naming the file and key."""

from __future__ import annotations

from functools import partial
from typing import Annotated, Any, ClassVar, Literal

import attrs

from ollie.errors import ConfigError
from ollie.sandbox.sizes import check_size
from ollie.shapes import Check, parse, parse_config


def _port(value: object) -> int:
    # YAML users quote ports ("443"): a string of digits is that port.
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return parse(int, value)


Port = Annotated[int, Check(parse=_port, ge=1, le=65535)]
MemorySize = Annotated[str, Check(parse=partial(check_size, share=True))]
FileSize = Annotated[str, Check(parse=partial(check_size, share=False))]


# No __eq__, __hash__ or __repr__ compiled (here and below): nothing compares or shows a spec, and every session reads
# one as it opens (~0.1-0.2 MiB of a daemon's RSS with them).
@attrs.frozen(eq=False, repr=False)
class _Section:
    json_keys: ClassVar[str] = "snake"


@attrs.frozen(eq=False, repr=False)
class General(_Section):
    """`general:` of sandbox.yaml."""

    best_effort: bool = True
    log_level: Literal["", "error", "info", "debug"] = ""


@attrs.frozen(eq=False, repr=False)
class Filesystem(_Section):
    """`filesystem:` of sandbox.yaml: path templates per access kind."""

    ro: tuple[str, ...] = ()
    rox: tuple[str, ...] = ()
    rw: tuple[str, ...] = ()
    rwx: tuple[str, ...] = ()


# `network.allow`'s default: the registries and source hosts a developer needs (pip, npm, cargo, go, git).
DEFAULT_ALLOW = ("pypi.org", "files.pythonhosted.org", "registry.npmjs.org", "crates.io", "static.crates.io",
                 "index.crates.io", "proxy.golang.org", "sum.golang.org", "github.com", "*.githubusercontent.com",
                 "codeload.github.com")


@attrs.frozen(eq=False, repr=False)
class Network(_Section):
    """`network:` of sandbox.yaml."""

    mode: Literal["proxy", "open", "nonet"] = "proxy"  # proxy: out only through ollie's egress proxy (egress.py)
    allow: tuple[str, ...] = DEFAULT_ALLOW
    deny: tuple[str, ...] = ()
    max_sent: FileSize = "1G"  # bytes one step may send through the proxy; 0: none
    enabled: bool = True
    unrestricted: bool = True
    bind_tcp: tuple[Port, ...] = ()
    connect_tcp: tuple[Port, ...] = ()
    unix: bool = False  # pathname unix sockets (socket(AF_UNIX)); socketpair() is always allowed


@attrs.frozen(eq=False, repr=False)
class Limits(_Section):
    """`limits:` of sandbox.yaml."""

    processes: Annotated[int, Check(ge=1)] = 512  # tasks one step may run at once (pids cgroup; see cgroup.py)
    # Containment v3's step limits (memory cgroup or RLIMIT_AS; RLIMIT_FSIZE), kept as canonical text ("50%",
    # "8G") and turned into bytes per machine: see sizes.py and docs/SECURITY.md.
    memory: MemorySize = "50%"
    file_size: FileSize = "8G"


@attrs.frozen(eq=False, repr=False)
class Advanced(_Section):
    """`advanced:` of sandbox.yaml."""

    ldd: bool = False
    add_exec: bool = False


@attrs.frozen(eq=False, repr=False)
class PolicySpec(_Section):
    """A validated sandbox.yaml, before its templates are expanded for a session."""

    general: General = General()
    filesystem: Filesystem = Filesystem()
    network: Network = Network()
    env: tuple[str, ...] = ()
    limits: Limits = Limits()
    advanced: Advanced = Advanced()


def load_spec(text: str, source: str) -> PolicySpec:
    """The checked spec of a policy file's YAML `text`; ConfigError naming `source` and the key."""
    import yaml  # only where a policy is read

    try:
        # libyaml's loader where PyYAML has it: the same safe types, ~10x faster than the pure-Python one.
        data: Any = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # noqa: S506 - a safe loader
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1} column {mark.column + 1}" if mark else ""
        raise ConfigError(f"{source}: invalid YAML{where}: {getattr(exc, 'problem', None) or exc}") from exc
    if data is None:
        # Fails closed: an empty file (a truncated write, a mistaken `> sandbox.yaml`) would otherwise be a
        # policy with every default, which grants no path yet leaves the network open and best_effort on.
        raise ConfigError(f"{source}: the sandbox policy is empty: refusing to run tool code under it "
                          "(delete the file to use the bundled default, or write the policy out)")
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: a sandbox policy must be a YAML mapping")
    return parse_config(PolicySpec, data, source)
