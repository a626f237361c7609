"""`ollie doctor`: is everything a first turn needs in place? One line per check, with the fix when not."""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ollie import paths
from ollie.backend.errors import BackendConfigError
from ollie.backend.health import check_backend
from ollie.backend.registry import chosen_spec, configured_url, env_file_note, environment, make_backend
from ollie.backend.settings import BackendSpec, others_url_note
from ollie.env import env_file
from ollie.errors import OllieError

INSTALL = ("`pipx install ollie-agent` (Debian/Ubuntu: `sudo apt install pipx` first) "
           "or `uv tool install ollie-agent`")


@dataclass
class Check:
    """One checked thing: what it is, whether it is fine, what was found, and the fix when it is not."""

    name: str
    ok: bool
    detail: str
    fix: str = ""

    def line(self) -> str:
        """The check as one line of the report."""
        mark = "ok  " if self.ok else "FAIL"
        return f"{mark} {self.name}: {self.detail}" + (f" -> {self.fix}" if self.fix else "")


async def check_backend_setup(env: Mapping[str, str], backend: str | None, model: str | None) -> list[Check]:
    """The backend: its key, that it can be built, that it answers, that it has the model."""
    checks = []
    try:
        spec = chosen_spec(backend, env)
        url = configured_url(spec, env)  # the daemon's and a turn's own: doctor checks where they will go
        if spec.key_var:
            have = bool(spec.api_key(url, env))
            named = spec.key_var if env.get(spec.key_var) or not have else spec.vendor_key_var
            fix = f"set {spec.key_hint(url, env)} (in the environment or {env_file()})"
            checks.append(Check("key", have, f"{named} is {'set' if have else 'not set'} (for {url})",
                                "" if have else fix))
            if not have:  # no backend is built without it: a second line would say the same problem again
                return checks + _url_note(spec, url, env)  # OPENAI_BASE_URL: the key is not the fix
        else:
            checks.append(Check("key", True, f"the {spec.name} backend needs none"))
        built = make_backend(backend, model, environ=env)
    except BackendConfigError as exc:  # an unknown backend, a missing key, a bad URL
        checks.append(Check("backend", False, f"cannot be set up: {exc}", "fix the variable it names"))
        return checks
    try:
        health = await check_backend(built)
    finally:
        await built.aclose()
    where = f"{built.name} at {url}"
    if not health.ok and health.model_present is not False:
        checks.append(Check("backend", False, f"{where}: {health.error}", health.hint))
        return checks
    checks.append(Check("backend", True, f"{where} answers"))
    checks += _url_note(spec, url, env)  # not in a failed check's hint: that says it
    if health.model_present is None:
        checks.append(Check("model", True, f"{built.model} (the server does not list its models)"))
    else:
        checks.append(Check("model", health.model_present,
                            f"{built.model} is {'present' if health.model_present else 'missing'}", health.hint))
    return checks


def _url_note(spec: BackendSpec, url: str, env: Mapping[str, str]) -> list[Check]:
    """A failed check for a variable of other tools' that names the URL (OLLAMA_HOST) while ollie's is unset."""
    note = others_url_note(spec, url, env)
    return [Check("backend URL", False, note, f"set {spec.url_var}, or unset the other variable")] if note else []


def check_landlock() -> Check:
    """Landlock and its ABI (0: the kernel cannot confine tools)."""
    from ollie.sandbox.rules import landlock_abi

    abi = landlock_abi()
    if abi < 1:
        return Check("landlock", False, "not available: tools run unconfined where the policy allows best_effort",
                     "use a kernel >= 5.13 with Landlock enabled (boot with lsm=...,landlock)")
    note = "" if abi >= 4 else " (network rules need ABI 4, Linux 6.7: the network section is not enforced)"
    return Check("landlock", True, f"ABI {abi}{note}")


def check_sandbox_policy(cwd: Path) -> Check:
    """The default sandbox policy parses, and lets steps read the project."""
    from ollie.sandbox.policy import load_policy

    try:
        policy = load_policy("default", cwd=cwd)
    except (OllieError, OSError, ValueError) as exc:
        return Check("sandbox policy", False, str(exc), "fix the file it names (or remove it to use the default)")
    source = paths.policy_file("default")
    # A file of the user's replaces the shipped one whole: one holding just the grant a note advised loses the project.
    if not any(cwd.is_relative_to(root) for root in policy.readable()):
        return Check("sandbox policy", False, f"{source} grants nothing of {cwd}: steps can neither read nor change it",
                     f'add "{{CWD}}" to its filesystem.rwx, as the shipped {paths.bundled("sandbox.yaml")} does')
    return Check("sandbox policy", True, str(source))


def check_mcp_servers(cwd: Path) -> Check:
    """mcp.json's servers: every entry well formed, every stdio server's program found as the server would find it."""
    from ollie.errors import ConfigError
    from ollie.mcp.config import config_file, load_user_servers
    from ollie.mcp.stdio import missing, server_env, state_dir

    problems: list[str] = []
    try:
        servers = load_user_servers(problems) if config_file().is_file() else {}
    except ConfigError as exc:
        return Check("MCP servers", False, str(exc), "fix the file at the key it names")
    for spec in servers.values():
        if spec.command and (why := missing(spec.command, server_env(spec, state_dir(spec.name), os.environ, cwd),
                                            os.environ, cwd)):
            problems.append(f"server {spec.name!r}: {why}")
    if problems:
        return Check("MCP servers", False, "; ".join(problems), f"fix {config_file()} as said")
    return Check("MCP servers", True, f"{', '.join(servers) or 'none'} in {config_file()}")


