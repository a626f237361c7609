"""A step's connection to a host outside the network allow-list is put to the user through the step approver."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ollie import paths
from ollie.agent.questions import Answer, StepQuestion
from ollie.sandbox import egress
from ollie.sandbox.rules import landlock_abi
from ollie.testing import Reply
from ollie.testing.nethosts import hosts_resolver
from tests.netserver import Listener

pytestmark = pytest.mark.skipif(landlock_abi() < 1, reason="needs Landlock")


@pytest.fixture
def listener(monkeypatch: pytest.MonkeyPatch) -> Iterator[Listener]:
    server = Listener()
    server.start()
    monkeypatch.setattr(egress, "system_resolve", hosts_resolver({"other.test": "127.0.0.1"}))
    yield server
    server.sock.close()


def curl(port: int) -> Reply:
    return Reply.tool_calls(("execute_code", {"steps": [
        {"code": f"curl -s -o - -w ' status %{{http_code}}' http://other.test:{port}/x"}]}))


def _drain(subscription) -> list:
    out = []
    while subscription.pending():
        out.append(subscription.get_nowait())
    return out


def tool_text(srv, index: int) -> str:
    return "\n".join(m["content"] for m in srv.chat_requests[index].body["messages"] if m["role"] == "tool")


def seen(srv) -> str:
    """What the model got back, last request's results (a question never asked: why the step went without)."""
    return tool_text(srv, len(srv.chat_requests) - 1) if srv.chat_requests else "(no request)"


class Approver:
    """Allows the step itself; answers network questions with `net`."""

    def __init__(self, net: str) -> None:
        self.net = net
        self.network: list[StepQuestion] = []

    def __call__(self, question: StepQuestion) -> Answer:
        if "/net/" in question.id:
            self.network.append(question)
            return Answer(self.net)  # type: ignore[arg-type]
        return Answer("allow_once")


async def test_a_denied_host_gets_nothing_and_the_question_names_host_port_and_step(scripted_llm, make_core,
                                                                                    listener):
    srv = scripted_llm("openai")
    srv.script(curl(listener.port), Reply(text="done"))
    core = await make_core(srv)
    approver = Approver("reject")
    core.step_approver = approver
    events = core.bus.subscribe()
    await core.submit("fetch it")
    assert len(approver.network) == 1, seen(srv)
    # The step's `tool` event carries its connections, structured.
    tools = [e.tool.to_wire() for e in _drain(events) if e.role == "tool" and e.tool is not None]
    assert tools[-1]["network"] == [{"host": "other.test", "port": listener.port, "verdict": "denied", "how": "deny",
                                     "words": "denied (you said no)", "sent": 0, "received": 0}]
    question = approver.network[0]
    assert question.prefix == f"other.test:{listener.port}" and question.kind == "fetch"
    # The step as the user saw it, not its process (a scratch `step1.sh` path nobody knows).
    assert "curl -s" in question.title and "step1.sh" not in question.title
    assert "status 403" in tool_text(srv, 1)
    assert f"[network] other.test:{listener.port} denied (you said no), sent 0 B, received 0 B" in tool_text(srv, 1)
    listing = (await core.submit("/network")).reply
    assert listing.startswith("network (1 connection):")
    assert f"other.test:{listener.port} denied (you said no), sent 0 B, received 0 B — Run `curl -s" in listing
    assert not listener.received


async def answered_then_unasked(srv, make_core, port: int, answer: str, *then: Reply):
    """A session whose model fetches other.test twice in a turn (then replies `then`), its question answered `answer`:
    asked once, both fetches got through."""
    srv.script(curl(port), curl(port), Reply(text="done"), *then)
    core = await make_core(srv)
    approver = Approver(answer)
    core.step_approver = approver
    await core.submit("fetch it twice")
    assert len(approver.network) == 1, seen(srv)  # the second call is not asked again
    assert "hello status 200" in tool_text(srv, 1) and tool_text(srv, 2).count("hello status 200") == 2
    assert f"[network] other.test:{port} allowed for this session, sent " in tool_text(srv, 2)
    return core


async def test_allow_always_lets_it_through_for_the_rest_of_the_session(scripted_llm, make_core, listener):
    core = await answered_then_unasked(scripted_llm("openai"), make_core, listener.port, "allow_always")
    assert f"net:other.test:{listener.port}" in core.session.approval_always


