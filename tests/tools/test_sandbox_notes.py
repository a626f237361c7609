"""Which refusals a step's stderr reports are the sandbox's (said plainly) and which are the files' own modes."""

from __future__ import annotations

from pathlib import Path

from ollie.sandbox.policy import parse_policy
from ollie.tools.execute.sandboxnotes import denied_notes


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
