// E2E in real VS Code (code-server): an API key set through SecretStorage reaches the daemon; a turn's
// edit (two hunks) reviewed in the diff editor, one hunk undone, a stale undo refused; the model gets a
// real TypeScript diagnostic from VS Code (editor tools); an edit of an open document (auto-save off) made in its
// buffer and saved, listed and undone in its buffer; session history (rename, resume); rewind (the chat drops the turns, Undo Rewind brings them back);
// then, in a new session, every turn's changed files live and after a window reload, which shows the same session
// again with the prompt being typed (turnchanges.mjs); then, in another, a day's review, resumed and forked in a new
// window (dayswork.mjs); then a second window on the folder, a multi-root workspace and a window with no folder open
// (windows.mjs).
//
// Usage: node test/e2e/review.mjs --vsix ollie-0.1.0.vsix [--keep]   (env: see harness.mjs)

import * as fs from "node:fs";
import * as path from "node:path";
import { ask, chatFocused, chatFrame, freePort, log, openChat, openFile, runCommand, scenario, serverEnvFor, until, waitForSavedPrompt, waitForStatus, waitMs, withVSCode } from "./harness.mjs";
import { DAY_FILES, DAY_LAST_REPLY, DAY_REPLIES, daysWork } from "./dayswork.mjs";
import { TURN_FILES, TURN_REPLIES, turnChanges } from "./turnchanges.mjs";
import { WINDOW_REPLIES, otherWindows } from "./windows.mjs";

const ORIGINAL = Array.from({ length: 14 }, (_, i) => `line ${i + 1}\n`).join("");
const EDITED = ORIGINAL.replace("line 2\n", "LINE TWO\n").replace("line 12\n", "LINE TWELVE\n");
const KEY = "sk-e2e-secret-4242";
const TS_ERROR = "is not assignable to type 'number'";
const TS_NEW_LINE = "export const label: string = 4;\n";

const script = [
  {
    text: "Editing app.py.",
    tool_calls: [{ name: "call_tool", arguments: { calls: [
      { tool: "file_edit", args: ["app.py", "line 2\n", "LINE TWO\n"] },
      { tool: "file_edit", args: ["app.py", "line 12\n", "LINE TWELVE\n"] },
    ] } }],
  },
  { text: "I changed two lines." },
  {
    text: "Let me ask the editor.",
    tool_calls: [{ name: "call_tool", arguments: { calls: [
      { tool: "editor_diagnostics", args: ["bad.ts"] },
      { tool: "editor_open_files", args: [] },
      { tool: "editor_definition", args: ["bad.ts", "1", "14"] },
      { tool: "editor_symbols", args: ["count"] },
    ] } }],
  },
  { text: "bad.ts has a type error." },
  {
    text: "Editing the open file.",
    tool_calls: [{ name: "call_tool", arguments: { calls: [
      { tool: "file_edit", args: ["open.py", "value = 1\n", "value = 2\n"] },
      // bad.ts is open and TypeScript serves it: the step's note has the error the edit added.
      { tool: "file_edit", args: ["bad.ts", "\"three\";\n", `"three";\n${TS_NEW_LINE}`] },
    ] } }],
  },
  { text: "open.py now says 2." },
  ...TURN_REPLIES,
  ...DAY_REPLIES,
  ...WINDOW_REPLIES,
];

async function notification(page, text, timeout = waitMs) {
  await page.locator(".notifications-toasts .notification-toast", { hasText: text }).first().waitFor({ timeout });
}

/** Click a CodeLens until `done` holds: a lens re-rendered under the pointer can swallow a click. */
async function clickLens(lens, done) {
  for (let tries = 0; ; tries++) {
    await lens.click();
    try {
      await done();
      return;
    } catch (err) {
      if (tries === 2) throw err;
    }
  }
}

async function clearNotifications(page) {
  await runCommand(page, "Notifications: Clear All Notifications");
}

/** The quick pick row holding `text`. */
function row(page, text) {
  return page.locator(".quick-input-list .monaco-list-row", { hasText: text }).first();
}

const port = await freePort();
const url = `http://127.0.0.1:${port}/v1`;
const { OLLIE_OPENAI_KEY: _unused, ...withoutKey } = serverEnvFor(url);

