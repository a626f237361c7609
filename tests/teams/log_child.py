"""Child of the lease tests: holds a session in the PostgreSQL store and saves rounds until it is killed.

argv: session id, number of rounds to save before saying "saved N" after each flush (then it keeps saving).
"""

from __future__ import annotations

import sys

from ollie.backend.types import Message
from ollie.sessions import persist


def main() -> None:
    session_id, announced = sys.argv[1], int(sys.argv[2])
    log, session = persist.open_session("unused", session_id)
    n = 0
    while True:
        session.messages.append(Message("user", f"question {n}"))
        session.messages.append(Message("assistant", f"answer {n}"))
        log.save(session)
        n += 1
        if n <= announced:
            log.flush()
            print(f"saved {n}", flush=True)


if __name__ == "__main__":
    main()
