// E2E in real VS Code (code-server): a prompt typed while the daemon restarts (Ollie: Restart, a settings change)
// waits for the new daemon and goes to the chat's session, resumed there (it was answered "the ollie daemon is not
// running", and lost). A start that fails answers it with the start's error, and the prompt is back in the input.
// The status bar says "starting" meanwhile (it said "stopped"); a failed start says how the daemon's command ended and
// what it printed (it said the language client's "Pending response rejected since connection got disposed"); a
// prompt typed while the language client restarts a crashed daemon by itself waits for it too. One sent to a daemon
// that dies before its turn begins is back in the input (it vanished with the chat: nothing of it was saved), and so
// is one queued as the daemon dies; each with the file and image chips it had (they were lost: only its text came back).
// A 429's wait to retry is counted down in the status bar (it said "thinking").
// The chat brought back after a crash mid-turn still shows the reply streamed so far, marked cut short. A rewind that
// leaves an open buffer as it is (she typed in it since the turn's edit) says so: the edit is still in that buffer.
//
// Each start of the daemon goes through a gate: it waits until the test says whether it runs or fails, so the prompt
// is typed while the restart is surely under way.
//
// Usage: node test/e2e/restart.mjs --vsix ollie-0.1.0.vsix [--keep]   (env: see harness.mjs)

import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { daemon, dirtyTabs, giveImage, log, ollieOutput, openChat, openFile, pickFile, runCommand, send, typeUnsaved, until, waitForStatus, waitMs, withVSCode, work } from "./harness.mjs";

const gate = path.join(work, "gate");
fs.mkdirSync(gate);
const STARTS = 9;
for (let n = 1; n <= STARTS; n++) execFileSync("mkfifo", [path.join(gate, `verdict-${n}`)]);
// The default agent with a postTurn hook that waits, while the fifo `hold` is there, for the test to let it go.
const agents = path.join(gate, "agents");
fs.mkdirSync(agents);
fs.writeFileSync(path.join(agents, "default.json"), JSON.stringify({ prompt: "You are a test agent.", commandSandbox: "none",
  hooks: { postTurn: `[ -p '${gate}/hold' ] && read line < '${gate}/hold'; exit 0` } }));
const gateScript = path.join(gate, "ollie-lsp-gate");
fs.writeFileSync(gateScript, `#!/bin/sh
n=$(($(cat '${gate}/count' 2>/dev/null || echo 0) + 1))
echo $n > '${gate}/count'
echo $$ > '${gate}/pid-'$n
touch '${gate}/started-'$n
read verdict < '${gate}/verdict-'$n
export OLLIE_AGENTS_DIR='${agents}'
[ "$verdict" = go ] && exec '${daemon}' "$@"
echo "start $n failed: the test said so" >&2
exit 3
`, { mode: 0o755 });

/** Wait until the daemon's `n`th start is under way (at the gate), then let it run ("go") or fail. */
async function release(n, verdict) {
  await until(`start ${n} of the daemon`, () => fs.existsSync(path.join(gate, `started-${n}`)));
  await fs.promises.writeFile(path.join(gate, `verdict-${n}`), `${verdict}\n`);
}

/** Type `text` while a start is under way (at the gate): it shows at once, noted as waiting for the daemon. */
async function sendWhileStarting(chat, text) {
  await send(chat, text);
  await chat.locator(".item.user", { hasText: text }).locator(".meta", { hasText: "waiting" }).waitFor({ timeout: waitMs });
}

// A real 24x16 red PNG.
const PNG = "iVBORw0KGgoAAAANSUhEUgAAABgAAAAQCAIAAACDRijCAAAAGklEQVR4nGO4o6FBFcQwatCoQaMGjRpEGQIA3r3CEG0ftIUAAAAASUVORK5CYII=";

/** Wait until the input holds `text` with chips saying each of `labels`, then take the chips off (the next prompt goes
 * without them). */
async function backInInput(chat, text, labels) {
  await chat.waitForFunction((want) => document.getElementById("input")?.value === want, text, { timeout: waitMs });
  for (const label of labels) await chat.locator("#chips .chip", { hasText: label }).waitFor({ timeout: waitMs });
  const shown = await chat.locator("#chips .chip").count();
  if (shown !== labels.length) throw new Error(`the input has ${shown} chips, not ${JSON.stringify(labels)}`);
}

