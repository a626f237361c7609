"""pytest plugin: the `scripted_llm` fixture (register with `pytest_plugins = ["ollie.testing.pytest_plugin"]`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from ollie.testing.scripted import ScriptedLLMServer


@pytest.fixture
def scripted_llm() -> Iterator[Callable[..., ScriptedLLMServer]]:
    """A factory: `scripted_llm("openai", ...)` returns a started server, stopped and `assert_done()`-checked at teardown.

    Pass `check=False` for a server whose test expects leftovers or unexpected requests.
    """
    servers: list[tuple[ScriptedLLMServer, bool]] = []

    def factory(fmt: str = "openai", *, check: bool = True, **options: Any) -> ScriptedLLMServer:
        server = ScriptedLLMServer(fmt, **options).start()
        servers.append((server, check))
        return server

    yield factory
    problems = []
    for server, check in servers:
        server.stop()
        if check:
            try:
                server.assert_done()
            except AssertionError as exc:
                problems.append(str(exc))
    if problems:
        pytest.fail("\n".join(problems), pytrace=False)
