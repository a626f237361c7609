"""A session keeps its working directory in its meta; sessions saved before that still load."""

from __future__ import annotations

import json
from pathlib import Path

from ollie.backend.types import Message
from ollie.sessions import logindex, persist
from ollie.sessions.session import Session


def test_the_cwd_is_saved_and_read_from_the_meta(tmp_path: Path) -> None:
    session = Session(cwd="/work/project")
    session.messages.append(Message("user", "hi"))
    file = persist.SessionFile(tmp_path, session.id)
    file.save(session)
    session.messages.append(Message("assistant", "hello"))
    file.save(session)  # an appended round: the latest meta is the last line
    assert persist.load(tmp_path, session.id).cwd == "/work/project"
    assert logindex.read_meta(tmp_path, session.id)["cwd"] == "/work/project"
    assert logindex.read_meta(tmp_path, "nosuchsession") == {}


def test_a_session_saved_without_a_cwd_still_loads(tmp_path: Path) -> None:
    session = Session(title="old one")
    session.messages.append(Message("user", "hi"))
    persist.SessionFile(tmp_path, session.id).save(session)
    path = next(tmp_path.glob(f"{session.id}*"))
    # Rewrite the file as an ollie that did not keep the cwd wrote it.
    lines = []
    for line in path.read_text().splitlines():
        record = json.loads(line)
        if record["t"] == "meta":
            record["meta"].pop("cwd")
        lines.append(json.dumps(record, separators=(",", ":")))
    path.write_text("\n".join(lines) + "\n")
    loaded = persist.load(tmp_path, session.id)
    assert (loaded.title, loaded.cwd, len(loaded.messages)) == ("old one", "", 1)
    assert "cwd" not in logindex.read_meta(tmp_path, session.id)
    assert logindex.read_meta(tmp_path, session.id)["title"] == "old one"
