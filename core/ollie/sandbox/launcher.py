"""Per-spawn fallback when the fork server is unavailable: `python -I -S launcher.py RULESET_JSON ARGV...`.

Applies the Landlock ruleset to itself and execs ARGV (cwd, env, stdio and the
new session are set by the parent). Slower than the fork server (~25 ms). Stdlib only.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import sys


def main() -> None:
    """Restrict, then exec; on failure print why and exit 126 (sandbox) or 127 (exec)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "landlock.py")
    spec = importlib.util.spec_from_file_location("_ollie_landlock", path)
    landlock = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(landlock)
    ruleset = json.loads(sys.argv[1])
    argv = sys.argv[2:]
    try:
        landlock.apply_ruleset(ruleset)
    except OSError as exc:
        sys.stderr.write(f"ollie sandbox: cannot apply Landlock rules: {exc}\n")
        os._exit(126)
    for sig in (signal.SIGPIPE, signal.SIGXFSZ):
        signal.signal(sig, signal.SIG_DFL)  # Python ignores these; the program must not inherit that
    try:
        os.execvp(argv[0], argv)
    except OSError as exc:
        sys.stderr.write(f"ollie sandbox: cannot run {argv[0]}: {exc.strerror}\n")
        os._exit(127)


if __name__ == "__main__":
    main()
