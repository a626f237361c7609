// E2E in real VS Code (code-server, auto-save off as on the desktop): the user has typed into a.py without saving;
// the agent's step rewrites a.py with its very bytes (`sed -i` that matches nothing: a new inode and mtime), then the
// agent edits a.py. Nothing on disk would be lost, so the client saves the edit with the user's text (before, the new
// mtime alone made it answer changedOnDisk: the edit stayed unsaved and the call failed as "changed on disk").
//
// Usage: node test/e2e/samebytes.mjs --vsix ollie-0.1.0.vsix [--keep]   (env: see harness.mjs)

import * as fs from "node:fs";
import * as path from "node:path";
import { askUntilReply, dirtyTabs, log, withUnsavedNote } from "./harness.mjs";

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
});
