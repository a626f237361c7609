// E2E steps in a new session of a window (review.mjs's, once a window of its own): two turns change files, each gets its
// "Changed files" list, drawn from the turn's end event (the daemon diffed each turn once, as it ended: no
// `ollie/changes` asked at the end); after a window reload (a new extension host, the chat read from the session's
// history) the session is back with the prompt being typed, and both lists, each under its own turn, not only the last
// one's; the second turn's two edit steps of one file (each its own change, as live) and the first turn's `sed -i` step
// show their diffs again (read from the turn's changes: the history keeps none). A step of 152 files shows its first
// 100 diffs and how many more it changed. A turn that leaves the workspace too large to checkpoint ends saying its
// changed files are not known and why, once (the next turns of the same reason say nothing), and says it still after a
// reload, with why (it said nothing, as a talk did; then no why), under the first turn of the page shown (the one that
// said it is on the page before: nothing was said). The window's daemon runs with approval `auto`,
// OLLIE_LOG_LEVEL=debug and OLLIE_CHECKPOINT_MAX_FILES=1000.

import fs from "node:fs";
import path from "node:path";
import { chatFocused, chatFrame, fillInput, log, openChat, reloadChat, runCommand, send, until, waitForStatus, waitMs } from "./harness.mjs";

/** The workspace files these steps change. */
export const TURN_FILES = { "a.txt": "alpha\n", "b.txt": "beta\n", "c.txt": "gamma\n" };

/** The scripted model's replies to these steps, in order. */
export const TURN_REPLIES = [
  { text: "Shouting a and b.", tool_calls: [{ name: "execute_code", arguments: { steps: [{ code: "sed -i s/alpha/ALPHA/ a.txt; sed -i s/beta/BETA/ b.txt", language: "bash" }] } }] },
  { text: "Both shouted." },
  // Two steps edit c.txt: each shows its own change, live and after a reload (not the turn's under the last).
  { text: "Shouting c.", tool_calls: [{ name: "call_tool", arguments: { calls: [{ tool: "file_edit", args: ["c.txt", "gamma", "GAMMA"] }] } },
    { name: "call_tool", arguments: { calls: [{ tool: "file_edit", args: ["c.txt", "GAMMA", "GAMMA!"] }] } }] },
  { text: "c shouted too." },
  // A hostile step: names with terminal escapes, a newline and a bidi override, then 150 files; the end event lists the first 100.
  { text: "Writing many.", tool_calls: [{ name: "execute_code", arguments: { steps: [{ code: "printf 'x\\n' > $'a\\e[2J\\e]0;pwned\\a'; printf 'x\\n' > $'a new\\nline\\xe2\\x80\\xaetxt.exe'; mkdir many; for i in $(seq 150); do : > many/f$i; done", language: "bash" }] } }] },
  { text: "Many written." },
  // A step that leaves the workspace past the checkpoints' cap (the window's OLLIE_CHECKPOINT_MAX_FILES, 1,000: past the
  // default 50,000, making, walking and removing the files was the window's longest stretch): what the turn changed
  // cannot be known.
  { text: "Flooding.", tool_calls: [{ name: "execute_code", arguments: { steps: [{ code: "mkdir flood && cd flood && seq 1001 | xargs touch", language: "bash" }] } }] },
  { text: "Flooded." },
  // Another turn in that tree, for the same reason: not said again under it (each turn's in the home directory).
  { text: "Touching.", tool_calls: [{ name: "execute_code", arguments: { steps: [{ code: "touch flood/more", language: "bash" }] } }] },
  { text: "Touched." },
  // A talk in that tree: the window's page of 6 messages, reloaded, starts after the turn that said why.
  { text: "Talked." },
];

/** The files each "Changed files" list of the chat names, in the chat's order. */
async function lists(chat) {
  const out = [];
  for (const item of await chat.locator(".item.changes").all()) out.push((await item.locator(".file-link").allTextContents()).join(" "));
  return out;
}

/** Each "Edit c.txt" step's diff rows, in the chat's order: its removed lines, then `→`, then its added ones. */
async function editRows(chat) {
  const out = [];
  for (const step of await chat.locator(".item.tool", { has: chat.locator(".step-title", { hasText: "Edit c.txt" }) }).all()) {
    const removed = await step.locator(".diff tr.removed td.code").allTextContents();
    out.push([...removed, "→", ...(await step.locator(".diff tr.added td.code").allTextContents())].join(" "));
  }
  return out;
}

/** The daemons' debug log entries (one JSON line each). */
export function daemonLog(work) {
  const file = path.join(work, "xdg", "state", "ollie", "ollie.log");
  return fs.existsSync(file) ? fs.readFileSync(file, "utf8").split("\n").filter(Boolean) : [];
}

