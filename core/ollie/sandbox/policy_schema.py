"""sandbox.yaml's schema, validated with YAML + pydantic: the slow path, taken only when no cached form fits.

`policy_cache` keeps what this module returns for a file's exact text, so a
daemon start usually imports neither YAML nor pydantic for its policies. Any
change to this file changes the cache key (its source is hashed into it).
"""

from __future__ import annotations

from typing import Annotated, Any

import yaml
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from ollie.errors import ConfigError
from ollie.sandbox.sizes import check_size


def _port_number(value: object) -> object:
    """YAML users quote ports ("443"): a string of digits is that port; anything else is left for validation."""
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return value


Port = Annotated[int, BeforeValidator(_port_number), Field(ge=1, le=65535)]
# `limits.memory` / `limits.file_size`: kept as canonical text ("50%", "8G"), turned into bytes per machine (sizes.py).
MemorySize = Annotated[str, BeforeValidator(lambda value: check_size(value, share=True))]
FileSize = Annotated[str, BeforeValidator(lambda value: check_size(value, share=False))]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class _General(_Section):
    best_effort: bool = True
    log_level: str = ""


class _Filesystem(_Section):
    ro: list[str] = Field(default_factory=list)
    rox: list[str] = Field(default_factory=list)
    rw: list[str] = Field(default_factory=list)
    rwx: list[str] = Field(default_factory=list)


class _Network(_Section):
    enabled: bool = True
    unrestricted: bool = True
    bind_tcp: list[Port] = Field(default_factory=list)
    connect_tcp: list[Port] = Field(default_factory=list)
    unix: bool = False  # pathname unix sockets (socket(AF_UNIX)); socketpair() is always allowed


class _Limits(_Section):
    processes: int = Field(default=512, ge=1)  # tasks one step may run at once (pids cgroup; see cgroup.py)
    # Containment v3's step limits (memory cgroup or RLIMIT_AS; RLIMIT_FSIZE): see sizes.py and docs/SECURITY.md.
    memory: MemorySize = "50%"
    file_size: FileSize = "8G"


class _Advanced(_Section):
    ldd: bool = False
    add_exec: bool = False


class PolicyFile(_Section):
    """The sandbox.yaml schema (validated at the edge, then turned into a `Policy`)."""

    general: _General = Field(default_factory=_General)
    filesystem: _Filesystem = Field(default_factory=_Filesystem)
    network: _Network = Field(default_factory=_Network)
    env: list[str] = Field(default_factory=list)
    limits: _Limits = Field(default_factory=_Limits)
    advanced: _Advanced = Field(default_factory=_Advanced)


def _validation_message(exc: ValidationError) -> str:
    problems = []
    for err in exc.errors():
        key = ".".join(f"[{p}]" if isinstance(p, int) else str(p) for p in err["loc"]).replace(".[", "[")
        msg = "unknown key" if err["type"] == "extra_forbidden" else err["msg"]
        problems.append(f"key '{key or '(top level)'}': {msg}")
    return "; ".join(problems)


def validate_text(text: str, source: str) -> dict[str, Any]:
    """The file's every key with defaults filled in (`PolicyFile`'s dump); errors name `source` and the key."""
    try:
        data: Any = yaml.safe_load(text)
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
    try:
        return PolicyFile.model_validate(data).model_dump()
    except ValidationError as exc:
        raise ConfigError(f"{source}: {_validation_message(exc)}") from exc
