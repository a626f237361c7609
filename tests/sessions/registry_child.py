"""Child process of the registry concurrency tests: waits for a go file, runs one operation, prints JSON."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from ollie.sessions.errors import SessionError
from ollie.sessions.registry import Registry
from ollie.sessions.types import Request


def main() -> None:
    db_path, go_file, mode, arg = sys.argv[1:5]
    print("ready", flush=True)
    while not Path(go_file).exists():
        time.sleep(0.001)
    result: dict[str, object] = {}
    try:
        # Opened after the go signal, so two children may create the schema at the same instant.
        registry = Registry(db_path, busy_timeout_s=20.0)
        if mode == "create":
            ids = []
            for n in range(int(arg)):
                ids.append(registry.ensure(Request(user_id="alice", agent_id="coding", channel="lsp",
                                                   title=f"t{n}")).id)
                registry.touch(ids[-1], turn_started=True)
                registry.rename(_scope(), ids[-1], f"renamed {n}")
            result["ids"] = ids
    except SessionError as exc:
        result["error"] = type(exc).__name__
    except Exception as exc:  # noqa: BLE001 - report anything that escaped, e.g. "database is locked"
        result["escaped"] = f"{type(exc).__name__}: {exc}"
    print(json.dumps(result), flush=True)


def _scope():
    from ollie.sessions.types import Scope

    return Scope(user_id="alice")


if __name__ == "__main__":
    main()
