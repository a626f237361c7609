// E2E in real VS Code (code-server): the user trims on save (files.trimTrailingWhitespace, a save participant as
// editor.formatOnSave's formatter is). The agent's edit of an open document, saved by ollie and trimmed by that save
// (its own line and another), is undone from the chat's Changed files: the file goes back to before the turn, as
// her save formats it (before: refused, "the file was edited since this change (by you, ...)").
//
// Usage: node test/e2e/formatonsave.mjs --vsix ollie-0.1.0.vsix [--keep]   (env: see harness.mjs)

import * as fs from "node:fs";
import * as path from "node:path";
import { ask, chatFrame, freePort, log, serverEnvFor, until, waitForStatus, waitMs, withVSCode } from "./harness.mjs";

const NOTES = Array.from({ length: 12 }, (_, i) => `line ${i + 1}\n`).join("");
const script = [
  { text: "Editing notes.txt.", tool_calls: [{ name: "call_tool", arguments: { calls: [
    { tool: "file_edit", args: ["notes.txt", "line 3\n", "line three  \n"] }] } }] },
  { text: "Edited three." },
];
const port = await freePort();

await withVSCode(
  {
    script: null,
    files: { "notes.txt": NOTES.replace("line 7\n", "line 7   \n") },
    serverEnv: { ...serverEnvFor(`http://127.0.0.1:${port}/v1`), OLLIE_APPROVAL: "auto" },
    settings: { "workbench.editor.enablePreview": false, "files.autoSave": "off", "files.trimTrailingWhitespace": true,
                "editor.formatOnSave": true },
  },
  async ({ page, workspace, startLLM, screenshot }) => {
    await startLLM(script, { port });
    await waitForStatus(page, /Ollie: idle/);
    const notes = path.join(workspace, "notes.txt");
    await page.keyboard.press("Control+P");
    await page.locator(".quick-input-widget input").fill("notes.txt");
    await page.locator(".quick-input-list .monaco-list-row", { hasText: "notes.txt" }).first().waitFor({ timeout: waitMs });
    await page.keyboard.press("Enter");
    await page.locator(".tabs-container .tab.active", { hasText: "notes.txt" }).waitFor({ timeout: waitMs });
    await ask(page, "Edit line 3");
    const chat = await chatFrame(page);
    const edited = chat.locator(".item.changes li", { hasText: "notes.txt" }).last();
    await edited.waitFor({ timeout: waitMs });
    await until("the edit saved and trimmed", () => fs.readFileSync(notes, "utf8") === NOTES.replace("line 3\n", "line three\n"));
    await edited.locator('button[data-action="undo"]').click();
    await edited.locator(".badge", { hasText: "undone" }).waitFor({ timeout: waitMs });
    await until("the undo saved", () => fs.readFileSync(notes, "utf8") === NOTES);
    await page.locator(".monaco-editor .view-line", { hasText: "line 3" }).first().waitFor({ timeout: waitMs });
    await screenshot("format-on-save-undone");
    log("an edit trimmed by ollie's save is undone, the file as before the turn and trimmed");
  },
);
