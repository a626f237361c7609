"""The backends, one spec each in one table: name, wire format, default model and URL, the variables that set them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal
from urllib.parse import urlsplit

import attrs

from ollie.backend.errors import BackendConfigError
from ollie.backend.urls import shown_url, written_url

Wire = Literal["openai", "anthropic", "ollama"]  # the class that speaks each: registry.backend_class


@attrs.frozen(eq=False, repr=False, slots=False)
class BackendSpec:
    """One backend `OLLIE_BACKEND` can name: how it is reached and configured."""

    name: str
    wire: Wire
    default_model: str
    url_var: str
    default_url: str
    key_var: str = ""  # "": the backend needs no key
    # An OpenAI-compatible endpoint is named after whoever serves it (groq, together, local...): see provider_name.
    named_by_host: bool = False
    # The vendor's own variable (OPENAI_API_KEY...), which a user of other tools has set already: read when key_var is
    # not set, and only for the vendor's own URL (a key for OpenAI never goes to a server OLLIE_OPENAI_URL names).
    vendor_key_var: str = ""
    # What other tools read for the URL (OLLAMA_HOST): never adopted (a key would go where ollie was not told to send
    # it), only named to a user who set it and not url_var.
    others_url_vars: tuple[str, ...] = ()

    def api_key(self, url: str, env: Mapping[str, str]) -> str:
        """The key sent with requests to `url` ("" when none is set for it)."""
        if env.get(self.key_var):
            return env[self.key_var]
        if self.vendor_key_var and self._vendors_own(url):
            return env.get(self.vendor_key_var, "")
        return ""

    def key_hint(self, url: str, env: Mapping[str, str]) -> str:
        """Which variable to set for `url`'s key, said for a user whose vendor variable does not apply there."""
        if not self.vendor_key_var:
            return self.key_var
        if self._vendors_own(url):
            return f"{self.key_var} (or {self.vendor_key_var})"
        if env.get(self.vendor_key_var):
            return (f"{self.key_var} ({self.vendor_key_var} is set, but ollie sends it only to {self.default_url}, "
                    f"not to {written_url(url)})")
        if provider_name(self, url) == "local":  # llama.cpp, LM Studio, vLLM: most check no key, the user has none
            return f"{self.key_var} (a server on this machine or network that checks none takes any: {self.key_var}=none)"
        return self.key_var

    def _vendors_own(self, url: str) -> bool:
        return url.strip().rstrip("/") == self.default_url


SPECS: dict[str, BackendSpec] = {spec.name: spec for spec in (
    BackendSpec("ollama", "ollama", "qwen3", "OLLIE_OLLAMA_URL", "http://localhost:11434",
                others_url_vars=("OLLAMA_HOST",)),
    BackendSpec("openai", "openai", "gpt-4.1", "OLLIE_OPENAI_URL", "https://api.openai.com/v1", "OLLIE_OPENAI_KEY",
                named_by_host=True, vendor_key_var="OPENAI_API_KEY", others_url_vars=("OPENAI_BASE_URL", "OPENAI_API_BASE")),
    BackendSpec("openrouter", "openai", "anthropic/claude-sonnet-4.5", "OLLIE_OPENAI_URL",
                "https://openrouter.ai/api/v1", "OLLIE_OPENAI_KEY", vendor_key_var="OPENROUTER_API_KEY"),
    BackendSpec("anthropic", "anthropic", "claude-sonnet-4-5", "OLLIE_ANTHROPIC_URL", "https://api.anthropic.com",
                "OLLIE_ANTHROPIC_KEY", vendor_key_var="ANTHROPIC_API_KEY", others_url_vars=("ANTHROPIC_BASE_URL",)),
)}


