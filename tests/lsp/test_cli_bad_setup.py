"""A new user's bad setup at `ollie -p` and the interactive prompt: each is said at once, with what to do."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from ollie.testing import Reply

from .conftest import child_env
from .test_cli import OLLIE, free_port, run_ollie

# What each vendor answers (HTTP 404) for a model it does not have.
NO_SUCH_MODEL = {
    "openai": {"error": {"message": "The model `nosuch-model` does not exist or you do not have access to it.",
                         "type": "invalid_request_error", "param": None, "code": "model_not_found"}},
    "anthropic": {"type": "error", "error": {"type": "not_found_error", "message": "model: nosuch-model"}},
}


@pytest.mark.parametrize("fmt", sorted(NO_SUCH_MODEL))
def test_a_model_the_backend_lacks_says_how_to_name_another(scripted_llm, tmp_path, fmt):
    llm = scripted_llm(fmt, check=False)
    llm.script(Reply.error(404, NO_SUCH_MODEL[fmt]), Reply.error(404, NO_SUCH_MODEL[fmt]))
    proc = run_ollie(["-p", "hello", "--model", "nosuch-model", "--cwd", str(tmp_path)], env=llm.env())
    assert proc.returncode == 1, proc.stderr
    assert "nosuch-model" in proc.stderr and "set OLLIE_MODEL (or --model" in proc.stderr, proc.stderr
    proc = run_ollie(["--model", "nosuch-model", "--cwd", str(tmp_path)], env=llm.env(), input="hello\n")
    assert "set OLLIE_MODEL (or --model" in proc.stderr, proc.stderr
    assert len(llm.chat_requests) == 2  # one each: a missing model is not retried


# What each vendor answers (HTTP 401) for a key it does not take.
WRONG_KEY = {
    "openai": ({"error": {"message": "Incorrect API key provided: sk-bad.", "type": "invalid_request_error",
                          "param": None, "code": "invalid_api_key"}}, "OLLIE_OPENAI_KEY"),
    "anthropic": ({"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}},
                  "OLLIE_ANTHROPIC_KEY"),
}


@pytest.mark.parametrize("fmt", sorted(WRONG_KEY))
def test_a_wrong_key_names_the_variable_to_check(scripted_llm, tmp_path, fmt):
    # The vendor's words alone ("invalid x-api-key") left the user to guess which of their keys was sent.
    body, variable = WRONG_KEY[fmt]
    llm = scripted_llm(fmt, check=False)
    llm.script(Reply.error(401, body), Reply.error(401, body))
    proc = run_ollie(["-p", "hello", "--cwd", str(tmp_path)], env=llm.env())
    assert proc.returncode == 1 and f"HTTP 401: {body['error']['message']}" in proc.stderr, proc.stderr
    assert f"the API key was refused: check {variable}\n" in proc.stderr, proc.stderr
    proc = run_ollie(["--cwd", str(tmp_path)], env=llm.env(), input="hello\n")
    assert f"the API key was refused: check {variable}\n" in proc.stderr, proc.stderr
    assert len(llm.chat_requests) == 2  # one each: a refused key is not retried


def test_a_hostile_servers_error_body_is_one_line_of_the_error(scripted_llm, tmp_path):
    # Red team 52: the server's message printed its line break as it came: "ollie: all edits approved" on a line of
    # its own under the error (and in the editors' chats, with its U+202E reversing the rest).
    llm = scripted_llm("openai", check=False)
    llm.script(Reply.error(400, {"error": {"message": "bad\nollie: all edits approved \u202eexe.txt" + "x" * 5000}}))
    proc = run_ollie(["-p", "hello", "--cwd", str(tmp_path)], env=llm.env())
    assert proc.returncode == 1 and "HTTP 400: bad\\nollie: all edits approved \\u202eexe.txt" in proc.stderr, proc.stderr
    assert not any(line.startswith("ollie: all") for line in proc.stderr.splitlines()), proc.stderr
    assert "x" * 1100 not in proc.stderr, "cut"


@pytest.mark.parametrize(("line", "said"), [
    ("OLLIE_ANTHROPIC_KEY sk-ant-123", "line 2 of {file} is not KEY=VALUE: not read"),  # no `=`: never read
    ("OLLIE_ANTROPIC_KEY=sk-ant-123",  # a misspelt name, which nothing reads
     "line 2 of {file}: OLLIE_ANTROPIC_KEY is not a setting, did you mean OLLIE_ANTHROPIC_KEY?"),
    # The file holds the backend's and the store's settings: steps went on asking, unsaid.
    ("OLLIE_APPROVAL=auto-edit", "line 2 of {file}: OLLIE_APPROVAL is read from the environment only, not from this file"),
])
def test_a_key_set_on_an_env_file_line_that_is_not_read_is_named(_private_dirs, tmp_path, line, said):
    env_file = _private_dirs / "config" / "ollie" / "env"
    env_file.parent.mkdir(parents=True)
    env_file.write_text(f"OLLIE_BACKEND=anthropic\n{line}\nOLLIE_USER=me\n")  # a setting not the backend's: fine
    said = said.format(file=env_file)
    for extra in (["-p", "hello"], []):
        proc = run_ollie([*extra, "--cwd", str(tmp_path)])
        assert proc.returncode == 2, proc.stderr
        assert "set OLLIE_ANTHROPIC_KEY" in proc.stderr, proc.stderr
        assert f"{said})" in proc.stderr and "OLLIE_USER" not in proc.stderr, proc.stderr
    proc = run_ollie(["doctor", "--cwd", str(tmp_path)])
    assert proc.returncode == 1 and f"FAIL env file: {said} -> fix those lines" in proc.stdout, proc.stdout


def test_a_misspelt_backend_name_in_the_env_file_is_named_when_the_default_backend_is_not_there(
        _private_dirs, tmp_path):
    env_file = _private_dirs / "config" / "ollie" / "env"
    env_file.parent.mkdir(parents=True)
    env_file.write_text("OLLIE_BAKEND=openai\n")  # so the default, Ollama, is tried: nothing listens there
    env = {"OLLIE_OLLAMA_URL": f"http://127.0.0.1:{free_port()}"}
    proc = run_ollie(["-p", "hello", "--cwd", str(tmp_path)], env=env)
    assert proc.returncode == 2 and "cannot reach Ollama" in proc.stderr, proc.stderr
    assert f"(line 1 of {env_file}: OLLIE_BAKEND is not a setting, did you mean OLLIE_BACKEND?)" in proc.stderr
    # doctor says it once: in the unreachable backend's fix, not again on a line of its own.
    proc = run_ollie(["doctor", "--cwd", str(tmp_path)], env=env)
    assert proc.stdout.count("OLLIE_BAKEND is not a setting") == 1 and "FAIL env file" not in proc.stdout, proc.stdout


def test_a_misspelt_model_setting_in_the_env_file_is_named_though_the_turn_runs(_private_dirs, scripted_llm, tmp_path):
    # OLLIE_MODLE: the turn ran on the backend's default model, unsaid (a hosted API bills that one).
    env_file = _private_dirs / "config" / "ollie" / "env"
    env_file.parent.mkdir(parents=True)
    env_file.write_text("OLLIE_MODLE=scripted-model\n")
    llm = scripted_llm("openai")
    llm.script(Reply.text("hi"))
    proc = run_ollie(["-p", "hello", "--cwd", str(tmp_path)], env={**llm.env(), "OLLIE_MODEL": ""})
    assert proc.returncode == 0 and proc.stdout == "hi\n", proc
    said = f"ollie: line 1 of {env_file}: OLLIE_MODLE is not a setting, did you mean OLLIE_MODEL?\n"
    assert proc.stderr.count(said) == 1, proc.stderr


@pytest.mark.parametrize(("other", "value", "backend"), [
    ("OPENAI_BASE_URL", "https://api.openai.com/v1/", "openai"),  # as OpenAI's SDK docs have it: the same API
    ("OLLAMA_HOST", "127.0.0.1:11434", "ollama"),  # Ollama's own form of ollie's default
])
def test_another_tools_url_variable_naming_the_server_ollie_asks_is_not_warned_of(tmp_path, other, value, backend):
    # "OPENAI_BASE_URL is set, but ollie does not read it: to use that server set OLLIE_OPENAI_URL" when it named
    # the very server ollie asks: a user set OLLIE_OPENAI_URL for nothing, or thought their key went elsewhere.
    env = {"OLLIE_BACKEND": backend, other: value, "OPENAI_API_KEY": ""}
    proc = run_ollie(["-p", "hello", "--cwd", str(tmp_path)], env=env)
    assert proc.returncode == 2 and other not in proc.stderr, proc.stderr
    proc = run_ollie(["doctor", "--cwd", str(tmp_path)], env=env)
    assert other not in proc.stdout, proc.stdout


def test_a_state_dir_that_cannot_be_made_is_said_with_what_to_set(tmp_path):
    # A HOME that is not there (a service account's, a container's) ended in a traceback from the log's set-up: in
    # the terminal, and in the daemon and the ACP agent, whose stderr is all an editor shows of them.
    (tmp_path / "home").write_text("a file, not a directory\n")
    state = tmp_path / "home" / ".local" / "state" / "ollie"
    daemon = [sys.executable, "-m", "ollie_lsp", "--stdio"]
    for prog, command in [("ollie", [*OLLIE, "-p", "hello"]), ("ollie", OLLIE), ("ollie-lsp", daemon),
                          ("ollie acp", [*OLLIE, "acp"])]:
        proc = subprocess.run([*command, "--cwd", str(tmp_path)] if prog == "ollie" else command, input="",
                              env=child_env({"OLLIE_STATE_DIR": str(state)}), capture_output=True, text=True,
                              timeout=60)
        # The daemon goes on to answer `initialize` and show it there (test_start_problem); here its input ends.
        assert proc.returncode == (0 if prog == "ollie-lsp" else 2) and "Traceback" not in proc.stderr, proc.stderr
        assert proc.stderr.startswith(f"{prog}: cannot write its log under {state}: "), proc.stderr
        assert proc.stderr.endswith("set HOME, or OLLIE_STATE_DIR and OLLIE_DATA_DIR, to directories you can write\n")
    proc = subprocess.run([*daemon, "--log-file", str(state / "x.log")], input="", env=child_env(),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stderr.startswith(f"ollie-lsp: cannot write its log to {state}/x.log: ")
    assert proc.stderr.endswith("; give --log-file a path you can write\n"), proc.stderr


def test_a_log_file_that_is_a_fifo_is_said_and_never_waited_on(tmp_path):
    # Red team round 39: a FIFO where the log goes (the state dir's `ollie.log`, or `--log-file`) held the daemon's
    # start for ever in the log's open, saying nothing.
    state = tmp_path / "state"
    state.mkdir()
    os.mkfifo(state / "ollie.log")
    daemon = [sys.executable, "-m", "ollie_lsp", "--stdio"]
    for command in ([*daemon], [*daemon, "--log-file", str(state / "ollie.log")]):
        proc = subprocess.run(command, input="", env=child_env({"OLLIE_STATE_DIR": str(state)}),
                              capture_output=True, text=True, timeout=60)
        # Said, and the daemon goes on without a log until its input ends (test_start_problem: what the editor shows).
        assert proc.returncode == 0 and f"{state}/ollie.log is a FIFO or a socket" in proc.stderr, proc.stderr


def test_a_prompt_given_without_p_says_where_a_prompt_goes(tmp_path):
    # `ollie "explain this repo"`, as other agents take it, was only "invalid choice" among the subcommands.
    proc = run_ollie(["explain this repo", "--cwd", str(tmp_path)])
    assert proc.returncode == 2, proc.stderr
    assert "explain this repo" in proc.stderr and proc.stderr.endswith(
        "; a prompt goes after -p (`ollie -p 'fix the tests'`), or at `ollie`'s own prompt\n"), proc.stderr


def test_an_unknown_agent_or_backend_names_the_ones_there_are(scripted_llm, tmp_path):
    llm = scripted_llm("openai")  # reached by the preflight only: nothing is sent
    for extra in (["-p", "hello"], []):
        proc = run_ollie([*extra, "--agent", "nosuch", "--cwd", str(tmp_path)], env=llm.env())
        assert proc.returncode == 2, proc.stderr
        assert "agent 'nosuch' not found" in proc.stderr and "name one of the agents there (" in proc.stderr
        assert "default" in proc.stderr.rpartition("agents there")[2], proc.stderr
        # The flag's own name was wrong: not "set OLLIE_BACKEND" (nothing set it).
        proc = run_ollie([*extra, "--backend", "nosuch", "--cwd", str(tmp_path)], env=llm.env())
        assert proc.returncode == 2, proc.stderr
        assert "unknown backend 'nosuch': name one of ollama, openai" in proc.stderr, proc.stderr
    assert not llm.chat_requests


def test_a_404_without_a_body_names_the_server_as_configured_and_says_what_to_check(scripted_llm, tmp_path):
    llm = scripted_llm("openai", check=False)
    llm.script(Reply.error(404, b""))
    proc = run_ollie(["-p", "hello", "--cwd", str(tmp_path)], env=llm.env())
    assert proc.returncode == 1, proc.stderr
    host = llm.url.split("//")[1].split("/")[0]  # 127.0.0.1:PORT, as OLLIE_OPENAI_URL says it (state says "local")
    assert f"{host}: HTTP 404" in proc.stderr and "local:" not in proc.stderr, proc.stderr
    assert f"check OLLIE_OPENAI_URL ({llm.url}) and the model ({llm.model})" in proc.stderr, proc.stderr


def test_a_broken_sandbox_policy_is_said_before_the_first_prompt_and_the_session_still_answers(
        _private_dirs, scripted_llm, tmp_path):
    policy = _private_dirs / "config" / "ollie" / "sandbox.yaml"
    policy.parent.mkdir(parents=True)
    policy.write_text("netwrok:\n  enabled: true\n")  # a misspelt key
    said = f"ollie: {policy}: key 'netwrok': unknown key; fix the file: no step runs until it loads"
    llm = scripted_llm("openai")
    llm.script(Reply.text("hello"))
    proc = run_ollie(["-p", "hi", "--cwd", str(tmp_path)], env=llm.env())
    assert proc.returncode == 0 and proc.stdout.strip() == "hello", proc.stderr
    assert said in proc.stderr and proc.stderr.index(said) < proc.stderr.index("ollie: session"), proc.stderr
    proc = run_ollie(["--cwd", str(tmp_path)], env=llm.env(), input="")
    assert said in proc.stderr, proc.stderr


# A user of other tools: what ollie would not read, and what it asks instead.
OTHERS_URL = {
    "ollama": ({"OLLIE_MODEL": "qwen3"}, "OLLAMA_HOST", "OLLIE_OLLAMA_URL", "http://localhost:11434"),
    # No key: ollie said only "set OLLIE_OPENAI_KEY (or OPENAI_API_KEY)", a key that would go to api.openai.com.
    "openai": ({"OPENAI_API_KEY": ""}, "OPENAI_BASE_URL", "OLLIE_OPENAI_URL", "https://api.openai.com/v1"),
}


@pytest.mark.parametrize("fmt", sorted(OTHERS_URL))
def test_another_tools_url_variable_is_named_and_not_adopted(scripted_llm, tmp_path, fmt):
    # OLLAMA_HOST, set for the other tools: ollie went to localhost:11434 without a word (Ollama there or not).
    extra_env, other, ours, default = OTHERS_URL[fmt]
    llm = scripted_llm(fmt)
    env = {"OLLIE_BACKEND": fmt, other: llm.env()[ours], **extra_env}
    said = f"{other} is set, but ollie does not read it: to use that server set {ours} to its URL (unset, ollie asks {default})"
    for extra in (["-p", "hello"], []):
        proc = run_ollie([*extra, "--cwd", str(tmp_path)], env=env, input="hello\n" if not extra else None)
        assert proc.stderr.count(said) == 1, proc.stderr  # said by the preflight's hint (or the key's), else at the start
    if fmt == "ollama":
        proc = run_ollie(["-p", "hello", "--no-preflight", "--cwd", str(tmp_path)], env=env)
        assert f"ollie: {said}\n" in proc.stderr, proc.stderr  # at the start: a turn may go on there
    proc = run_ollie(["doctor", "--cwd", str(tmp_path)], env=env)
    assert proc.returncode == 1 and proc.stdout.count(said) == 1, proc.stdout
    assert not llm.chat_requests  # never adopted: where a key goes is ollie's own setting


def test_a_server_that_takes_the_request_and_never_answers_is_said_while_the_turn_waits(tmp_path):
    # A tunnel whose far end is gone, a proxy, a model that never loads: the port takes the connection, and ollie sat
    # silent until the head timeout (5 minutes), Ctrl-C the only way out, nothing said of what to check.
    import signal
    import socket

    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)  # never accepted: the kernel completes the connection, no byte ever comes back
        url = f"http://127.0.0.1:{server.getsockname()[1]}/v1"
        env = {"OLLIE_BACKEND": "openai", "OLLIE_OPENAI_URL": url, "OLLIE_OPENAI_KEY": "none",
               "OLLIE_MODEL": "silent-model", "OLLIE_QUIET_SERVER_S": "1"}
        proc = subprocess.Popen([*OLLIE, "-p", "hello", "--cwd", str(tmp_path)], env=child_env(env),
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            assert proc.stderr is not None
            lines = iter(proc.stderr.readline, "")
            said = next((line for line in lines if "no answer yet" in line), "")
            assert said == (f"no answer yet from silent-model at {url} after 1 s: a model still loading answers later; "
                            "if none comes, stop the turn and check the server (`ollie doctor`)\n"), said
            proc.send_signal(signal.SIGINT)
            assert proc.wait(timeout=60) == 130
        finally:
            proc.kill()
            proc.wait()


def test_an_approval_mode_ollie_does_not_know_is_said_with_the_ones_there_are(scripted_llm, tmp_path):
    # OLLIE_APPROVAL=auto_edit (its `_` for `-`): every edit went on asking, and nothing said why.
    llm = scripted_llm("openai")
    llm.script(Reply.text("hi"))
    proc = run_ollie(["-p", "hello", "--cwd", str(tmp_path)], env=llm.env(approval="auto_edit"))
    assert proc.returncode == 0 and proc.stdout == "hi\n", proc.stderr
    assert ("warning: OLLIE_APPROVAL='auto_edit' is no approval mode (one of ask, auto-edit, auto, read-only): the "
            "agent's, ask, applies\n") in proc.stderr, proc.stderr


def test_a_broken_agent_file_is_said_with_an_unreachable_backend_not_only_at_the_next_run(tmp_path):
    # A new-user pass: with the backend down, `ollie -p` said only that, and the agent file's broken key showed at the
    # next run once the backend answered. The config is local: it is checked first, and both are said.
    agents = tmp_path / "agents"
    agents.mkdir()
    (agents / "default.json").write_text('{"model": 5}\n')
    (agents / "bad.json").write_text('{"model": "m",\n')
    env = {"OLLIE_AGENTS_DIR": str(agents), "OLLIE_OLLAMA_URL": f"http://127.0.0.1:{free_port()}"}
    for args, said in [([], f"{agents}/default.json: key 'model'"),
                       (["--agent", "bad"], f"{agents}/bad.json: invalid JSON at line 2")]:
        proc = run_ollie(["-p", "hello", "--cwd", str(tmp_path), *args], env=env)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
        agent, backend = proc.stderr.splitlines()[:2]
        assert agent.startswith(f"ollie: {said}"), proc.stderr
        assert backend.startswith("ollie: cannot reach Ollama at "), proc.stderr
