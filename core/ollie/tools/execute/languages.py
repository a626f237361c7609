"""The interpreters tool code runs under: how inline code and script files become an argv."""

from __future__ import annotations

import functools
import os
import shlex
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import attrs

from ollie import paths, programs, regularfile
from ollie.errors import OllieError


class LanguageError(OllieError):
    """Unknown language, missing interpreter, or a script whose language cannot be told."""


@attrs.frozen(eq=False, repr=False, slots=False)
class Language:
    """One interpreter: its program, the flags that make it read a program file, how it takes input."""

    name: str
    program: str
    file_flags: tuple[str, ...] = ()
    extensions: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    # ed reads its commands on stdin and edits the file named by the first argument.
    commands_on_stdin: bool = False
    # jq with no input would print nothing: run it with -n when nothing is piped in.
    null_input_flag: str | None = None
    # Other program names that provide the same language (Debian ships lua5.4, not lua).
    fallbacks: tuple[str, ...] = ()


# Lua's versioned program names: each also names the language.
_LUA_VERSIONS = ("lua5.4", "lua5.3", "lua5.1", "luajit")
# A machine may have only one awk, under its own name.
_AWKS = ("gawk", "mawk", "nawk")

LANGUAGES: dict[str, Language] = {
    lang.name: lang
    for lang in (
        Language("bash", "bash", extensions=(".sh", ".bash"), aliases=("sh",)),
        Language("python3", "python3", extensions=(".py",), aliases=("python",)),
        Language("perl", "perl", extensions=(".pl",)),
        Language("lua", "lua", extensions=(".lua",), aliases=_LUA_VERSIONS, fallbacks=_LUA_VERSIONS),
        Language("awk", "awk", ("-f",), (".awk",), _AWKS, fallbacks=_AWKS),
        Language("sed", "sed", ("-f",), (".sed",)),
        Language("jq", "jq", ("-f",), (".jq",), null_input_flag="-n"),
        Language("ed", "ed", ("-s",), (".ed",), commands_on_stdin=True),
        Language("expect", "expect", ("-f",), (".exp", ".expect")),
        Language("bc", "bc", ("-lq",), (".bc",)),
    )
}


def language(name: str) -> Language:
    """The language called `name` (or one of its aliases); LanguageError when unknown."""
    key = name.strip().lower()
    if key in LANGUAGES:
        return LANGUAGES[key]
    for lang in LANGUAGES.values():
        if key in lang.aliases:
            return lang
    known = ", ".join(LANGUAGES)
    raise LanguageError(f"unknown language {name!r}; supported: {known}")


def resolve_interpreter(lang: Language, search_path: str | None) -> str:
    """Absolute path of `lang`'s program on `search_path`; LanguageError naming it when absent."""
    found = next(filter(None, (shutil.which(p, path=search_path) for p in (lang.program, *lang.fallbacks))), None)
    if lang.name == "python3" and (found is None or programs.starts_with(found, b"#!")):
        # A `#!` script is a version-manager shim (a FIFO is never read): pyenv's costs ~190 ms per start and needs its
        # own env; the Python running ollie is a real python3 and always present.
        return _own_python()
    if found is None:
        raise LanguageError(
            f"interpreter {lang.program!r} for language {lang.name!r} is not installed "
            f"(not found on PATH)"
        )
    return found


@dataclass(eq=False, repr=False)
class Invocation:
    """A ready-to-spawn command: argv, what to feed it on stdin, and whether it needs its TMPDIR at /tmp."""

    argv: list[str]
    stdin: bytes | None
    # ed keeps its buffer in a tmpfile(), which ignores TMPDIR and uses /tmp, which no sandbox grants.
    tmp_at_tmp: bool = False
    # Extra env for this one child (the file tools' OLLIE_EDITOR_COPY and OLLIE_WRITE_CHECK: editordocs, writecheck).
    env: tuple[tuple[str, str], ...] = ()
    # (script, args) of a bundled Python tool script that the fork server's pre-imported worker may run.
    python: tuple[str, tuple[str, ...]] | None = None


def with_env(build: Callable[[], Invocation], key: str, value: str) -> Callable[[], Invocation]:
    """`build` (a deferred Invocation) with `key=value` in that one child's env."""

    def built() -> Invocation:
        invocation = build()
        return replace(invocation, env=(*invocation.env, (key, value)))

    return built


