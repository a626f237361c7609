// E2E steps in a new session of review.mjs's window (once a window of its own; code-server, auto-save off as on the
// desktop): a user's day of review on a small project. A turn
// edits calc.py and util.py, both open, util.py with her unsaved line; Review Changes lists both, util.py's review
// shows the agent's change alone (not her line); Undo in the chat's Changed files takes back util.py's edit, her line
// kept. A turn that edits notes.md, undone whole, and one that only talks: Review Changes shows turn 1's changes,
// saying turns 2 to 3 have none, in one `ollie/changes` that diffs turn 1 alone (it asked turn by turn, diffing turn 2
// too). Rewind (its pick counting each turn's files from the history, with no diff) takes back the talk turn, and the
// prompt sent again answers anew. A new window resumes the session
// (Switch Session), the first one closed, turn 2 shown all undone; "Fork from here" on the first prompt goes on in a
// fork of turn 1, whose changes Review Changes shows. A screenshot at each stage (day-*.png). The window's daemon runs
// with approval `auto` and OLLIE_LOG_LEVEL=debug (its log says which turns it diffed).

import * as fs from "node:fs";
import * as path from "node:path";
import { artifacts, chatFocused, chatFrame, daemonPids, loadWorkbench, log, openChat, openFile, runCommand, send, typeUnsaved, until, waitForStatus, waitMs } from "./harness.mjs";
import { daemonLog, diffedSince } from "./turnchanges.mjs";

const CALC = "def add(a, b):\n    return a - b\n";
const UTIL = "def double(x):\n    return x * 3\n";
const NOTES = "# notes\n";
const MINE = "# my unsaved note";
const ASKED = "what did you change?";

/** The workspace files these steps change. */
export const DAY_FILES = { "calc.py": CALC, "util.py": UTIL, "notes.md": NOTES };
/** The reply these steps' last turn ends with, in the window they leave open. */
export const DAY_LAST_REPLY = "Going on in the fork.";

const edits = (...calls) => [{ name: "call_tool", arguments: { calls: calls.map((args) => ({ tool: "file_edit", args })) } }];
/** The scripted model's replies to these steps, in order. */
export const DAY_REPLIES = [
  { text: "Fixing both.", tool_calls: edits(["calc.py", "a - b", "a + b"], ["util.py", "x * 3", "x * 2"]) },
  { text: "Fixed add and double." },
  // It changes the plan too: a rewind to before it puts the plan back, which its pick says.
  { text: "Noting it.", tool_calls: [{ name: "call_tool", arguments: { calls: [{ tool: "file_edit", args: ["notes.md", NOTES, `${NOTES}- add fixed\n`] },
    { tool: "task_add", args: ["ship the fix"] }] } }] },
  { text: "Noted." },
  { text: "I fixed add and double." },
  { text: "I fixed add; double is as you left it." },
  { text: DAY_LAST_REPLY },
];

const row = (page, text) => page.locator(".quick-input-list .monaco-list-row", { hasText: text }).first();
const toast = (page, text) => page.locator(".notifications-toasts .notification-toast", { hasText: text }).first().waitFor({ timeout: waitMs });
const prompts = (chat) => chat.locator(".item.user .text").allTextContents();