async def test_allow_for_this_session_holds_for_its_later_steps_only_and_is_saved_nowhere(scripted_llm, make_core,
                                                                                          listener):
    from ollie.sandbox import netsaved

    srv = scripted_llm("openai")
    core = await answered_then_unasked(srv, make_core, listener.port, "allow_session", curl(listener.port),
                                       Reply(text="done"), curl(listener.port), Reply(text="done"))
    # Nothing kept: neither with the session (a resumed one asks again) nor in the user's config (later sessions).
    assert not core.session.approval_always and netsaved.read_saved() == ()
    listing = (await core.submit("/network")).reply
    assert (f"allowed for the rest of this session, unasked:\nother.test:{listener.port} — \"Allow for this session\""
            f" (asked by: Run `curl -s") in listing, listing
    second = await make_core(srv)  # a new session asks again
    second.step_approver = again = Approver("reject")
    await second.submit("fetch it")
    assert len(again.network) == 1 and "status 403" in tool_text(srv, 4)
    await core.close()
    resumed = await make_core(srv, session_id=core.session_id)  # so does this session, resumed
    resumed.step_approver = asked = Approver("reject")
    await resumed.submit("fetch it")
    assert len(asked.network) == 1 and "status 403" in tool_text(srv, 6)
    assert "allowed for the rest of this session" not in (await resumed.submit("/network")).reply


async def test_auto_still_asks_about_a_host_the_policy_does_not_list(scripted_llm, make_core, listener):
    srv = scripted_llm("openai")
    srv.script(curl(listener.port), Reply(text="done"))
    core = await make_core(srv)
    core.set_approval("auto")
    approver = Approver("allow_once")
    core.step_approver = approver
    await core.submit("fetch it")
    # `auto` runs the step unasked, but still asks about the host.
    assert len(approver.network) == 1 and "hello status 200" in tool_text(srv, 1)


async def test_allow_always_is_kept_in_the_users_config_for_new_sessions(scripted_llm, make_core, listener):
    from ollie.sandbox import netsaved

    srv = scripted_llm("openai")
    srv.script(curl(listener.port), Reply(text="done"), curl(listener.port), Reply(text="done"))
    first = await make_core(srv)
    first.step_approver = Approver("allow_always")
    await first.submit("fetch it")
    assert netsaved.read_saved() == (f"other.test:{listener.port}",)
    assert netsaved.saved_file().parent == paths.config_dir()  # the user's config, never the workspace
    second = await make_core(srv)  # a new session: its own "always" rules are empty
    assert second.session.id != first.session.id and not second.session.approval_always
    approver = Approver("reject")
    second.step_approver = approver
    await second.submit("fetch it again")
    assert not approver.network  # not asked again
    assert "hello status 200" in tool_text(srv, 3)
    assert f"[network] other.test:{listener.port} allowed: always (saved), sent " in tool_text(srv, 3)
    # The new session's /network says why the host went through unasked, and where to take the answer back
    # (before, it listed the connection `allowed (always)` and nothing of the answer or its file).
    listing = (await second.submit("/network")).reply
    assert (f'allowed in every session, unasked ("Always allow" answers kept in {netsaved.saved_file()}: delete a '
            f"line to be asked again):\nother.test:{listener.port}") in listing, listing


async def test_a_step_making_connections_by_the_thousand_records_a_hundred_and_a_count(scripted_llm, make_core,
                                                                                        listener, monkeypatch):
    # A hostile step looping over connections: each added a `[network]` line to its result, an entry to its `tool`
    # event and to the session's saved history, without bound. Past egress.MAX_RECORDED they add up in one record.
    monkeypatch.setattr(egress, "MAX_RECORDED", 3)
    srv = scripted_llm("openai")
    srv.script(Reply.tool_calls(("execute_code", {"steps": [
        {"code": f"for i in $(seq 12); do curl -s -o /dev/null http://other.test:{listener.port}/$i; done"}]})),
        Reply(text="done"))
    core = await make_core(srv)
    core.step_approver = Approver("reject")
    events = core.bus.subscribe()
    await core.submit("fetch them")
    tools = [e.tool.to_wire() for e in _drain(events) if e.role == "tool" and e.tool is not None]
    network = tools[-1]["network"]
    assert [c["host"] for c in network] == ["other.test"] * 3 + [""]
    assert network[-1] == {"host": "", "port": 0, "verdict": "denied", "how": "9 denied", "words": "denied (9 denied)",
                           "sent": 0, "received": 0, "more": 9}
    told = tool_text(srv, 1)
    assert told.count("[network] ") == 4
    assert "[network] ... 9 more connections (9 denied), sent 0 B, received 0 B" in told
    assert [len(calls) for calls in core.session.step_network.values()] == [4]  # what the history saves
    assert (await core.submit("/network")).reply.startswith("network (12 connections):")
    assert not listener.received


