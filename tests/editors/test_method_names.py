"""ollie_lsp/names.py is the one list of ollie/* methods: the editors name only these; PROTOCOL.md's table matches it, each row
with the params its handler's shape declares, and Start-up names every initializationOptions key."""

from __future__ import annotations

import json
import re
from pathlib import Path

import attrs

from ollie.sessions.types import Channel, Kind, TurnResult
from ollie.shapes import json_key
from ollie_acp.session import STOP_REASONS
from ollie_lsp import params
from ollie_lsp.names import METHOD_NAMES, command_name
from ollie_lsp.options import InitOptions

# Requests the daemon sends the client; a client is sent only those it announced in initializationOptions
# (`permissionRequest`, `promptRequest`, `editorTools`, `saveDocuments`). PROTOCOL.md's "Requests, server to
# client" documents each.
SERVER_REQUEST_NAMES = (
    "ollie/permission",
    "ollie/prompt",
    "ollie/editor/diagnostics",
    "ollie/editor/definition",
    "ollie/editor/references",
    "ollie/editor/symbols",
    "ollie/editor/openFiles",
    "ollie/saveDocuments",
)

ROOT = Path(__file__).resolve().parents[2]


def _section(title: str) -> str:
    """PROTOCOL.md's `## <title>` section."""
    return (ROOT / "docs" / "PROTOCOL.md").read_text(encoding="utf-8").split(f"## {title}", 1)[1].split("\n## ", 1)[0]


def _bullet(section: str, start: str) -> str:
    """The `- <start>...` bullet of PROTOCOL.md's `## <section>`."""
    return _section(section).split(f"\n- {start}", 1)[1].split("\n- ", 1)[0]


def _documented_methods() -> list[str]:
    return re.findall(r"^\| `(ollie/[^`]+)` \|", _section("Requests, client to server"), re.M)


def test_every_method_the_vscode_extension_names_is_served_and_no_command_id_collides():
    # The extension keeps no list either: each method it sends must be the daemon's, and the daemon's
    # `ollie.<method>` commands (workspace/executeCommand) must not shadow a command the extension contributes.
    source = "".join(p.read_text(encoding="utf-8") for p in (ROOT / "editors" / "vscode" / "src").rglob("*.ts"))
    named = set(re.findall(r'"(ollie/[^"]+)"', source)) - {"ollie/event", "ollie/stateChanged", *SERVER_REQUEST_NAMES}
    assert {"ollie/submit", "ollie/changes", "ollie/session/new"} <= named
    assert named <= set(METHOD_NAMES)
    manifest = json.loads((ROOT / "editors" / "vscode" / "package.json").read_text(encoding="utf-8"))
    contributed = {command["command"] for command in manifest["contributes"]["commands"]}
    assert not contributed & {command_name(method) for method in METHOD_NAMES}


def test_protocol_md_documents_every_method_and_no_other():
    assert _documented_methods() == list(METHOD_NAMES)


def test_protocol_md_gives_each_method_the_params_its_shape_declares():
    # Each row's `{a, b?}` must be the fields of the shape its handler parses, `?` on those with a default: a
    # param the doc leaves out (ollie/inject's `images`, refused by name) or one the code dropped fails here.
    rows = re.findall(r"^\| `(ollie/[^`]+)` \| `\{([^`]*)\}` \|", _section("Requests, client to server"), re.M)
    documented = {m: set(re.findall(r"[\w?]+", p)) for m, p in rows}
    handlers = "".join((ROOT / "ollie_lsp" / f"{name}.py").read_text(encoding="utf-8")
                       for name in ("methods", "reviewmethods", "sessionmethods"))
    shapes = {m: getattr(params, name) for m, name in re.findall(r'^@method\("([^"]+)", (\w+)\)', handlers, re.M)}
    declared = {m: {json_key(shape, f.name) + ("" if f.default is attrs.NOTHING else "?") for f in attrs.fields(shape)}
                for m, shape in shapes.items()}
    assert set(shapes) == set(METHOD_NAMES)
    assert documented == declared


def test_protocol_md_documents_every_initialization_option():
    start_up = _section("Start-up")
    assert [f.name for f in attrs.fields(InitOptions) if f"`{json_key(InitOptions, f.name)}`" not in start_up] == []


def test_every_method_the_neovim_plugin_names_is_served():
    # The Lua client keeps no list: it names each method where it sends it, and each must be the daemon's.
    lua = "".join(p.read_text(encoding="utf-8") for p in (ROOT / "editors" / "nvim" / "lua").rglob("*.lua"))
    # Server -> client: the notifications and the requests the plugin answers.
    named = set(re.findall(r'"(ollie/[^"]+)"', lua)) - {"ollie/event", "ollie/stateChanged", *SERVER_REQUEST_NAMES}
    assert {"ollie/submit", "ollie/listModels", "ollie/listAgents"} <= named
    assert named <= set(METHOD_NAMES)


def test_protocol_md_documents_every_request_the_daemon_sends():
    section = _section("Requests, server to client")
    assert all(f"`{name}`" in section for name in SERVER_REQUEST_NAMES)


def test_protocol_md_and_readme_name_every_value_the_wire_carries():
    # A value the code adds (a session made by `ollie acp` is listed with channel `acp`) is named where clients read
    # what each field holds; ACP's stop reasons, which `session/prompt` answers, in the README's ACP section.
    named = {
        "`info`": [*Channel, *(r for r in TurnResult if r)],
        "`session/new.kind`": list(Kind),
        "`stop` is one of": list(STOP_REASONS),
    }
    missing = {start: [str(v) for v in values if f"`{v}`" not in _bullet("Requests, client to server", start)]
               for start, values in named.items()}
    acp = (ROOT / "README.md").read_text(encoding="utf-8").split("### ACP editors", 1)[1].split("\n### ", 1)[0]
    missing["README ACP"] = [v for v in set(STOP_REASONS.values()) if f"`{v}`" not in acp]
    assert all(not m for m in missing.values()), missing
