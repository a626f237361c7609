// E2E in real VS Code (code-server, auto-save off as on the desktop) run by a normal user (tests/editors/
// test_vscode_as_user.py starts it as one, with a scripted LLM of its own and a workspace holding root's vendor/lib.py
// and root's lib/ dir with her lib/util.py in it): the daily loop. The user has an unsaved line in notes.txt and one in
// calc.py; a prompt's edit of calc.py is approved and shows in its buffer, saved with her line (the question says so),
// and the approved test command runs the fix, and Undo takes back the edit alone; an edit of the test she rejects is
// not made (its card says so, the step not again in red; after the reload, its card gone, the step says she rejected
// it: it was a red failure); Stop ends a turn while its reply streams; the agent's edit of
// lib.py, which she may not write, is refused unasked; a prompt queued while a turn streams runs after it (editing
// lib/util.py); the window reloads while a question waits, the chat shows its session with that turn's changed files,
// one is undone, the step whose question the reload ended says so (not red, not her "interrupted"), and the chat goes
// on in the session. A screenshot at each stage (user-*.png).
// The one window with every built-in extension a user has (Git, GitHub, the JSON and TypeScript language features,
// ...): the others leave out those no test uses (harness.mjs UNUSED_BUILTINS).
//
// Usage: node test/e2e/asuser.mjs --vsix ollie-0.1.0.vsix [--keep]   (env: see harness.mjs; OLLIE_E2E_SERVER_ENV:
// the daemon's environment as JSON, for the test's scripted server, which holds the reply of stage 5 until this
// logs "waits queued", and the one stage 3 stops until the test ends)

import * as fs from "node:fs";
import * as path from "node:path";
import { dirtyTabs, log, ollieOutput, openChat, openFile, runCommand, send, typeUnsaved, UNUSED_BUILTINS, until, waitForStatus, waitMs, withVSCode } from "./harness.mjs";

const CALC = "def add(a, b):\n    return a - b\n";
const MINE = "# my unsaved note";
const FIXED = `def add(a, b):\n    return a + b\n${MINE}`;
const TEST = "from calc import add\n\nassert add(2, 3) == 5, f'add(2, 3) is {add(2, 3)}'\nprint('tests passed')\n";
const NOTES = "my notes\n";

const meta = (chat, text) => chat.locator(".item.user", { hasText: text }).locator(".meta");

/** Answer the approval question whose step's title holds `title` with Allow once, after a screenshot `shot` of it. */
async function allow(page, chat, title, screenshot, shot) {
  const question = chat.locator(".item.permission", { has: chat.locator(".step-title", { hasText: title }) }).last();
  await question.waitFor({ timeout: waitMs });
  // The status bar says Ollie waits for the user (it said "thinking", its spinner turning).
  await waitForStatus(page, /Ollie: waiting for your answer/);
  await screenshot(shot);
  await question.locator("button", { hasText: "Allow once" }).click();
  await question.locator(".permission-answer").waitFor({ timeout: waitMs });
}

