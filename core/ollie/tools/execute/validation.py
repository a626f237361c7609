"""Refusing dangerous inline code before it runs, and blocking a session that keeps trying.

A quick, readable refusal for the model, not a boundary: it catches only the shapes it knows (fork bombs
have endless spellings); the per-step process limit (cgroup `pids.max`) is what stops one that gets past.
"""

from __future__ import annotations

import re
import shlex
import time
from bisect import bisect_left, bisect_right
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from itertools import accumulate

# Top-level system dirs whose recursive deletion is never a normal step of a coding task.
_SYSTEM_PATHS = frozenset(
    "/ /bin /boot /dev /etc /home /lib /lib32 /lib64 /libx32 /media /mnt /opt /proc /root /run "
    "/sbin /srv /sys /usr /var /usr/bin /usr/lib /usr/local /usr/sbin /usr/share /var/lib "
    "~ $HOME ${HOME} /* /.".split()
)
_SYSTEM_PREFIX = r"/(?:bin|boot|dev|etc|lib|lib32|lib64|sbin|sys|proc|usr|var|root)\b"
_DISK = r"/dev/(?:sd[a-z]|hd[a-z]|vd[a-z]|xvd[a-z]|nvme\d|mmcblk\d|disk/|mapper/|md\d)"
_HARMLESS_DEV = r"/dev/(?:zero|null|u?random|full|stdin|stdout|stderr|fd/)"


@dataclass(frozen=True)
class Rule:
    """One dangerous pattern: a name the model can read and the regex that finds it."""

    name: str
    pattern: re.Pattern[str]


def _rule(name: str, pattern: str) -> Rule:
    return Rule(name, re.compile(pattern, re.MULTILINE))


# Blanks, not \s: a command after a line break is found at that line's ^ anyway, and \s* there ran over every
# later empty line from each one (quadratic: 16,000 line breaks held the event loop 41 s). A keyword is a word
# of its own (not the `do` of `-do`).
_CMD = r"(?:^|[;&|(`{]|\$\(|(?<![^\s;&|(`{])(?:then|do|else)\b)[ \t]*"
# An option or argument word that holds no command start: a chain of them never runs over the next command's start
# (from each `{` of `xargs -{xargs -{xargs ...` the chain ran to the end: quadratic).
_ARG = r"(?!(?:then|do|else)\b)[^\s;&|(`{$]+"
# Commands that run the next word as a command: `xargs sudo rm`, `nohup su -c ...`.
_WRAPPERS = rf"(?:(?:xargs|exec|nohup|env|time|nice|command|watch|timeout[ \t]+{_ARG})[ \t]+(?:-{_ARG}[ \t]+)*)*"

# A scan from a word to the end of its line stops at the next such word (`(?:(?!WORD)...)*`): from each of a line of
# `dd dd dd ...` it ran to the line's end (quadratic); the last one before the target still finds it.
UNIVERSAL = (
    _rule("filesystem creation (mkfs)", r"\bmkfs(?:\.\w+)?\b"),
    _rule("raw disk read/write with dd", rf"\bdd\b(?:(?!\bdd\b)[^\n;|&])*\b(?:if|of)=(?!{_HARMLESS_DEV})/dev/"),
    _rule("reading the password database (/etc/shadow)", r"/etc/g?shadow\b"),
)

# Outside the shell a quoted sudo is dangerous only as a program to run: the first word of an argv list
# or of an exec-like call (`["sudo", ...]`, `spawn("sudo", ...)`), never as data (`re.search("sudo", line)`).
_EXEC_CALL = r"\b(?:system|exec\w*|spawn\w*|popen|Popen|run|call|check_call|check_output|Command|ProcessBuilder)"
ARGV = (
    _rule("privilege escalation (sudo/su)",
          rf"(?:\[|{_EXEC_CALL}\s*\((?:\s*\[)?)\s*[\"'](?:sudo|doas|su)(?=[\s\"'])"),
)

