"""Paths no sandbox policy may open to tool code: keys, shell start-up files, ollie's own config, data, state
and runtime dirs, and (through a root holding $HOME) the hidden entries of $HOME beyond an allow-list.

Landlock cannot carve a hole into a granted tree: a writable root holding a protected path is granted
read-only (with a warning), a readable one is replaced by its entries minus the way to the secret.
"""

from __future__ import annotations

import contextvars
import os
from collections.abc import Iterable
from collections.abc import Set as AbstractSet
from dataclasses import replace
from pathlib import Path

from ollie import paths
from ollie.sandbox import writers
from ollie.sandbox.policy import Policy

# Shell start-up files (relative to $HOME): code written there runs as the user, unsandboxed, at the next login.
STARTUP_FILES = (".bashrc", ".profile", ".bash_profile", ".bash_login", ".zshrc", ".zprofile", ".config/fish")
ADVICE = "open a project folder instead of your home directory"


# Within one `protect` call, each path's real path is resolved once (it asks for the same ~40 paths ~130 times).
_resolved: contextvars.ContextVar[dict[str, Path] | None] = contextvars.ContextVar("ollie_protect_resolved",
                                                                                   default=None)


def _real(path: Path | str) -> Path:
    cache = _resolved.get()
    if cache is None:
        return Path(os.path.realpath(path))
    key = os.fspath(path)
    real = cache.get(key)
    if real is None:
        real = cache[key] = Path(os.path.realpath(key))
    return real


# Credentials other tools keep in $HOME (relative to it): a database password (the team store's,
# docs/TEAM.md), git/HTTP tokens, cloud and registry keys. Tool code may open the network by default,
# so reading one is as good as using it.
CREDENTIAL_FILES = (".pgpass", ".pg_service.conf", ".netrc", ".git-credentials", ".aws", ".azure", ".kube",
                    ".docker/config.json", ".npmrc", ".pypirc", ".config/gh", ".config/gcloud", ".config/hub")


# What a root holding $HOME (a workspace at $HOME: VS Code with no folder) still shows of $HOME's hidden
# entries (relative to it): git's config, and the toolchains code needs to run. Every other dot-entry
# (tokens, histories, browser and app data) is left out; a policy may still grant one by name.
HOME_VISIBLE = (".gitconfig", ".gitignore", ".gitignore_global", ".config/git", ".editorconfig", ".pyenv",
                ".rbenv", ".nvm", ".asdf", ".volta", ".rustup", ".cargo/bin", ".ghcup", ".sdkman/candidates",
                ".deno/bin", ".bun/bin", ".nix-profile", ".conda", ".local/bin", ".local/lib",
                ".local/share/mise", ".local/share/uv/python")


def secret_paths(home: Path) -> list[Path]:
    """What tool code may never read through a broader grant: ollie's config (its env file), keys, other sessions,
    ollie's data and state (other sessions' logs and transcripts), the egress proxy's socket (a step could swap it)."""
    # The first three are key dirs: `_write_problem` also refuses writable roots inside them.
    return [_real(p) for p in (paths.config_dir(), home / ".ssh", home / ".gnupg", paths.runtime_tmp_dir(),
                                paths.runtime_socket_dir(),
                                *(home / name for name in CREDENTIAL_FILES), paths.data_dir(), paths.state_dir(),
                                paths.sessions_dir())]


def hidden_home_entries(home: Path) -> set[Path]:
    """$HOME's hidden entries that a root holding $HOME must not show (each under its parent's real path)."""
    hidden: set[Path] = set()

    def walk(directory: Path, visible: list[str], top: bool) -> None:
        try:
            entries = sorted(os.scandir(directory), key=lambda entry: entry.name)
        except OSError:
            return
        for entry in entries:
            if top and not entry.name.startswith("."):
                continue  # the user's own files and projects
            wanted = [path for path in visible if path == entry.name or path.startswith(entry.name + "/")]
            if not wanted:
                hidden.add(directory / entry.name)
            elif entry.name not in wanted and entry.is_dir():
                # Under its real path (~/.config is often a symlink into a dotfiles repo): what the split lists.
                walk(_real(directory / entry.name), [path.partition("/")[2] for path in wanted], top=False)

    walk(_real(home), list(HOME_VISIBLE), top=True)
    return hidden


def _holds(root: Path, path: Path) -> bool:
    """Whether `path` is `root` or below it; both real paths (absolute, normalised): a string prefix says it
    exactly, where pathlib's is_relative_to cost most of a session's start."""
    inner, outer = str(path), str(root)
    return inner == outer or inner.startswith(outer if outer.endswith("/") else outer + "/")


