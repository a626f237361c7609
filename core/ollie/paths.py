"""Where ollie keeps things: the XDG base dirs, OLLIE_* overrides, bundled defaults."""

from __future__ import annotations

import functools
import os
from contextlib import suppress
from pathlib import Path

from ollie.errors import ConfigError

APP = "ollie"
# Each XDG base dir's default under $HOME (the XDG Base Directory spec).
_HOME_DEFAULTS = {"config": ".config", "data": ".local/share", "state": ".local/state"}


def _env_dir(var: str) -> Path | None:
    value = os.environ.get(var)
    return Path(os.path.expanduser(value)) if value else None


def _xdg(kind: str) -> Path:
    """`$XDG_<KIND>_HOME/ollie`, or under home when that is unset or relative (the spec says to ignore it then)."""
    # Not platformdirs: on Linux it answers the same, and its import was ~0.35 MiB of the daemon's RSS (7 modules).
    base = os.environ.get(f"XDG_{kind.upper()}_HOME", "")
    if not os.path.isabs(base):
        base = os.path.join(os.path.expanduser("~"), _HOME_DEFAULTS[kind])
    return Path(base, APP)


def config_dir() -> Path:
    """The user's config dir (`$OLLIE_CONFIG_DIR`, else XDG config + /ollie)."""
    return _env_dir("OLLIE_CONFIG_DIR") or _xdg("config")


def data_dir() -> Path:
    """The user's data dir (`$OLLIE_DATA_DIR`, else XDG data + /ollie)."""
    return _env_dir("OLLIE_DATA_DIR") or _xdg("data")


def state_dir() -> Path:
    """The user's state dir, for logs (`$OLLIE_STATE_DIR`, else XDG state + /ollie)."""
    return _env_dir("OLLIE_STATE_DIR") or _xdg("state")


def checkpoints_dir() -> Path:
    """Where the shadow git repositories of workspace checkpoints live (state dir + /checkpoints)."""
    return state_dir() / "checkpoints"


def sessions_dir() -> Path:
    """Where sessions are saved (`$OLLIE_SESSIONS_DIR`, else data dir + /sessions)."""
    return _env_dir("OLLIE_SESSIONS_DIR") or data_dir() / "sessions"


def runtime_tmp_dir() -> Path:
    """The per-user root of session tmp dirs and lock files: `$XDG_RUNTIME_DIR/ollie`, else `$TMPDIR/ollie-<uid>`.

    Per user: another OS user never meets this one's private dir; `$XDG_RUNTIME_DIR` counts only when it is ours.
    """
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    if os.path.isabs(runtime):
        with suppress(OSError):
            if os.stat(runtime).st_uid == os.geteuid():
                return Path(runtime) / APP
    return Path(os.environ.get("TMPDIR") or "/tmp") / f"{APP}-{os.geteuid()}"


def runtime_socket_dir() -> Path:
    """Where the egress proxy's socket dir goes: the runtime tmp dir, or `/tmp/ollie-<uid>` when that is too deep for
    a unix socket's path (108 bytes: `<dir>/egress-XXXXXXXX/egress.sock`), as under a deep TMPDIR."""
    runtime = runtime_tmp_dir()
    return runtime if len(os.fsencode(runtime)) <= 72 else Path("/tmp") / f"{APP}-{os.geteuid()}"


@functools.cache  # where the package lies does not change while it runs (each step asked twice, ~40 us each)
def bundled(name: str) -> Path:
    """Path of a bundled default (`agents`, `tools`, `sandbox.yaml`): `ollie/_data/`, else the repo root."""
    here = Path(__file__).resolve().parent
    packaged = here / "_data" / name
    if packaged.exists():
        return packaged
    return here.parent.parent / name


def agents_dirs() -> list[Path]:
    """Agent config dirs in lookup order: `$OLLIE_AGENTS_DIR`, user, bundled."""
    return [d for d in (_env_dir("OLLIE_AGENTS_DIR"), config_dir() / "agents", bundled("agents")) if d]


def tools_path() -> list[Path]:
    """Tool script dirs in lookup order: `$OLLIE_TOOLS_PATH` (colon list), user, bundled."""
    # os.path.expanduser leaves `~nosuchuser` alone where Path.expanduser raises.
    given = [Path(os.path.expanduser(p)) for p in os.environ.get("OLLIE_TOOLS_PATH", "").split(":") if p]
    return [*given, config_dir() / "tools", bundled("tools")]


def sandbox_file() -> Path:
    """The sandbox policy file: the user's `sandbox.yaml` if present, else the bundled one."""
    user = config_dir() / "sandbox.yaml"
    try:
        present = user.exists()
    except OSError:
        present = True  # unreadable is not absent: loading it then fails, naming the file, instead of falling back
    return user if present else bundled("sandbox.yaml")


def policy_file(name: str = "default") -> Path:
    """The file of policy `name`: "default" is sandbox.yaml; others `<config>/sandbox/<name>.yaml`, then bundled."""
    if not name or "/" in name or name.startswith("."):
        raise ConfigError(f"invalid sandbox policy name {name!r}")
    if name == "default":
        return sandbox_file()
    candidates = [config_dir() / "sandbox" / f"{name}.yaml", bundled("sandboxes") / f"{name}.yaml"]
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    raise ConfigError(f"sandbox policy {name!r} not found (looked in {', '.join(str(c) for c in candidates)})")


def shipped_policy(name: str = "default") -> bool:
    """Whether policy `name` is one ollie ships (the user has no file of that name); ConfigError when none is found."""
    return policy_file(name) in (bundled("sandbox.yaml"), bundled("sandboxes") / f"{name}.yaml")