/** Run the steps in a new session of `page`'s window, which they close: resolves with the new window they leave open. */
export async function daysWork({ page, browser, workspace, work, screenshot }) {
  const read = (name) => fs.readFileSync(path.join(workspace, name), "utf8");
  await runCommand(page, "Ollie: New Session");
  const fresh = await chatFrame(page);
  await until("the new session's empty chat", async () => (await fresh.locator("#log .item.user").count()) === 0);
  // New Session focuses the chat when done: a Quick Open opened before that closed under the test's keys.
  await chatFocused(page, fresh);
  await openFile(page, "calc.py");
  await typeUnsaved(page, "util.py", MINE);
  const chat = await openChat(page);

  // 1. One turn edits both open files; each buffer shows its edit, saved (util.py with her line).
  await send(chat, "fix add and double");
  await chat.locator(".item.assistant", { hasText: "Fixed add and double." }).waitFor({ timeout: waitMs });
  await until("both edits saved", () => read("calc.py") === CALC.replace("a - b", "a + b") && read("util.py") === UTIL.replace("x * 3", "x * 2") + MINE);
  await screenshot("day-edited");
  log("a turn edited both open files, the dirty one with her line kept");

  // 2. Review Changes lists both; util.py's review holds the agent's change alone.
  await runCommand(page, "Ollie: Review Changes");
  await row(page, "calc.py").waitFor({ timeout: waitMs });
  await row(page, "util.py").waitFor({ timeout: waitMs });
  await screenshot("day-review-pick");
  await row(page, "util.py").click();
  await page.locator(".tab.active", { hasText: "util.py (Ollie, turn 1" }).waitFor({ timeout: waitMs });
  const lenses = page.locator(".monaco-diff-editor .codelens-decoration a", { hasText: "Undo this change" });
  await until("util.py's review lens", async () => (await lenses.count()) === 1);
  await screenshot("day-review-util");
  log("Review Changes listed both files, util.py's review its one change");

  // 3. Undo util.py from the chat's Changed files: her line stays.
  const first = chat.locator(".item.changes").last();
  await first.locator('button[data-action="undo"][data-path="util.py"]').click();
  await first.locator("li.undone", { hasText: "util.py" }).waitFor({ timeout: waitMs });
  await until("util.py undone, her line kept", () => read("util.py") === UTIL + MINE);
  await until("util.py's review without its lens", async () => (await lenses.count()) === 0);
  await screenshot("day-undone-util");
  log("Undo took back util.py's edit alone");

  // 4. A turn whose change is undone whole, then one that only talks: Review Changes shows turn 1's, in one request.
  await send(chat, "note it in notes.md");
  await chat.locator(".item.assistant", { hasText: "Noted." }).waitFor({ timeout: waitMs });
  const noted = chat.locator(".item.changes").last();
  await noted.locator('button[data-action="undo"][data-path="notes.md"]').click();
  await noted.locator("li.undone", { hasText: "notes.md" }).waitFor({ timeout: waitMs });
  await until("notes.md undone", () => read("notes.md") === NOTES);
  await send(chat, ASKED);
  await chat.locator(".item.assistant", { hasText: "I fixed add and double." }).waitFor({ timeout: waitMs });
  const mark = daemonLog(work).length;
  await runCommand(page, "Ollie: Review Changes");
  await toast(page, "turns 2 to 3 have no changes; showing turn 1's changes");
  await page.locator(".tab.active", { hasText: "calc.py (Ollie, turn 1 of fix add and double: before" }).waitFor({ timeout: waitMs });
  const diffed = diffedSince(work, mark);
  // Turn 1's listing, then the file opened (its whole text): turn 2, whose change was undone, is not diffed.
  if (diffed.join(" ") !== "1 1") throw new Error(`Review Changes had the daemon diff turns ${JSON.stringify(diffed)} (turn 1 alone expected)`);
  await screenshot("day-review-last-changes");
  log("Review Changes after an undone turn and a talk showed turn 1's changes, the daemon diffing turn 1 alone");

  // 5. Rewind the talk, and ask again: one prompt, the new answer. The pick counts each turn's files from the
  // history's marks (it asked each turn's changes, diffing turns 2 and 1 and sending their files' texts).
  const picking = daemonLog(work).length;
  await runCommand(page, "Ollie: Rewind");
  await row(page, "Turn 1").filter({ hasText: "changed 1 file" }).waitFor({ timeout: waitMs });
  // Its file undone, turn 2 changed the plan still: not "changed no files", as if a rewind of it put nothing back.
  await row(page, "Turn 2").filter({ hasText: "changed the plan, no files" }).waitFor({ timeout: waitMs });
  const counted = diffedSince(work, picking);
  if (counted.length) throw new Error(`the Rewind pick had the daemon diff turns ${JSON.stringify(counted)}`);
  await screenshot("day-rewind-pick");
  await row(page, "Turn 3").click();
  await page.locator(".monaco-dialog-box .monaco-button", { hasText: "Rewind" }).click();
  await toast(page, "rewound to before turn 3");
  await until("the chat without the rewound turn", async () => !(await prompts(chat)).includes(ASKED));
  await send(chat, ASKED);
  await chat.locator(".item.assistant", { hasText: "double is as you left it" }).waitFor({ timeout: waitMs });
  if ((await prompts(chat)).filter((p) => p === ASKED).length !== 1) throw new Error(`the prompts after the redo: ${JSON.stringify(await prompts(chat))}`);
  if (await chat.locator(".item.assistant", { hasText: "I fixed add and double." }).count()) throw new Error("the rewound answer still shows");
  await screenshot("day-redone");
  log("Rewind took back the talk turn and the prompt asked again answered anew; its pick said turn 2 changed the plan");

  // 6. A new window resumes the session (the first closed); Fork from here on the first prompt.
  const address = new URL(page.url()).origin;
  const before = daemonPids().length;
  await page.close();
  await until("the first window's daemon gone", () => daemonPids().length === before - 1);
  const second = await browser.contexts()[0].newPage();
  // The harness's screenshots (its failure's too) are the first window's.
  const shot = (name) => second.screenshot({ path: path.join(artifacts, `${name}.png`) });
  await resumeAndFork(second, workspace, address, shot).catch((err) => shot("day-failure").finally(() => { throw err; }));
  return second;
}