def code_invocation(
    lang: Language, program_file: Path, *, search_path: str | None, piped_input: bytes | None
) -> Invocation:
    """The argv running the inline program saved in `program_file`, reading `piped_input` (a script of no arguments)."""
    return script_invocation(lang, (), program_file, [], search_path=search_path, piped_input=piped_input)


@dataclass(eq=False, repr=False)
class Shebang:
    """A script's `#!` line: the interpreter's base name and the flags after it."""

    program: str
    flags: tuple[str, ...]


def parse_shebang(first_line: str) -> Shebang | None:
    """Parse `#!/usr/bin/env -S python3 -I` and the like; None when there is no `#!`."""
    if not first_line.startswith("#!") or not (words := shlex.split(first_line[2:])):
        return None
    program, rest = os.path.basename(words[0]), words[1:]
    if program == "env":
        while rest and rest[0].startswith("-"):
            rest = rest[1:]
        if not rest:
            return None
        program, rest = os.path.basename(rest[0]), rest[1:]
    return Shebang(program, tuple(rest))


def script_language(path: Path, first_line: str) -> tuple[Language, tuple[str, ...]]:
    """The language of a script and the shebang flags to keep; LanguageError when it cannot be told."""
    shebang = parse_shebang(first_line)
    if shebang is not None:
        try:
            lang = language(shebang.program)
        except LanguageError:
            # python3.11, perl5.36: the versioned name of a known interpreter
            lang = language(shebang.program.rstrip("0123456789."))
        # The language's own file flags are added again when the script runs.
        flags = tuple(f for f in shebang.flags if f not in lang.file_flags and f != "-f")
        return lang, flags
    for lang in LANGUAGES.values():
        if path.suffix in lang.extensions:
            return lang, ()
    raise LanguageError(f"cannot tell the language of {path.name}: no #! line and no known extension")


# A tool script is read whole only to pin an elevated one's bytes (and ed's, fed on stdin); ollie's own are 10 KB.
SCRIPT_CAP = regularfile.CONFIG_CAP


def script_bytes(path: Path) -> bytes:
    """The whole of tool script `path`, a regular file of at most SCRIPT_CAP bytes (OSError otherwise): a tools dir a
    step may write (`OLLIE_TOOLS_PATH` inside the project) may hold a FIFO or a huge file by the time it is read."""
    return regularfile.read_file_sync(path, SCRIPT_CAP)


def script_invocation(
    lang: Language,
    flags: tuple[str, ...],
    script: Path,
    args: list[str],
    *,
    search_path: str | None,
    piped_input: bytes | None,
) -> Invocation:
    """The argv running a tool script with `args` injected the way its language takes arguments."""
    interpreter = resolve_interpreter(lang, search_path)
    if lang.commands_on_stdin:
        if piped_input:
            raise LanguageError(f"{script.name}: ed reads its commands on stdin and cannot take piped input; "
                                "use sed or awk")
        return Invocation([interpreter, *lang.file_flags, *flags, *args], script_bytes(script), tmp_at_tmp=True)
    extra: list[str] = []
    if lang.null_input_flag and piped_input is None and not args:
        extra.append(lang.null_input_flag)
    python = (str(script), tuple(args)) if _preimported(lang, flags, interpreter, script) else None
    return Invocation([interpreter, *flags, *extra, *lang.file_flags, str(script), *args], piped_input,
                      python=python)


def _preimported(lang: Language, flags: tuple[str, ...], interpreter: str, script: Path) -> bool:
    """Whether the fork server's interpreter may run `script` for `interpreter -I`: one of ollie's own tools.

    Those are stdlib-only and ship with ollie, so the fork server's `-I -S` interpreter
    (ollie's own Python, with their imports done) runs them as the real one would.
    """
    # Through links: a venv's python3, or Debian's python3 -> python3.11, is the same program.
    if lang.name != "python3" or flags != ("-I",) or os.path.realpath(interpreter) != _own_python():
        return False
    return os.path.dirname(os.path.realpath(script)) == _bundled_tools()


@functools.cache
def _own_python() -> str:
    return os.path.realpath(sys.executable)


@functools.cache
def _bundled_tools() -> str:
    return os.path.realpath(paths.bundled("tools"))
