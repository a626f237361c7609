"""A new user's bad setup at `ollie -p` and the interactive prompt: each is said at once, with what to do."""

from __future__ import annotations

import pytest

from ollie.testing import Reply

from .test_cli import run_ollie

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
