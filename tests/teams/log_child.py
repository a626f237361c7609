"""Child of the lease tests: holds a session in the PostgreSQL store and saves rounds.

argv: session id, number of rounds to save before saying "saved N" after each flush, and a mode: `loop`
(the default: it keeps saving until it is killed) or `commands` (it then reads commands on stdin: `save TEXT`
saves one more round, `rewrite` writes the whole session anew, `close` closes the log and exits; each
answers `ok` or `refused: <why>`).
"""

from __future__ import annotations

import sys

from ollie.backend.types import Message
from ollie.sessions import persist
from ollie.sessions.errors import SessionError


def main() -> None:
    session_id, announced = sys.argv[1], int(sys.argv[2])
    mode = sys.argv[3] if len(sys.argv) > 3 else "loop"
    log, session = persist.open_session("unused", session_id)
    n = 0
    while mode == "loop" or n < announced:
        session.messages.append(Message("user", f"question {n}"))
        session.messages.append(Message("assistant", f"answer {n}"))
        log.save(session)
        n += 1
        if n <= announced:
            log.flush()
            print(f"saved {n}", flush=True)
    for line in sys.stdin:
        command, _, text = line.strip().partition(" ")
        try:
            if command == "save":
                session.messages += [Message("user", f"{text} question"), Message("assistant", f"{text} answer")]
                log.save(session)
                log.flush()
            elif command == "rewrite":
                log.rewrite(session)
                log.flush()
            elif command == "close":
                log.close()
        except SessionError as exc:
            print(f"refused: {exc}", flush=True)
        else:
            print("ok", flush=True)
        if command == "close":
            return


if __name__ == "__main__":
    main()