BASH = (
    # Quoting the command word does not change what runs (`"sudo" rm`); a quoted argument is data.
    _rule("privilege escalation (sudo/su)", rf"{_CMD}{_WRAPPERS}([\"']?)(?:sudo|doas|su)\1(?=\s|$)"),
    _rule("fork bomb", r"(\b\w+|:)\s*\(\s*\)\s*\{[^{}]*\1\s*\|\s*\1\s*&"),
    _rule("writing to a raw disk device", rf">\s*{_DISK}"),
    _rule("eval of downloaded code", r"\beval\b(?:(?!\beval\b).)*\$\(\s*(?:curl|wget)\b"),
    _rule("eval of unchecked arguments", r"\beval\s+[\"']?\$(?:[@*]|\{?[1-9])"),
    _rule("piping a download into a shell",
          r"\b(?:curl|wget)\b(?:(?!\b(?:curl|wget)\b)[^\n|;])*\|\s*(?:sudo\s+)?(?:ba|da|z|k)?sh\b"),
)

PYTHON = (
    _rule("shutil.rmtree of a system path", rf"\brmtree\(\s*[rbuf]?[\"'](?:/|~|{_SYSTEM_PREFIX})/?[\"']"),
    _rule("shutil.rmtree of the home dir", r"\brmtree\(\s*(?:Path\.home\(\)|os\.path\.expanduser\(\s*[\"']~[\"']\s*\))\s*\)"),
    _rule("deleting a system file",
          rf"\b(?:os\.(?:remove|unlink|rmdir)|Path)\(\s*[rbuf]?[\"']{_SYSTEM_PREFIX}[^\"']*[\"']\s*\)(?:\.unlink|\.rmdir)?"),
    _rule("fork bomb", r"while\s+(?:True|1)\s*:\s*os\.fork\(\)"),
    # No other '[' in the list: from each of a line of '[' (or '[fork() ') the scan ran to the line's end.
    _rule("fork bomb", r"\[[^\[\]\n]*\bfork\s*\(\s*\)[^\[\]\n]*\bfor\b[^\[\]\n]*\b(?:iter\s*\(\s*int\b|count\s*\()"),
)

PERL = (
    # `\s*(?:X\s*)?`, never `\s*X?\s*`: that one backtracked over a run of blanks quadratically.
    _rule("unlink of a system file", rf"\bunlink\s*(?:\(\s*)?[\"']{_SYSTEM_PREFIX}"),
    _rule("rmtree of a system path", rf"\b(?:rmtree|remove_tree)\s*(?:\(\s*)?[\"'](?:/|{_SYSTEM_PREFIX})/?[\"']"),
    _rule("fork bomb", r"\bfork\b\s*(?:\(\s*\)\s*)?(?:while|until)\b|\b(?:while|until)\s*(?:\(\s*)?fork\b"
          r"|(?:while\s*\(\s*(?:(?:1|!\s*0)\s*)?\)|for\s*\(\s*;\s*;\s*\))\s*\{[^{}]*\bfork\b"
          r"|\bdo\s*\{[^{}]*\bfork\b[^{}]*\}\s*(?:while|until)\b"),
)

LUA = (
    _rule("os.remove of a system file", rf"\bos\.remove\s*(?:\(\s*)?[\"']{_SYSTEM_PREFIX}"),
)

# Where a language hands a string to a shell: those strings get the bash checks too. A `(` call's arguments run
# to the line's end and are cut at its last `)` after (`\((.*)\)` backtracked from each of a line of calls).
_SHELL_STRINGS = {
    "python3": re.compile(r"\b(?:os\.system|os\.popen|subprocess\.\w+|os\.exec\w*)\s*\((.*)"),
    "perl": re.compile(r"\b(?:system|exec|qx)\s*[\(\{]?(.*)|`([^`]*)`"),
    "lua": re.compile(r"\b(?:os\.execute|io\.popen)\s*\(?(.*)"),
    "awk": re.compile(r"\bsystem\s*\((.*)|print(?:(?!print)[^|\n])*\|\s*(\"[^\"]*\")"),
    "expect": re.compile(r"\b(?:spawn|exec|system)\b(.*)"),
}
# A quoted string; an escaped character outside one is passed over, so that no escaped quote starts a string (from
# each `\"` of a run of them the scan ran to the end: quadratic).
_LITERAL = re.compile(r"\\.|\"((?:[^\"\\]|\\.)*)\"|'((?:[^'\\]|\\.)*)'")
_RM = re.compile(r"(?:^|[\s;&|(`{]|\$\()rm\s+([^;&|\n)`]*)")
_CALL_ARGUMENTS = frozenset({"python3", "awk"})  # their first group is cut at its last `)`
_BY_LANGUAGE = {"bash": BASH, "python3": PYTHON + ARGV, "perl": PERL + ARGV, "lua": LUA + ARGV}
# A search names what it looks for: `grep -rn "sudo" .` runs grep, not sudo. Its words up to the end of the
# command (never into `$(...)` or backticks, which do run) are data for the pattern rules.
_SEARCH = re.compile(rf"{_CMD}(?:git\s+(?:-{_ARG}\s+)*)?(?:grep|egrep|fgrep|zgrep|rg|ag|ack)\b[^\n;&|`()<>$]*",
                     re.MULTILINE)


