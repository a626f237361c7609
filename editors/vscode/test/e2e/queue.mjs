// E2E in real VS Code (code-server): queued prompts after a Stop and across a window reload. A prompt the chat's page
// queues as the turn ends, before the page hears of the end, is sent, not left waiting for a next turn. A prompt queued
// while a slow reply streams is held by Stop (shown as held, the chat says what happens to it); the next prompt
// goes behind it, so it runs first, then the new one; held, it is drawn after the "Turn interrupted" line. Prompts
// held by Stop when the window reloads come back held in the new window, and Enter on the empty prompt sends them. A
// held prompt that `/queued clear` drops shows dropped. ArrowUp on the empty input, and `/queued pop` typed during a
// turn (it runs at once: the button says Send, not Queue), take the latest queued prompt back into the input with its
// image (both done while an approval question waits); the other stays queued, and a reload mid-turn brings it back
// alone.
// That window reload, while the approval question waits: no empty new chat shows while the session comes back, the turn
// the reload ended says "Turn interrupted" under its step, and Ctrl+Alt+O from the editor puts the cursor in the prompt
// box.
// Keys typed for the prompt as the question takes the focus go on into the prompt. A full queue (32 prompts) refuses the
// next: the chat says why and what to do, and the prompt is back in the input.
//
// Usage: node test/e2e/queue.mjs --vsix ollie-0.1.0.vsix [--keep]   (env: see harness.mjs)

import * as fs from "node:fs";
import * as path from "node:path";
import { chatFocused, chatFrame, fillInput, giveImage, log, pickFile, ollieOutput, openChat, openFile, runCommand, send, until, waitForSavedPrompt, waitForStatus, waitMs, withVSCode } from "./harness.mjs";

// A real 24x16 red PNG, pasted into a prompt queued during a turn.
const PNG = "iVBORw0KGgoAAAANSUhEUgAAABgAAAAQCAIAAACDRijCAAAAGklEQVR4nGO4o6FBFcQwatCoQaMGjRpEGQIA3r3CEG0ftIUAAAAASUVORK5CYII=";
const PICTURED = "What is in this queued picture?";

const SLOW = "This reply streams very slowly so that the user has time to act. ".repeat(10);
const script = [
  { text: "A quick answer." },
  { text: "Answered the late one." },
  { text: SLOW, chunk_size: 2, delay: 0.25 },
  { text: "Summary: a slow story." },
  { text: "Files: none to list." },
  { text: SLOW, chunk_size: 2, delay: 0.25 },
  { text: "Answered the queued one." },
  { text: "The queued picture is red." },
  { text: "Answered after the reload." },
  { text: "Editing the notes.", tool_calls: [{ name: "call_tool", arguments: { calls: [{ tool: "file_edit", args: ["notes.txt", "notes", "edited notes"] }] } }] },
  { text: "Answered alone." },
  { text: SLOW, chunk_size: 2, delay: 0.25 },
];

// What the window keeps of queued pasted images: files of the extension's storage (the state names them).
const storedImages = (userData) => {
  const storage = path.join(userData, "User", "workspaceStorage");
  return fs.readdirSync(storage, { recursive: true }).filter((f) => path.basename(path.dirname(f)) === "queued-images").map((f) => fs.readFileSync(path.join(storage, f), "utf8"));
};
const userTexts = (chat) => chat.locator(".item.user .text").allTextContents();
const meta = (chat, text) => chat.locator(".item.user", { hasText: text }).locator(".meta");
// Whether the last "Turn interrupted" line is drawn before the prompt `text` (both in the chat's log).
const interruptedBefore = (chat, text) => chat.evaluate((text) => {
  const line = [...document.querySelectorAll('#log .item.turnEnd[data-stop="interrupted"]')].pop();
  const prompt = [...document.querySelectorAll("#log .item.user")].find((node) => node.textContent.includes(text));
  return Boolean(line && prompt && line.compareDocumentPosition(prompt) & Node.DOCUMENT_POSITION_FOLLOWING);
}, text);

