"""Stop through the daemon: ollie/interrupt stops what a turn would start next and a running `!command`, and a
cancelled `ollie.submit` command answers as a cancelled ollie/submit does."""

from __future__ import annotations

import asyncio
import json
import os
import threading

import pytest
from lsprotocol import types

from ollie.testing import Reply
from tests.procs import new_mark, wait_for_processes, wait_no_processes

# A stop ends what it stops in milliseconds; the bound leaves a loaded machine room and still fails one that waits
# for a 60 s command.
PROMPTLY_S = 10.0


async def test_the_stop_button_during_a_post_turn_hook_holds_the_queue_and_the_continuation(start_daemon, llm,
                                                                                          tmp_path):
    """The Stop comes while the postTurn hook runs (the turn can no longer be interrupted): neither the
    continuation the hook asks for nor the queued prompt runs, and the answer, true, waits for the hook. It
    answered false and both ran."""
    go = tmp_path / "go"
    os.mkfifo(go)
    agents = tmp_path / "agents"
    agents.mkdir()
    hook = f'if grep -q \'"reply": "first answer"\'; then read line < "{go}"; echo "go on" >&2; exit 2; fi'
    (agents / "cont.json").write_text(json.dumps({"prompt": "You are a test agent.", "hooks": {"postTurn": hook},
                                                  "commandSandbox": "none"}))
    llm.script(Reply.text("first answer"), Reply.text("answered next"))
    daemon = await start_daemon(env={**llm.env(), "OLLIE_AGENTS_DIR": str(agents)}, init_options={"agent": "cont"})
    submit = asyncio.ensure_future(daemon.request("ollie/submit", {"text": "hi"}))
    writer = await asyncio.to_thread(os.open, go, os.O_WRONLY)  # returns once the hook opened it
    assert await daemon.request("ollie/queue", {"text": "queued"}) == {"depth": 1}
    stop = asyncio.ensure_future(daemon.request("ollie/interrupt", {"reason": "user"}))
    await daemon.request("ollie/state", {})  # a round trip: the interrupt was read and handled up to its wait
    assert not stop.done()  # the hook still runs: the answer waits for it
    os.write(writer, b"\n")
    os.close(writer)
    assert await asyncio.wait_for(stop, 30) == {"interrupted": True}
    assert (await asyncio.wait_for(submit, 30))["reply"] == "first answer"
    state = await daemon.request("ollie/state", {})
    assert (state["queuedPrompts"], state["queueHeld"]) == (["queued"], True)
    assert len(llm.chat_requests) == 1
    assert (await daemon.request("ollie/submit", {"text": "next"}))["reply"] == "answered next"


@pytest.mark.parametrize("how", ["ollie/interrupt", "$/cancelRequest"])
async def test_a_stop_kills_a_running_shell_command(shared_daemon, llm, how):
    """A `!command` submit is stopped now, by the Stop button or its own cancel, its process group killed; its
    answer is stop "interrupted". The interrupt answered false, the cancel did nothing, and the command ran on."""
    mark = new_mark()
    daemon = await shared_daemon(env=llm.env())
    future = daemon.client.protocol.send_request("ollie/submit", {"session": daemon.session,
                                                                  "text": f"!sleep 60.{mark}; echo never"})
    await wait_for_processes(mark)
    if how == "ollie/interrupt":
        assert await daemon.request("ollie/interrupt", {}, timeout=PROMPTLY_S) == {"interrupted": True}
    else:
        (msg_id,) = [k for k, f in daemon.client.protocol._request_futures.items() if f is future]
        daemon.client.protocol.notify("$/cancelRequest", types.CancelParams(id=msg_id))
    result = await asyncio.wait_for(asyncio.wrap_future(future), PROMPTLY_S)
    assert (result["reply"], result["stop"]) == ("[stopped; killed]", "interrupted")
    assert await wait_no_processes(mark) == []
    assert await daemon.request("ollie/interrupt", {}) == {"interrupted": False}  # nothing runs now


async def test_the_stop_button_drops_the_submits_waiting_behind_the_turn(shared_daemon, llm):
    """A second submit waits behind the running turn: the Stop answers it "interrupted" and it never runs (as the
    engine holds a submit waiting for its turn lock). It ran once the stopped turn ended."""
    held = threading.Event()  # the answer streams until the Stop, however slow the machine (~8 s of it could end first)
    llm.script(Reply(text="word " * 80, chunk_size=5, hold=held))
    daemon = await shared_daemon(env=llm.env())
    first = asyncio.ensure_future(daemon.request("ollie/submit", {"text": "talk a lot"}))
    await daemon.wait_events(lambda evs: any(e["role"] == "assistant" for e in evs))
    second = asyncio.ensure_future(daemon.request("ollie/submit", {"text": "then this"}))
    await daemon.request("ollie/state", {})  # a round trip: the second submit waits for its turn now
    assert await daemon.request("ollie/interrupt", {}, timeout=PROMPTLY_S) == {"interrupted": True}
    assert [(await r)["stop"] for r in (first, second)] == ["interrupted", "interrupted"]
    held.set()  # the server's end
    assert len(llm.chat_requests) == 1


async def test_a_cancelled_submit_command_answers_interrupted_and_runs_no_turn(start_daemon, llm):
    """workspace/executeCommand `ollie.submit`, cancelled while the daemon still builds the session it waits for:
    as a cancelled ollie/submit, it answers stop "interrupted" and no turn runs. It was pygls' -32800, and the
    turn ran unanswered."""
    llm.script(Reply.text("answered"))
    daemon = await start_daemon(env=llm.env())
    params = types.ExecuteCommandParams(command="ollie.submit", arguments=[{"text": "hello"}])
    result = await daemon.cancelled_at_once("workspace/executeCommand", params)
    assert result["stop"] == "interrupted"
    assert llm.chat_requests == []
    assert (await daemon.request("ollie/submit", {"text": "again"}))["reply"] == "answered"
