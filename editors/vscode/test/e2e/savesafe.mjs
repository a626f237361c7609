// E2E in real VS Code (code-server, auto-save off as on the desktop): the user has typed into a.py without saving,
// then a.py changes on disk outside the agent's steps (the user's `git checkout` in a terminal) while the extension
// host is too busy to hear of it in time. The agent edits a.py (after the user set its language mode): the edit goes
// into the buffer, but the client does not save it over the change on disk (changedOnDisk): the disk keeps the
// checkout, the buffer stays unsaved, the chat shows the call failed saying why, and a warning says so.
//
// Usage: node test/e2e/savesafe.mjs --vsix ollie-0.1.0.vsix [--keep]   (env: see harness.mjs)

import * as fs from "node:fs";
import * as path from "node:path";
import { askUntilReply, dirtyTabs, freezeExtensionHost, log, runCommand, typeUnsaved, until, waitForNotification, waitMs, withUnsavedNote } from "./harness.mjs";

const script = [
  { text: "Setting x to 3.", tool_calls: [{ name: "call_tool", arguments: { calls: [{ tool: "file_edit", args: ["a.py", "x = 1", "x = 3"] }] } }] },
  { text: "I set x." },
];
const CHECKED_OUT = "x = 5  # checked out\n";

const dirty = (page) => dirtyTabs(page, "a.py");
await withUnsavedNote(script, async ({ page, workspace, dataDir, screenshot }) => {
  // The extension host is busy (stopped here) while the user reverts a.py, types into it again and checks it out: it
  // hears of the revert (a.py clean, `x = 1`) only after the checkout, and once took the checkout for what a.py held.
  const thaw = freezeExtensionHost();
  await runCommand(page, "File: Revert File");
  await until("a.py reverted", async () => (await dirty(page)) === 0);
  await typeUnsaved(page, "a.py", "# my unsaved note");
  // The user sets the buffer's language: extensions see the document closed and opened again, unsaved edits and all
  // (the client once forgot there what the document last agreed with on disk, and then saved over the checkout).
  await runCommand(page, "Change Language Mode");
  await page.locator(".quick-input-widget input").fill("Plain Text");
  await page.locator(".quick-input-list .monaco-list-row", { hasText: "Plain Text" }).first().waitFor({ timeout: waitMs });
  await page.keyboard.press("Enter");
  await page.locator(".statusbar-item", { hasText: "Plain Text" }).first().waitFor({ timeout: waitMs });
  fs.writeFileSync(path.join(workspace, "a.py"), CHECKED_OUT);
  thaw();

  const chat = await askUntilReply(page, dataDir, "set x to 3", "I set x.");
  await waitForNotification(page, "a.py changed on disk since the editor read it");
  await screenshot("savesafe");
  const onDisk = fs.readFileSync(path.join(workspace, "a.py"), "utf8");
  // Monaco draws a space as U+00A0.
  const shown = (await page.locator(".monaco-editor .view-lines").first().innerText()).replace(/\u00a0/g, " ");
  log(`disk: ${JSON.stringify(onDisk)}; buffer: ${JSON.stringify(shown)}; dirty: ${await dirty(page)}`);
  log(`chat: ${JSON.stringify(await chat.locator("#log").innerText())}`);
  if (onDisk !== CHECKED_OUT) throw new Error(`the change made on disk was overwritten: ${JSON.stringify(onDisk)}`);
  if ((await dirty(page)) !== 1) throw new Error("a.py's buffer was saved");
  if (!shown.includes("# my unsaved note") || !shown.includes("x = 3")) throw new Error(`the edit is not in the buffer: ${shown}`);
  await chat.locator(".item", { hasText: "your edit is in the editor's buffer only, not saved: a.py changed on disk" }).first()
    .waitFor({ timeout: waitMs, state: "attached" });
  log("a change made on disk outside the steps: the agent's edit stays in the buffer, unsaved, and both are told");
});
