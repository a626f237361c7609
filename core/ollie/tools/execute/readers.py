"""Shell lines that only read (a conservative allow-list): they run unasked, and in a sandbox that writes nothing."""

from __future__ import annotations

import re
import shlex

# Commands that only read; `git` etc. only with a read-only subcommand. Options that write or run
# something are refused below, and anything with redirection or substitution is never read-only.
READ_ONLY_COMMANDS: frozenset[str] = frozenset({
    "ls", "cat", "head", "tail", "wc", "grep", "egrep", "fgrep", "rg", "pwd", "echo", "printf", "which", "file",
    "stat", "tree", "du", "df", "diff", "sort", "uniq", "cut", "tr", "nl", "basename", "dirname", "realpath",
    "find", "true", "date", "whoami", "printenv", "uname", "less", "more", "column", "jq",
})
# The bundled tool scripts that only read files: a `pipe` stage of one reads as `cat` or `grep` would.
READER_SCRIPTS: frozenset[str] = frozenset({"file_read", "file_glob", "file_grep"})
READ_ONLY_SUBCOMMANDS: dict[str, frozenset[str]] = {
    "git": frozenset({"status", "diff", "log", "show", "blame", "ls-files", "rev-parse", "grep"}),
}
# (`-o` attached or in a cluster, `sort -uo out`; `--out=`, getopt's abbreviation of `--output`, and `--co=` of sort's
# `--compress-program`; `git grep -O<cmd>`; rg's `--hostname-bin`.)
_UNSAFE_OPTIONS = re.compile(r"^(-exec|-execdir|-ok|-okdir|-delete|-fprint\w*|-fls|--pre(=.*)?|-[a-zA-Z]*o.*|--ou\w*(=.*)?|"
                             r"--co(m[\w-]*)?(=.*)?|--hostname-bin(=.*)?|--ext-diff|-i|--in-place|-O.*|"
                             r"--open-files-in-pager(=.*)?)$")
# The longest shell line that may read as read-only.
READ_ONLY_CHARS = 4096
SHELL_SYNTAX = re.compile(r"[<>`$;&(){}\n\\]")
# An unquoted glob that may expand to a name starting with `-` (the workspace names it: a file `--pre=sh` makes
# `rg x *` run `sh` on every file): `./*` cannot. Fine for readers that have no option that writes or runs.
_OPTION_GLOB = re.compile(r"[*?\[]|-.*[*?\[]")
_GLOB_SAFE = frozenset({"ls", "cat", "head", "tail", "wc", "grep", "egrep", "fgrep"})
# `2>&1` as a word of its own (`pytest 2>&1 | tail`) only joins stderr to stdout; glued to the word before it,
# `printf x2>&1y` is bash's `printf x2 >&1y`, which writes the file `1y`.
_STDERR_TO_STDOUT = re.compile(r"(?<![^\s|])2>&1(?![^\s|])")


def without_stderr_joined(code: str) -> str:
    """`code` with each `2>&1` that is a word of its own cut out (what it runs is the same)."""
    return _STDERR_TO_STDOUT.sub(" ", code).strip()


def is_read_only_command(code: str) -> bool:
    """Whether a shell line only reads: allow-listed commands, maybe piped, no redirection (but `2>&1`) or
    substitution."""
    code = without_stderr_joined(code)
    # (Past a line's length it is no command to run unasked, and `shlex` splits a model's 50 MB one for minutes.)
    if not code or len(code) > READ_ONLY_CHARS or SHELL_SYNTAX.search(code):
        return False
    for segment in code.split("|"):
        try:
            words = shlex.split(segment)
            if words and words[0] not in _GLOB_SAFE and any(
                    _OPTION_GLOB.match(w) for w in shlex.split(segment, posix=False)):
                return False
        except ValueError:
            return False
        if not words or any(_UNSAFE_OPTIONS.match(w) for w in words[1:]):
            return False
        name = words[0]
        if name in READ_ONLY_SUBCOMMANDS:
            # The subcommand first: an option before it may set config (`-c`, `--config-env`) that runs a program.
            if len(words) < 2 or words[1] not in READ_ONLY_SUBCOMMANDS[name]:
                return False
        elif (name not in READ_ONLY_COMMANDS
              or (name == "uniq" and len([w for w in words if not w.startswith("-")]) > 2)
              or (name == "file" and {"-C", "--compile"} & set(words))
              or (name == "tree" and any(re.fullmatch(r"-[^-]*R.*", w) for w in words))
              or (name == "less" and any(re.match(r"-[a-zA-Z]*k|--lesskey", w) for w in words))):
            # `uniq IN OUT` writes OUT, `file -C` a compiled magic file, `tree -R` (in a cluster too) 00Tree.html
            # files; a less key file's `#env` sets LESSOPEN
            return False
    return True