async function clearChips(chat) {
  while (await chat.locator("#chips .chip-remove").count()) await chat.locator("#chips .chip-remove").first().click();
}

/** Fail when the chat says the daemon was not running (or the session not found): the prompt was not held. */
async function noNotRunning(chat) {
  const notices = await chat.locator(".item.notice").allTextContents();
  if (notices.some((text) => /not running|not found/.test(text))) throw new Error(`the chat says ${JSON.stringify(notices)}`);
}

// Turns sent last, to make the session longer than the 30 turns the Rewind pick listed.
const MORE_TURNS = 30;
const script = [{ error: 429, retry_after: 8 }, { text: "The first answer." }, { text: "The answer after the restart." }, { text: "The answer after the crash." },
  { text: "The answer to the prompt sent again." }, { text: "A reply that streams slowly. ".repeat(40), chunk_size: 4, delay: 0.1 },
  { text: "The answer saved before the crash." },
  { text: "", tool_calls: [{ name: "call_tool", arguments: { calls: [{ tool: "file_edit", args: ["calc.py", "a - b", "a + b"] }] } }] },
  { text: "Fixed add." },
  { text: "", tool_calls: [{ name: "call_tool", arguments: { calls: [{ tool: "file_edit", args: ["calc.py", "def add", "def plus"] }] } }] },
  { text: "Renamed add." },
  { text: "", tool_calls: [{ name: "call_tool", arguments: { calls: [{ tool: "file_edit", args: ["calc.py", "def plus", "def total"] }] } }] },
  { text: "Renamed it again." }, ...Array.from({ length: MORE_TURNS }, (_, n) => ({ text: `Answer ${n + 1}.` }))];