await withVSCode(
  {
    script: null,
    files: { "calc.py": CALC, "test_calc.py": TEST, "notes.txt": NOTES },
    serverEnv: JSON.parse(process.env.OLLIE_E2E_SERVER_ENV ?? "{}"),
    settings: { "workbench.editor.enablePreview": false, "files.autoSave": "off" },
    builtins: [...UNUSED_BUILTINS],
  },
  async ({ page, workspace, userData, screenshot }) => {
    await waitForStatus(page, /Ollie: idle/);
    // 1. The user's unsaved lines in notes.txt and calc.py.
    await typeUnsaved(page, "notes.txt", "the user's unsaved line");
    await typeUnsaved(page, "calc.py", MINE);
    let chat = await openChat(page);
    await screenshot("user-start");

    // 2. The edit and the test command, each approved; the command sees the edit.
    await send(chat, "fix add and run the tests");
    // The question says her unsaved line goes to the disk with the edit, before she answers (it was said after).
    await chat.locator(".item.permission .permission-note.unsaved", { hasText: "calc.py has your unsaved changes: allowing saves them with the edit." })
      .waitFor({ timeout: waitMs });
    await allow(page, chat, "Edit calc.py", screenshot, "user-asked-edit");
    await allow(page, chat, "python3 test_calc.py", screenshot, "user-asked-run");
    // The title quotes the command as code (it showed the backticks).
    await chat.locator(".item.permission .step-title code", { hasText: "python3 test_calc.py" }).first().waitFor({ timeout: waitMs });
    await chat.locator(".item.assistant", { hasText: "Fixed add; the tests pass." }).waitFor({ timeout: waitMs });
    await page.locator(".monaco-editor .view-line", { hasText: "return a + b" }).first().waitFor({ timeout: waitMs });
    if (fs.readFileSync(path.join(workspace, "calc.py"), "utf8") !== FIXED) throw new Error("calc.py on disk is not the edit on her line");
    // Her unsaved line went to the disk with the edit: the chat says so.
    await chat.locator(".item", { hasText: "calc.py had your unsaved changes in the editor" }).first().waitFor({ timeout: waitMs });
    if (await dirtyTabs(page, "calc.py")) throw new Error("calc.py's buffer was left unsaved");
    if ((await dirtyTabs(page, "notes.txt")) !== 1) throw new Error("notes.txt (the user's unsaved line) was saved");
    if (fs.readFileSync(path.join(workspace, "notes.txt"), "utf8") !== NOTES) throw new Error("notes.txt was written");
    // In the sidebar's default width the changed file's name is whole on its line ("calc.p" and "y" on two, to keep
    // its Undo beside it).
    const name = chat.locator(".item.changes a.file-link", { hasText: "calc.py" }).last();
    await name.waitFor({ timeout: waitMs });
    const lines = await name.evaluate((link) => {
      const text = document.createRange();
      text.selectNodeContents(link);
      return new Set(Array.from(text.getClientRects(), (rect) => Math.round(rect.top))).size; // a rect per line
    });
    if (lines !== 1) throw new Error(`the changed file's name is broken over ${lines} lines`);
    await screenshot("user-edited-and-tested");
    log("the approved edit showed in calc.py's buffer, saved, and the approved tests ran it; notes.txt stayed unsaved");
    // Undo from the changes list takes back the agent's edit alone: her line stays, saved as she had it then.
    const calcChanges = chat.locator(".item.changes", { has: chat.locator('a.file-link[data-path="calc.py"]') }).last();
    await calcChanges.locator('button[data-action="undo"][data-path="calc.py"]').click();
    await calcChanges.locator("li.undone", { hasText: "calc.py" }).waitFor({ timeout: waitMs });
    await until("calc.py undone on disk, her line kept", () => fs.readFileSync(path.join(workspace, "calc.py"), "utf8") === CALC + MINE);
    await page.locator(".monaco-editor .view-line", { hasText: "return a - b" }).first().waitFor({ timeout: waitMs });
    if (await dirtyTabs(page, "calc.py")) throw new Error("the undone calc.py's buffer was left unsaved");
    await screenshot("user-undone-in-buffer");
    log("Undo took back the agent's edit of calc.py alone, her line kept");

    // 3. An edit of the test she rejects is not made, and the model hears it was rejected.
    await send(chat, "make the test stricter");
    const question = chat.locator(".item.permission", { has: chat.locator(".step-title", { hasText: "Edit test_calc.py" }) }).last();
    await question.waitFor({ timeout: waitMs });
    await question.locator('button[data-outcome="reject"]').click();
    await chat.locator(".item.assistant", { hasText: "Left the test as it is." }).waitFor({ timeout: waitMs });
    await question.locator(".permission-answer", { hasText: "Rejected" }).waitFor({ timeout: waitMs });
    if (fs.readFileSync(path.join(workspace, "test_calc.py"), "utf8") !== TEST) throw new Error("the rejected edit was made");
    // The card says Rejected, with the diff; the step is not drawn again under it as a failure (red, in the words the
    // model gets).
    const step = chat.locator(".item.tool", { has: chat.locator(".step-title", { hasText: "Edit test_calc.py" }) });
    if ((await step.count()) !== 1 || (await step.isVisible())) throw new Error("the rejected step is drawn again under its card");
    await screenshot("user-rejected");
    log("the edit she rejected was not made, its card alone saying so");

    // 4. Stop while the reply streams (the scripted server holds its end): the turn ends at once, said.
    await send(chat, "explain everything");
    await chat.locator(".item.assistant", { hasText: "Everything starts" }).waitFor({ timeout: waitMs });
    await chat.locator("#stop").click();
    await chat.locator('.item.turnEnd[data-stop="interrupted"]').waitFor({ timeout: waitMs });
    await waitForStatus(page, /Ollie: idle/);
    await screenshot("user-stopped");
    log("Stop ended the streaming turn");

    // 5. A file she may not write (root's, open): the agent's edit of it is refused, without a question no answer could
    // make good (it was asked, and refused after "Allow once"), and says why; the buffer is as it was.
    await openFile(page, "lib.py");
    await send(chat, "bump the vendored version");
    await chat.locator(".item.assistant", { hasText: "It is read-only: left as it is." }).waitFor({ timeout: waitMs });
    if (await chat.locator(".item.permission", { has: chat.locator(".step-title", { hasText: "Edit vendor/lib.py" }) }).count()) {
      throw new Error("the edit of the file she may not write was put to her first");
    }
    const refused = chat.locator(".item.tool", { has: chat.locator(".step-title", { hasText: "Edit vendor/lib.py" }) }).last();
    await refused.locator('.step-row[data-status="failed"]').waitFor({ timeout: waitMs });
    // Why shows under its title, not only in its folded output (it said "[stderr]").
    const why = await refused.locator(".step-error").textContent();
    if (!why.includes("read-only (no write permission), not changed")) throw new Error(`the refused step says ${JSON.stringify(why)}`);
    await page.locator(".monaco-editor .view-line", { hasText: "VERSION = 1" }).first().waitFor({ timeout: waitMs });
    if (await dirtyTabs(page, "lib.py")) throw new Error("the refused edit sits unsaved in lib.py's buffer");
    if (fs.readFileSync(path.join(workspace, "vendor", "lib.py"), "utf8") !== "VERSION = 1\n") throw new Error("vendor/lib.py was changed");
    await screenshot("user-read-only-refused");
    log("the agent's edit of a file she may not write was refused, saying why; its buffer unchanged");

    // 6. A prompt queued while a turn streams runs once it ends: it edits lib/util.py, hers in root's lib/.
    await send(chat, "explain the fix");
    await chat.locator(".item.assistant", { hasText: "The fix:" }).waitFor({ timeout: waitMs });
    await chat.locator("#stop").waitFor({ state: "visible", timeout: waitMs });
    await send(chat, "and raise the limit");
    await meta(chat, "and raise the limit").filter({ hasText: "queued" }).waitFor({ timeout: waitMs });
    await screenshot("user-queued");
    log("a prompt sent while the turn streams waits queued");
    await allow(page, chat, "Edit lib/util.py", screenshot, "user-asked-queued-edit");
    await chat.locator(".item.assistant", { hasText: "Raised the limit." }).waitFor({ timeout: waitMs });
    await until("nothing left marked queued", async () => (await chat.locator(".item.user .meta", { hasText: /queued|held/ }).count()) === 0);
    if (fs.readFileSync(path.join(workspace, "lib", "util.py"), "utf8") !== "LIMIT = 2\n") throw new Error("lib/util.py was not edited");
    await screenshot("user-queue-ran");
    log("the queued prompt ran after the turn and edited her file in a directory she may not write");

    // 7. The window reloads while a question waits: the chat shows its session again, with the last turn's changed
    // files to undo, and goes on.
    await send(chat, "tidy the test");
    await chat.locator(".item.permission", { has: chat.locator(".step-title", { hasText: "Edit test_calc.py" }) }).last().waitFor({ timeout: waitMs });
    await waitForStatus(page, /Ollie: waiting for your answer/);
    await Promise.all([page.waitForEvent("load", { timeout: waitMs }), runCommand(page, "Developer: Reload Window")]);
    await page.locator(".monaco-workbench").waitFor({ timeout: waitMs });
    chat = await openChat(page);
    await chat.locator(".item.assistant", { hasText: "Raised the limit." }).waitFor({ timeout: waitMs });
    // The turn she stopped is back with the reply it had streamed, marked interrupted.
    await chat.locator(".item.assistant", { hasText: "Everything starts" }).waitFor({ timeout: waitMs });
    await chat.locator('.item.turnEnd[data-stop="interrupted"]').waitFor({ timeout: waitMs });
    const changes = chat.locator(".item.changes", { has: chat.locator('a.file-link[data-path="lib/util.py"]') });
    await changes.waitFor({ timeout: waitMs });
    // The step she rejected (its card is gone) reads as her No, not as a failure in red in the model's words.
    const rejected = chat.locator(".item.tool", { has: chat.locator(".step-title", { hasText: "Edit test_calc.py" }) }).first();
    await rejected.locator('.step-row[data-status="rejected"]').waitFor({ timeout: waitMs });
    const says = await rejected.locator(".step-rejected").textContent();
    if (says !== "Rejected by you, not run" || (await rejected.locator(".step-error").count())) throw new Error(`the rejected step reads ${JSON.stringify(says)}`);
    await rejected.scrollIntoViewIfNeeded();
    await screenshot("user-rejected-after-reload");
    log("after the reload the step she rejected reads as rejected by her, not as a failure");
    // The step whose question the reload ended reads as not finished, how to go on, and the turn as the reload's end:
    // not her "Turn interrupted", nor a failure in red in the model's words.
    const unanswered = chat.locator(".item.tool", { has: chat.locator(".step-title", { hasText: "Edit test_calc.py" }) }).last();
    await unanswered.locator('.step-row[data-status="closed"]').waitFor({ timeout: waitMs });
    const closedSays = await unanswered.locator(".step-rejected").textContent();
    if (!closedSays?.startsWith("Not finished: the window reloaded") || (await unanswered.locator(".step-error").count())) {
      throw new Error(`the step the reload ended reads ${JSON.stringify(closedSays)}`);
    }
    await chat.locator('.item.turnEnd[data-stop="closed"]', { hasText: "the window reloaded" }).waitFor({ timeout: waitMs });
    await unanswered.scrollIntoViewIfNeeded();
    await screenshot("user-question-after-reload");
    log("after the reload the step whose question waited reads as not finished, the turn as ended by the reload");
    await changes.scrollIntoViewIfNeeded();
    await screenshot("user-reloaded");
    await changes.locator('button[data-action="undo"][data-path="lib/util.py"]').click();
    await changes.locator("li.undone", { hasText: "lib/util.py" }).waitFor({ timeout: waitMs });
    await until("lib/util.py undone", () => fs.readFileSync(path.join(workspace, "lib", "util.py"), "utf8") === "LIMIT = 1\n");
    await screenshot("user-undone-after-reload");
    await send(chat, "anything else?");
    await chat.locator(".item.assistant", { hasText: "Nothing else: add is fixed." }).waitFor({ timeout: waitMs });
    if ((await dirtyTabs(page, "notes.txt")) !== 1) throw new Error("the reload lost the user's unsaved line in notes.txt");
    await waitForStatus(page, /Ollie: idle/);
    await screenshot("user-resumed");
    log("after a window reload the chat showed its session, the stopped turn too, the last turn's change undone from it, and went on in it");

    // Nothing on the way said a permission failed (in the chat, a notification or the Ollie output).
    const said = [
      await chat.locator("#log").textContent(),
      ...(await page.locator(".notification-toast").allTextContents()),
      ollieOutput(userData),
    ].join("\n");
    const denied = /permission denied|EACCES|EPERM|operation not permitted|Traceback/i.exec(said);
    if (denied) throw new Error(`something failed for the user: ${said.slice(Math.max(0, denied.index - 500), denied.index + 500)}`);
  },
);