@dataclass(frozen=True)
class Finding:
    """A dangerous pattern found: which rule, on which line, and the text that matched."""

    rule: str
    line: int
    excerpt: str

    def describe(self) -> str:
        """One line for the model: rule, line number and the offending text."""
        return f"line {self.line}: {self.rule}: {self.excerpt!r}"


def _line_breaks(code: str) -> list[int]:
    # Found once per code and passed down: a count per finding was quadratic on code with a finding on every line.
    return [m.start() for m in re.finditer("\n", code)]


def _line_of(breaks: list[int], offset: int) -> int:
    return bisect_left(breaks, offset) + 1


def _excerpt(text: str) -> str:
    """`text` stripped and cut short: hostile code makes a finding per line, each quoting all the rest."""
    text = text.strip()
    return text if len(text) <= 200 else text[:200] + "..."


def _normalise_target(word: str) -> str:
    target = word.strip("\"'")
    for suffix in ("/*", "/.", "/"):
        if target.endswith(suffix) and len(target) > len(suffix):
            target = target[: -len(suffix)]
    return target or word


def _recursive_system_deletes(code: str, breaks: list[int]) -> list[Finding]:
    """`rm -r`/`rm -rf` (any flag spelling) whose target is a system dir, `/`, or the home dir."""
    found: list[Finding] = []
    for match in _RM.finditer(code):
        try:
            words = shlex.split(match.group(1), comments=True)
        except ValueError:
            words = match.group(1).split()
        flags = [w for w in words if w.startswith("-") and w != "--"]
        recursive = "--recursive" in flags or any(
            not f.startswith("--") and ("r" in f or "R" in f) for f in flags
        )
        targets = {_normalise_target(w) for w in words if not w.startswith("-")}
        if recursive and targets & _SYSTEM_PATHS:
            start = match.start(1)
            found.append(Finding("recursive delete of a system path", _line_of(breaks, start), match.group(0).strip()))
    return found


def _shell_snippets(code: str, language: str) -> list[tuple[int, str]]:
    """(offset, text) of the strings `language` passes to a shell (system(), subprocess, backticks)."""
    pattern = _SHELL_STRINGS.get(language)
    if pattern is None:
        return []
    snippets = []
    for match in pattern.finditer(code):
        groups = list(match.groups())
        if language in _CALL_ARGUMENTS and groups[0] is not None:
            arguments, closed, _ = groups[0].rpartition(")")
            if not closed:
                continue
            groups[0] = arguments
        body = " ".join(g for g in groups if g)
        literals = [m.group(m.lastindex) for m in _LITERAL.finditer(body) if m.lastindex] or [body]
        snippets.append((match.start(), " ".join(literals)))
    return snippets