def check_sessions_dir() -> Check:
    """The sessions dir exists (or can be made) and takes files."""
    directory = paths.sessions_dir()
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=directory, prefix=".doctor-"):
            pass
    except OSError as exc:
        return Check("sessions dir", False, f"{directory}: {exc.strerror or exc}",
                     "make it writable, or set OLLIE_SESSIONS_DIR to a writable directory")
    return Check("sessions dir", True, str(directory))


def check_store(env: Mapping[str, str]) -> Check:
    """The session store: files (OLLIE_STORE unset), or a PostgreSQL server that answers with a schema this ollie reads."""
    url = (env.get("OLLIE_STORE") or "").strip()
    if not url:
        return Check("store", True, "sessions in files and SQLite on this machine (OLLIE_STORE is not set)")
    from ollie.sessions.location import is_postgres_url, redact

    where = redact(url)
    if not is_postgres_url(url):
        return Check("store", False, f"OLLIE_STORE={where} is not a postgresql:// URL",
                     "set OLLIE_STORE=postgresql://USER@HOST/DB, or unset it to keep sessions in files")
    try:
        from ollie.sessions.pg.store import PgStore
    except ImportError as exc:
        return Check("store", False, f"{where}: psycopg is missing ({exc})",
                     "pip install 'psycopg[binary]' psycopg-pool in ollie's environment")
    from ollie.sessions.schema import SCHEMA_VERSION

    try:
        store = PgStore(url, busy_timeout_s=5.0, migrate=False)
        try:
            version, role = store.version(), store.role
        finally:
            store.close()
    except (OllieError, OSError) as exc:
        # The store's errors name the store already.
        return Check("store", False, str(exc) if where in str(exc) else f"{where}: {exc}",
                     "start the server, or fix OLLIE_STORE (host, port, database, user; a password in ~/.pgpass)")
    if version > SCHEMA_VERSION:
        return Check("store", False, f"{where}: schema version {version} is newer than this ollie's ({SCHEMA_VERSION})",
                     "upgrade ollie on this machine")
    note = "" if version == SCHEMA_VERSION else f" (schema version {version}: migrated to {SCHEMA_VERSION} on start)"
    if role:  # docs/TEAM.md: a role per person
        note += f"; sessions are {role}'s, the role the server lets write only rows naming it"
    return Check("store", True, f"PostgreSQL at {where} answers{note}")


def check_lsp_on_path(path: str | None = None) -> Check:
    """`ollie-lsp` in PATH's absolute directories, the only place both editors look for it (unless configured)."""
    value = os.environ.get("PATH", "") if path is None else path
    found = shutil.which("ollie-lsp", path=os.pathsep.join(d for d in value.split(os.pathsep) if os.path.isabs(d)))
    if found:
        return Check("ollie-lsp", True, found)
    # Where pipx and `uv tool` put it: installed, as README says, in a directory this shell's PATH lacks.
    installed = Path.home() / ".local" / "bin" / "ollie-lsp"
    if os.access(installed, os.X_OK):
        return Check("ollie-lsp", False, f"{installed} is installed but its directory is not on PATH",
                     "run `pipx ensurepath` (or add it to PATH in your shell's profile), then start your editor from "
                     "a new shell")
    checkout = Path(__file__).resolve().parents[3]  # core/ollie/cli/doctor.py of a clone (an editable install)
    install = (f"`pipx install {checkout}` (this checkout; Debian/Ubuntu: `sudo apt install pipx` first)"
               if (checkout / "pyproject.toml").is_file() and (checkout / "ollie_lsp").is_dir() else INSTALL)
    return Check("ollie-lsp", False,
                 "not on PATH (the editors look for it there only, never in a project's .venv/bin)",
                 f"install it with {install}, or set VS Code's `ollie.serverCommand` / Neovim's `cmd`")


async def run_checks(*, backend: str | None = None, model: str | None = None, cwd: Path | None = None) -> list[Check]:
    """Every check, in the order a first run needs them."""
    env = environment()
    checks = await check_backend_setup(env, backend, model)
    # A line not read, a misspelt name, one the environment overrides: what the other checks found may come from it
    # (said once: an unreachable backend's fix says it too).
    if (note := env_file_note()) and not any(note in check.fix for check in checks):
        checks.insert(0, Check("env file", False, note.strip(" ()"), "fix those lines, or unset the variables the "
                                                                     "environment sets over them"))
    # Where the backend's settings go (KEY=VALUE lines): a user of an editor has no shell to `export` them in.
    checks.insert(0, Check("settings file", True, str(env_file())))
    checks += [check_landlock(), check_sandbox_policy((cwd or Path.cwd()).resolve()),
               check_mcp_servers((cwd or Path.cwd()).resolve()), check_sessions_dir(),
               await asyncio.to_thread(check_store, env), check_lsp_on_path(env.get("PATH", os.environ.get("PATH")))]
    return checks


def doctor(*, backend: str | None = None, model: str | None = None, cwd: Path | None = None) -> int:
    """Print the checks; 0 when all pass, 1 when something needs fixing."""
    checks = asyncio.run(run_checks(backend=backend, model=model, cwd=cwd))
    for check in checks:
        print(check.line())
    failed = [c for c in checks if not c.ok]
    print(f"{len(failed)} problem{'s' if len(failed) != 1 else ''} found" if failed else "all good")
    return 1 if failed else 0
