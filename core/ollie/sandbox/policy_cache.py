"""A policy file's validated form, cached by the file's exact text so a start imports neither YAML nor pydantic.

The slow path (`policy_schema.validate_text`: YAML + pydantic) runs when no
cached form fits; what it returns is kept in ollie's config dir under the
SHA-256 of the text and of the validating code (`ollie.validcache`, which says
why an entry can never widen a policy nor be planted by a workspace), and is
checked again field by field when read back.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ollie import validcache as vc
from ollie.sandbox.sizes import check_size

KIND = "policies"
# Whatever decides what a text validates to: the schema, and how entries are read back.
_CODE = (Path(__file__).resolve().parent / "policy_schema.py", Path(__file__).resolve().parent / "sizes.py",
         Path(__file__).resolve())


@dataclass(frozen=True)
class General:
    """`general:` of sandbox.yaml."""

    best_effort: bool = True
    log_level: str = ""


@dataclass(frozen=True)
class Filesystem:
    """`filesystem:` of sandbox.yaml: path templates per access kind."""

    ro: tuple[str, ...] = ()
    rox: tuple[str, ...] = ()
    rw: tuple[str, ...] = ()
    rwx: tuple[str, ...] = ()


@dataclass(frozen=True)
class Network:
    """`network:` of sandbox.yaml."""

    enabled: bool = True
    unrestricted: bool = True
    bind_tcp: tuple[int, ...] = ()
    connect_tcp: tuple[int, ...] = ()
    unix: bool = False


@dataclass(frozen=True)
class PolicySpec:
    """A validated sandbox.yaml, before its templates are expanded for a session."""

    general: General
    filesystem: Filesystem
    network: Network
    env: tuple[str, ...]
    processes: int
    ldd: bool
    add_exec: bool
    memory: str = "50%"  # sizes.py's canonical text
    file_size: str = "8G"


def spec_from_dict(data: object) -> PolicySpec:
    """The spec of a validated file's dump (`policy_schema.validate_text`); Malformed if it is not one exactly."""
    top = vc.section(data, {"general", "filesystem", "network", "env", "limits", "advanced"})
    general = vc.section(top["general"], {"best_effort", "log_level"})
    fs = vc.section(top["filesystem"], {"ro", "rox", "rw", "rwx"})
    net = vc.section(top["network"], {"enabled", "unrestricted", "bind_tcp", "connect_tcp", "unix"})
    limits = vc.section(top["limits"], {"processes", "memory", "file_size"})
    advanced = vc.section(top["advanced"], {"ldd", "add_exec"})

    def ports(value: object) -> tuple[int, ...]:
        if not isinstance(value, list):
            raise vc.Malformed("expected a list of ports")
        return tuple(int(vc.number(v, 1, 65535)) for v in value)

    return PolicySpec(
        general=General(vc.flag(general["best_effort"]), vc.text(general["log_level"])),
        filesystem=Filesystem(vc.texts(fs["ro"]), vc.texts(fs["rox"]), vc.texts(fs["rw"]), vc.texts(fs["rwx"])),
        network=Network(vc.flag(net["enabled"]), vc.flag(net["unrestricted"]), ports(net["bind_tcp"]),
                        ports(net["connect_tcp"]), vc.flag(net["unix"])),
        env=vc.texts(top["env"]),
        processes=int(vc.number(limits["processes"], 1)),
        memory=_size(limits["memory"], share=True),
        file_size=_size(limits["file_size"], share=False),
        ldd=vc.flag(advanced["ldd"]),
        add_exec=vc.flag(advanced["add_exec"]),
    )


def _size(value: object, *, share: bool) -> str:
    try:
        return check_size(vc.text(value), share=share)
    except ValueError as exc:
        raise vc.Malformed(str(exc)) from exc


def load_spec(text: str, source: str) -> PolicySpec:
    """The validated spec of a policy file's `text`: cached when it was seen before, else YAML + pydantic.

    Errors (ConfigError) come from the slow path only and name `source` and the key.
    """
    def validate() -> object:
        from ollie.sandbox.policy_schema import validate_text  # YAML and pydantic: only for a file not seen before

        return validate_text(text, source)

    return vc.validated(KIND, text, _CODE, build=spec_from_dict, validate=validate)
