"""Which refusals a step's stderr reports are the sandbox's (said plainly) and which are the files' own modes."""

from __future__ import annotations

from pathlib import Path

from ollie.sandbox.policy import parse_policy
from ollie.tools.execute.sandboxnotes import denied_notes, network_notes


def test_each_way_programs_report_a_refusal_is_read(tmp_path: Path):
    work, outside = tmp_path / "work", tmp_path / "outside"
    work.mkdir()
    outside.mkdir()
    policy = parse_policy("filesystem: {ro: ['/etc'], rox: ['/usr'], rw: ['{CWD}']}\n", source="p.yaml", name="p",
                          cwd=work)
    stderr = (f"bash: line 1: {outside}/tool: Permission denied\n"  # exec outside rox (status 126)
              f"cat: /etc/shadow: Permission denied\n"  # readable path: the file's own mode, not the sandbox
              f"PermissionError: [Errno 13] Permission denied: '{outside}/data.csv'\n").encode()
    notes = denied_notes(policy, stderr, 126, work)
    assert [note.split(" is ")[0] for note in notes] == [
        f"blocked by ollie's sandbox: {outside}/tool", f"blocked by ollie's sandbox: {outside}/data.csv"], notes
    assert "filesystem.rox in p.yaml" in notes[0]
    written = denied_notes(policy, b"sh: 1: notes.txt: Read-only file system\n"
                                   b"OSError: [Errno 30] Read-only file system: '/etc/hosts'\n", 1, outside)
    assert [note.split(" is ")[0] for note in written] == [
        f"blocked by ollie's sandbox: {outside}/notes.txt", "blocked by ollie's sandbox: /etc/hosts"], written
    assert all("outside the writable paths" in note and "filesystem.rw" in note for note in written)
    (work / ".git").mkdir()
    assert denied_notes(policy, b"touch: cannot touch '.git/x': Read-only file system\n", 1, work) == [
        f"blocked by ollie's sandbox: {work}/.git/x is in a .git directory, which steps see read-only"]
    assert denied_notes(policy, b"all fine\n", 0, work) == []
    # ollie's own tools refuse a path before touching it, in words of their own (tools/_toolkit.py `checked_path`).
    tools = denied_notes(policy, f"file_read: ../outside/a b.txt: outside the sandbox's readable paths (/etc, {work})\n"
                                 "file_edit: /etc/hosts: read-only in the sandbox: outside the sandbox's writable paths "
                                 f"({work})\n".encode(), 1, work)
    assert [note.split(" is outside the ")[1].split(" paths ")[0] for note in tools] == ["allowed", "writable"], tools
    assert f"{outside}/a b.txt" in tools[0] and "filesystem.ro in p.yaml" in tools[0], tools
    assert tools[1].startswith("blocked by ollie's sandbox: /etc/hosts") and "filesystem.rw in p.yaml" in tools[1]


def test_a_step_gets_at_most_three_network_notes_link_local_ones_counted(tmp_path: Path):
    """Link-local refusals were noted apart from the count: three of them let every later refused address add its
    note (a step trying a whole subnet got a note per host)."""
    policy = parse_policy("filesystem: {rw: ['{CWD}']}\n", source="p.yaml", name="p", cwd=tmp_path)
    refused = [{"host": host, "port": 80, "verdict": "denied", "how": "non-public address"}
               for host in ("169.254.169.254", "169.254.0.1", "fe80::1", "10.0.0.1", "10.0.0.2", "10.0.0.3")]
    notes = network_notes(policy, refused)
    assert len(notes) == 3, notes
    assert all("is a link-local address" in note for note in notes), notes