def spec_for(name: str, *, variable: str = "OLLIE_BACKEND") -> BackendSpec:
    """The spec of backend `name` (from `variable`; "" when the caller named it); BackendConfigError listing the valid
    names when there is none."""
    spec = SPECS.get(name.strip().lower())
    if spec is None:
        raise BackendConfigError(f"unknown backend {name!r}: {f'set {variable} to' if variable else 'name'} one of "
                                 f"{', '.join(SPECS)}")
    return spec


def checked_url(url: str, variable: str) -> str:
    """`url` when it is an http(s) URL with a host; else BackendConfigError naming `variable`."""
    parts = urlsplit(url.strip())
    try:
        port_ok = parts.port is None or parts.port > 0
    except ValueError:  # not a number, or over 65535
        port_ok = False
    if parts.scheme in ("http", "https") and parts.hostname and port_ok:
        return url.strip()
    said = written_url(url)  # never its password: a message is shown, logged, screen-shared
    if not port_ok:
        raise BackendConfigError(f"{variable}={said!r} has no valid port: a number from 1 to 65535")
    example = f"http://{said}" if said and "://" not in said else "http://localhost:11434"
    raise BackendConfigError(
        f"{variable}={said!r} is not an http(s) URL: write it with its scheme and host, e.g. {example}"
    )


# A registrable domain's label that is not the provider's name.
_PROVIDER_ALIASES = {"googleapis": "google", "x": "xai"}
_LOCAL_SUFFIXES = (".localhost", ".local", ".lan", ".internal", ".home.arpa")


def provider_name(spec: BackendSpec, url: str) -> str:
    """The name state and usage show: the spec's, or for an OpenAI-compatible URL whoever serves it.

    `https://api.groq.com/openai/v1` is groq, `https://api.together.xyz/v1` together,
    a server on this machine or the local network (`http://localhost:8080/v1`) local.
    """
    if not spec.named_by_host:
        return spec.name
    host = (urlsplit(url).hostname or "").lower().rstrip(".")
    if ":" in host or host.replace(".", "").isdigit():
        import ipaddress  # only for an address: a name never needs it

        try:
            address = ipaddress.ip_address(host)
        except ValueError:
            return spec.name
        return spec.name if address.is_global else "local"  # loopback, private, link-local: this machine or its network
    if "." not in host or host.endswith(_LOCAL_SUFFIXES):
        return "local"  # localhost, a bare machine name, a name on the local network
    labels = host.split(".")
    # api.example.co.uk: the label before a country code's second level.
    second_level = len(labels) >= 3 and len(labels[-1]) == 2 and labels[-2] in ("co", "com", "org", "net", "ac")
    name = labels[-3] if second_level else labels[-2]
    return _PROVIDER_ALIASES.get(name, name)


def said_name(spec: BackendSpec, url: str, name: str) -> str:
    """The name errors give: `name`, but a server it calls local (or the vendor's, at an address not the vendor's) by
    the host and port the user wrote in the URL."""
    if spec.named_by_host and name in ("local", spec.name) and url.rstrip("/") != spec.default_url.rstrip("/"):
        return urlsplit(url).netloc.rpartition("@")[2]  # never its user:password part
    return name


def env_file_note() -> str:
    """What the env file has that ollie does not use (a line not KEY=VALUE, a misspelt backend setting, one the
    environment overrides, a setting read from the environment only), for a message about the backend's setup; ""
    when nothing."""
    from ollie.env import unread_lines_note

    # With the session store's, which ollie.sessions.location.setting reads from the file too.
    names = {"OLLIE_BACKEND", "OLLIE_MODEL", "OLLIE_COMPLETION_MODEL", "OLLIE_STORE", "OLLIE_USER", "OLLIE_TEAMS",
             "OLLIE_LEASE_TTL"}
    return unread_lines_note(names | {name for spec in SPECS.values()
                                      for name in (spec.url_var, spec.key_var, spec.vendor_key_var) if name})


