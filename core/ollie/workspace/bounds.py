"""How much of a diff one message reads and carries (apart from `types`: the daemon loads this at start, those with a
first turn that may write)."""

from __future__ import annotations

import attrs


@attrs.frozen(eq=False, repr=False, slots=False)
class Bound:
    """How much of a diff is read and sent: at most `files` files and `text_bytes` of their contents, both sides."""

    files: int
    text_bytes: int


# What one message carries of a diff (a step's `tool` event, an `ollie/changes` answer, a turn's end event): a step may
# write 50,000 files of up to 1 MiB each (the checkpoints' caps), gigabytes read into the daemon and sent to the editor
# in one message. 100 files are more than a person reviews in one list, 4 MiB of text a few seconds of JSON for an editor
# to parse; the rest is counted, and read one file at a time when asked (`ollie/changes {path}`).
LISTED = Bound(files=100, text_bytes=4 << 20)
