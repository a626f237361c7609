"""`ollie doctor` as a real process: one line per problem with its fix, non-zero exit when something is wrong."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from ollie.cli.doctor import check_lsp_on_path

from .test_cli import run_ollie
from .test_first_run import closed_url

VENV_BIN = str(Path(sys.executable).parent)


def lines(out: str, prefix: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith(prefix)]


def test_doctor_passes_on_a_working_setup(scripted_llm, tmp_path):
    srv = scripted_llm("ollama", model="qwen3:latest")
    env = {**srv.env(), "OLLIE_MODEL": "qwen3", "PATH": f"{VENV_BIN}{os.pathsep}{os.environ['PATH']}"}
    proc = run_ollie(["doctor", "--cwd", str(tmp_path)], env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert lines(proc.stdout, "FAIL") == []
    assert "ok   model: qwen3 is present" in proc.stdout
    assert "ok   landlock: ABI" in proc.stdout
    # Where the settings go, as the daemon reads them (the editors' :checkhealth shows it).
    assert f"ok   settings file: {Path(os.environ['XDG_CONFIG_HOME']) / 'ollie' / 'env'}\n" in proc.stdout, proc.stdout
    assert proc.stdout.rstrip().endswith("all good")


def test_doctor_names_each_problem_and_its_fix(tmp_path):
    config = tmp_path / "config"
    config.mkdir()
    (config / "sandbox.yaml").write_text("filesystem: [not, a, mapping\n")
    # A relative PATH entry names the project's dir, where the editors start the daemon: they never look there.
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "ollie-lsp").write_text("#!/bin/sh\n")
    (tmp_path / "bin" / "ollie-lsp").chmod(0o755)
    # HOME: none of ours in ~/.local/bin, where doctor says it is installed off PATH.
    env = {"OLLIE_OLLAMA_URL": closed_url(), "OLLIE_CONFIG_DIR": str(config), "PATH": "bin:/usr/bin:/bin",
           "HOME": str(tmp_path)}
    proc = run_ollie(["doctor", "--cwd", str(tmp_path)], env=env, cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    failed = lines(proc.stdout, "FAIL")
    assert len(failed) == 3, proc.stdout
    backend, policy, lsp = failed
    assert backend.startswith("FAIL backend:") and "ollama serve" in backend and "ollama pull qwen3" in backend
    assert policy.startswith("FAIL sandbox policy:") and str(config / "sandbox.yaml") in policy
    assert lsp.startswith("FAIL ollie-lsp:") and "pipx install" in lsp, lsp  # this checkout (see below)
    # Neither editor runs a project's .venv/bin/ollie-lsp (a repository could carry one): doctor must not say so.
    assert "never in a project's .venv/bin" in lsp and "then in the workspace" not in lsp
    assert "3 problems found" in proc.stdout


def test_doctor_fails_a_sandbox_policy_of_the_users_that_leaves_out_the_project(tmp_path):
    # A new user put the one grant a sandbox note advised in a sandbox.yaml of her own, which replaces the shipped one
    # whole: no step could list the project, and doctor said "ok".
    from ollie import paths

    config, work = tmp_path / "config", tmp_path / "work"
    config.mkdir()
    work.mkdir()
    (config / "sandbox.yaml").write_text("filesystem:\n  rw: [~/notes]\n")
    proc = run_ollie(["doctor", "--cwd", str(work)], env={"OLLIE_CONFIG_DIR": str(config)})
    assert lines(proc.stdout, "FAIL sandbox policy") == [
        f"FAIL sandbox policy: {config / 'sandbox.yaml'} grants nothing of {work}: steps can neither read nor change "
        f'it -> add "{{CWD}}" to its filesystem.rwx, as the shipped {paths.bundled("sandbox.yaml")} does'], proc.stdout
    (config / "sandbox.yaml").write_text("filesystem:\n  rw: [~/notes]\n  rwx: ['{CWD}']\n")
    proc = run_ollie(["doctor", "--cwd", str(work)], env={"OLLIE_CONFIG_DIR": str(config)})
    assert f"ok   sandbox policy: {config / 'sandbox.yaml'}" in proc.stdout, proc.stdout


def test_doctor_names_an_ollie_lsp_installed_off_path_with_the_fix(tmp_path, monkeypatch):
    # `pipx install` put it in ~/.local/bin, its note that this is not on PATH scrolled by: doctor said to install it.
    installed = tmp_path / ".local" / "bin" / "ollie-lsp"
    installed.parent.mkdir(parents=True)
    installed.write_text("#!/bin/sh\n")
    installed.chmod(0o755)
    monkeypatch.setenv("HOME", str(tmp_path))
    check = check_lsp_on_path("/usr/bin:/bin")
    assert not check.ok and check.detail == f"{installed} is installed but its directory is not on PATH", check
    assert check.fix.startswith("run `pipx ensurepath`"), check


def test_doctor_run_from_a_checkout_says_to_install_that_checkout(tmp_path, monkeypatch):
    # A new user who cloned ollie and ran `./scripts/ollie doctor` was told `pipx install ollie-agent`: the release,
    # not the code they run.
    monkeypatch.setenv("HOME", str(tmp_path))
    check = check_lsp_on_path("/usr/bin:/bin")
    checkout = Path(__file__).resolve().parents[2]
    assert not check.ok and check.fix.startswith(f"install it with `pipx install {checkout}` (this checkout"), check


def test_doctor_reports_a_missing_model_and_key(scripted_llm, tmp_path):
    srv = scripted_llm("ollama", model="llama3.2")
    proc = run_ollie(["doctor", "--cwd", str(tmp_path)], env={**srv.env(), "OLLIE_MODEL": "qwen3"})
    assert proc.returncode == 1
    assert any("qwen3 is missing" in line and "ollama pull qwen3" in line for line in lines(proc.stdout, "FAIL"))
    proc = run_ollie(["doctor", "--backend", "anthropic", "--cwd", str(tmp_path)], env={})
    assert proc.returncode == 1
    assert any("OLLIE_ANTHROPIC_KEY is not set" in line for line in lines(proc.stdout, "FAIL key"))


def test_doctor_and_a_turn_take_the_vendors_key_only_for_the_vendors_api(scripted_llm, tmp_path):
    srv = scripted_llm("openai")
    env = {k: v for k, v in srv.env().items() if k != "OLLIE_OPENAI_KEY"}
    # OPENAI_API_KEY, as other tools read it, with OLLIE_OPENAI_URL naming another server: never sent there.
    env["OPENAI_API_KEY"] = "sk-vendor-only"
    proc = run_ollie(["doctor", "--cwd", str(tmp_path)], env=env)
    assert proc.returncode == 1
    assert any("set OLLIE_OPENAI_KEY (OPENAI_API_KEY is set, but ollie sends it only to https://api.openai.com/v1"
               in line for line in lines(proc.stdout, "FAIL key")), proc.stdout
    proc = run_ollie(["-p", "hi", "--cwd", str(tmp_path)], env=env)
    assert proc.returncode == 2 and "OPENAI_API_KEY is set, but ollie sends it only to" in proc.stderr, proc.stderr
    assert not srv.requests, "a request went to a server the vendor's key is not for"
    # For the vendor's own API the doctor counts it as the key (its check goes to a closed port through the proxy
    # the environment names, never out to the vendor).
    proc = run_ollie(["doctor", "--backend", "anthropic", "--cwd", str(tmp_path)],
                     env={"ANTHROPIC_API_KEY": "sk-ant-x", "HTTPS_PROXY": closed_url()})
    assert any("ANTHROPIC_API_KEY is set" in line for line in lines(proc.stdout, "ok   key")), proc.stdout


def test_doctor_checks_the_server_the_url_variable_names_as_a_turn_does(scripted_llm, tmp_path):
    """doctor takes the backend's URL from where a turn takes it (backend.registry): it names that server on
    its key line, even when the key is missing and nothing else can be checked, and it checks that server."""
    srv = scripted_llm("openai")
    url = f"{srv.url}/"  # another spelling than the default's: doctor must say the one the variable set
    env = {**srv.env(), "OLLIE_OPENAI_URL": f" {url} "}  # spaced, as a hand-written value may be
    proc = run_ollie(["doctor", "--cwd", str(tmp_path)], env=env)
    assert f"ok   key: OLLIE_OPENAI_KEY is set (for {url})" in proc.stdout, proc.stdout
    assert f"ok   backend: local at {url} answers" in proc.stdout, proc.stdout
    assert srv.requests, "doctor did not ask the server the variable names"
    proc = run_ollie(["doctor", "--cwd", str(tmp_path)], env={k: v for k, v in env.items() if k != "OLLIE_OPENAI_KEY"})
    assert proc.returncode == 1
    (key,) = lines(proc.stdout, "FAIL key")
    assert key.startswith(f"FAIL key: OLLIE_OPENAI_KEY is not set (for {url}) -> set OLLIE_OPENAI_KEY "), proc.stdout
    # One problem, said once: a second line ("backend: cannot be set up: ... needs an API key") repeated it.
    assert lines(proc.stdout, "FAIL backend") == [], proc.stdout
    # A server on this machine most often checks no key, and its user has none to set: any value does, said so.
    assert "takes any: OLLIE_OPENAI_KEY=none)" in key, key


def test_doctor_names_each_broken_mcp_server_and_the_good_ones_pass(scripted_llm, tmp_path):
    """A bad entry (by file and key) and a program the server would not find are each named; the good one passes."""
    srv = scripted_llm("ollama", model="qwen3:latest")
    config = tmp_path / "config"
    config.mkdir()
    server = Path(__file__).parents[1] / "mcp" / "server.py"
    (config / "mcp.json").write_text(json.dumps({"mcpServers": {
        "good": {"command": sys.executable, "args": [str(server)]}, "typo": {"command": "x", "args": "oops"},
        "gone": {"command": "no-such-mcp-server"}}}))
    env = {**srv.env(), "OLLIE_MODEL": "qwen3", "OLLIE_CONFIG_DIR": str(config)}
    proc = run_ollie(["doctor", "--cwd", str(tmp_path)], env=env)
    [mcp] = lines(proc.stdout, "FAIL MCP servers:")
    assert f"{config / 'mcp.json'}: mcpServers.typo.args: expected an array, got a string" in mcp, mcp
    assert "server 'gone': 'no-such-mcp-server' is not on PATH" in mcp and "'good'" not in mcp, mcp
    (config / "mcp.json").write_text(json.dumps({"mcpServers": {"good": {"command": sys.executable}}}))
    proc = run_ollie(["doctor", "--cwd", str(tmp_path)], env=env)
    assert f"ok   MCP servers: good in {config / 'mcp.json'}" in proc.stdout, proc.stdout


HOSTILE_MODELS = ["\x1b]52;c;cm0gLXJmIH4=\x07m2", "m1\nok   sandbox policy: all good", "m3" * 50_000]


def test_doctor_names_a_hostile_servers_models_escaped_and_cut(scripted_llm, tmp_path):
    # The missing model's hint lists the models the server has: their names are the server's, printed as they came
    # (an OSC escape retitles or writes the clipboard of the user's terminal; a line break forged doctor's own lines).
    srv = scripted_llm("openai", model="m0", text_models=HOSTILE_MODELS)
    proc = run_ollie(["doctor", "--cwd", str(tmp_path)], env={**srv.env(), "OLLIE_MODEL": "gpt-4.1"})
    assert proc.returncode == 1, proc.stdout + proc.stderr
    (hint,) = [line for line in lines(proc.stdout, "FAIL") if "the server has:" in line]
    assert len(hint) < 2000, len(hint)  # a 100,000-character name is cut
    assert "\x1b" not in proc.stdout and "\\x1b]52" in hint, hint
    assert "ok   sandbox policy: all good" not in proc.stdout.splitlines() and "m1\\nok" in hint, hint


def test_models_lists_a_hostile_servers_models_escaped_and_cut(scripted_llm, tmp_path):
    # `/models` (the terminal, `ollie -p`, an editor's chat) listed them as they came: a line break stood as a line of
    # ollie's own, a 100,000-character id was printed whole (the escape itself was left out, in the terminal).
    srv = scripted_llm("openai", model="m0", text_models=HOSTILE_MODELS)
    proc = run_ollie(["-p", "/models", "--cwd", str(tmp_path)], env=srv.env())
    assert proc.returncode == 0, proc.stderr
    assert "ok   sandbox policy: all good" not in proc.stdout.splitlines(), proc.stdout
    assert "  m1\\nok   sandbox policy: all good" in proc.stdout.splitlines(), proc.stdout
    assert len(proc.stdout) < 2000 and f"  {'m3' * 50}..." in proc.stdout.splitlines(), len(proc.stdout)