def others_url_note(spec: BackendSpec, url: str, env: Mapping[str, str] | None = None) -> str:
    """`OLLAMA_HOST is set, but ollie does not read it: ...` when `url` is the default because `spec.url_var` is unset
    and a variable other tools read for it is set (`env`: the environment over the env file); else ""."""
    if not spec._vendors_own(url):
        return ""  # url_var named it
    if env is None:
        from ollie.env import environment

        env = environment()
    named = "" if env.get(spec.url_var) else next((name for name in spec.others_url_vars
                                                   if env.get(name) and not _same_server(env[name], url)), "")
    return (f"{named} is set, but ollie does not read it: to use that server set {spec.url_var} to its URL (unset, "
            f"ollie asks {spec.default_url})") if named else ""


_THIS_MACHINE = {"localhost", "127.0.0.1", "::1", "0.0.0.0"}  # (Ollama's clients take its bind-all address as local)


def _same_server(value: str, url: str) -> bool:
    """Whether `value`, another tool's URL variable (OLLAMA_HOST's `host:port`, no scheme or port, too), names the
    server `url` does: OPENAI_BASE_URL=https://api.openai.com/v1 is no other server to warn of."""
    ours = urlsplit(url)
    try:
        theirs = urlsplit(value.strip() if "://" in value else f"{ours.scheme}://{value.strip()}")
        same_port = (theirs.port or ours.port) == ours.port
    except ValueError:  # a port that is not one, a `[` left open
        return False
    hosts = {(theirs.hostname or "").lower(), (ours.hostname or "").lower()}
    return (theirs.scheme == ours.scheme and same_port and theirs.path.rstrip("/") == ours.path.rstrip("/")
            and (len(hosts) == 1 or hosts <= _THIS_MACHINE))


def _also(note: str) -> str:
    return f"; {note}" if note else ""


def unreachable_hint(spec: BackendSpec, url: str, model: str) -> str:
    """What to do when a backend of `spec` at `url` cannot be reached (connection refused, unknown host, bad URL);
    it names the env file's line when the URL came from there (the environment sets none), and what the env file has
    that is not used (`env_file_note`: an editor's `env` setting OLLIE_BACKEND=ollama over the file's anthropic)."""
    from ollie.env import where_set

    # The URL as checked_url and the backend keep it: stripped, without its trailing slash.
    where = where_set(spec.url_var, url, key=lambda value: value.strip().rstrip("/"))
    if spec.wire == "ollama":
        return (f"start Ollama (`ollama serve`) and pull the model (`ollama pull {model}`); "
                f"or set {spec.url_var} to where Ollama runs{f' ({where})' if where else ''}; or use a hosted API: "
                "OLLIE_BACKEND=openai and OLLIE_OPENAI_KEY (or OLLIE_BACKEND=anthropic and OLLIE_ANTHROPIC_KEY)"
                + _also(others_url_note(spec, url)) + env_file_note())
    now = f"now {shown_url(url)}{f'; {where}' if where else ''}"
    # A server on this machine or its network that does not answer is most often one not started yet.
    first = "start the server there" if provider_name(spec, url) == "local" else "check the network"
    return f"{first}, or set {spec.url_var} to the API's URL ({now}){_also(others_url_note(spec, url))}{env_file_note()}"


def refused_key_hint(spec: BackendSpec, url: str) -> str:
    """What to do when `url` refused the key (HTTP 401 or 403) that `spec`'s backend sent."""
    # Not key_hint's word for a local server (that it takes any key): this one checks them.
    named = spec.key_hint(url, {}) if spec._vendors_own(url) else spec.key_var
    return f"the API key was refused: check {named or 'the key'}{_also(others_url_note(spec, url))}"


def missing_model_hint(spec: BackendSpec, model: str) -> str:
    """What to do when a backend of `spec` does not have `model`."""
    if spec.wire == "ollama":
        return f"pull it (`ollama pull {model}`), or set OLLIE_MODEL (or --model) to a model `ollama list` shows"
    return "set OLLIE_MODEL (or --model, or `/model NAME`) to a model the backend offers (`/models` lists them)"
