"""Property tests: any sequence of history changes and saves loads back as saved; collector prefixes."""

from __future__ import annotations

import tempfile

from hypothesis import given, settings
from hypothesis import strategies as st

from ollie.backend.types import Message
from ollie.sessions.persist import SessionFile
from ollie.sessions.session import Session

OPS = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.text(max_size=20)),
        st.tuples(st.just("edit"), st.integers(0, 50)),
        st.tuples(st.just("compact"), st.integers(0, 5)),
        st.tuples(st.just("clear"), st.none()),
        st.tuples(st.just("save"), st.none()),
        st.tuples(st.just("resume"), st.none()),
        st.tuples(st.just("tier"), st.tuples(st.integers(0, 5), st.sampled_from(["hot", "cold", "collapsed", None]))),
        st.tuples(st.just("tiers_replaced"), st.integers(0, 5)),
    ),
    max_size=40,
)


@settings(max_examples=60, deadline=None)
@given(OPS)
def test_any_history_of_changes_loads_as_last_saved(ops):
    with tempfile.TemporaryDirectory() as root:
        session = Session()
        file = SessionFile(root, session.id, sync=False, compact_min_records=4)
        file.save(session)
        saved: tuple[list, dict] = ([], {})
        for op, arg in ops:
            if op == "append":
                session.messages.append(Message("user", arg))
            elif op == "edit" and session.messages:
                index = arg % len(session.messages)
                session.messages[index].content += "*"
                session.mark_edited(index)
            elif op == "compact":
                session.replace_messages([Message("user", "state")] + session.messages[-arg:] if arg else [])
            elif op == "clear":
                session.clear()
            elif op == "tier":
                key, tier = f"c{arg[0]}", arg[1]
                if tier is None:
                    session.result_tiers.pop(key, None)
                else:
                    session.result_tiers[key] = tier
            elif op == "tiers_replaced":
                session.result_tiers = {f"c{i}": "hot" for i in range(arg)}
            elif op == "save":
                file.save(session)
                saved = ([m.to_dict() for m in session.messages], dict(session.result_tiers))
            elif op == "resume":
                file = SessionFile(root, session.id, sync=False, compact_min_records=4)
                session = file.load()
                assert ([m.to_dict() for m in session.messages], dict(session.result_tiers)) == saved
        loaded = SessionFile(root, session.id).load()
        assert ([m.to_dict() for m in loaded.messages], dict(loaded.result_tiers)) == saved