/** In `second`, a new window on `workspace` at `address`: resume the session, fork it from its first prompt. */
async function resumeAndFork(second, workspace, address, shot) {
  await loadWorkbench(second, `${address}/?folder=${encodeURIComponent(workspace)}`);
  await waitForStatus(second, /Ollie: idle/);
  const chat = await openChat(second);
  await runCommand(second, "Ollie: Switch Session");
  await row(second, "fix add and double").click();
  await chat.locator(".item.assistant", { hasText: "double is as you left it" }).waitFor({ timeout: waitMs });
  // Turn 1's calc.py, saying some were undone (util.py: its list was as if turn 1 had changed calc.py alone), and
  // turn 2's all undone, as the live chat said (the note of that undo was in the rewound prompt alone: turn 2 showed
  // no changes).
  const titles = () => chat.locator(".item.changes .changes-title").allTextContents();
  await until("both turns' changes in the resumed chat", async () => (await titles()).join(" | ") === "Changed files (1, some undone since) | Changed files (all undone)");
  await shot("day-resumed");
  log("a new window resumed the session, its changes listed");
  const bubble = chat.locator(".item.user", { hasText: "fix add and double" });
  await bubble.hover();
  await bubble.locator("button.fork").click();
  await chat.locator(".item.notice", { hasText: "with the conversation up to turn 1" }).waitFor({ timeout: waitMs });
  if ((await prompts(chat)).join(" | ") !== "fix add and double") throw new Error(`the fork shows ${JSON.stringify(await prompts(chat))}`);
  await send(chat, "go on");
  await chat.locator(".item.assistant", { hasText: DAY_LAST_REPLY }).waitFor({ timeout: waitMs });
  await runCommand(second, "Ollie: Review Changes");
  await toast(second, "turn 2 has no changes; showing turn 1's changes");
  // Its own tab title: the session's review of that turn had the same one.
  await second.locator(".tab.active", { hasText: "calc.py (Ollie, turn 1 of fix add and double (fork): before" }).waitFor({ timeout: waitMs });
  const lenses = second.locator(".monaco-diff-editor .codelens-decoration a", { hasText: "Undo this change" });
  await until("the fork's review lens", async () => (await lenses.count()) === 1);
  await shot("day-forked");
  log("Fork from here went on from turn 1, whose changes the fork reviews");
}
