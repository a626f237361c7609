"""Child process of the kill -9 test: resumes a session and appends rounds until it is killed.

`apply_round` is also imported by the test to replay the expected history.
"""

from __future__ import annotations

import sys

from ollie.backend.types import Message, ToolCall, Usage
from ollie.sessions.session import Session

FILLER = "x" * 1500 + "é✓🙂"


def apply_round(session: Session, r: int) -> None:
    """Round r: sometimes compact, sometimes collapse an old result in place, then add three messages."""
    if r % 7 == 0:
        session.replace_messages([Message("user", f"summary through round {r - 1}")] + session.messages[-3:])
    elif r % 5 == 0 and len(session.messages) > 3:
        session.messages[2].content = f"collapsed at {r}"
        session.mark_edited(2)
    session.messages.append(Message("user", f"round {r} {FILLER}"))
    session.messages.append(Message("assistant", "", tool_calls=[ToolCall(f"c{r}", "file_read", '{"path": "a"}')]))
    session.messages.append(Message("tool", f"result {r} {FILLER}", tool_call_id=f"c{r}", name="file_read"))
    session.add_usage(Usage(input_tokens=r, output_tokens=1), 0.001)


def main() -> None:
    from ollie.sessions.persist import SessionFile

    sessions_dir, session_id = sys.argv[1], sys.argv[2]
    file = SessionFile(sessions_dir, session_id)
    session = file.load() if file.exists() else Session(id=session_id, agent="crash")
    r = session.total_requests
    print(f"start {r}", flush=True)
    while True:
        r += 1
        apply_round(session, r)
        file.save(session)
        print(f"saved {r}", flush=True)


if __name__ == "__main__":
    main()