/** The turns the window's daemons diffed since their debug log had `mark` lines, once per diff, in order. */
export const diffedSince = (work, mark) => daemonLog(work).slice(mark).map((line) => JSON.parse(line)).filter((entry) => entry.msg === "turn changes diffed").map((entry) => entry.turn);

/** Run the steps in `page`'s window, in a new session; `work` the run's scratch dir. */
export async function turnChanges({ page, work, screenshot }) {
  // The turns the daemon diffed from here on, once per diff, in order (its debug log's "turn changes diffed" lines).
  const mark = daemonLog(work).length;
  const diffedTurns = () => diffedSince(work, mark);
  await runCommand(page, "Ollie: New Session");
  const chat = await chatFrame(page);
  await until("the new session's empty chat", async () => (await chat.locator("#log .item.user").count()) === 0);
  // New Session focuses the chat when done: typed before, the prompt went nowhere.
  await chatFocused(page, chat);
  await send(chat, "shout a and b");
  await until("the first turn's changed files", async () => (await lists(chat)).length === 1);
  await send(chat, "now c");
  await until("the second turn's changed files", async () => (await lists(chat)).length === 2);
  const live = await lists(chat);
  if (live.join(" | ") !== "a.txt b.txt | c.txt") throw new Error(`the live chat lists ${JSON.stringify(live)}`);
  const stats = await chat.locator(".item.changes .stat").allTextContents();
  if (stats.join(" ") !== "+1−1 +1−1 +1−1") throw new Error(`the live lists' line counts: ${JSON.stringify(stats)}`);
  // Each turn diffed once, as it ended (before: once more for the list, which asked `ollie/changes`).
  const edits = "gamma → GAMMA | GAMMA → GAMMA!";
  if ((await editRows(chat)).join(" | ") !== edits) throw new Error(`the live edit steps' diffs: ${JSON.stringify(await editRows(chat))}`);
  const diffed = diffedTurns();
  if (diffed.join(" ") !== "1 2") throw new Error(`the daemon diffed turns ${JSON.stringify(diffed)} (each once expected)`);
  await chat.locator(".item.changes").last().scrollIntoViewIfNeeded();
  await screenshot("turnchanges-live");

  // Reloading the window restarts the extension host and the daemon: the chat comes back, not an empty view, and so
  // does a prompt the user was still typing.
  const draft = "A half-written question\nwith a second line";
  await fillInput(chat, draft);
  // Typed, the draft went to the view's state (the webview's channel to the workbench); the command palette's F1,
  // pressed while the chat's input has the focus, goes to the workbench by that same channel, after it.
  await chat.waitForFunction(() => document.hasFocus() && document.activeElement?.id === "input", null, { timeout: waitMs });
  // Reload Window, as a user does (the workbench saves its state first).
  await Promise.all([page.waitForEvent("load", { timeout: waitMs }), runCommand(page, "Developer: Reload Window")]);
  await page.locator(".monaco-workbench").waitFor({ timeout: waitMs });
  const reloaded = await openChat(page);
  await reloaded.locator(".item.assistant", { hasText: "c shouted too." }).waitFor({ timeout: waitMs });
  const reloadedFirst = await reloaded.locator(".item.user .text").first().textContent();
  if (reloadedFirst !== "shout a and b") throw new Error(`after a reload the chat starts with ${JSON.stringify(reloadedFirst)}`);
  const restoredDraft = await reloaded.locator("#input").inputValue();
  if (restoredDraft !== draft) throw new Error(`the prompt being typed was lost in the reload: ${JSON.stringify(restoredDraft)}`);
  await screenshot("reloaded");
  log("a window reload shows the session it showed before, and the prompt being typed");
  // Drawn at once from the history's marks, each list's files read apart: waited for until both are filled in.
  await until("both turns' changed files after the reload", async () => {
    const shown = await lists(reloaded);
    return shown.length === 2 && shown.every((files) => files !== "");
  });
  const after = await lists(reloaded);
  if (after.join(" | ") !== "a.txt b.txt | c.txt") throw new Error(`after the reload the chat lists ${JSON.stringify(after)}`);
  // Each list under its own turn: the first one before the second prompt.
  const order = await reloaded.locator(".item.changes, .item.user").evaluateAll((nodes) => nodes.map((n) => n.classList.contains("user") ? "prompt" : "changes"));
  if (order.join(" ") !== "prompt changes prompt changes") throw new Error(`the chat's order after the reload: ${order.join(" ")}`);
  await reloaded.locator(".item.changes").first().scrollIntoViewIfNeeded();
  await screenshot("turnchanges-reloaded");
  log("after a window reload each turn's Changed files are listed under it, the earlier turn's too");
  // The edit steps the user allowed show their diffs as they did live (they showed none: the history keeps no diffs),
  // each its own, read from the checkpoints around it (before: the turn's change under the second, none under the first).
  await until("both edit steps' diffs after the reload", async () => (await editRows(reloaded)).join(" | ") === edits);
  const edited = reloaded.locator(".item.tool", { has: reloaded.locator(".step-title", { hasText: "Edit c.txt" }) });
  await edited.first().scrollIntoViewIfNeeded();
  await screenshot("turnchanges-edit-diff-reloaded");
  // Open diff of each opens that step's change, not the turn's (gamma → GAMMA!): the diff editor shown holds its lines.
  const shownDiff = () => page.locator(".monaco-diff-editor").evaluateAll((nodes) => nodes.filter((n) => n.offsetParent).map((n) => n.innerText).join("\n"));
  for (const [index, [holds, lacks]] of [[/gamma[^]*GAMMA/, /GAMMA!/], [/GAMMA[^]*GAMMA!/, /gamma/]].entries()) {
    await edited.nth(index).locator('button[data-action="openDiff"]').click();
    await until(`step ${index + 1}'s Open diff`, async () => { const text = await shownDiff(); return holds.test(text) && !lacks.test(text); });
    await screenshot(`turnchanges-edit-open-diff-${index + 1}-reloaded`);
  }
  log("after a window reload the allowed edit steps each show their own diff again");
  // So does the shell step (`sed -i`): the history names the files each step changed.
  const shell = reloaded.locator(".item.tool", { has: reloaded.locator(".step-title", { hasText: "sed -i s/alpha/ALPHA/" }) });
  await shell.locator(".diff tr.added", { hasText: "ALPHA" }).waitFor({ timeout: waitMs });
  await shell.locator(".diff tr.added", { hasText: "BETA" }).waitFor({ timeout: waitMs });
  await shell.scrollIntoViewIfNeeded();
  await screenshot("turnchanges-shell-diff-reloaded");
  log("after a window reload the sed -i step shows its diffs again");

  // A turn of 152 files, two with names made to hurt: its list counts them all, shows its first 100 as text and
  // says how many more, with no Undo all (it would undo only those shown).
  await send(reloaded, "write many");
  await until("the hostile turn's changed files", async () => (await lists(reloaded)).length === 3);
  const hostile = reloaded.locator(".item.changes").last();
  const title = await hostile.locator(".changes-title").textContent();
  const rows = await hostile.locator(".file-link").allTextContents();
  const more = await hostile.locator("li.more").textContent();
  if (title !== "Changed files (152)" || rows.length !== 100 || !/^… and 52 more files, not listed here/.test(more ?? "")) {
    throw new Error(`the hostile turn's list: ${JSON.stringify({ title, rows: rows.length, more })}`);
  }
  // Each control and the override drawn escaped: the second read "a new line exe.txt" (U+202E reverses what follows).
  if (rows[0] !== "a\\x1b[2J\\x1b]0;pwned\\x07" || rows[1] !== "a new\\x0aline\\u202etxt.exe") throw new Error(`its first names: ${JSON.stringify(rows.slice(0, 2))}`);
  if (await hostile.locator("button", { hasText: "Undo all" }).count()) throw new Error("a bounded list offers Undo all");
  await hostile.locator("li.more").scrollIntoViewIfNeeded();
  await screenshot("turnchanges-bounded");
  // So do Review Changes' list, and the review tab's title and document: an override there reversed what follows it.
  await runCommand(page, "Ollie: Review Changes");
  await page.locator(".quick-input-widget input").fill("txt.exe");
  const picked = page.locator(".quick-input-list .monaco-list-row").first();
  await until("the hostile name picked", async () => /txt\.exe/.test((await picked.textContent()) ?? ""));
  const label = await picked.locator(".label-name").textContent();
  await picked.click();
  const tab = page.locator(".tabs-container .tab.active");
  await until("the hostile name's review tab", async () => /Ollie, turn/.test((await tab.textContent()) ?? ""));
  const shown = { label, title: await tab.locator(".label-name").textContent(), document: await tab.getAttribute("data-resource-name") };
  if (shown.label !== "a new\\x0aline\\u202etxt.exe" || !/^a new\\x0aline\\u202etxt\.exe \(Ollie, turn 3 of .+: before ↔ after\)$/.test(shown.title ?? "") || shown.document !== "a new\\x0aline\\u202etxt.exe") {
    throw new Error(`the hostile name's review tab: ${JSON.stringify(shown)}`);
  }
  await screenshot("turnchanges-hostile-review-tab");
  await hostile.locator(".changes-head").scrollIntoViewIfNeeded();
  await screenshot("turnchanges-bounded-head");
  log("a turn of 152 files lists its first 100 as text, and says how many more");
  // The step that wrote them: its first 100 diffs, then a line for the 52 the daemon counted and did not send.
  const step = reloaded.locator(".item.tool").last();
  const stepMore = await step.locator(".step-diffs-more").textContent();
  const stepDiffs = await step.locator(".diffs .diff").count();
  if (stepDiffs !== 100 || stepMore !== "… and 52 more files changed (see the turn's Changed files)") {
    throw new Error(`the step of 152 files: ${JSON.stringify({ stepDiffs, stepMore })}`);
  }
  await step.locator(".step-diffs-more").scrollIntoViewIfNeeded();
  await screenshot("turnchanges-step-more");
  log("the step of 152 files shows its first 100 diffs and says 52 more files changed");
  // The newline-named file's link in the step (drawn escaped) opens the real file: the click did nothing.
  await step.locator(".diff a.file-link", { hasText: "a new\\x0aline\\u202etxt.exe" }).click();
  await until("the file named with a newline open", async () => (await tab.getAttribute("data-resource-name")) === "a new\nline\u202etxt.exe");
  await screenshot("turnchanges-hostile-file-opened");
  log("a link to a file named with a newline and an override opens the real file");

  // A turn that leaves 1,001 files: no review, undo or rewind reaches what it changed. Its end says so, and why, where
  // the Changed files go (it said nothing, as after a talk); read back after a reload, the history's mark says it too.
  await send(reloaded, "flood it");
  const unknown = reloaded.locator(".item.changes.unknown");
  await unknown.waitFor({ timeout: waitMs });
  const said = await unknown.textContent();
  const why = "Changed files: not known (the workspace has more than 1,000 files not ignored: too many to checkpoint)";
  if (said !== why) throw new Error(`the flooding turn's end says ${JSON.stringify(said)}`);
  await send(reloaded, "touch more");
  await reloaded.locator(".item.assistant", { hasText: "Touched." }).waitFor({ timeout: waitMs });
  await waitForStatus(page, /Ollie: idle/);
  await send(reloaded, "just talk");
  await reloaded.locator(".item.assistant", { hasText: "Talked." }).waitFor({ timeout: waitMs });
  await waitForStatus(page, /Ollie: idle/);
  fs.rmSync(path.join(work, "workspace", "flood"), { recursive: true }); // the next scenarios' tree fits again
  if ((await unknown.count()) !== 1) throw new Error(`the reason is said under ${await unknown.count()} turns, not once`);
  await reloaded.locator(".item.assistant", { hasText: "Flooded." }).scrollIntoViewIfNeeded();
  await screenshot("turnchanges-unknown");
  log("a turn whose changes cannot be known says so and why, once");
  // The window's repository shows a resumed session 6 messages at a time: its first page starts after the flooding turn.
  const vscodeDir = path.join(work, "workspace", ".vscode");
  fs.mkdirSync(vscodeDir, { recursive: true });
  fs.writeFileSync(path.join(vscodeDir, "settings.json"), JSON.stringify({ "ollie.historyPageSize": 6 }));
  const again = await reloadChat(page);
  await again.locator(".item.assistant", { hasText: "Talked." }).waitFor({ timeout: waitMs });
  await again.locator(".item.assistant", { hasText: "Touched." }).waitFor({ timeout: waitMs });
  // Why, as live (the reason is saved with the turn: it said none), and once: under the first turn of its run shown
  // (it said nothing there: that turn's mark is `again`), and not again when the page before comes to fill the view.
  const flooded = again.locator(".item.assistant", { hasText: "Flooded." });
  if (!(await flooded.count())) await again.locator(".earlier").click(); // (a view the page filled: asked)
  await flooded.waitFor({ timeout: waitMs });
  const resumed = await again.locator(".item.changes.unknown").allTextContents();
  if (resumed.join("|") !== why) throw new Error(`after a reload the flooding turns' ends say ${JSON.stringify(resumed)}`);
  if ((await again.locator('.item.assistant:has-text("Touched.") ~ .item.changes.unknown').count()) !== 1) {
    throw new Error("after a reload the reason is not said under the first turn of its run shown");
  }
  fs.rmSync(vscodeDir, { recursive: true });
  await again.locator(".item.changes.unknown").scrollIntoViewIfNeeded();
  await screenshot("turnchanges-unknown-reloaded");
  log("after a window reload the turn still says its changes are not known, and why, once");
}
