// E2E steps in more windows of the same code-server (each window its own extension host and daemon): a second
// window on the same folder, a multi-root workspace, a window with no folder open. A scenario appends
// WINDOW_REPLIES to its scripted model and calls otherWindows() at its end, with its first window still open.

import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { artifacts, chatFrame, daemonPids, loadWorkbench, log, openChat, runCommand, send, until, waitForSavedPrompt, waitForStatus, waitMs, work } from "./harness.mjs";

const second = path.join(work, "second");

/** The scripted model's replies to these steps, in order (the scenario's daemons must run with approval `auto`). */
export const WINDOW_REPLIES = [
  { text: "Answer in window B." },
  { text: "Window B still answers." },
  { text: "Editing lib.", tool_calls: [{ name: "call_tool", arguments: { calls: [{ tool: "file_edit", args: ["lib.py", "x = 1\n", "x = 2\n"] }] } }] },
  { text: "Changed [lib.py](lib.py)." },
  { text: "That file is in the other folder." },
  { text: "Answer with no folder." },
  { text: "Answer about the untitled buffer." },
];

async function openWindow(browser, address, query) {
  const page = await browser.contexts()[0].newPage();
  await loadWorkbench(page, `${address}/${query}`);
  await waitForStatus(page, /Ollie: idle/);
  // Until the chat has taken the focus (once its script runs), keys meant for the explorer could go to its input.
  await openChat(page);
  return page;
}

async function chatText(page) {
  return (await (await chatFrame(page)).locator("#log").textContent()) ?? "";
}

/** Send a prompt in the window's chat and wait for `answer`. */
async function ask(page, text, answer) {
  await send(await chatFrame(page), text);
  await until(`"${answer}" in the chat`, async () => (await chatText(page)).includes(answer));
}

async function askAboutSelection(page, text) {
  await page.keyboard.press("Control+A");
  await runCommand(page, "Ollie: Ask About Selection");
  await page.waitForFunction(() => /Ask About Selection$/.test(document.querySelector(".quick-input-widget .quick-input-title")?.textContent ?? ""), null, { timeout: waitMs });
  await page.locator(".quick-input-widget input").fill(text);
  await page.keyboard.press("Enter");
}

// The saved session logs holding `needle`.
function logsHolding(dataDir, needle) {
  const dir = path.join(dataDir, "ollie", "sessions");
  return fs.readdirSync(dir).filter((name) => name.endsWith(".jsonl") && fs.readFileSync(path.join(dir, name), "utf8").includes(needle));
}

/**
 * Run the steps. `first`: the scenario's window, showing a conversation that says `firstSays`; `workspace` its folder.
 * Closes `first`; screenshots go to the artifacts as windows-*.png.
 */
export async function otherWindows(options) {
  try {
    await steps(options);
  } catch (err) {
    // The harness screenshots its own (closed) window: these steps' windows are the ones that tell.
    for (const [i, page] of options.browser.contexts()[0].pages().entries()) {
      await page.screenshot({ path: path.join(artifacts, `windows-failure-${i}.png`) }).catch(() => undefined);
      fs.writeFileSync(path.join(artifacts, `windows-failure-${i}-chat.log`), await chatText(page).catch(() => ""));
    }
    throw err;
  }
}