await withVSCode(
  {
    script: null,
    files: { "app.py": ORIGINAL, "bad.ts": 'export const count: number = "three";\n', "open.py": "value = 1\n", ...TURN_FILES, ...DAY_FILES },
    // Step 6's editor tools are answered by VS Code's TypeScript features.
    builtins: ["typescript-language-features"],
    // Debug: turnchanges counts the daemon's diffs in its log. Its flooding turn goes past a checkpoint cap of 1,000 files.
    // Every edit's wait for fresh diagnostics must end on the editor's upToDate, not on the daemon's wait: longer than a
    // step may take here (without upToDate app.py's edit, no server reads, waited the whole 1.5 s default).
    serverEnv: { ...withoutKey, OLLIE_MODEL: "scripted-model", OLLIE_APPROVAL: "auto", OLLIE_LOG_LEVEL: "debug", OLLIE_CHECKPOINT_MAX_FILES: "1000",
      OLLIE_EDITOR_DIAGNOSTICS_WAIT_MS: String(2 * waitMs) },
    // code-server (a web editor) saves after a delay by default; desktop VS Code does not: keep buffers unsaved.
    settings: { "ollie.backend": "openai", "workbench.editor.enablePreview": false, "files.autoSave": "off" },
  },
  async ({ page, browser, workspace, work, userData, dataDir, startLLM, screenshot }) => {
    await startLLM(script, { port });
    const app = path.join(workspace, "app.py");
    // The palette lists the extension's commands once it is loaded: its status item says so.
    await waitForStatus(page, /Ollie: idle/);
    // bad.ts opened now starts TypeScript's server, which step 6 asks: it loads while steps 1 to 5 run (opened there, it
    // held up that step for as long as it took to start).
    await openFile(page, "bad.ts");

    // 1. The API key goes to SecretStorage (not settings.json) and into the restarted daemon's environment.
    await runCommand(page, "Ollie: Set API Key");
    await row(page, "openai").waitFor({ timeout: waitMs });
    await screenshot("api-key-backend-pick");
    await row(page, "openai").click();
    await page.locator(".quick-input-widget input[type=password]").waitFor({ timeout: waitMs });
    await page.locator(".quick-input-widget input[type=password]").fill(KEY);
    await page.keyboard.press("Enter");
    await notification(page, "the daemon restarted with it");
    const settings = fs.readFileSync(path.join(userData, "User", "settings.json"), "utf8");
    if (settings.includes(KEY)) throw new Error("the API key was written to settings.json");
    log("API key stored in SecretStorage and the daemon restarted with it");
    await clearNotifications(page);

    // 2. A turn edits app.py in two places (only possible with the key: without one the backend cannot be built).
    await ask(page, "Edit app.py please");
    await waitForSavedPrompt(dataDir, ["I changed two lines."]);
    await until("the edit on disk", () => fs.readFileSync(app, "utf8") === EDITED);
    log("the scripted turn edited app.py (two hunks)");
    // The batch (two edits in one call) names each location once: on its inner steps, not again on the whole.
    const batchChat = await chatFrame(page);
    const batch = batchChat.locator(".item.tool", { has: batchChat.locator(".substep") }).first();
    await batch.locator('.substep[data-status="completed"]').nth(1).waitFor({ timeout: waitMs });
    const innerLinks = await batch.locator(".substeps a.file-link").allTextContents();
    const headLinks = await batch.locator(".step-head a.file-link").allTextContents();
    if (innerLinks.length !== 2 || headLinks.length !== 0) throw new Error(`the batch links ${JSON.stringify({ headLinks, innerLinks })}`);
    await batch.scrollIntoViewIfNeeded();
    await screenshot("batch-step");
    log(`the batch step links each location once: ${innerLinks.join(", ")}`);

    // 3. Review Changes opens the diff editor with keep/undo on each hunk.
    await runCommand(page, "Ollie: Review Changes");
    await page.locator(".monaco-diff-editor").first().waitFor({ timeout: waitMs });
    const undoLens = page.locator(".monaco-diff-editor .codelens-decoration a", { hasText: "Undo this change" });
    await until("two hunk lenses", async () => (await undoLens.count()) === 2);
    await page.locator(".monaco-diff-editor .codelens-decoration a", { hasText: "Keep" }).first().waitFor({ timeout: waitMs });
    await page.locator('.tab', { hasText: "app.py (Ollie, turn 1" }).waitFor({ timeout: waitMs });
    await screenshot("review-diff");
    log("the diff editor shows the turn's change with a lens per hunk");

    // 4. Undo the first hunk: on disk it is reverted, the second one is kept; the diff refreshes.
    const afterUndo = ORIGINAL.replace("line 12\n", "LINE TWELVE\n");
    await clickLens(undoLens.first(), () => until("the first hunk undone on disk", () => fs.readFileSync(app, "utf8") === afterUndo, 15000));
    await until("one lens left", async () => (await undoLens.count()) === 1);
    await screenshot("review-after-undo");
    log("one hunk undone on disk, the other kept, the diff refreshed");

    // 5. The user edits the hunk's own line: its undo is refused and the message names the file.
    const mine = afterUndo.replace("LINE TWELVE\n", "LINE TWELVE, mine\n");
    fs.writeFileSync(app, mine);
    await clickLens(undoLens.first(), () => notification(page, "cannot undo the change to app.py", 15000));
    await screenshot("review-stale");
    if (fs.readFileSync(app, "utf8") !== mine) throw new Error("a stale undo wrote the file");
    fs.writeFileSync(app, afterUndo);
    await clearNotifications(page);
    log("a stale undo is refused plainly");
    // Keep: the hunk's actions go away and the file stays as it is.
    const keepLens = page.locator(".monaco-diff-editor .codelens-decoration a", { hasText: "Keep" });
    await clickLens(keepLens.first(), () => until("no lens left after Keep", async () => (await undoLens.count()) === 0, 15000));
    if (fs.readFileSync(app, "utf8") !== afterUndo) throw new Error("Keep changed the file");
    log("Keep leaves the change and clears its actions");

    // 6. Editor tools: the model's editor_diagnostics gets VS Code's TypeScript diagnostic for bad.ts.
    await openFile(page, "bad.ts");
    await page.locator(".monaco-editor .squiggly-error").first().waitFor({ state: "attached", timeout: waitMs });
    await ask(page, "Check the types");
    await waitForSavedPrompt(dataDir, ["bad.ts has a type error."]);
    await waitForSavedPrompt(dataDir, [TS_ERROR, "bad.ts"]);
    await screenshot("diagnostics");
    log("the model received VS Code's TypeScript diagnostic");
    // The other editor tools, answered by VS Code's tabs and TypeScript's definition and symbol providers.
    await waitForSavedPrompt(dataDir, ["bad.ts (focused)", "bad.ts:1:14: export const count: number", "variable count"]);
    log("open files, definition and workspace symbols came from VS Code");
    // That turn only read: Review Changes shows the last turn that changed files, saying so (it stopped at "turn 2
    // changed no files").
    await runCommand(page, "Ollie: Review Changes");
    await notification(page, "turn 2 has no changes; showing turn 1's changes");
    await page.locator(".tab.active", { hasText: "app.py (Ollie, turn 1" }).waitFor({ timeout: waitMs });
    await screenshot("review-last-changes");
    await clearNotifications(page);
    log("Review Changes after a turn that changed nothing showed the turn before, which did");

    // 7. An edit of a document open in the editor goes to its buffer, which is then saved (auto-save is off: the
    // daemon asks, ollie/saveDocuments): listed as an editor change, reviewed, undone there (and saved again).
    const openPy = path.join(workspace, "open.py");
    await page.keyboard.press("Control+P");
    await page.locator(".quick-input-widget input").fill("open.py");
    await row(page, "open.py").waitFor({ timeout: waitMs });
    await page.keyboard.press("Enter");
    await page.locator(".tabs-container .tab.active", { hasText: "open.py" }).waitFor({ timeout: waitMs });
    await ask(page, "Change open.py");
    const chat = await chatFrame(page);
    const chatText = async () => (await chat.locator("body").textContent()) ?? "";
    const editedRow = chat.locator(".item.changes li", { hasText: "open.py" }).last();
    await editedRow.waitFor({ timeout: waitMs });
    await page.locator(".monaco-editor .view-line", { hasText: "value = 2" }).first().waitFor({ timeout: waitMs });
    await until("the edit of the open document saved", () => fs.readFileSync(openPy, "utf8") === "value = 2\n");
    if (await page.locator(".tabs-container .tab.dirty", { hasText: "open.py" }).count()) throw new Error("open.py was left unsaved");
    await waitForSavedPrompt(dataDir, ["[editor] 1 new error after this change", "bad.ts:2:", "is not assignable to type 'string'"]);
    log("the agent's edit of open bad.ts was told TypeScript's new error");
    await editedRow.locator("a.file-link").click();
    await page.locator(".tab", { hasText: "open.py (Ollie, turn" }).waitFor({ timeout: waitMs });
    await screenshot("editor-change");
    await editedRow.locator('button[data-action="undo"]').click();
    await editedRow.locator(".badge", { hasText: "undone" }).waitFor({ timeout: waitMs });
    await page.locator(".tabs-container .tab", { hasText: /^open\.py/ }).first().click();
    await page.locator(".monaco-editor .view-line", { hasText: "value = 1" }).first().waitFor({ timeout: waitMs });
    await until("the undo saved", () => fs.readFileSync(openPy, "utf8") === "value = 1\n");
    // Its review tab shows the undo too (it went on showing the change, its lens offering to undo it again).
    await page.locator(".tabs-container .tab", { hasText: "open.py (Ollie, turn" }).click();
    const reviewed = page.locator(".monaco-diff-editor");
    await until("the review tab without the undone change", async () => (await reviewed.locator(".codelens-decoration a", { hasText: "Undo this change" }).count()) === 0 &&
      (await reviewed.locator(".view-line", { hasText: "value = 2" }).count()) === 0 && (await reviewed.locator(".view-line", { hasText: "value = 1" }).count()) > 0);
    await screenshot("review-after-chat-undo");
    log("an open document's edit goes to its buffer and is saved, opens in the diff editor and is undone in its buffer, its review tab too");

    // 8. History: titles and relative times, rename with the item button, resume.
    await runCommand(page, "Ollie: New Session");
    // New Session focuses the chat, which would close a pick opened before it did.
    await until("the new session's empty chat", async () => !(await chatText()).includes("Edit app.py please"));
    await chatFocused(page, chat);
    await runCommand(page, "Ollie: Show History");
    const old = row(page, "Edit app.py");
    await old.waitFor({ timeout: waitMs });
    const description = (await old.textContent()) ?? "";
    if (!/ago/.test(description)) throw new Error(`no relative time in the history row: ${JSON.stringify(description)}`);
    await screenshot("history");
    await old.hover();
    await old.locator(".codicon-edit").click();
    await page.locator(".quick-input-widget .quick-input-title", { hasText: "Rename Session" }).waitFor({ timeout: waitMs });
    await page.locator(".quick-input-widget input").fill("Reviewed edits");
    await page.keyboard.press("Enter");
    await row(page, "Reviewed edits").waitFor({ timeout: waitMs });
    await screenshot("history-renamed");
    await row(page, "Reviewed edits").click();
    await until("the resumed conversation in the chat", async () => (await chatText()).includes("bad.ts has a type error."));
    // Its first prompt was sent just after the daemon restarted with the key: it is still the chat's first item.
    const firstPrompt = await chat.locator(".item.user .text").first().textContent();
    if (firstPrompt !== "Edit app.py please") throw new Error(`the resumed chat starts with ${JSON.stringify(firstPrompt)}`);
    log("history shows titles and times, renames and resumes");

    // 9. Rewind to before turn 1: the files go back to how they were, the chat drops the turns, and the review tabs
    // of the turns it cut close (open.py's, of turn 3, is open: its undo would find no turn 3).
    const reviewTabs = page.locator(".tabs-container .tab", { hasText: "(Ollie, turn" });
    if ((await reviewTabs.count()) === 0) throw new Error("no review tab open before the rewind");
    await runCommand(page, "Ollie: Rewind");
    await row(page, "Turn 2").waitFor({ timeout: waitMs });
    await screenshot("rewind-pick");
    await row(page, "Turn 1").click();
    const dialog = page.locator(".monaco-dialog-box");
    await dialog.waitFor({ timeout: waitMs });
    await screenshot("rewind-confirm");
    await dialog.locator(".monaco-button", { hasText: "Rewind" }).click();
    await until("app.py as before turn 1", () => fs.readFileSync(app, "utf8") === ORIGINAL);
    await notification(page, "rewound to before turn 1");
    await until("the chat without the rewound turns", async () => !(await chatText()).includes("Edit app.py please"));
    await until("the cut turns' review tabs closed", async () => (await reviewTabs.count()) === 0);
    await screenshot("rewound");
    log("rewind restored the files and the chat dropped the turns; their review tabs closed");

    // 10. The notification's Undo Rewind puts the files and the conversation back as they were before the rewind.
    await page.locator(".notification-toast", { hasText: "rewound to before turn 1" }).locator(".monaco-button", { hasText: "Undo Rewind" }).click();
    await until("app.py as before the rewind", () => fs.readFileSync(app, "utf8") === afterUndo);
    await notification(page, "the rewind is undone");
    await until("the turns back in the chat", async () => (await chatText()).includes("bad.ts has a type error."));
    const prompts = await chat.locator(".item.user .text").allTextContents();
    if (prompts[0] !== "Edit app.py please") throw new Error(`after Undo Rewind the chat starts with ${JSON.stringify(prompts)}`);
    await screenshot("rewind-undone");
    log("Undo Rewind put the files and the conversation back");

    // 11. A new session's turns each list their changed files, live and after a window reload, which brings back the
    // session and the prompt being typed (turnchanges.mjs).
    await scenario("turnchanges", () => turnChanges({ page, work, screenshot }));

    // 12. A day's review in a new session, resumed and forked in a new window, the first one closed (dayswork.mjs).
    const resumed = await scenario("dayswork", () => daysWork({ page, browser, workspace, work, screenshot }));

    // 13. More windows: a second one on this folder, a multi-root workspace, one with no folder (windows.mjs).
    await otherWindows({ browser, first: resumed, workspace, dataDir, firstSays: DAY_LAST_REPLY });
  },
);