def _write_problem(root: Path, guards: list[tuple[list[Path], list[Path]]]) -> Path | None:
    """The protected path a writable `root` would expose, or None (`guards`: per home, its guarded and secret paths)."""
    real = _real(root)
    for guarded_of_home, secrets_of_home in guards:
        for guarded in guarded_of_home:
            if _holds(real, guarded):
                return guarded
        # Inside ollie's config dir or a key dir: an agent config or a key planted there is as bad.
        for secret in secrets_of_home[:3]:
            if _holds(secret, real):
                return secret
    return None


def _readable_split(root: Path, secrets: list[Path], seen: set[Path],
                    hidden: AbstractSet[Path] = frozenset()) -> list[Path]:
    """`root` when it holds no secret (nor `hidden` entry); else its entries, recursively, minus every one."""
    real = _real(root)
    # A grant of the secret itself goes; one inside it (ollie's tools dir, this session's TMPDIR) was meant.
    if real in secrets:
        return []
    if not any(_holds(real, s) for s in secrets) and not any(_holds(real, h) for h in hidden):
        return [root]
    if real in seen:
        # A symlink back up the tree (~/link -> /): its entries are granted already.
        return []
    seen.add(real)
    try:
        children = sorted(real.iterdir())
    except OSError:
        return []
    out: list[Path] = []
    for child in children:
        if child in hidden:
            continue  # judged by its name under $HOME, not by where a symlink leads
        # A symlink is followed where Landlock opens the rule's path: judge it by its target.
        out.extend(_readable_split(child, secrets, seen, hidden))
    return out


def _split_all(roots: Iterable[Path], secrets: list[Path], homes: list[Path]) -> tuple[Path, ...]:
    out: list[Path] = []
    seen: set[Path] = set()
    hidden: dict[Path, set[Path]] = {}  # per home, listed only once a root holds it
    for root in roots:
        real = _real(root)
        held = [home for home in homes if _holds(real, _real(home))]
        for home in held:
            if home not in hidden:
                hidden[home] = hidden_home_entries(home)
        # Only a root holding $HOME loses its hidden entries: a grant of one by name (~/.cache) is kept.
        shut = set().union(*(hidden[home] for home in held)) if held else set()
        for path in _readable_split(root, secrets, seen, shut):
            if path not in out:
                out.append(path)
    return tuple(out)


def protect(policy: Policy, *, home: Path | str | None = None) -> tuple[Policy, list[str]]:
    """`policy` with no protected path writable and no secret readable, and a warning per downgraded root; its read
    paths pinned (`Policy.pinned`) before it looks, so a step is refused where another's swapped link leads elsewhere."""
    policy = replace(policy, pinned=writers.pinned([*policy.ro, *policy.rox]))
    token = _resolved.set({})  # the file system as it is now: nothing is kept past this call
    try:
        return _protect(policy, home)
    finally:
        _resolved.reset(token)


def _protect(policy: Policy, home: Path | str | None) -> tuple[Policy, list[str]]:
    # The session's $HOME and the daemon's own, should a session env have moved HOME.
    homes = list(dict.fromkeys([Path(home) if home else Path.home(), Path.home()]))
    warnings: list[str] = []
    rw: list[Path] = []
    rwx: list[Path] = []
    ro, rox = list(policy.ro), list(policy.rox)
    # Resolved once per call, not once per root: every sandboxed command protects its policy. What tool code may never
    # write through a broader grant: $HOME itself, the secrets and shell start-up files.
    guards = [([_real(home), *secret_paths(home), *(_real(home / name) for name in STARTUP_FILES)], secret_paths(home))
              for home in homes]
    for kind, keep, demote in (("rw", rw, ro), ("rwx", rwx, rox)):
        for root in getattr(policy, kind):
            problem = _write_problem(root, guards)
            if problem is None:
                keep.append(root)
                continue
            demote.append(root)
            if problem in {_real(h) for h in homes}:
                what = "is your home directory" if _real(root) == problem else f"holds your home directory {problem}"
            else:
                what = f"{'is' if _real(root) == problem else 'holds'} {problem}"
            # A root holding ollie's session dirs (all of /tmp, say) is no home directory: say what to do there.
            advice = ADVICE if problem not in (_real(paths.runtime_tmp_dir()), _real(paths.runtime_socket_dir())) else (
                "open a project folder instead (not a temp dir holding ollie's session dirs)")
            warnings.append(
                f"{root} {what}, which tool code must not change: it is granted read-only "
                f"(sandbox policy {policy.name!r}); {advice}"
            )
    secrets = list(dict.fromkeys(s for h in homes for s in secret_paths(h)))
    protected = replace(
        policy,
        ro=_split_all(ro, secrets, homes),
        rox=_split_all(rox, secrets, homes),
        rw=_split_all(rw, secrets, homes),
        rwx=_split_all(rwx, secrets, homes),
    )
    return protected, warnings