async def test_a_session_log_with_hostile_network_records_resumes_with_its_good_ones(scripted_llm, make_core,
                                                                                     listener, tmp_path):
    # A session's log may be a teammate's (a shared store): records that are not connections made `/network`
    # fail ("'str' object has no attribute 'get'", KeyError 'port') and reached the editors as they were.
    import json

    srv = scripted_llm("openai")
    srv.script(curl(listener.port), Reply(text="done"))
    core = await make_core(srv)
    core.step_approver = Approver("reject")
    await core.submit("fetch it")
    (call_id, (good,)), = core.session.step_network.items()
    await core.close()
    file = tmp_path / "sessions" / f"{core.session_id}.jsonl"
    hostile = {call_id: [good, "junk", ["x"], {"host": 5}, {"host": "a", "port": 1}], "other": "junk"}
    records = [json.loads(line) for line in file.read_text().splitlines()]
    for record in records:  # the commit that saved the call's connections
        if record.get("tracked", {}).get("step_network"):
            record["tracked"]["step_network"] = hostile
    file.write_text("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in records))
    resumed = await make_core(srv, session_id=core.session_id)
    assert dict(resumed.session.step_network) == {call_id: [good]}
    assert (await resumed.submit("/network")).reply.startswith("network (1 connection):")


async def test_a_local_index_refused_unasked_says_what_to_list_and_where_and_listing_it_works(scripted_llm, make_core,
                                                                                              listener):
    """A new user's `pip download --index-url http://127.0.0.1:<port>/simple`: the step was refused with no question
    and only "non-public address (only network.allow reaches it)", naming neither the file nor what to write there;
    `localhost` was asked about, and an "allow" still ended in a refusal."""
    def fetch(host: str) -> Reply:
        return Reply.tool_calls(("execute_code", {"steps": [
            {"code": f"curl -s -o - -w ' status %{{http_code}}' http://{host}:{listener.port}/simple/"}]}))

    srv = scripted_llm("openai")
    srv.script(fetch("127.0.0.1"), Reply(text="done"), fetch("localhost"), Reply(text="done"))
    core = await make_core(srv)
    core.step_approver = approver = Approver("allow_once")
    await core.submit("download it from my index")
    await core.submit("and by name")
    assert not approver.network, "a non-public host is never asked about"
    mine = paths.config_dir() / "sandbox.yaml"
    for index in (1, 3):
        told = tool_text(srv, index)
        assert "status 403" in told and listener.accepted == 0, told
        assert f'the user can add "127.0.0.1:{listener.port}" to network.allow in {mine} (copy ' in told, told
        # The port is the model's: the note says what listing it hands over, and when it is the user's to give.
        assert "letting every step reach whatever listens on that port: only if it is the package index or server " \
               "the user started for this" in told, told
    assert "the step then names it 127.0.0.1" in tool_text(srv, 3)
    # The advice followed: the user's copy of the policy listing it lets the next session's step through.
    bundled = paths.bundled("sandbox.yaml").read_text()
    mine.parent.mkdir(parents=True, exist_ok=True)
    mine.write_text(bundled.replace('"codeload.github.com"]', f'"codeload.github.com", "127.0.0.1:{listener.port}"]'))
    srv.script(fetch("127.0.0.1"), Reply(text="done"))
    second = await make_core(srv)
    second.step_approver = Approver("reject")
    await second.submit("download it from my index")
    assert "hello status 200" in tool_text(srv, 5) and "network.allow in" not in tool_text(srv, 5)


async def test_a_refused_metadata_address_is_never_advised_for_network_allow(scripted_llm, make_core):
    """A model's step asking for the cloud metadata service (169.254.169.254, or the same in an IPv6 form) got the note
    for a local package index: "the user can add "169.254.169.254:80" to network.allow", words to quote to the user
    for the machine's credentials."""
    def fetch(url: str) -> Reply:
        return Reply.tool_calls(("execute_code", {"steps": [{"code": f"curl -s -o - -w ' status %{{http_code}}' {url}"}]}))

    srv = scripted_llm("openai")
    srv.script(fetch("http://169.254.169.254/latest/meta-data/"), Reply(text="done"),
               fetch("http://[::ffff:169.254.169.254]/latest/meta-data/"), Reply(text="done"))
    core = await make_core(srv)
    core.step_approver = Approver("allow_once")
    await core.submit("what instance is this?")
    await core.submit("and by IPv6")
    for index, host in ((1, "169.254.169.254"), (3, "::ffff:a9fe:a9fe")):
        told = tool_text(srv, index)
        assert "status 403" in told, told
        assert f"blocked by ollie's sandbox: {host}:80 is a link-local address, where a cloud machine's metadata " \
               "service hands out its credentials: not one for network.allow" in told, told
        assert "network.allow in" not in told and "the user can add" not in told, told


async def test_a_refused_docker_api_port_is_named_and_never_advised_for_network_allow(scripted_llm, make_core):
    """A model's step trying 127.0.0.1:2375 (Docker's API: root on the machine) got the local index's note: "the user
    can add "127.0.0.1:2375" to network.allow", words for a model to quote to the user for the machine."""
    srv = scripted_llm("openai")
    srv.script(Reply.tool_calls(("execute_code", {"steps": [
        {"code": "curl -s -o - -w ' status %{http_code}' http://127.0.0.1:2375/containers/json"}]})), Reply(text="done"))
    core = await make_core(srv)
    core.step_approver = Approver("allow_once")
    await core.submit("list the containers")
    told = tool_text(srv, 1)
    assert "status 403" in told, told
    assert "blocked by ollie's sandbox: 127.0.0.1:2375 is this machine or its network, and port 2375 is Docker's API " \
           "(root on the machine): not one for network.allow" in told, told
    assert "the user can add" not in told and '"127.0.0.1:2375"' not in told, told