# A shell function definition: `name() {`, `name () (`, `function name {`, `function name() {`.
_SH_FUNCTION = re.compile(
    r"(?:\bfunction\s+([^\s(){}|&;<>]+)\s*(?:\(\s*\)\s*)?"
    r"|(?:^|(?<=[\s;&|{}]))([^\s(){}|&;<>$\"'`]+)\s*\(\s*\)\s*)[{(]",
    re.MULTILINE,
)
# The words of shell code (a call is a word that is a function's name), and what splits it into commands: the
# separators (group 1 unset) and the `&` and `|` inside a command (group 1).
_WORD = re.compile(r"[^\s(){}|&;<>\"'`]+")
_COMMAND_BREAK = re.compile(r"[;\n]|&&|\|\||([&|])")
# `&` that sends a command to the background, once `&&`, `>&2`, `&>` and `|&` are taken out.
_REDIRECT_AMP = re.compile(r"&&|[0-9]*>&[0-9-]*|&>>?|\|&|<&[0-9-]*")
_SH_ENDLESS = re.compile(
    r"\b(?:while\s+(?:true|:|\[\s*1\s*\]|\(\(\s*1\s*\)\))|until\s+false|for\s*\(\(\s*;\s*;\s*\)\))"
    r"\s*(?:;\s*)?do\b(.*?)\bdone\b",
    re.DOTALL,
)
_DONE = re.compile(r"\bdone\b")
# The script running itself again in the background: `$0 & $0 &`, `while :; do bash "$0" & done`.
_SELF = r"\$(?:0\b|\{0\}|\{?BASH_SOURCE\b)"
_SELF_SPAWN = re.compile(  # the scan to the `&` stops at the next `$0` (from each of a line of them it ran on)
    rf"{_CMD}(?:(?:ba|da|z|k)?sh\s+|exec\s+|\.\s+|source\s+)?[\"']?{_SELF}(?:(?!{_SELF})[^\n;&|])*&(?!&)",
    re.MULTILINE,
)
# A foreground command that paces or ends an endless loop.
_PACES = re.compile(r"\b(?:sleep|wait|read|inotifywait|nc|accept|break|exit|return)\b")
# `perl -e '...'`, `python3 -c "..."`: the one-liner is checked as the language it is.
_ONE_LINER = re.compile(
    r"\b(perl|python3?)\b(?:\s+-[A-Za-z]+)*?\s+-[A-Za-z]*[ec]\s+(?:'([^']*)'|\"((?:[^\"\\]|\\.)*)\")"
)
_PY_ENDLESS = re.compile(r"^([ \t]*)while\s+(?:True|1|not\s+False|not\s+0)\s*:(.*)$", re.MULTILINE)
_PY_FORK = re.compile(r"\b(?:os\.)?fork(?:pty)?\s*\(")
_PY_PACES = re.compile(r"\b(?:sleep|wait\w*|accept|join|recv\w*|input|select|read\w*|get)\s*\(")


def _closing_brackets(code: str) -> dict[int, int]:
    """Each `{` or `(`'s offset -> its matching `}` or `)`'s (either kind closes either, as the old count did)."""
    closes: dict[int, int] = {}
    opened: list[int] = []
    for bracket in re.finditer(r"[{}()]", code):
        if bracket.group() in "{(":
            opened.append(bracket.start())
        elif opened:
            closes[opened.pop()] = bracket.start()
    return closes


def _count(offsets: list[int], start: int, end: int) -> int:
    return bisect_left(offsets, end) - bisect_left(offsets, start)


class _Commands:
    """Shell code (its redirections' `&` blanked) indexed once: where each function's name is called, where
    commands split, where a command has `&` or `|`, so that each function's body is judged without reading it
    again (nested bodies, closed or not, read each other's text over and over: quadratic)."""

    def __init__(self, clean: str, names: set[str]) -> None:
        self.size = len(clean)
        self.calls: dict[str, list[int]] = {}
        for word in _WORD.finditer(clean):
            if word.group() in names:
                self.calls.setdefault(word.group(), []).append(word.start())
        self.break_starts: list[int] = []
        self.break_ends: list[int] = []
        self.amps: list[int] = []
        self.pipes: list[int] = []
        for mark in _COMMAND_BREAK.finditer(clean):
            if mark.group(1) is None:
                self.break_starts.append(mark.start())
                self.break_ends.append(mark.end())
            else:
                (self.amps if mark.group(1) == "&" else self.pipes).append(mark.start())
        # Per name, the commands (start, end) that call it so that it spawns itself, ordered.
        self.spawning: dict[str, tuple[list[int], list[int]]] = {}
        for name, offsets in self.calls.items():
            starts: list[int] = []
            ends: list[int] = []
            for offset in offsets:
                start, end = self.command_around(offset)
                if (not starts or starts[-1] != start) and self.spawns(name, start, end):
                    starts.append(start)
                    ends.append(end)
            self.spawning[name] = (starts, ends)

    def command_around(self, offset: int) -> tuple[int, int]:
        """The (start, end) of the command `offset` is in."""
        index = bisect_right(self.break_starts, offset)
        start = self.break_ends[index - 1] if index else 0
        return start, self.break_starts[index] if index < len(self.break_starts) else self.size

    def spawns(self, name: str, start: int, end: int) -> bool:
        """Whether the text [start, end) of one command calls `name` in the background, or twice into a pipe."""
        calls = _count(self.calls.get(name, []), start, end)
        return calls > 0 and (_count(self.amps, start, end) > 0 or (calls >= 2 and _count(self.pipes, start, end) > 0))

    def body_spawns(self, name: str, start: int, end: int) -> bool:
        """Whether a command of the body [start, end) spawns `name`: its first and last commands cut at the body's
        brackets, the whole ones between."""
        first_end = min(end, self.command_around(start)[1])
        last_start = max(start, self.command_around(end)[0])
        if self.spawns(name, start, first_end) or self.spawns(name, last_start, end):
            return True
        starts, ends = self.spawning.get(name, ([], []))
        index = bisect_left(starts, start)
        return index < len(starts) and ends[index] <= end