// The client's trace of its messages (in the Ollie output) shows what the queued prompt's request carried.
const settings = { "files.autoSave": "off", "ollie.trace.server": "verbose" };
// The ollie/queue request's `seen` (the last event the chat had), as the trace shows its params; null before it is sent.
const queuedSeen = (userData) => /Sending request 'ollie\/queue - \(\d+\)'\.[^{]*Params: \{[^}]*"seen": (\d+)/.exec(ollieOutput(userData))?.[1] ?? null;

await withVSCode({ script, files: { "notes.txt": "notes\n" }, settings }, async ({ page, dataDir, userData, screenshot }) => {
  await waitForStatus(page, /Ollie: idle/);
  let chat = await openChat(page);

  // 1. A turn ends before the page hears of it: the page still shows the turn running (its status message saying so
  // again here), and Enter queues. The host, which saw the end, sends the prompt (queued, it waited for a next turn).
  await send(chat, "A quick question.");
  await chat.locator(".item.assistant", { hasText: "A quick answer." }).waitFor({ timeout: waitMs });
  await waitForStatus(page, /Ollie: idle/);
  await chat.evaluate(() => window.dispatchEvent(new MessageEvent("message", { data: { type: "status", running: true } })));
  await chat.locator("#send", { hasText: "Queue" }).waitFor({ timeout: waitMs });
  await send(chat, "Sent as it ended.");
  await chat.locator(".item.assistant", { hasText: "Answered the late one." }).waitFor({ timeout: waitMs });
  if (await meta(chat, "Sent as it ended.").filter({ hasText: "queued" }).count()) throw new Error("the prompt shows queued");
  log("a prompt the page queued after the turn had ended was sent, not left queued");

  // 2. Stop holds the queued prompt; the next prompt goes behind it instead of running past it.
  await send(chat, "Tell a slow story.");
  await chat.locator(".item.assistant", { hasText: "This reply" }).waitFor({ timeout: waitMs });
  // Enter queues once the composer knows the turn runs (its Stop button shows).
  await chat.locator("#stop").waitFor({ state: "visible", timeout: waitMs });
  await send(chat, "Then summarise it.");
  await meta(chat, "Then summarise it.").filter({ hasText: "queued" }).waitFor({ timeout: waitMs });
  // It said what the chat had seen of the running turn: the daemon tells it from a prompt queued once the end showed.
  await until("the ollie/queue request carrying `seen`", () => Number(queuedSeen(userData)) > 0);
  await chat.locator("#stop").click();
  await chat.locator('.item.turnEnd[data-stop="interrupted"]').waitFor({ timeout: waitMs });
  // The clicked Stop hides: the input has the focus for what the user types next (it went to the page's body).
  await chat.waitForFunction(() => document.activeElement?.id === "input", null, { timeout: waitMs });
  await meta(chat, "Then summarise it.").filter({ hasText: "held" }).waitFor({ timeout: waitMs });
  await chat.locator(".item.notice", { hasText: "Stop held the queue: 1 queued prompt waits" }).waitFor({ timeout: waitMs });
  // Held after the turn's end, it is drawn after "Turn interrupted" (it stayed above it, where it was queued).
  if (!(await interruptedBefore(chat, "Then summarise it."))) throw new Error("the held prompt is drawn above the Turn interrupted line");
  await screenshot("queue-held");
  await send(chat, "And list the files.");
  await chat.locator(".item.assistant", { hasText: "Files: none to list." }).waitFor({ timeout: waitMs });
  const order = await userTexts(chat);
  const held = order.indexOf("Then summarise it.");
  if (held < 0 || held > order.indexOf("And list the files.")) throw new Error(`the held prompt did not run first: ${JSON.stringify(order)}`);
  if (await chat.locator(".item.user .meta", { hasText: /queued|held/ }).count()) throw new Error("a prompt that ran still shows as queued");
  const answers = await chat.locator(".item.assistant").allTextContents();
  if (answers.indexOf("Summary: a slow story.") > answers.indexOf("Files: none to list.")) throw new Error(`answers out of order: ${JSON.stringify(answers)}`);
  await screenshot("queue-ran-in-order");
  log("after Stop the queued prompt showed held, after the Turn interrupted line, then ran before the next prompt, neither left marked queued; the input had the focus");

  // 3. Prompts queued mid-turn, held by Stop, then a window reload: they come back (held) and run before the next
  // prompt, in order; one with a pasted image is queued with it (it stayed in the input, "sent when no turn runs"), and
  // keeps it.
  await send(chat, "Another slow story.");
  await chat.locator(".item.assistant", { hasText: "This reply" }).nth(1).waitFor({ timeout: waitMs });
  await chat.locator("#stop").waitFor({ state: "visible", timeout: waitMs });
  await send(chat, "Queued before the reload.");
  await meta(chat, "Queued before the reload.").filter({ hasText: "queued" }).waitFor({ timeout: waitMs });
  await giveImage(chat, "paste", "image.png", PNG);
  await chat.locator(".chip.image", { hasText: "pasted image 1" }).waitFor({ timeout: waitMs });
  await send(chat, PICTURED);
  await meta(chat, PICTURED).filter({ hasText: "queued" }).waitFor({ timeout: waitMs });
  await chat.locator(".item.user", { hasText: PICTURED }).filter({ hasText: "image: pasted image 1" }).waitFor({ timeout: waitMs });
  if ((await chat.locator("#input").inputValue()) !== "" || await chat.locator(".chip.image").count()) throw new Error("the prompt with an image stayed in the input");
  await screenshot("queue-image-queued");
  // Kept for a reload in a file, not in the window's state (rewritten whole at each save).
  await until("the pasted image kept in a file of the extension's storage", () => storedImages(userData).some((data) => data.includes(PNG)));
  // Held by a Stop before the reload (the reload during step 4's question brings back one queued mid-turn).
  await chat.locator("#stop").click();
  await meta(chat, PICTURED).filter({ hasText: "held" }).waitFor({ timeout: waitMs });
  await Promise.all([page.waitForEvent("load", { timeout: waitMs }), runCommand(page, "Developer: Reload Window")]);
  await page.locator(".monaco-workbench").waitFor({ timeout: waitMs });
  chat = await openChat(page);
  await meta(chat, "Queued before the reload.").filter({ hasText: "held" }).waitFor({ timeout: waitMs });
  await meta(chat, PICTURED).filter({ hasText: "held" }).waitFor({ timeout: waitMs });
  await chat.locator(".item.user", { hasText: PICTURED }).filter({ hasText: "image: pasted image 1" }).waitFor({ timeout: waitMs });
  await chat.locator(".item.notice", { hasText: "The window reloaded during a turn: 2 queued prompts wait" }).waitFor({ timeout: waitMs });
  await screenshot("queue-after-reload");
  // Enter on the empty prompt sends them (it did nothing: only a new prompt let them go), the picture with its prompt.
  await chat.locator("#input").press("Enter");
  await chat.locator(".item.assistant", { hasText: "Answered the queued one." }).waitFor({ timeout: waitMs });
  await chat.locator(".item.assistant", { hasText: "The queued picture is red." }).waitFor({ timeout: waitMs });
  await waitForSavedPrompt(dataDir, [PICTURED, `"images"`, PNG]);
  await until("nothing left marked held", async () => (await chat.locator(".item.user .meta", { hasText: /queued|held/ }).count()) === 0);
  await chat.locator("#stop").waitFor({ state: "hidden", timeout: waitMs });
  await until("the ran prompt's image file removed", () => storedImages(userData).length === 0);
  await send(chat, "Go on after the reload.");
  await waitForSavedPrompt(dataDir, ["Answered after the reload."]);
  await chat.locator(".item.assistant", { hasText: "Answered after the reload." }).waitFor({ timeout: waitMs });
  const after = await userTexts(chat);
  const ran = ["Queued before the reload.", PICTURED, "Go on after the reload."].map((text) => after.indexOf(text));
  if (ran.some((n, i) => n < 0 || (i > 0 && n < ran[i - 1]))) throw new Error(`after the reload: ${JSON.stringify(after)}`);
  await until("nothing left marked queued", async () => (await chat.locator(".item.user .meta", { hasText: /queued|held/ }).count()) === 0);
  // The frame may have been replaced by the reload: look it up again for the last screenshot.
  chat = await chatFrame(page);
  await screenshot("queue-reload-ran");
  log("a prompt queued when the window reloaded came back held, and Enter on the empty prompt sent it");
  log("a prompt with a pasted image queued during a turn showed queued with its image, came back held after a reload, and ran after the one before it with its image");

  // 4. A window reload while the agent waits on an approval question.
  await chat.locator("#approval").selectOption("ask");
  await chat.locator('#approval[data-mode="ask"]').waitFor({ timeout: waitMs });
  await send(chat, "Edit the notes.");
  const editStep = (frame, kind) => frame.locator(`.item.${kind}`, { has: frame.locator(".step-title", { hasText: "Edit notes.txt" }) }).last();
  // The user types the next prompt meanwhile: the question takes the focus, and the keys typed after that go on into
  // the prompt (they were lost on its buttons), its spaces answering nothing (each one follows a letter: a Space
  // after a pause in the typing would answer).
  let typed = "";
  for (const word of ["then", "check", "the", "spelling", "of", "the", "notes", "too", "please"]) {
    await page.keyboard.type(`${word} `);
    typed += `${word} `;
    if (await editStep(chat, "permission").count()) break;
  }
  await editStep(chat, "permission").waitFor({ timeout: waitMs });
  await page.keyboard.type("and the dates");
  typed += "and the dates";
  const draft = await chat.locator("#input").inputValue();
  if (draft !== typed) throw new Error(`typed ${JSON.stringify(typed)} while the question came, the prompt holds ${JSON.stringify(draft)}`);
  if (await editStep(chat, "permission").locator(".permission-answer").count()) throw new Error("the keys typed for the prompt answered the question");
  log("keys typed for the prompt as a question took the focus went on into the prompt, answering nothing");
  await waitForStatus(page, /Ollie: waiting for your answer/);
  await screenshot("queue-question-before-reload");

  // 4b. While the question waits (its turn runs), a queued prompt is taken back (as in Claude Code): ArrowUp on the
  // empty input takes the latest one back into the input, its pasted image with it, the other still queued (`/queued
  // pop` took the oldest, and only said it: gone from the queue and the input). Queued again, `/queued pop` typed while
  // the turn runs runs at once (the button says Send, not Queue: it was queued behind the prompts it was to pop) and
  // takes it back too. The reload below brings back the other alone, and `/queued clear` drops it: it shows dropped (it
  // stayed marked held, and a reload brought it back held), and the next prompt runs alone. (One reload for this and
  // the question: each had its own.)
  await send(chat, "Never mind this one.");
  await meta(chat, "Never mind this one.").filter({ hasText: "queued" }).waitFor({ timeout: waitMs });
  await giveImage(chat, "paste", "image.png", PNG);
  await chat.locator(".chip.image", { hasText: "pasted image 1" }).waitFor({ timeout: waitMs });
  await pickFile(page, chat, "notes.txt");
  await send(chat, "Nor this one.");
  await meta(chat, "Nor this one.").filter({ hasText: "queued" }).waitFor({ timeout: waitMs });
  const takenBack = async (how) => {
    await until(`the latest queued prompt back in the input (${how})`, async () => (await chat.locator("#input").inputValue()) === "Nor this one.");
    await chat.locator(".chip.image", { hasText: "pasted image 1" }).waitFor({ timeout: waitMs });
    await chat.locator("#chips .chip", { hasText: "notes.txt" }).waitFor({ timeout: waitMs }); // a chip, not text
    await until(`the prompt taken back no longer shown queued (${how})`, async () => (await chat.locator(".item.user", { hasText: "Nor this one." }).count()) === 0);
    if (!(await meta(chat, "Never mind this one.").filter({ hasText: "queued" }).count())) throw new Error(`the other queued prompt is not queued after ${how}`);
  };
  await chat.locator("#input").press("ArrowUp");
  await takenBack("ArrowUp");
  await screenshot("queue-taken-back");
  await chat.locator("#input").press("Enter"); // queued again, its image with it
  await chat.locator(".item.user", { hasText: "Nor this one." }).filter({ hasText: "image: pasted image 1" }).filter({ hasText: "notes.txt" }).waitFor({ timeout: waitMs });
  // The button says Send for a command typed while the turn runs (it runs at once); it said Queue.
  await fillInput(chat, "/queued pop");
  await chat.locator("#send", { hasText: "Send" }).waitFor({ timeout: waitMs });
  await chat.locator("#input").press("Enter");
  await takenBack("/queued pop");
  if (!(await chat.locator("#stop").isVisible())) throw new Error("the turn ended before /queued pop ran: it ran at once only by chance");
  await screenshot("queue-popped");
  log("ArrowUp on the empty input took back the latest queued prompt with its image and file chip, the other still queued");
  await Promise.all([page.waitForEvent("load", { timeout: waitMs }), runCommand(page, "Developer: Reload Window")]);
  // From the first look at the new chat page until the session's history is in it: never the empty new chat (it
  // showed for as long as the daemon took to start and load the session).
  const firstLook = chatFrame(page).then(async (frame) => {
    const watching = frame.evaluate((timeout) => new Promise((resolve) => {
      const shown = new Set();
      const look = () => {
        for (const id of ["empty", "loading"]) if (document.getElementById(id)?.hidden === false) shown.add(id);
        if (document.getElementById("title")?.textContent === "New chat") shown.add("new chat title");
        if (document.querySelector("#log .item")) done();
      };
      const observer = new MutationObserver(look);
      const done = () => {
        observer.disconnect();
        resolve([...shown]);
      };
      observer.observe(document.body, { subtree: true, childList: true, attributes: true });
      look();
      setTimeout(done, timeout);
    }), waitMs);
    // To look at, not checked: "Loading the session…" while it shows (a start fast enough may never show it).
    const loadingShot = frame.locator("#loading:not([hidden]), #log .item").first().waitFor({ timeout: waitMs })
      .then(async () => (await frame.locator("#loading").isVisible()) && screenshot("queue-reload-loading"))
      .catch(() => undefined);
    const [shown] = await Promise.all([watching, loadingShot]);
    return shown;
  });
  firstLook.catch(() => undefined); // awaited below, where its failure is thrown
  await page.locator(".monaco-workbench").waitFor({ timeout: waitMs });
  chat = await openChat(page);
  const shown = await firstLook;
  if (shown.includes("empty")) throw new Error(`the empty new chat showed while the session came back (shown: ${shown})`);
  if (shown.includes("new chat title")) throw new Error("the header said New chat while the session came back");
  // The turn the reload ended (its call closed under the question) says the reload ended it: not her "interrupted",
  // nor a failure in red.
  const cut = editStep(chat, "tool");
  await cut.locator('.step-row[data-status="closed"]').waitFor({ timeout: waitMs });
  await until("the reload's end of the turn right under the step it cut short",
    () => cut.evaluate((node) => node.nextElementSibling?.matches('.item.turnEnd[data-stop="closed"]') === true));
  await screenshot("queue-reload-ended-question");
  log(`after a reload during an approval question the chat came back without the empty new chat (shown: ${shown.join(", ") || "nothing"}) and said the reload ended the turn`);

  // 4c. What the reload brought back of the queue: the prompt queued during the question alone, held.
  await meta(chat, "Never mind this one.").filter({ hasText: "held" }).waitFor({ timeout: waitMs });
  await chat.locator(".item.notice", { hasText: "1 queued prompt waits" }).last().waitFor({ timeout: waitMs });
  const back = await chat.locator(".item.user", { has: chat.locator(".meta", { hasText: /queued|held/ }) }).locator(".text").allTextContents();
  if (back.join("|") !== "Never mind this one.") throw new Error(`after the reload ${JSON.stringify(back)} came back held`);
  log("/queued pop typed during the turn ran at once (the button said Send) and took the prompt back into the input, and a reload brought back only the one held");
  await send(chat, "/queued clear");
  await chat.locator(".item.notice", { hasText: "cleared 1 queued prompt" }).waitFor({ timeout: waitMs });
  await meta(chat, "Never mind this one.").filter({ hasText: "dropped" }).waitFor({ timeout: waitMs });
  await screenshot("queue-dropped");
  await send(chat, "Just this.");
  await chat.locator(".item.assistant", { hasText: "Answered alone." }).waitFor({ timeout: waitMs });
  // The next prompt once the page has the turn's end (before, Enter queues it for a turn to come: it never ran).
  await chat.locator("#stop").waitFor({ state: "hidden", timeout: waitMs });
  log("a held prompt dropped by /queued clear showed dropped and the next prompt ran alone");


  // 5. Ctrl+Alt+O brings the cursor back to the prompt box from the editor (the chat's page had moved it elsewhere).
  await chat.locator("#log").focus();
  await openFile(page, "notes.txt");
  // The editor's own focus first: pressed as the file pick closed, the key went to it, not to the editor (CI).
  await page.locator(".monaco-editor.focused").first().waitFor({ timeout: waitMs });
  await page.keyboard.press("Control+Alt+O");
  await chatFocused(page, chat);
  await chat.waitForFunction(() => document.activeElement?.id === "input", null, { timeout: waitMs });
  await screenshot("queue-focus-chat-key");
  log("Ctrl+Alt+O from the editor put the cursor in the chat's prompt box");

  // 6. A full queue refuses the next prompt: the chat says why and what to do, the prompt is back in the input, and
  // what waits stays queued.
  await send(chat, "A last slow story.");
  await chat.locator(".item.assistant", { hasText: "This reply" }).last().waitFor({ timeout: waitMs });
  await chat.locator("#stop").waitFor({ state: "visible", timeout: waitMs });
  for (let n = 1; n <= 32; n++) await send(chat, `Queued number ${n}.`);
  await meta(chat, "Queued number 32.").filter({ hasText: "queued" }).waitFor({ timeout: waitMs });
  await send(chat, "One too many.");
  await chat.locator(".item.notice", { hasText: "queue full: 32 prompts wait in this session, the most it queues: let them run first, or drop them (/queued clear). The prompt was not queued: it is back in the input." }).waitFor({ timeout: waitMs });
  if ((await chat.locator("#input").inputValue()) !== "One too many.") throw new Error("the refused prompt is not back in the input");
  await screenshot("queue-full");
  await chat.locator("#stop").click();
  await fillInput(chat, "/queued clear");
  await chat.locator("#input").press("Enter");
  await chat.locator(".item.notice", { hasText: "cleared 32 queued prompts" }).waitFor({ timeout: waitMs });
  log("a prompt past the queue's bound was refused: the chat said why and what to do, and it was back in the input");
});
