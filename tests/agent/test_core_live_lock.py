"""Opening a session: it runs in one Core at a time (resuming it elsewhere is refused until it closes), in the very
directory its front end walked."""

from __future__ import annotations

import pytest

from ollie.agent.setup import session_dir
from ollie.sessions.errors import LiveElsewhereError


async def test_a_dir_walked_then_swapped_for_a_link_before_its_session_opens_is_refused(scripted_llm, make_core, tmp_path):
    # Red team 56: a front end walks the directory a client names (`session_dir`), then opens the session there; the
    # engine took its real path again by name, so a link another session's step swapped in meanwhile became the new
    # session's cwd, its steps granted write where it led.
    work, outside = tmp_path / "ws", tmp_path / "outside"
    (work / "real").mkdir(parents=True)
    outside.mkdir()
    walked = await session_dir(str(work / "real"), guarded=[work])
    (work / "real").rename(work / "old")
    (work / "real").symlink_to(outside)
    with pytest.raises(OSError, match=f"{work / 'real'} now leads to {outside}"):
        await make_core(scripted_llm("openai", check=False), cwd=walked)


async def test_a_session_runs_in_one_core_at_a_time_and_is_free_once_closed(scripted_llm, make_core):
    srv = scripted_llm("openai", check=False)
    first = await make_core(srv)
    with pytest.raises(LiveElsewhereError, match=f"session {first.session_id} is open in another"):
        await make_core(srv, session_id=first.session_id)
    taken = first.session_id
    await first.close()
    second = await make_core(srv, session_id=taken)
    assert second.session_id == taken


def test_a_lock_held_by_another_process_is_listed_and_a_crashed_holders_file_is_not(tmp_path):
    """`held_elsewhere` names the process that holds a session's lock; the file a killed holder left names a dead pid,
    and a session of this process is not "elsewhere"."""
    import os
    import socket
    import subprocess
    import sys

    from ollie.sessions.livelock import held_elsewhere, hold

    live, crashed, mine = "1796396121592563039-44ae3f", "1796396121592563040-44ae40", "1796396121592563041-44ae41"
    holder = subprocess.Popen([sys.executable, "-c", "import sys; from ollie.sessions.livelock import hold; "
                               f"lock = hold(__import__('pathlib').Path({str(tmp_path)!r}), {live!r}); "
                               "print('held', flush=True); sys.stdin.read()"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        dead = subprocess.Popen([sys.executable, "-c", ""])
        dead.wait()
        (tmp_path / f"{crashed}.lock").write_text(f"ollie-lsp pid {dead.pid}")
        assert hold(tmp_path, mine) is not None
        found = held_elsewhere(tmp_path, [live, crashed, mine, "../x"])
        assert found == {live: f"{socket.gethostname()} (pid {holder.pid})"}, (found, os.getpid())
    finally:
        holder.kill()
        holder.wait()
    assert held_elsewhere(tmp_path, [live]) == {}
