"""A daemon whose state dir cannot be written answers `initialize`, says why once, and refuses what needs it."""

from __future__ import annotations

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from ollie_lsp.names import command_name

FIX = "set HOME, or OLLIE_STATE_DIR and OLLIE_DATA_DIR, to directories you can write"


async def test_an_unwritable_state_dir_is_shown_in_the_editor_and_each_request_says_it(start_daemon, tmp_path):
    # A new-user pass: a state dir the daemon cannot write (read-only, full, root's after a `sudo ollie`) ended it
    # before the handshake, and the editors only said the server died; the reason was on stderr alone.
    (tmp_path / "home").write_text("a file, not a directory\n")
    state = tmp_path / "home" / "state"
    sessions = tmp_path / "sessions"
    daemon = await start_daemon(env={"OLLIE_STATE_DIR": str(state), "OLLIE_SESSIONS_DIR": str(sessions)})
    assert daemon.init_result.capabilities.experimental["ollie"]["methods"]
    shown = [m for m in daemon.client.messages if m.type == types.MessageType.Error]
    assert [m.message for m in shown] == [
        f"ollie-lsp: cannot write its log under {state}: [Errno 20] Not a directory: '{state}'; {FIX}"]
    daemon.client.initialized(types.InitializedParams())
    for method, params in [("ollie/submit", {"text": "hello"}), ("ollie/session/new", {}), ("ollie/state", {}),
                           ("ollie/session/list", {}), (
                               "workspace/executeCommand", types.ExecuteCommandParams(
                                   command=command_name("ollie/session/new"), arguments=[{}]))]:
        with pytest.raises(JsonRpcException) as caught:
            await daemon.request(method, params)
        assert caught.value.code == -32603 and caught.value.message == shown[0].message, (method, caught.value)
    assert len(daemon.client.messages) == 1  # said once, not at each request
    assert not sessions.exists()  # no session ran that could not be kept