async function steps({ browser, first, workspace, dataDir, firstSays }) {
  const address = new URL(first.url()).origin;
  const shot = (page, name) => page.screenshot({ path: path.join(artifacts, `windows-${name}.png`) });

  // 1. A second window on the same folder: its own daemon and its own session (the first one's runs there: resuming
  // it too would have two daemons append to one session log), and it keeps working once the first window closed.
  const before = daemonPids().length;
  const b = await openWindow(browser, address, `?folder=${encodeURIComponent(workspace)}`);
  await until("a daemon for the second window", () => daemonPids().length === before + 1);
  await (await chatFrame(b)).locator("#empty").waitFor({ timeout: waitMs });
  if ((await chatText(b)).includes(firstSays)) throw new Error("the second window resumed the first window's live session");
  await ask(b, "hello from window B", "Answer in window B.");
  await shot(b, "second-window");
  const [own] = logsHolding(dataDir, "Answer in window B.");
  if (logsHolding(dataDir, firstSays).includes(own)) throw new Error("both windows wrote one session log");
  await first.close();
  await until("the first window's daemon gone", () => daemonPids().length === before);
  await ask(b, "still there?", "Window B still answers.");
  log("a second window on the folder runs its own daemon and session, and works on once the first closed");

  // 2. A multi-root workspace: the session works in the folder of the file its first prompt is about (its edit there
  // lands, links open that folder's file); a later prompt about the other folder's file is told it cannot change it.
  fs.mkdirSync(second, { recursive: true });
  const lib = path.join(second, "lib.py");
  fs.writeFileSync(lib, "x = 1\n");
  const workspaceFile = path.join(work, "two.code-workspace");
  fs.writeFileSync(workspaceFile, JSON.stringify({ folders: [{ path: workspace }, { path: second }] }));
  const m = await openWindow(browser, address, `?workspace=${encodeURIComponent(workspaceFile)}`);
  await b.close();
  const explorer = m.locator(".explorer-folders-view .monaco-list-row");
  // code-server now and then opens a just-written workspace file with no folders (its explorer says "No Folder
  // Opened"): a reload reads it again.
  await explorer.filter({ hasText: "second" }).or(m.getByText("You have not yet added a folder")).first().waitFor({ timeout: waitMs });
  if (!(await explorer.filter({ hasText: "second" }).count())) {
    log("the workspace opened with no folders: reloading it");
    await m.reload({ waitUntil: "commit", timeout: waitMs });
    await waitForStatus(m, /Ollie: idle/);
  }
  await explorer.filter({ hasText: "second" }).first().click();
  await m.keyboard.press("ArrowRight");
  await explorer.filter({ hasText: "lib.py" }).first().click();
  await m.locator(".tabs-container .tab.active", { hasText: "lib.py" }).waitFor({ timeout: waitMs });
  await m.locator(".monaco-editor .view-line").first().click();
  await askAboutSelection(m, "Change x");
  await until("the answer", async () => (await chatText(m)).includes("Changed lib.py"));
  // The edit went to the open buffer (unsaved, as in any window): saved, it is second/lib.py's.
  await m.locator(".monaco-editor .view-line", { hasText: "x = 2" }).first().waitFor({ timeout: waitMs });
  await m.keyboard.press("Control+S");
  await until("the edit of lib.py in the second folder on disk", () => fs.readFileSync(lib, "utf8") === "x = 2\n");
  const chat = await chatFrame(m);
  const openApp = async () => {
    await explorer.filter({ hasText: "app.py" }).first().click();
    await m.locator(".tabs-container .tab.active", { hasText: "app.py" }).waitFor({ timeout: waitMs });
  };
  await openApp();
  await chat.locator(".item.assistant a", { hasText: "lib.py" }).last().click();
  await m.locator(".tabs-container .tab.active", { hasText: "lib.py" }).waitFor({ timeout: waitMs });
  const crumbs = (await m.locator(".breadcrumbs-control").first().textContent()) ?? "";
  if (!crumbs.includes("second")) throw new Error(`the link opened ${JSON.stringify(crumbs)}, not second/lib.py`);
  if (fs.existsSync(path.join(workspace, "lib.py"))) throw new Error("a relative path went into the first folder");
  await shot(m, "multi-root");
  await openApp();
  await m.locator(".monaco-editor .view-line").first().click();
  await askAboutSelection(m, "And this one?");
  await until("the note on the other folder", async () => /works in .*second: it cannot change workspace\/app\.py/.test(await chatText(m)));
  await until("the answer", async () => (await chatText(m)).includes("That file is in the other folder."));
  await shot(m, "multi-root-other-folder");
  await m.close();
  log("multi-root: the session works in the folder of the file asked about, its links open there, the other folder is named");

  // 3. No folder open: the chat says where Ollie works (home), sessions run there, and a question about an untitled
  // buffer's selection reaches the model.
  const known = new Set(daemonPids());
  const n = await openWindow(browser, address, "?ew=true");
  const empty = (await chatFrame(n)).locator("#empty");
  await empty.locator(".note", { hasText: "No folder is open: Ollie works in your home folder" }).waitFor({ timeout: waitMs });
  const pid = await until("the no-folder window's daemon", () => daemonPids().find((p) => !known.has(p)));
  const cwd = fs.readlinkSync(`/proc/${pid}/cwd`);
  if (cwd !== os.homedir()) throw new Error(`with no folder the daemon works in ${cwd}, not ${os.homedir()}`);
  await shot(n, "no-folder");
  await ask(n, "hello with no folder", "Answer with no folder.");
  // Picked by its row: the palette's first match can be "Compare New Untitled Text Files".
  await n.keyboard.press("F1");
  await n.locator(".quick-input-widget input").fill(">New Untitled Text File");
  await n.locator(".quick-input-list .monaco-list-row", { hasText: "New Untitled Text File", hasNotText: "Compare" }).first().click();
  await n.locator(".tabs-container .tab.active", { hasText: "Untitled-1" }).waitFor({ timeout: waitMs });
  await n.keyboard.type("some untitled text");
  await askAboutSelection(n, "What is this?");
  await waitForSavedPrompt(dataDir, ["File: untitled:Untitled-1", "some untitled text", "What is this?"]);
  await until("the answer", async () => (await chatText(n)).includes("Answer about the untitled buffer."));
  await shot(n, "no-folder-untitled");
  await n.close();
  log("with no folder open the chat says it works in home, runs there, and asks about an untitled selection");
}