def _without_redirects(text: str) -> str:
    """`text` with the `&` of redirections (`2>&1`, `&>`, `|&`) blanked out, same length; `&&` kept."""
    return _REDIRECT_AMP.sub(lambda m: m.group(0) if m.group(0) == "&&" else " " * len(m.group(0)), text)


def _spawns_unpaced(body: str) -> bool:
    """Whether a loop body sends something to the background and nothing in the foreground waits or ends it."""
    parts = re.split(r"(&&|\|\||;|\n|&)", _without_redirects(body))
    background = paced = False
    for command, separator in zip(parts[0::2], [*parts[1::2], ""], strict=True):
        if separator == "&":
            background = True
        elif _PACES.search(command):
            paced = True
    return background and not paced


def _shell_fork_bombs(code: str, breaks: list[int]) -> list[Finding]:
    """Functions that run themselves in the background or into a pipe to themselves; endless loops that spawn."""
    clean = _without_redirects(code)
    found = [Finding("fork bomb (the script re-runs itself in the background)", _line_of(breaks, m.start()),
                     _excerpt(m.group(0))) for m in _SELF_SPAWN.finditer(clean)]
    functions = [(match, match.group(1) or match.group(2)) for match in _SH_FUNCTION.finditer(code)]
    if functions:
        commands, closes = _Commands(clean, {name for _, name in functions}), _closing_brackets(code)
        for match, name in functions:
            end = closes.get(match.end() - 1, len(code))
            # Each call starting 2 more (`f|f`, `f & f`) or a call that outlives its caller (`f &`): unbounded spawning.
            if commands.body_spawns(name, match.end(), end):
                found.append(Finding("fork bomb (a function that spawns itself)", _line_of(breaks, match.start()),
                                     _excerpt(code[match.start(): end + 1])))
    # Up to the last `done`: a loop with none after it never matches, and each of many such ran to the end.
    last_done = max((m.end() for m in _DONE.finditer(code)), default=0)
    for match in _SH_ENDLESS.finditer(code, 0, last_done):
        body = match.group(1)
        if _spawns_unpaced(body):
            found.append(Finding("fork bomb (an endless loop that backgrounds without waiting)",
                                 _line_of(breaks, match.start()), _excerpt(match.group(0))))
    return found


def _python_fork_loops(code: str, breaks: list[int]) -> list[Finding]:
    """`while True:` blocks that call fork() and never wait for anything."""
    headers = [(match, _line_of(breaks, match.start())) for match in _PY_ENDLESS.finditer(code)]
    if not headers:
        return []
    lines = code.split("\n")
    # Lines read once: how many before each line fork or wait (a block's lines were read again for each loop
    # nested around them: quadratic).
    forks = list(accumulate((_PY_FORK.search(line) is not None for line in lines), initial=0))
    paces = list(accumulate((_PY_PACES.search(line) is not None for line in lines), initial=0))
    found = []
    for (match, first), end in zip(headers, _block_ends(lines, [(first, len(m.group(1).expandtabs()))
                                                                for m, first in headers]), strict=True):
        inline = match.group(2)
        forked = _PY_FORK.search(inline) is not None or forks[end] > forks[first]
        paced = _PY_PACES.search(inline) is not None or paces[end] > paces[first]
        if forked and not paced:
            found.append(Finding("fork bomb (fork in an endless loop)", first, _excerpt(match.group(0))))
    return found


