"""A long saved session for the tests that page through one (the daemon, the editors)."""

from __future__ import annotations

from ollie import paths
from ollie.backend.types import Message, ToolCall
from ollie.sessions.persist import SessionFile
from ollie.sessions.registry import Registry
from ollie.sessions.session import Session
from ollie.sessions.types import Channel, Kind, Request, os_user


def saved_session(size: int, title: str = "long") -> str:
    """A saved session of `size` messages (a prompt, a call, its result, an answer; again), registered as `title`; its id."""
    session = Session(agent="default")
    for n in range(size // 4):
        session.messages += [
            Message("user", f"prompt {n} ü"),
            Message("assistant", "", tool_calls=[ToolCall(f"c{n}", "execute_code", '{"steps": []}')]),
            Message("tool", f"result {n} 😀", tool_call_id=f"c{n}", name="execute_code"),
            Message("assistant", f"answer {n}"),
        ]
    SessionFile(paths.sessions_dir(), session.id).save(session)
    registry = Registry()
    registry.ensure(Request(id=session.id, user_id=os_user(), agent_id="default", kind=Kind.CHAT,
                            channel=Channel.LSP, title=title))
    registry.close()
    return session.id
