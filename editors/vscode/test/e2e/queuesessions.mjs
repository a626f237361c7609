// E2E steps in a window of inject.mjs's (once a window of its own), in new sessions: two sessions' queued prompts
// across a window reload (the one of inject.mjs's slow reply), as a user meets them. Session Alpha streams slowly and a
// prompt is queued in it; New Session starts Beta, which streams too, and a prompt is queued there; the window reloads
// mid-turn. Beta (shown before the reload) comes back with its prompt held and the notice, Alpha's when Alpha is
// switched to; neither runs on its own, each runs when the user sends the next prompt in its session. Then both queue
// again (one held by Stop) and Restart puts them back in the input, said: neither is queued in the fresh daemon.
// Last, a question left open in Alpha while Beta is shown: Switch Session's row of Alpha says it waits for her answer.

import { chatFocused, fillInput, log, openChat, pickFile, runCommand, send, until, waitForStatus, waitMs } from "./harness.mjs";

const slow = (name) => ({ text: `${name} streams very slowly so that the user has time to act. `.repeat(10), chunk_size: 2, delay: 0.25 });
// The scripted model answers in the order it is asked: a prompt that ran out of turn takes another's answer. These
// steps' replies, in order, after the window's earlier ones.
export const SESSIONS_REPLIES = [
  slow("Alpha's story"),
  slow("Beta's story"),
  { text: "Answered Beta's queued prompt." },
  { text: "Answered Beta next." },
  { text: "Answered Alpha's queued prompt." },
  { text: "Answered Alpha next." },
  slow("Alpha's second story"),
  slow("Beta's second story"),
  { text: "Answered Alpha after Restart." },
  { text: "Answered Beta after Restart." },
  { text: "", tool_calls: [{ name: "call_tool", arguments: { calls: [{ tool: "file_edit", args: ["style.txt", "style", "tabs"] }] } }] },
  { text: "Alpha edited it." },
];
const RELOADED = "The window reloaded during a turn: 1 queued prompt waits";

const user = (chat, text) => chat.locator(".item.user", { hasText: text });
const meta = (chat, text) => user(chat, text).locator(".meta");
const answer = (chat, text) => chat.locator(".item.assistant", { hasText: text });
const texts = async (items) => (await items.allTextContents()).map((t) => t.trim());
const waitingMarks = (chat) => chat.locator(".item.user .meta", { hasText: /queued|held/ }).count();

// Start a slow turn in the session shown and queue `queued` behind it (Enter queues once the Stop button shows).
async function streamAndQueue(chat, prompt, story, queued) {
  await send(chat, prompt);
  await answer(chat, story).waitFor({ timeout: waitMs });
  await chat.locator("#stop").waitFor({ state: "visible", timeout: waitMs });
  await send(chat, queued);
  await meta(chat, queued).filter({ hasText: "queued" }).waitFor({ timeout: waitMs });
}

// Switch Session to the session whose title has `title`; resolves once `shown` (a prompt of it) is in the chat and
// the chat has the focus (a resume reveals it when done: a pick opened before would close).
export async function switchTo(page, chat, title, shown) {
  await runCommand(page, "Ollie: Switch Session");
  await page.locator(".quick-input-widget .quick-input-title", { hasText: "Switch Session" }).waitFor({ timeout: waitMs });
  await page.locator(".quick-input-list .monaco-list-row", { hasText: title }).first().click();
  await user(chat, shown).first().waitFor({ timeout: waitMs });
  await chatFocused(page, chat);
}

// The held prompt is still held (it did not run on its own); the next prompt runs it first, then itself.
async function sendBehindHeld(chat, held, next, heldAnswer, nextAnswer) {
  await meta(chat, held).filter({ hasText: "held" }).waitFor({ timeout: waitMs });
  if (await answer(chat, heldAnswer).count()) throw new Error(`"${held}" ran on its own`);
  await send(chat, next);
  await answer(chat, nextAnswer).waitFor({ timeout: waitMs });
  const prompts = await texts(chat.locator(".item.user .text"));
  const answers = await texts(chat.locator(".item.assistant"));
  if (!(prompts.indexOf(held) >= 0 && prompts.indexOf(held) < prompts.indexOf(next))) throw new Error(`prompts out of order: ${JSON.stringify(prompts)}`);
  if (!(answers.indexOf(heldAnswer) >= 0 && answers.indexOf(heldAnswer) < answers.indexOf(nextAnswer))) throw new Error(`answers out of order: ${JSON.stringify(answers)}`);
  await until("nothing left marked queued or held", async () => (await waitingMarks(chat)) === 0);
  await chat.locator("#stop").waitFor({ state: "hidden", timeout: waitMs });
}

