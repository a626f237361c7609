// E2E in real VS Code (code-server, auto-save off as on the desktop): the user has typed into a.py without saving;
// the agent's step rewrites a.py on disk (sed -i), then the agent edits a.py. Neither side is lost: the chat says at
// once that a.py has unsaved changes and the step changed it on disk, the agent's edit of the buffer is refused with
// that reason, the buffer keeps the user's text (still unsaved) and the disk keeps the step's change.
//
// Usage: node test/e2e/behind.mjs --vsix ollie-0.1.0.vsix [--keep]   (env: see harness.mjs)

import * as fs from "node:fs";
import * as path from "node:path";
import { askUntilReply, dirtyTabs, log, waitMs, withUnsavedNote } from "./harness.mjs";

const script = [
  { text: "Bumping x.", tool_calls: [{ name: "execute_code", arguments: { steps: [{ code: "sed -i 's/x = 1/x = 2/' a.py", language: "bash" }] } }] },
  { text: "Setting it to 3.", tool_calls: [{ name: "call_tool", arguments: { calls: [{ tool: "file_edit", args: ["a.py", "x = 1", "x = 3"] }] } }] },
  { text: "I left a.py to you." },
];

const dirty = (page) => dirtyTabs(page, "a.py");
await withUnsavedNote(script, async ({ page, workspace, dataDir, screenshot }) => {
  const chat = await askUntilReply(page, dataDir, "bump x, then set it to 3", "I left a.py to you.");
  await screenshot("behind");
  const onDisk = fs.readFileSync(path.join(workspace, "a.py"), "utf8");
  // Monaco draws a space as U+00A0.
  const shown = (await page.locator(".monaco-editor .view-lines").first().innerText()).replace(/\u00a0/g, " ");
  const conflict = await page.locator(".notifications-toasts .notification-toast").allInnerTexts();
  log(`disk: ${JSON.stringify(onDisk)}; buffer: ${JSON.stringify(shown)}; dirty: ${await dirty(page)}; toasts: ${JSON.stringify(conflict)}`);
  const told = await chat.locator(".item.notice", { hasText: "a.py has unsaved changes in the editor, and this step changed the file on disk" }).count();
  const text = await chat.locator("#log").innerText();
  log(`chat: ${JSON.stringify(text)}`);
  if (onDisk !== "x = 2\n") throw new Error(`the step's change on disk was overwritten: ${JSON.stringify(onDisk)}`);
  if ((await dirty(page)) !== 1) throw new Error("a.py's buffer was saved");
  if (!shown.includes("# my unsaved note") || !shown.includes("x = 1")) throw new Error(`the buffer lost the user's text: ${shown}`);
  if (told !== 1) throw new Error("the chat did not say a.py changed on disk under the unsaved buffer");
  await chat.locator(".item", { hasText: "not edited: the buffer of a.py has the user's unsaved changes and a step changed the file on disk" }).first()
    .waitFor({ timeout: waitMs, state: "attached" });
  log("a step's change under unsaved edits: said in the chat, the agent's edit refused, the buffer and the disk both kept");
});