// Traced: the Ollie output shows when a request has gone to the daemon.
const settings = { "ollie.serverCommand": gateScript, "ollie.trace.server": "verbose", "files.autoSave": "off" };
await withVSCode({ script, settings, files: { "notes.txt": "notes\n", "calc.py": "def add(a, b):\n    return a - b\n" } }, async ({ page, screenshot, userData, workspace }) => {
  const chat = await openChat(page);
  /** Send `text` with Enter, and wait until its `method` request has gone to the daemon. */
  const sendTraced = async (text, method) => {
    const count = () => ollieOutput(userData).split(`Sending request '${method} `).length;
    const before = count();
    await send(chat, text);
    await until(`${method} sent to the daemon`, () => count() > before);
  };
  await release(1, "go");
  await waitForStatus(page, /Ollie: idle/);
  await send(chat, "Say something.");
  // 0. Rate limited (429, Retry-After 8): the status bar says it waits to retry and counts down (it said "thinking").
  await waitForStatus(page, /Ollie: rate limited, retry 1\/3 in [5-8]s/);
  await waitForStatus(page, /Ollie: rate limited, retry 1\/3 in [1-3]s/);
  // The chat says it in a line (it gave the vendor's paragraph: its limits, the tokens used, a link to its docs).
  const limited = (await chat.locator(".item.notice.retry").textContent()) ?? "";
  if (limited !== "The model's server is limiting requests: retry 1/3 in 8s. Stop to give up.") throw new Error(`the 429's notice said ${limited}`);
  await screenshot("rate-limited-status");
  await chat.locator(".item.assistant", { hasText: "The first answer." }).waitFor({ timeout: waitMs });
  await waitForStatus(page, /Ollie: idle/);
  log("a rate-limited request's wait to retry was counted down in the status bar");

  // 1. Typed while Restart's new daemon starts: sent once it is up, to this chat's session (resumed there).
  await runCommand(page, "Ollie: Restart");
  await until("the restart's start", () => fs.existsSync(path.join(gate, "started-2")));
  await waitForStatus(page, /Ollie: starting/);
  await sendWhileStarting(chat, "And after the restart?");  // (it vanished until the daemon was up)
  await screenshot("typed-during-restart");
  await release(2, "go");
  await chat.locator(".item.assistant", { hasText: "The answer after the restart." }).waitFor({ timeout: waitMs });
  const users = await chat.locator(".item.user .text").allTextContents();
  if (users.join("|") !== "Say something.|And after the restart?") {
    throw new Error(`the chat's prompts are ${JSON.stringify(users)}: not the resumed session with the new prompt once`);
  }
  await noNotRunning(chat);
  await screenshot("answered-after-restart");
  log("a prompt typed during Restart was sent once the daemon was up, in the chat's session");

  // 2. A start that fails: the prompt typed meanwhile is answered with the start's error and is back in the input,
  // with its file and its pasted image.
  await pickFile(page, chat, "notes.txt");
  await giveImage(chat, "paste", "image.png", PNG);
  await chat.locator("#chips .chip.image", { hasText: "pasted image 1" }).waitFor({ timeout: waitMs });
  await runCommand(page, "Ollie: Restart");
  await until("the second restart's start", () => fs.existsSync(path.join(gate, "started-3")));
  await sendWhileStarting(chat, "Will this be lost?");
  await release(3, "fail");
  // What ran, how it ended and what it said, and what to do.
  const failed = chat.locator(".item.notice.error", { hasText: "Ollie's daemon did not start" });
  await failed.waitFor({ timeout: waitMs });
  const said = await failed.textContent();
  for (const part of [gateScript, "exited with code 3", "start 3 failed: the test said so", "ollie.serverCommand", "Ollie: Restart"]) {
    if (!said?.includes(part)) throw new Error(`the failed start says ${JSON.stringify(said)}: not ${JSON.stringify(part)}`);
  }
  await chat.locator(".item.notice.error", { hasText: "Your prompt was not sent: it is back in the input." }).waitFor({ timeout: waitMs });
  await backInInput(chat, "Will this be lost?", ["notes.txt", "pasted image 1"]);
  await chat.locator(".item.user", { hasText: "Will this be lost?" }).locator(".meta", { hasText: "unsent" }).waitFor({ timeout: waitMs });
  await waitForStatus(page, /Ollie: stopped/);
  await screenshot("start-failed");
  log("a prompt typed during a start that failed got the start's error and is back in the input, with its chips");

  // 3. The daemon crashes and the language client starts it again by itself: a prompt typed meanwhile waits for it.
  await runCommand(page, "Notifications: Clear All Notifications");  // the failed start's, over the chat's input
  await screenshot("unsent-with-chips");
  await clearChips(chat);
  await runCommand(page, "Ollie: Restart");
  await release(4, "go");
  await waitForStatus(page, /Ollie: idle/);
  process.kill(Number(fs.readFileSync(path.join(gate, "pid-4"), "utf8")), "SIGKILL");
  await until("the client's own restart", () => fs.existsSync(path.join(gate, "started-5")));
  await waitForStatus(page, /Ollie: starting/);
  await sendWhileStarting(chat, "And after the crash?");
  await screenshot("typed-during-crash-restart");
  await release(5, "go");
  await chat.locator(".item.assistant", { hasText: "The answer after the crash." }).waitFor({ timeout: waitMs });
  await noNotRunning(chat);
  await screenshot("answered-after-crash");
  log("a prompt typed while the client restarted the crashed daemon was sent once it was up");

  // 4. The daemon dies with a prompt sent to it whose turn had not begun (frozen, then killed): nothing of it ran or was
  // saved, so the chat the client's restart brings back cannot show it: it is back in the input (it vanished).
  await waitForStatus(page, /Ollie: idle/);
  await pickFile(page, chat, "notes.txt");
  const frozen = Number(fs.readFileSync(path.join(gate, "pid-5"), "utf8"));
  process.kill(frozen, "SIGSTOP");
  await sendTraced("Lost with the daemon?", "ollie/submit");
  await chat.locator(".item.user", { hasText: "Lost with the daemon?" }).waitFor({ timeout: waitMs });
  process.kill(frozen, "SIGKILL");
  await release(6, "go");
  await waitForStatus(page, /Ollie: idle/);
  await chat.locator(".item.notice.error", { hasText: "stopped unexpectedly" }).waitFor({ timeout: waitMs });
  await backInInput(chat, "Lost with the daemon?", ["notes.txt"]);
  await screenshot("prompt-back-after-crash");
  await chat.locator("#input").press("Enter");
  await chat.locator(".item.assistant", { hasText: "The answer to the prompt sent again." }).waitFor({ timeout: waitMs });
  await chat.locator(".item.user", { hasText: "Lost with the daemon?" }).last().locator(".meta", { hasText: "about notes.txt" }).waitFor({ timeout: waitMs });
  log("a prompt whose daemon died before its turn began was back in the input with its chip, and answered once sent again");

  // 5. A prompt queued while a turn streams, its daemon dying before it took it: back in the input (it was an error
  // notice, the text gone).
  await send(chat, "Stream slowly.");
  await chat.locator(".item.assistant", { hasText: "A reply that streams" }).waitFor({ timeout: waitMs });
  await pickFile(page, chat, "notes.txt");
  const streaming = Number(fs.readFileSync(path.join(gate, "pid-6"), "utf8"));
  process.kill(streaming, "SIGSTOP");
  await sendTraced("Queued as it died?", "ollie/queue");
  process.kill(streaming, "SIGKILL");
  // Said plainly (it was the client's "Pending response rejected since connection got disposed").
  await chat.locator(".item.notice.error", { hasText: "The Ollie daemon stopped. The prompt was not queued: it is back in the input." })
    .waitFor({ timeout: waitMs });
  await release(7, "go");
  await backInInput(chat, "Queued as it died?", ["notes.txt"]);
  await screenshot("queued-back-after-crash");
  log("a prompt queued as the daemon died was back in the input, with its chip");

  // 6. The chat brought back after that crash still shows what the user watched stream in, marked cut short (the
  // session's log keeps finished rounds only: prompt and reply were gone).
  await chat.locator(".item.turnEnd", { hasText: "Cut short: the daemon stopped" }).waitFor({ timeout: waitMs });
  const restored = await chat.locator(".item").evaluateAll((items) => items.map((i) => `${i.dataset.kind}: ${i.textContent}`));
  const at = restored.findIndex((line) => line.startsWith("turnEnd: Cut short"));
  if (!restored[at - 2]?.includes("Stream slowly.") || !restored[at - 1]?.startsWith("assistant: A reply that streams")) {
    throw new Error(`the restored chat is ${JSON.stringify(restored)}`);
  }
  await screenshot("cut-short-after-crash");
  log("the answer shown when the daemon died stayed in the restored chat, marked cut short");

  // 7. The daemon dies after it saved the answer, before the turn's end (its postTurn hook runs): the chat brought back
  // shows the answer once (it showed it twice: read back, then again marked cut short).
  await waitForStatus(page, /Ollie: idle/);
  execFileSync("mkfifo", [path.join(gate, "hold")]);
  await send(chat, "Answer, then hold.");
  await chat.locator(".item.assistant", { hasText: "The answer saved before the crash." }).waitFor({ timeout: waitMs });
  // A writer opens once the hook reads the fifo (ENXIO before); held open, the hook waits on.
  const hold = await until("the postTurn hook", () => {
    try {
      return fs.openSync(path.join(gate, "hold"), fs.constants.O_WRONLY | fs.constants.O_NONBLOCK);
    } catch {
      return undefined;
    }
  });
  process.kill(Number(fs.readFileSync(path.join(gate, "pid-7"), "utf8")), "SIGKILL");
  await release(8, "go");
  await waitForStatus(page, /Ollie: idle/);
  await chat.locator(".item.notice.error", { hasText: "stopped unexpectedly" }).last().waitFor({ timeout: waitMs });
  await chat.locator(".item.user", { hasText: "Answer, then hold." }).waitFor({ timeout: waitMs });
  fs.closeSync(hold);
  fs.unlinkSync(path.join(gate, "hold")); // the next turns' hook waits no more
  const shown = await chat.locator(".item").evaluateAll((items) => items.map((i) => `${i.dataset.kind}: ${i.textContent}`));
  const answers = shown.filter((line) => line.includes("The answer saved before the crash."));
  if (answers.length !== 1 || shown.some((line) => line.startsWith("turnEnd: Cut short"))) {
    throw new Error(`the chat brought back is ${JSON.stringify(shown)}`);
  }
  // Not told to send it again (the turn would run twice): its answer was saved.
  const notice = shown.filter((line) => line.includes("stopped unexpectedly")).pop() ?? "";
  if (!notice.includes("answer was saved") || notice.includes("send its prompt again")) throw new Error(`the notice said ${notice}`);
  await screenshot("saved-answer-after-crash");
  log("an answer saved before the daemon died showed once in the restored chat, the notice saying it was saved");

  // 8. Rewind of a turn whose edit of an open file she typed under since (auto-save off): the daemon leaves that buffer
  // as it is, and the notification says so (it said "1 file restored" alone, and her next save wrote the edit back).
  await openFile(page, "calc.py");
  await send(chat, "Fix add.");
  const question = chat.locator(".item.permission", { hasText: "Edit calc.py" });
  await question.locator("button", { hasText: "Allow once" }).click();
  await chat.locator(".item.assistant", { hasText: "Fixed add." }).waitFor({ timeout: waitMs });
  await page.locator(".monaco-editor .view-line", { hasText: "a + b" }).first().waitFor({ timeout: waitMs });
  // Its saved edit rewound, then undone: each time the buffer holds what the disk does, and is clean (it stayed
  // unsaved, the save refused as a change on disk: she was asked to save a file that already held her buffer's text).
  const disk = () => fs.readFileSync(path.join(workspace, "calc.py"), "utf8");
  await runCommand(page, "Ollie: Rewind");
  await page.locator(".quick-input-list .monaco-list-row", { hasText: "Fix add." }).first().click();
  await page.locator(".monaco-dialog-box .monaco-button", { hasText: "Rewind" }).click();
  await page.locator(".notification-toast", { hasText: "(1 file restored)." }).locator(".monaco-button", { hasText: "Undo Rewind" })
    .waitFor({ timeout: waitMs });
  await page.locator(".monaco-editor .view-line", { hasText: "a - b" }).first().waitFor({ timeout: waitMs });
  await until("calc.py rewound on disk and clean", async () => disk().includes("a - b") && (await dirtyTabs(page, "calc.py")) === 0);
  await screenshot("rewound-clean");
  await page.locator(".notification-toast", { hasText: "(1 file restored)." }).locator(".monaco-button", { hasText: "Undo Rewind" }).click();
  const undone = page.locator(".notification-toast", { hasText: "the rewind is undone" });
  await undone.waitFor({ timeout: waitMs });
  await page.locator(".monaco-editor .view-line", { hasText: "a + b" }).first().waitFor({ timeout: waitMs });
  await until("calc.py undone on disk and clean", async () => disk().includes("a + b") && (await dirtyTabs(page, "calc.py")) === 0);
  // Not named as left out of the editor: VS Code reloading the clean buffer from the disk as the undo's edit came made
  // the edit's refusal say so.
  const undoSaid = (await undone.locator(".notification-list-item-message").textContent()) ?? "";
  if (undoSaid !== "Ollie: the rewind is undone.") throw new Error(`the undo said ${undoSaid}`);
  await screenshot("undone-clean");
  await runCommand(page, "Notifications: Clear All Notifications"); // the toasts below are told apart by their words
  log("a saved edit rewound and undone left calc.py clean, its text the disk's");
  await typeUnsaved(page, "calc.py", "# my later line");
  await runCommand(page, "Ollie: Rewind");
  await page.locator(".quick-input-list .monaco-list-row", { hasText: "Fix add." }).first().click();
  await page.locator(".monaco-dialog-box .monaco-button", { hasText: "Rewind" }).click();
  await page.locator(".notification-toast", { hasText: "Not in the editor: calc.py (the buffer changed since the agent's edit" })
    .waitFor({ timeout: waitMs });
  await screenshot("rewind-kept-buffer");
  log("a rewind that left an open buffer she had typed in as it was said so");
  // Undone and rewound again, it says so again (the undo lost the turn's buffer edit: named nowhere, saved back).
  await page.locator(".notification-toast", { hasText: "Not in the editor: calc.py" }).locator(".monaco-button", { hasText: "Undo Rewind" }).click();
  await page.locator(".notification-toast", { hasText: "the rewind is undone" }).waitFor({ timeout: waitMs });
  await runCommand(page, "Ollie: Rewind");
  await page.locator(".quick-input-list .monaco-list-row", { hasText: "Fix add." }).first().click();
  await page.locator(".monaco-dialog-box .monaco-button", { hasText: "Rewind" }).click();
  await page.locator(".notification-toast", { hasText: "Not in the editor: calc.py (the buffer changed since the agent's edit" })
    .waitFor({ timeout: waitMs });
  await screenshot("rewind-again-kept-buffer");
  log("undone and rewound again, it still named that buffer");
  // Another turn's edit, typed under too, rewound by `/rewind` typed in the chat: its answer says so too.
  await send(chat, "Rename add.");
  await chat.locator(".item.permission", { hasText: "Edit calc.py" }).last().locator("button", { hasText: "Allow once" }).click();
  await chat.locator(".item.assistant", { hasText: "Renamed add." }).waitFor({ timeout: waitMs });
  await typeUnsaved(page, "calc.py", " again");
  await send(chat, "/rewind");
  await chat.locator(".item.notice", { hasText: "but not in the editor: calc.py (the buffer changed since the agent's edit" })
    .waitFor({ timeout: waitMs });
  await screenshot("rewind-kept-buffer-command");
  log("/rewind that left it as it was said so too");

  // 9. The agent edits calc.py under her unsaved typing (its buffer only); Rewind takes the edit out of the buffer, and
  // the palette's Undo Rewind after a Restart (a new daemon, as after a window reload: the rewind's notification is gone)
  // puts it back: the files came back and the buffer silently did not (it was kept in the old daemon's memory, and even
  // there not put back). Asked again, it says there is no rewind to undo.
  await send(chat, "Rename it again.");
  await chat.locator(".item.permission", { hasText: "Edit calc.py" }).last().locator("button", { hasText: "Allow once" }).click();
  await chat.locator(".item.assistant", { hasText: "Renamed it again." }).waitFor({ timeout: waitMs });
  const line = (text) => page.locator(".monaco-editor .view-line", { hasText: text }).first();
  await line("def total").waitFor({ timeout: waitMs });
  await runCommand(page, "Ollie: Rewind");
  await page.locator(".quick-input-list .monaco-list-row", { hasText: "Rename it again." }).first().click();
  await page.locator(".monaco-dialog-box .monaco-button", { hasText: "Rewind" }).click();
  await line("def plus").waitFor({ timeout: waitMs });
  await runCommand(page, "Ollie: Restart");
  await release(9, "go");
  await waitForStatus(page, /Ollie: idle/);
  await runCommand(page, "Ollie: Undo Rewind");
  await page.locator(".notification-toast", { hasText: "the rewind is undone" }).waitFor({ timeout: waitMs });
  await line("def total").waitFor({ timeout: waitMs });
  await runCommand(page, "Ollie: Undo Rewind");
  await page.locator(".notification-toast", { hasText: "no rewind to undo" }).waitFor({ timeout: waitMs });
  if (!(await line("# my later line again").count()) || (await dirtyTabs(page, "calc.py")) !== 1) {
    throw new Error("calc.py lost her unsaved typing, or was saved");
  }
  await screenshot("rewind-undone-after-restart");
  log("Undo Rewind after a Restart put the agent's edit back in the buffer, her typing kept; again: no rewind to undo");

  // 10. A session longer than 30 turns: its Rewind pick reaches every turn (it listed the newest 30).
  for (let n = 1; n <= MORE_TURNS; n++) await send(chat, `Prompt ${n}.`);
  await chat.locator(".item.assistant", { hasText: `Answer ${MORE_TURNS}.` }).waitFor({ timeout: waitMs });
  await waitForStatus(page, /Ollie: idle/);
  await runCommand(page, "Ollie: Rewind");
  await page.locator(".quick-input-box input").fill("Turn 3");
  // Ranked first, before turns 30 and on (labelled "Turn 3: <prompt>", the pick put turn 3's longer label after
  // theirs), and described by its prompt, as every turn is (by the turn each prompt starts: one injected text left
  // them all without).
  const third = page.locator('.quick-input-list .monaco-list-row[data-index="0"]');
  await third.locator(".label-name", { hasText: /^Turn 3$/ }).waitFor({ timeout: waitMs });
  await third.locator(".label-description", { hasText: /^\S.* · (changed|changes)/ }).waitFor({ timeout: waitMs });
  await screenshot("rewind-pick-of-many");
  await third.click();
  await page.locator(".monaco-dialog-box", { hasText: "Rewind to before turn 3?" }).waitFor({ timeout: waitMs });
  await screenshot("rewind-turn-3-of-many");
  await page.locator(".monaco-dialog-box .monaco-button", { hasText: "Cancel" }).click();
  log("the Rewind pick of a session of more than 30 turns reached turn 3");
});