/** Step 1, from a new session, its input emptied: Alpha and Beta each stream with a prompt queued behind (the window
 * reloads next, inject.mjs's session streaming too). */
export async function queueInTwoSessions({ page, screenshot }) {
  const chat = await openChat(page);
  await runCommand(page, "Ollie: New Session");
  await until("the new session's empty chat", async () => (await chat.locator("#log .item.user").count()) === 0);
  await chatFocused(page, chat);
  while (await chat.locator("#chips .chip-remove").count()) await chat.locator("#chips .chip-remove").first().click();
  await fillInput(chat, "");

  // 1. Alpha streams and a prompt is queued in it; New Session starts Beta, which streams too, with its own queued.
  await streamAndQueue(chat, "Alpha: tell a slow story.", "Alpha's story", "Alpha queued.");
  await screenshot("sessions-alpha-queued");
  await runCommand(page, "Ollie: New Session");
  await user(chat, "Alpha").first().waitFor({ state: "detached", timeout: waitMs });
  await streamAndQueue(chat, "Beta: tell a slow story.", "Beta's story", "Beta queued.");
  await screenshot("sessions-beta-queued");
}

/** Steps 2 to 4, the window reloaded while both turns ran. */
export async function heldAfterReload({ page, screenshot }) {
  // 2. Beta, shown before, comes back with its prompt held and the notice.
  const chat = await openChat(page);
  await meta(chat, "Beta queued.").filter({ hasText: "held" }).waitFor({ timeout: waitMs });
  await chat.locator(".item.notice", { hasText: RELOADED }).waitFor({ timeout: waitMs });
  if (await user(chat, "Alpha").count()) throw new Error("Alpha's prompts show in Beta's chat");
  await screenshot("sessions-beta-after-reload");

  // 3. Alpha, switched to, comes back with its own prompt held and the notice.
  await switchTo(page, chat, "Alpha: tell a slow story.", "Alpha: tell a slow story.");
  await meta(chat, "Alpha queued.").filter({ hasText: "held" }).waitFor({ timeout: waitMs });
  await chat.locator(".item.notice", { hasText: RELOADED }).waitFor({ timeout: waitMs });
  if (await user(chat, "Beta").count()) throw new Error("Beta's prompts show in Alpha's chat");
  await screenshot("sessions-alpha-after-reload");
  log("after the reload each session's queued prompt came back held, with the notice, when that session was shown");

  // 4. Neither ran on its own (a prompt run out of turn takes the next answer); each runs before the next prompt sent
  // in its session.
  await switchTo(page, chat, "Beta: tell a slow story.", "Beta queued.");
  await sendBehindHeld(chat, "Beta queued.", "Beta next.", "Answered Beta's queued prompt.", "Answered Beta next.");
  await screenshot("sessions-beta-ran");
  await switchTo(page, chat, "Alpha: tell a slow story.", "Alpha queued.");
  await sendBehindHeld(chat, "Alpha queued.", "Alpha next.", "Answered Alpha's queued prompt.", "Answered Alpha next.");
  await screenshot("sessions-alpha-ran");
  log("neither held prompt ran on its own; each ran before the next prompt sent in its session");
}

