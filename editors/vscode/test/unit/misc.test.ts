import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { test } from "node:test";
import { chatCsp, chatHtml } from "../../src/lib/chatHtml";
import { DAEMON_LOST, choicePlaceholder, isDaemonGone, parseAgentList, parseMcpList, parseModelList } from "../../src/lib/protocol";
import { resolveServerCommand } from "../../src/lib/serverCommand";
import { describeState, formatCost, statusBarText, statusBarTooltip } from "../../src/lib/status";
import { unlinked } from "../../src/lib/notice";

const root = path.resolve(__dirname, "..", "..", "..");

test("state and cost text", () => {
  assert.equal(describeState("idle"), "idle");
  assert.equal(describeState("thinking"), "thinking");
  assert.equal(describeState("calling: file_read"), "calling tool: file_read");
  // The tool's name is the model's: the status bar drew its `$(check)` as an icon, and obeyed its U+202E.
  assert.equal(statusBarText("calling: $(question) Ollie: waiting for your answer\u202e", undefined, true),
    "$(sync~spin) Ollie: calling tool: \\$(question) Ollie: waiting for your answer\\u202e");
  assert.equal(describeState("$(check) approved"), "\\$(check) approved");
  assert.equal(formatCost(0.5), "$0.50");
  assert.equal(formatCost(0.0012), "$0.0012");
  assert.equal(formatCost("$1.5"), "$1.50");
  assert.equal(formatCost({ total: 2 }), "$2.00");
  assert.equal(formatCost(undefined), "");
  assert.equal(statusBarText("calling: shell", 0.25, true), "$(sync~spin) Ollie: calling tool: shell · $0.25");
  assert.equal(statusBarText("idle", undefined, true), "$(comment-discussion) Ollie: idle");
  assert.equal(statusBarText("idle", 1, false), "$(circle-slash) Ollie: stopped");
  assert.equal(statusBarText("idle", 1, false, true), "$(sync~spin) Ollie: starting");
  // A question waits for the user: the turn's "thinking" would say Ollie is busy.
  assert.equal(statusBarText("thinking", 0.25, true, false, true), "$(question) Ollie: waiting for your answer · $0.25");
  // Its hover says what the item says, and what a click does (it said "Ollie — idle" of a stopped daemon, "Ollie —
  // thinking" while a question waited, and a tool's raw state).
  assert.equal(statusBarTooltip("$(circle-slash) Ollie: stopped"), "Ollie: stopped. Click to open the chat.");
  assert.equal(statusBarTooltip("$(question) Ollie: waiting for your answer · $0.25"),
    "Ollie: waiting for your answer, session cost $0.25. Click to open the chat.");
});

test("server command: the setting, then PATH; never a workspace's .venv", () => {
  const base = { args: ["--log-file", "x"], pathEnv: "/usr/bin:/opt/bin" };
  assert.deepEqual(resolveServerCommand({ ...base, configured: " /my/ollie-lsp ", isExecutable: () => false }), {
    command: "/my/ollie-lsp",
    args: ["--log-file", "x"],
  });
  assert.deepEqual(resolveServerCommand({ ...base, configured: "", isExecutable: (f) => f === "/opt/bin/ollie-lsp" || f === "/w/.venv/bin/ollie-lsp" }), {
    command: "/opt/bin/ollie-lsp",
    args: ["--log-file", "x"],
  });
  // A repository's own .venv/bin/ollie-lsp would run as the user, unsandboxed: not found, said plainly.
  const missing = resolveServerCommand({ ...base, configured: "", isExecutable: (f) => f.endsWith("/.venv/bin/ollie-lsp") });
  assert.ok("error" in missing && /not find ollie-lsp on PATH/.test(missing.error) && /ollie\.serverCommand/.test(missing.error));
  // Installed by pipx in ~/.local/bin, not on the editor's PATH: it said to install what was installed.
  const offPath = resolveServerCommand({ ...base, configured: "", home: "/home/u", isExecutable: (f) => f === "/home/u/.local/bin/ollie-lsp" });
  assert.deepEqual(offPath, { error: 'ollie-lsp is in /home/u/.local/bin, which is not on PATH: run "pipx ensurepath" and restart VS Code ' +
    'from a new shell; or set "ollie.serverCommand" to "/home/u/.local/bin/ollie-lsp".' });
});

