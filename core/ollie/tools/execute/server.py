"""The execute server: execute_code, call_tool and pipe behind the Server protocol."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ollie import beneath, paths
from ollie.errors import OllieError
from ollie.sandbox.errors import SandboxError
from ollie.tools.base import Approver, ParallelClass, Tier, ToolInfo, ToolResult
from ollie.tools.dispatcher import Dispatcher
from ollie.tools.documents import EditorDocuments
from ollie.tools.execute.args import EXECUTORS, CallRequest, CodeRequest, ExecuteRequest, PipeRequest, ScriptCall
from ollie.tools.execute.ceiling import UNSANDBOXED, SandboxCeilingError, check_within
from ollie.tools.execute.editorcalls import EDITOR_SCRIPTS
from ollie.tools.execute.editordocs import DocumentBridge
from ollie.tools.execute.elevation import ELEVATION_MODES, ElevationGate
from ollie.tools.execute.parsed import ParsedCall, ParsedCalls, judged
from ollie.tools.execute.schemas import (
    EXECUTE_CODE_DESCRIPTION,
    EXECUTE_CODE_SCHEMA,
    PIPE_DESCRIPTION,
    PIPE_SCHEMA,
    call_tool_description,
    call_tool_schema,
)
from ollie.tools.execute.tool import ToolNameError, ToolScript, candidates, discover, find_script, mtime_ns

if TYPE_CHECKING:  # the executors load with the first call: a session's start and first request need none
    from ollie.sandbox.policy import Policy
    from ollie.tools.editor.knowledge import EditorKnowledge
    from ollie.tools.execute.context import CallContext
    from ollie.tools.execute.runner import Runner
    from ollie.tools.execute.validation import ValidationGate

SERVER_NAME = "execute"
# Results the model consumes at once: the loop may collapse them to a one-line summary.
COLD_TOOLS = frozenset({"file_read", "memory_recall", "web_fetch", "web_search", "lsp_definition", "lsp_references",
                        "lsp_hover"})
# Code up to this long is checked for dangerous patterns on the loop: the check grows with the code (~0.5 µs a
# character of shell), and below this it costs less than the hop to a thread (0.1-0.3 ms) on every call's path.
INLINE_CHECK_CHARS = 256


class ExecuteServer:
    """Runs model-requested code and tool scripts for one session, sandboxed, locked and time-limited."""

    def __init__(
        self,
        *,
        cwd: Path,
        session_id: str,
        env: dict[str, str] | None = None,
        sandbox: str = "default",
        lock_dir: Path | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._session_id = session_id
        self._cwd = Path(cwd)  # its real path (Setup's): a step refuses it once a link leads elsewhere
        self._lock_dir = Path(lock_dir) if lock_dir else paths.runtime_tmp_dir() / session_id
        self._env = dict(env or {})
        # Built at the first call or policy read (its module loads the sandbox's spawn machinery): listing the
        # tools, which a first request does, needs none of it.
        self._built_runner: Runner | None = None
        self._sandbox = sandbox
        self._clock = clock
        self._validation: ValidationGate | None = None  # built at the first call: its ~40 regexes cost a first turn
        # A bare server (a library user, the tests) lets elevated steps run; an agent's Core sets its mode.
        self._elevation = ElevationGate()
        self._executors: list[str] | None = None
        self._allowed_tools: set[str] | None = None
        self._catalog_key: tuple[Any, ...] | None = None
        self._catalog: dict[str, ToolScript] = {}
        # The editor's open documents (None: the file tools see the disk only).
        self._documents = DocumentBridge()
        # The editor's knowledge (None: the editor tools are not offered).
        self._editor: EditorKnowledge | None = None
        self._parsed = ParsedCalls(resolve=self.resolve, allowed=self._tool_allowed)

    # -- configuration (the optional server capabilities) --

    @property
    def _runner(self) -> Runner:
        if self._built_runner is None:
            from ollie.tools.execute.runner import Runner

            self._built_runner = Runner(session_id=self._session_id, cwd=self._cwd, lock_dir=self._lock_dir,
                                        session_env=self._env)
        return self._built_runner

    def set_cwd(self, cwd: Path) -> None:
        """Run later calls in `cwd`, a real path (walked by the caller): refused once that no longer is its real path."""
        self._cwd = Path(cwd)
        if self._built_runner is not None:
            self._built_runner.cwd = self._cwd

    def set_env(self, key: str, value: str) -> None:
        """Add `key=value` to the env of every later child."""
        self._env[key] = value  # the runner's own dict, once it is built

    def set_restrictions(self, executors: list[str] | None, tools: list[str] | None) -> None:
        """Offer only these executors and tool scripts (None: all)."""
        self._executors = list(executors) if executors is not None else None
        self._allowed_tools = set(tools) if tools is not None else None

    def set_documents(self, documents: EditorDocuments | None) -> None:
        """Let the file tools read and edit the editor's open documents through `documents` (None: the disk)."""
        self._documents.documents = documents

    def forget_reads(self, paths: Iterable[Path]) -> None:
        """Forget what the model saw of the open documents at `paths` (a rewind put them back): its next edit of one
        is not stale. Those of the others still guard the user's typing since the kept turns read them."""
        for path in paths:
            self._documents.seen.pop(path, None)

    def set_editor(self, editor: EditorKnowledge | None) -> None:
        """Offer the editor tools (editor_diagnostics, ...) answered by `editor` (None: do not offer them)."""
        self._editor = editor

    @property
    def gate(self) -> ValidationGate:
        """The session's validation rate limiter."""
        if self._validation is None:
            from ollie.tools.execute.validation import ValidationGate

            self._validation = ValidationGate(clock=self._clock)
        return self._validation

    # -- tool scripts --

    def scripts(self) -> list[ToolScript]:
        """The tool scripts this session may call, by name."""
        dirs = paths.tools_path()
        key = tuple((str(d), mtime_ns(d)) for d in dirs) + tuple(
            (str(f), mtime_ns(f)) for d in dirs for f in candidates(d).values()
        )
        if key != self._catalog_key:
            self._catalog, self._catalog_key = discover(dirs), key
        found = {**self._catalog, **(EDITOR_SCRIPTS if self._editor is not None else {})}
        return [s for name, s in sorted(found.items()) if self._tool_allowed(name)]

    def _tool_allowed(self, name: str) -> bool:
        return self._allowed_tools is None or name in self._allowed_tools

    def resolve(self, name: str) -> ToolScript:
        """The script `name` refers to; ToolNameError when unsafe, unknown or not allowed."""
        if name in EDITOR_SCRIPTS:
            if self._editor is None:
                raise ToolNameError(f"{name} asks the editor, and no editor that answers it is connected")
            script = EDITOR_SCRIPTS[name]
        else:
            script = find_script(name, paths.tools_path())
        if not self._tool_allowed(name):
            raise ToolNameError(f"tool {name!r} is not allowed for this agent")
        return script

    # -- the Server protocol --

    def _executor_allowed(self, name: str) -> bool:
        return self._executors is None or name in self._executors

    def list_tools(self) -> list[ToolInfo]:
        """execute_code, call_tool and pipe (those not restricted away)."""
        scripts = self.scripts()
        infos = [
            ToolInfo("execute_code", EXECUTE_CODE_DESCRIPTION, EXECUTE_CODE_SCHEMA, server=SERVER_NAME),
            ToolInfo("call_tool", call_tool_description(scripts), call_tool_schema([s.name for s in scripts]),
                     server=SERVER_NAME),
            ToolInfo("pipe", PIPE_DESCRIPTION, PIPE_SCHEMA, server=SERVER_NAME),
        ]
        return [info for info in infos if self._executor_allowed(info.name)]

    async def call(self, tool: str, args: dict[str, Any]) -> ToolResult:
        """Run one executor call; bad input, refusals and blocks come back as error results."""
        if tool not in EXECUTORS:
            return ToolResult(f"unknown tool {tool!r}; this server offers {', '.join(EXECUTORS)}", is_error=True)
        if not self._executor_allowed(tool):
            return ToolResult(f"{tool} is not allowed for this agent", is_error=True)
        from ollie.tools.execute.executors import call_tool, execute_code, pipe, refuse_dangerous
        from ollie.tools.execute.flock import LockTimeout
        from ollie.tools.execute.validation import SessionBlocked

        try:
            self.gate.ensure_open()
            parsed = self._parsed.parse(tool, args)
            request = parsed.get()
            ctx = self._context(request, parsed)
            steps = request.code_steps()
            if sum(len(step.code) for step in steps) <= INLINE_CHECK_CHARS:
                refusal = refuse_dangerous(self.gate, steps)
            else:  # off the event loop: the patterns' cost grows with what the model wrote (megabytes of code)
                refusal = await asyncio.to_thread(refuse_dangerous, self.gate, steps)
            if refusal is not None:
                return refusal
            if isinstance(request, CodeRequest):
                return await execute_code(ctx, request)
            if isinstance(request, CallRequest):
                return await call_tool(ctx, request, self._documents, self._editor)
            assert isinstance(request, PipeRequest)  # parse_request makes one of the three
            if any(s.tool in EDITOR_SCRIPTS for s in request.script_calls()):
                return ToolResult("pipe: the editor tools are no pipe stages; call them with call_tool", is_error=True)
            return await pipe(ctx, request)
        except SessionBlocked as exc:
            return ToolResult(str(exc), is_error=True)
        except LockTimeout as exc:
            return ToolResult(f"timed out: {exc}", is_error=True)
        except OllieError as exc:
            return ToolResult(f"{tool}: {exc}", is_error=True)

    def resolver(self, tool: str, args: dict[str, Any]) -> Callable[[str], ToolScript]:
        """The script lookup of one call (each name found once): the approval judges the call by what it finds, and
        the run, handed it (`parsed.judged`), runs that."""
        return self._parsed.resolver(self._parsed.parse(tool, args))

    def request(self, tool: str, args: dict[str, Any]) -> ExecuteRequest:
        """The call's arguments as parsed once for the classifiers, the approval and the run; ArgumentError if wrong."""
        return self._parsed.parse(tool, args).get()

    async def write_refusal(self, tool: str, args: dict[str, Any]) -> str | None:
        """Why the call's file writes would be refused whatever the user answers (see writecheck); None: not so."""
        if tool not in EXECUTORS or not self._executor_allowed(tool):
            return None
        from ollie.tools.execute.writecheck import write_refusal, writes

        try:
            parsed = self._parsed.parse(tool, args)
            request = parsed.get()
            calls = request.script_calls()
            if not writes(calls):  # no context is made for a call that writes nothing
                return None
            return await write_refusal(self._context(request, parsed), calls)
        except OllieError:
            return None  # the call itself reports it

    def _context(self, request: ExecuteRequest, parsed: ParsedCall) -> CallContext:
        from ollie.tools.execute.context import CallContext
        from ollie.tools.execute.flock import LockManager
        from ollie.tools.execute.runner import Deadline

        timeout = request.timeout
        self._runner.tools_dirs = paths.tools_path()
        self._runner.prepare_dirs()
        env = self._runner.env()
        policy = self._policy(request.sandbox or self._sandbox, env)
        resolve = judged.get() or self._parsed.resolver(parsed)
        if policy is not None and _reads_only(request, resolve):
            # It ran unasked because it only reads: so it writes nothing (a `git status` in a clone whose
            # `.git/config` names a core.fsmonitor program ran that program, which wrote the workspace).
            # Its private tmp dir and the device nodes (`/dev/null`, `/dev/tty`...) stay writable; no directory
            # does (a policy's `/dev/shm` holds shared memory other programs of the user read).
            policy = policy.reading(keep=(self._runner.dirs.tmp, *(p for p in policy.writable()
                                                                   if p.parent == Path("/dev") and p.is_char_device())))
        return CallContext(
            runner=self._runner,
            locks=LockManager(self._runner.lock_dir),
            gate=self.gate,
            resolve=resolve,
            policy=policy,
            deadline=Deadline(timeout),
            timeout=timeout,
            elevation=self._elevation,
            env=env,
        )

    def setup_warnings(self) -> list[str]:
        """What protecting the session's policy changed (a workspace at $HOME granted read-only...), for the user."""
        if self._sandbox == UNSANDBOXED:
            return []
        try:
            return self._runner.policy_warnings(self._runner.policy(self._sandbox))
        except OllieError:
            # A broken policy file is reported by the first call that needs it.
            return []

    def policy_problem(self) -> str:
        """Why the session's sandbox policy does not load (its file and key named), "" when it does."""
        if self._sandbox == UNSANDBOXED:
            return ""
        try:
            # Only a file the user wrote can be broken (ollie's own load in its tests): for those, PyYAML and the
            # policy's modules (~1.3 MiB, ~25 ms of CPU) wait for the first step, which many sessions never take.
            if not paths.shipped_policy(self._sandbox):
                from ollie.sandbox.policy import load_policy  # parsed once per text: the first step's load reuses it

                load_policy(self._sandbox, cwd=self._cwd, env=self._env)
        except OllieError as exc:
            return f"{exc}; fix the file: no step runs until it loads"
        return ""

    def writable(self) -> tuple[Path, ...]:
        """What the session's steps are granted to write (its policy built now if no step built it yet: the dirs it
        grants every step, such as the project's notes, hold what earlier sessions' steps left)."""
        if self._sandbox == UNSANDBOXED:
            return ()
        try:
            return self._runner.policy(self._sandbox).writable()
        except OllieError:
            return ()  # a broken policy file runs no step

    def set_elevation(self, mode: str, approver: Approver | None) -> None:
        """How elevated steps are treated: "allow", "deny", or "ask" `approver` each time."""
        if mode not in ELEVATION_MODES:
            raise ValueError(f"elevation must be one of {', '.join(ELEVATION_MODES)} (got {mode!r})")
        self._elevation = ElevationGate(mode, approver)

    def _policy(self, requested: str, env: dict[str, str]) -> Policy | None:
        """The call's policy: the session's, or a narrower one the call names (None: unsandboxed agent)."""
        if requested == UNSANDBOXED and self._sandbox != UNSANDBOXED:
            raise SandboxCeilingError(
                "a tool call cannot turn the sandbox off; only an agent configured with \"sandbox\": \"none\" "
                "(yolo) or an elevated step runs outside it"
            )
        if requested == UNSANDBOXED:
            return None
        # Another session's step swapped it for a link; its real path is taken from when it was set, never from
        # when this server was built (an agent switch builds one), which may come after the swap.
        if (now := beneath.moved(self._cwd)) is not None:
            raise SandboxError(f"the working directory {self._cwd} is now a symlink to {now}, which the sandbox does "
                               "not grant: /cwd to a directory")
        policy = self._runner.policy(requested, env)
        if self._sandbox != UNSANDBOXED and requested != self._sandbox:
            check_within(policy, self._runner.policy(self._sandbox, env))
        return policy

    # -- classifiers --

    def _called(self, tool: str, args: dict[str, Any]) -> list[tuple[ScriptCall, ToolScript]]:
        """call_tool's calls with their scripts, from the call's one parse; none for other executors or bad arguments."""
        if tool != "call_tool":
            return []
        parsed = self._parsed.parse(tool, args)
        resolve = self._parsed.resolver(parsed)
        try:
            return [(call, resolve(call.tool)) for call in parsed.get().script_calls()]
        except OllieError:
            return []

    def classify_parallel(self, tool: str, args: dict[str, Any]) -> ParallelClass:
        """read when every called script is read-only; write when all are annotated; else global (any elevated)."""
        called = self._called(tool, args)
        # An elevated call runs outside the sandbox: its script's "read" promise binds nothing there.
        if not called or any(call.elevated for call, _ in called):
            return "global"
        from ollie.tools.execute.flock import combine_classes  # the locks' module loads with a first call
        return combine_classes(script.parallel for _, script in called)

    def classify_tier(self, tool: str, args: dict[str, Any]) -> Tier:
        """The hottest tier among the called scripts: the built-in cold list, else the script's annotation, else hot."""
        called = self._called(tool, args)
        tiers: list[Tier] = ["cold" if script.name in COLD_TOOLS else script.tier or "hot" for _, script in called]
        return max(tiers or ["hot"], key=("cold", "warm", "hot").index)


def _reads_only(request: ExecuteRequest, resolve: Callable[[str], ToolScript]) -> bool:
    """Whether the call is shell lines that only read (`readers`) and bundled readers (`file_read`...), which every
    approval mode runs unasked; a reader's name is one only where `resolve` finds the bundled script or the user's own
    (a project's `file_read` is asked about as any script, and runs as it was allowed)."""
    from ollie.tools.execute.readers import READER_SCRIPTS, is_read_only_command  # with a first call
    steps, calls = request.code_steps(), request.script_calls()
    return bool(steps or calls) and all(c.tool in READER_SCRIPTS and resolve(c.tool).trusted() for c in calls) and all(
        s.language.name == "bash" and not s.elevated and is_read_only_command(s.code) for s in steps)


def new_dispatcher(
    *, cwd: Path, session_id: str, env: dict[str, str] | None = None, sandbox: str = "default"
) -> Dispatcher:
    """A fresh dispatcher holding one execute server (`execute_code`, `call_tool`, `pipe`)."""
    dispatcher = Dispatcher()
    dispatcher.add_server(SERVER_NAME, ExecuteServer(cwd=cwd, session_id=session_id, env=env, sandbox=sandbox))
    return dispatcher