/** Step 5, in Alpha, its input emptied (inject.mjs's Restart put its text back). */
export async function putBackOnRestart({ page, screenshot }) {
  const chat = await openChat(page);
  while (await chat.locator("#chips .chip-remove").count()) await chat.locator("#chips .chip-remove").first().click();
  await fillInput(chat, "");
  await switchTo(page, chat, "Alpha: tell a slow story.", "Alpha next.");
  // 5. Both sessions queue again mid-turn (Alpha's with a file chip, then held by Stop), the next prompt is being
  // typed, then Restart: the fresh daemon has neither, so both are back in the input (before what was typed, with the
  // chip) and the chat says so (they vanished without a word). Sent again, or not: the next prompt in each runs alone.
  await send(chat, "Alpha: one more slow story.");
  await answer(chat, "Alpha's second story").waitFor({ timeout: waitMs });
  await chat.locator("#stop").waitFor({ state: "visible", timeout: waitMs });
  await pickFile(page, chat, "notes.txt");
  await send(chat, "Alpha queued before Restart.");
  await meta(chat, "Alpha queued before Restart.").filter({ hasText: "queued" }).waitFor({ timeout: waitMs });
  await chat.locator("#stop").click();
  await meta(chat, "Alpha queued before Restart.").filter({ hasText: "held" }).waitFor({ timeout: waitMs });
  await switchTo(page, chat, "Beta: tell a slow story.", "Beta next.");
  await streamAndQueue(chat, "Beta: one more slow story.", "Beta's second story", "Beta queued before Restart.");
  await fillInput(chat, "still typing");
  await screenshot("sessions-before-restart");
  await runCommand(page, "Ollie: Restart");
  await user(chat, "Beta").first().waitFor({ state: "detached", timeout: waitMs });
  await waitForStatus(page, /Ollie: idle/);
  const back = "Alpha queued before Restart.\nBeta queued before Restart.\nstill typing";
  await chat.waitForFunction((want) => document.getElementById("input")?.value === want, back, { timeout: waitMs }).catch(async () => {
    throw new Error(`after Restart the input holds ${JSON.stringify(await chat.locator("#input").inputValue())}, not ${JSON.stringify(back)}`);
  });
  if ((await texts(chat.locator("#chips .chip"))).join() !== "notes.txt") throw new Error("the put-back prompt lost its file chip");
  await chat.locator(".item.notice", { hasText: "The daemon restarted: the 2 prompts waiting in it did not run. They are back in the input" }).waitFor({ timeout: waitMs });
  await screenshot("sessions-back-in-input-after-restart");
  log("after Restart the queued and the held prompt were back in the input, before the text being typed, with the chip, said");
  while (await chat.locator("#chips .chip-remove").count()) await chat.locator("#chips .chip-remove").first().click();
  for (const [name, title] of [["Alpha", "Alpha: tell a slow story."], ["Beta", "Beta: tell a slow story."]]) {
    await switchTo(page, chat, title, `${name} next.`);
    await send(chat, `${name} after Restart.`);
    await answer(chat, `Answered ${name} after Restart.`).waitFor({ timeout: waitMs });
    await chat.locator("#stop").waitFor({ state: "hidden", timeout: waitMs });
    if (await user(chat, `${name} queued before Restart.`).count()) throw new Error(`${name}'s prompt queued before Restart came back`);
    if (await chat.locator(".item.notice", { hasText: "queued prompt" }).count()) throw new Error(`${name}'s chat says a queued prompt waits`);
    if (await waitingMarks(chat)) throw new Error(`a prompt in ${name} shows as queued or held after Restart`);
    await screenshot(`sessions-${name.toLowerCase()}-after-restart`);
  }
  log("after Restart neither session's queued prompt came back, and the next prompt in each ran alone");

  // A question left open in Alpha, Beta shown: Switch Session's row of Alpha says it waits for her answer (its turn
  // stopped there, it read as any other session).
  await switchTo(page, chat, "Alpha: tell a slow story.", "Alpha after Restart.");
  await send(chat, "Alpha: edit style.txt.");
  const allow = chat.locator(".item.permission button", { hasText: "Allow once" });
  await allow.waitFor({ timeout: waitMs });
  await switchTo(page, chat, "Beta: tell a slow story.", "Beta after Restart.");
  await runCommand(page, "Ollie: Switch Session");
  await page.locator(".quick-input-list .monaco-list-row", { hasText: "Alpha: tell a slow story." }).filter({ hasText: "waiting for your answer" })
    .waitFor({ timeout: waitMs });
  await screenshot("sessions-pick-waiting");
  await page.locator(".quick-input-list .monaco-list-row", { hasText: "Alpha: tell a slow story." }).first().click();
  await allow.click();
  await answer(chat, "Alpha edited it.").waitFor({ timeout: waitMs });
  log("Switch Session said which session waited for her answer");
}