test("server command: a relative PATH entry is never searched, for ollie-lsp or a command named by the setting", () => {
  // `bin`, `.` or `node_modules/.bin` on PATH, and the workspace folder (where the daemon starts) carrying one:
  // the check ran against the extension host's own directory, the spawn searched PATH again from the folder.
  const isExecutable = () => true;
  const base = { args: [], pathEnv: ["node_modules/.bin", ".", "", "/usr/local/bin"].join(path.delimiter), isExecutable };
  assert.deepEqual(resolveServerCommand({ ...base, configured: "" }), { command: "/usr/local/bin/ollie-lsp", args: [] });
  assert.deepEqual(resolveServerCommand({ ...base, configured: "python3" }), { command: "/usr/local/bin/python3", args: [] });
  const relativeOnly = { ...base, pathEnv: "bin" };
  assert.ok("error" in resolveServerCommand({ ...relativeOnly, configured: "" }));
  const named = resolveServerCommand({ ...relativeOnly, configured: "ollie-lsp" });
  assert.ok("error" in named && /full path/.test(named.error), JSON.stringify(named));
});

test("server command: a Python running ollie_lsp as a module never takes the workspace folder's package", () => {
  // `python3 -m ollie_lsp` started in a repository carrying `ollie_lsp/`: -m put the folder first on the import path.
  const base = { pathEnv: "/usr/bin", isExecutable: (f: string) => f === "/usr/bin/python3" };
  assert.deepEqual(resolveServerCommand({ ...base, configured: "python3", args: ["-m", "ollie_lsp"] }),
    { command: "/usr/bin/python3", args: ["-P", "-m", "ollie_lsp"] });
  assert.deepEqual(resolveServerCommand({ ...base, configured: "/opt/venv/bin/python3.12", args: ["-X", "utf8", "-m", "ollie_lsp"] }),
    { command: "/opt/venv/bin/python3.12", args: ["-P", "-X", "utf8", "-m", "ollie_lsp"] });
  // Already safe, or not a module run, or not Python: as written.
  for (const args of [["-P", "-m", "ollie_lsp"], ["-I", "-m", "ollie_lsp"], ["/opt/ollie/main.py"]]) {
    assert.deepEqual(resolveServerCommand({ ...base, configured: "python3", args }), { command: "/usr/bin/python3", args });
  }
  assert.deepEqual(resolveServerCommand({ ...base, configured: "/opt/bin/ollie-lsp", args: ["-m", "x"] }),
    { command: "/opt/bin/ollie-lsp", args: ["-m", "x"] });
});

test("the chat page's CSP runs only the nonce'd script and never inline code", () => {
  const csp = chatCsp("https://ext.example", "abc123");
  assert.match(csp, /default-src 'none'/);
  assert.match(csp, /script-src 'nonce-abc123'(;|$)/);
  assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval|\*/);
  const html = chatHtml({ cspSource: "https://ext.example", nonce: "abc123", scriptUri: "https://ext.example/dist/webview.js", styleUri: "https://ext.example/media/chat.css" });
  const scripts = html.match(/<script[^>]*>/g) ?? [];
  assert.deepEqual(scripts, ['<script nonce="abc123" src="https://ext.example/dist/webview.js">']);
  assert.ok(html.includes(`content="${csp}"`));
});

