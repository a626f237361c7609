// E2E in real VS Code (code-server, auto-save off as on the desktop): the user has typed into a.py without saving;
// the agent's step rewrites a.py with its very bytes (`sed -i` that matches nothing: a new inode and mtime), then the
// agent edits a.py. Nothing on disk would be lost, so the client saves the edit with the user's text (before, the new
// mtime alone made it answer changedOnDisk: the edit stayed unsaved and the call failed as "changed on disk"). The
// chat tells the user their unsaved line was saved with the edit, and Undo in the editor takes back the edit alone.
//
// Usage: node test/e2e/samebytes.mjs --vsix ollie-0.1.0.vsix [--keep]   (env: see harness.mjs)

import * as fs from "node:fs";
import * as path from "node:path";
import { askUntilReply, dirtyTabs, log, until, withUnsavedNote } from "./harness.mjs";

const script = [
  { text: "Tidying.", tool_calls: [{ name: "execute_code", arguments: { steps: [{ code: "sed -i 's/no such text/y/' a.py", language: "bash" }] } }] },
  { text: "Setting x to 3.", tool_calls: [{ name: "call_tool", arguments: { calls: [{ tool: "file_edit", args: ["a.py", "x = 1", "x = 3"] }] } }] },
  { text: "I set x." },
];

await withUnsavedNote(script, async ({ page, workspace, dataDir, screenshot }) => {
  const chat = await askUntilReply(page, dataDir, "tidy, then set x to 3", "I set x.");
  await screenshot("samebytes");
  const onDisk = fs.readFileSync(path.join(workspace, "a.py"), "utf8");
  const text = await chat.locator("#log").innerText();
  log(`disk: ${JSON.stringify(onDisk)}; dirty: ${await dirtyTabs(page, "a.py")}; chat: ${JSON.stringify(text)}`);
  if (text.includes("changed on disk")) throw new Error("a rewrite with the same bytes was taken for a change on disk");
  if (!onDisk.startsWith("x = 3\n# my unsaved note")) throw new Error(`the agent's edit was not saved: ${JSON.stringify(onDisk)}`);
  log("a step's rewrite with the same bytes: the agent's edit saved with the user's text");
  if (!text.replace(/\s+/g, " ").includes("a.py had your unsaved changes in the editor: the agent's edit was made on top of them")) {
    throw new Error("the chat did not tell the user their unsaved line was saved with the edit");
  }
  log("the chat told the user their unsaved line was saved with the edit");
  const lines = async () => (await page.locator(".monaco-editor .view-lines").first().innerText()).replace(/\u00a0/g, " ");
  await page.locator(".monaco-editor .view-lines").first().click();
  await page.keyboard.press("Control+Z");
  await until("the editor's undo", async () => (await lines()).includes("x = 1"));
  await screenshot("samebytes-undone");
  if (!(await lines()).includes("# my unsaved note")) throw new Error(`the undo took the user's line: ${await lines()}`);
  log("undo in the editor took back the agent's edit alone");
});