def _block_ends(lines: list[str], blocks: list[tuple[int, int]]) -> list[int]:
    """For each block (its first line's index, its header's indent): the index of the first line from there on that
    is not blank and indented no deeper (len(lines) when none), all found in one pass from the bottom."""
    asked: dict[int, list[int]] = {}
    for number, (first, _) in enumerate(blocks):
        asked.setdefault(first, []).append(number)
    ends = [len(lines)] * len(blocks)
    # The lines below the current one that end some block: indents rising towards the nearest.
    indents: list[int] = []
    indices: list[int] = []
    for index in range(len(lines), -1, -1):
        if index < len(lines) and (line := lines[index]).strip():
            indent = len(line) - len(line.lstrip())
            while indents and indents[-1] >= indent:
                indents.pop()
                indices.pop()
            indents.append(indent)
            indices.append(index)
        for number in asked.get(index, ()):
            nearest = bisect_right(indents, blocks[number][1]) - 1
            if nearest >= 0:
                ends[number] = indices[nearest]
    return ends


def _one_liners(code: str, breaks: list[int]) -> list[Finding]:
    """Findings in `perl -e '...'` and `python -c '...'` programs inside shell code."""
    found = []
    for match in _ONE_LINER.finditer(code):
        language = "perl" if match.group(1) == "perl" else "python3"
        program = match.group(2) if match.group(2) is not None else match.group(3).replace('\\"', '"')
        for finding in find_dangerous(program, language):
            found.append(Finding(f"{finding.rule} (in a {match.group(1)} one-liner)", _line_of(breaks, match.start()),
                                 finding.excerpt))
    return found


def find_dangerous(code: str, language: str) -> list[Finding]:
    """Every dangerous pattern in `code` for `language` (universal, language rules, shell strings)."""
    findings: list[Finding] = []
    breaks = _line_breaks(code)
    rules = UNIVERSAL + _BY_LANGUAGE.get(language, ARGV)
    # (start, end) of the arguments of search commands (grep, rg, ...) in shell code: data, not commands.
    searched = [(m.end() - len(m[0].lstrip()), m.end()) for m in _SEARCH.finditer(code)] if language == "bash" else []
    searched_starts = [start for start, _ in searched]
    for rule in rules:
        for match in rule.pattern.finditer(code):
            at = match.start(0) + len(match.group(0)) - len(match.group(0).lstrip())
            inside = bisect_right(searched_starts, at) - 1  # the one search that may hold it (they never overlap)
            if inside >= 0 and at < searched[inside][1]:
                continue
            findings.append(Finding(rule.name, _line_of(breaks, match.start()), _excerpt(match.group(0))))
    if language in ("bash", "expect"):
        findings += _recursive_system_deletes(code, breaks)
    if language == "bash":
        findings += _shell_fork_bombs(code, breaks) + _one_liners(code, breaks)
    if language == "python3":
        findings += _python_fork_loops(code, breaks)
    for offset, snippet in _shell_snippets(code, language):
        line = _line_of(breaks, offset)
        for finding in _recursive_system_deletes(snippet, _line_breaks(snippet)) + [
            Finding(r.name, 1, m.group(0)) for r in BASH if (m := r.pattern.search(snippet))
        ]:
            findings.append(Finding(f"{finding.rule} (via a shell command)", line, finding.excerpt))
    return sorted(set(findings), key=lambda f: (f.line, f.rule))


class SessionBlocked(Exception):
    """The session failed validation too often and is blocked for a while (the message says until when)."""


class ValidationGate:
    """Counts validation failures; 5 within 60 seconds block the session for 300 seconds."""

    _max = 5
    _window = 60.0
    _block = 300.0

    def __init__(self, *, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._failures: deque[float] = deque()
        self._blocked_until = 0.0

    def ensure_open(self) -> None:
        """Raise SessionBlocked (its message says until when) while the session is blocked."""
        now = self._clock()
        if now < self._blocked_until:
            raise SessionBlocked(
                f"execution is blocked for this session until "
                f"{time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime(self._blocked_until))} "
                f"after {self._max} rejected programs within {self._window:g} s "
                f"({self._blocked_until - now:.0f} s left)",
            )

    def record_failure(self) -> None:
        """Count one rejected program; the fifth within the window starts a block."""
        now = self._clock()
        self._failures.append(now)
        while self._failures and now - self._failures[0] > self._window:
            self._failures.popleft()
        if len(self._failures) >= self._max:
            self._blocked_until = now + self._block
            self._failures.clear()

    def check(self, code: str, language: str) -> list[Finding]:
        """Validate `code`; a non-empty result is counted as a failure (and may start a block)."""
        findings = find_dangerous(code, language)
        if findings:
            self.record_failure()
        return findings