test("the chat page is accessible: a log for the transcript, labelled controls, the four approval modes", () => {
  const html = chatHtml({ cspSource: "c", nonce: "n", scriptUri: "s.js", styleUri: "chat.css", iconsUri: "codicon.css" });
  assert.match(html, /<main id="log" role="log" aria-live="polite" aria-label="Conversation" tabindex="0">/, "the transcript scrolls by keyboard too");
  assert.ok(html.indexOf('href="codicon.css"') < html.indexOf('href="chat.css"'), "the icon font loads before the view's styles");
  assert.deepEqual([...html.matchAll(/<option value="([^"]+)"/g)].map((m) => m[1]), ["ask", "auto-edit", "auto", "read-only"]);
  assert.match(html, /<select id="approval" aria-label="Approval mode">/);
  // The mode a user reads never looks like an agent's name (the agent picker lists `ask`, as `/agent ask` takes it).
  const labels = [...html.matchAll(/<option value="[^"]+"[^>]*>([^<]+)</g)].map((m) => m[1]);
  assert.deepEqual(labels, ["Ask first", "Auto-edit", "Auto", "Read-only"], "short: the header gives the title the room");
  const agents = fs.readdirSync(path.join(root, "..", "..", "agents")).filter((f) => f.endsWith(".json")).map((f) => f.slice(0, -5));
  assert.ok(agents.includes("ask"), `agents: ${agents}`);
  for (const label of labels) assert.ok(!agents.includes(label.toLowerCase()), `the approval mode "${label}" reads like the agent "${label.toLowerCase()}"`);
  // Every icon-only button says what it does.
  for (const tag of html.match(/<button[^>]*class="icon-button"[^>]*>/g) ?? []) assert.match(tag, /aria-label="[^"]+"/);
  assert.doesNotMatch(html, /id="state"|id="cost"/, "state and cost live in the status bar only");
  assert.doesNotMatch(html, /class="note"/, "no note where the workspace says where Ollie works");
  const noFolder = chatHtml({ cspSource: "c", nonce: "n", scriptUri: "s.js", styleUri: "chat.css", note: "No folder is open: <home>" });
  assert.match(noFolder, /<div id="empty" class="empty" hidden>[^]*<p class="note">No folder is open: &lt;home><\/p>[^]*<\/div>/);
  // Neither the empty new chat nor "Loading the session…" shows before the extension's first reset says which: after a
  // window reload the session comes back, and the empty page flashed for as long as the daemon took to start.
  assert.match(html, /<p id="loading" class="empty" role="status" hidden>/);
});

test("the model and agent pickers' choices come from listModels and listAgents", () => {
  assert.deepEqual(parseModelList({ backend: "openai", current: "b", models: ["a", "b", 7], error: "" }), {
    current: "b",
    choices: [{ name: "a", description: "" }, { name: "b", description: "" }],
  });
  const agents = parseAgentList({
    current: "default",
    agents: [
      { name: "default", description: "general", error: "" },
      { name: "broken", description: "", error: "bad JSON" },
      { description: "no name" },
    ],
  });
  assert.deepEqual(agents, {
    current: "default",
    choices: [{ name: "default", description: "general" }, { name: "broken", description: "cannot load: bad JSON" }],
  });
  assert.deepEqual(parseModelList(null), { current: undefined, choices: [] });
});

test("the MCP servers of ollie/mcp/list: state, why one failed, tool, prompt and resource names; malformed ones dropped", () => {
  const servers = parseMcpList({
    servers: [
      { name: "gh", state: "ready", error: "", tools: [{ name: "mcp__gh__create_issue" }, { bad: 1 }], prompts: [{ name: "review" }],
        resources: [{ uri: "note://readme", name: "readme" }, { name: "no uri" }] },
      { name: "db", state: "failed", error: "exited (status 1)", tools: [] },
      { state: "ready" },
    ],
  });
  assert.deepEqual(servers, [
    { name: "gh", state: "ready", error: "", tools: ["mcp__gh__create_issue"], prompts: ["review"], resources: [{ uri: "note://readme", name: "readme" }] },
    { name: "db", state: "failed", error: "exited (status 1)", tools: [], prompts: [], resources: [] },
  ]);
  assert.deepEqual(parseMcpList(null), []);
});

// That none collides with the daemon's ollie.<method> commands: tests/editors/test_method_names.py.
test("every command the extension contributes is registered", () => {
  const manifest = JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8"));
  const contributed: string[] = manifest.contributes.commands.map((c: { command: string }) => c.command);
  const source = fs.readFileSync(path.join(root, "src", "commands.ts"), "utf8");
  for (const id of contributed) assert.ok(source.includes(`"${id}":`), `${id} is contributed but not registered`);
});

test("the model/agent pick says why it is empty instead of showing nothing, and what a switch clears", () => {
  assert.equal(choicePlaceholder("qwen3", 3), "current: qwen3 — pick or type a name");
  assert.equal(choicePlaceholder("qwen3", 0), "current: qwen3 — none listed (is the backend up?): type a name");
  assert.equal(choicePlaceholder(undefined, 2), "pick or type a name");
});

test("a request lost with the daemon's connection reads as the daemon gone, not as the client's jargon", () => {
  // vscode-jsonrpc rejects the pending ollie/submit with code -32097 when the daemon is killed mid-turn.
  assert.equal(isDaemonGone({ code: -32097, message: "Pending response rejected since connection got disposed" }), true);
  assert.equal(isDaemonGone({ code: -32099, message: "write error" }), true);
  assert.equal(isDaemonGone({ code: -32602, message: "session not found" }), false);
  assert.equal(isDaemonGone(new Error("the ollie daemon is not running")), false);
  assert.equal(isDaemonGone(undefined), false);
  assert.match(DAEMON_LOST, /send the prompt again/);
});

test("a notification's text makes no link of the model's `[label](command:...)`", () => {
  // VS Code's own pattern for links in a notification's message (base/common/linkedText.ts).
  const linked = /\[([^\]]+)\]\(((?:https?:\/\/|command:|file:)[^\)\s]+)(?: (["'])(.+?)(\3))?\)/gi;
  const text = "ollie: done. [Open the fix](command:workbench.action.terminal.sendSequence?%7B%7D) [x](https://e.test) [y](file:///etc/passwd)";
  assert.equal(text.match(linked)?.length, 3);
  assert.equal(unlinked(text).match(linked), null);
  assert.equal(unlinked(text).replace(/\u200b/g, ""), text, "shown as written");
});
