// E2E in real VS Code (code-server): a command's answer laid out in columns (/help) keeps its columns in the chat, a
// description that wraps going on under its column (it was wrapped in a proportional font, each description starting
// somewhere else); a typo's answer is one error line naming the closest command (it was the whole list). `/rewind` and `/agent NAME` typed in the chat take the turns they
// cut out of it (they stayed in sight, as if the model still had them); a `/rewind` that failed takes nothing. The
// conversation `/agent NAME` ends is kept as a saved session (it was lost): the chat says so, Switch Session brings it back;
// `/help` says what resumes a session here (it advised a terminal's `ollie --session`). A user's sandbox.yaml with a
// misspelt key is a warning notification as the session opens (no step runs in this scenario).
//
// Usage: node test/e2e/commands.mjs --vsix ollie-0.1.0.vsix [--keep]   (env: see harness.mjs)

import * as fs from "node:fs";
import * as path from "node:path";
import { log, openChat, runCommand, send, until, waitForNotification, waitForStatus, waitMs, withVSCode, work } from "./harness.mjs";

const policy = path.join(work, "xdg", "config", "ollie", "sandbox.yaml"); // the daemon's user config (isolatedEnv)
fs.mkdirSync(path.dirname(policy), { recursive: true });
fs.writeFileSync(policy, "netwrok:\n  enabled: true\n");

/** The left edge, in pixels, of `word` in the chat's notice that holds it. */
async function leftOf(chat, notice, word) {
  return chat.locator(notice).last().locator(".column-last", { hasText: word }).evaluate((node, needle) => {
    const text = node.firstChild;
    const range = document.createRange();
    const at = text.textContent.indexOf(needle);
    range.setStart(text, at);
    range.setEnd(text, at + needle.length);
    return range.getBoundingClientRect().left;
  }, word);
}

await withVSCode({ script: [{ text: "Hello." }, { text: "Again." }], files: { "notes.txt": "notes\n" }, settings: { "files.autoSave": "off" } }, async ({ page, screenshot }) => {
  await waitForStatus(page, /Ollie: idle/);
  const chat = await openChat(page);
  const said = `ollie: ${policy}: key 'netwrok': unknown key; fix the file: no step runs until it loads`;
  await waitForNotification(page, said);
  // Expanded, as a user reads a long one: the whole text in sight.
  const item = page.locator(".notifications-center .notification-list-item", { hasText: said }).first();
  await item.locator(".codicon-notifications-expand").click();
  await until("the notification expanded", async () => (await item.locator(".codicon-notifications-collapse").count()) > 0);
  await screenshot("policy-notification");
  await runCommand(page, "Notifications: Clear All Notifications");
  log("the broken sandbox.yaml was a notification naming its file and key as the session opened");
  await send(chat, "hi");
  await chat.locator(".item.assistant", { hasText: "Hello." }).waitFor({ timeout: waitMs });
  // The turn's end drawn (the page's running state came before it): /help is sent, not queued for a turn's end.
  await chat.locator('.item.turnEnd[data-stop="end"]').waitFor({ state: "attached", timeout: waitMs });
  const notice = ".item.notice.info";
  await send(chat, "/help");
  await chat.locator(notice, { hasText: "rename the session" }).waitFor({ timeout: waitMs });
  const columns = [await leftOf(chat, notice, "stop this session"), await leftOf(chat, notice, "rename the session"),
    await leftOf(chat, notice, "show or change the working directory")];
  // The /network row's second line ("and the hosts allowed...") goes on under the descriptions too.
  columns.push(await leftOf(chat, notice, "and the hosts allowed"));
  if (new Set(columns).size !== 1) throw new Error(`/help: the descriptions start at ${columns.join(", ")} px`);
  await send(chat, "/rewnd");
  const typo = chat.locator(".item.notice.error").last();
  await until("the typo's error", async () => (await typo.textContent())?.includes("unknown command /rewnd: did you mean /rewind? (/help lists the commands)"));
  if ((await typo.textContent()).includes("rename the session")) throw new Error("a typo's answer listed every command");
  await screenshot("command-columns");
  log("/help kept its columns; a typo's error named the closest command alone");

  const gone = (text) => until(`"${text}" gone from the chat`, async () => (await chat.locator(".item", { hasText: text }).count()) === 0);
  await send(chat, "/rewind");
  await chat.locator(".item.notice", { hasText: "rewound to before turn 1" }).waitFor({ timeout: waitMs });
  await gone("Hello.");
  await send(chat, "again");
  await chat.locator(".item.assistant", { hasText: "Again." }).waitFor({ timeout: waitMs });
  await send(chat, "/agent coding");
  await chat.locator(".item.notice", { hasText: "session cleared" }).waitFor({ timeout: waitMs });
  await gone("Again.");
  await send(chat, "/rewind abc");
  await chat.locator(".item.notice.error", { hasText: "takes a turn number" }).waitFor({ timeout: waitMs });
  await chat.locator(".item.notice", { hasText: "session cleared" }).waitFor({ timeout: waitMs });
  await screenshot("command-cut");
  log("/rewind and /agent took the turns they cut out of the chat; a failed /rewind took nothing");

  const kept = chat.locator(".item.notice", { hasText: 'the previous conversation is saved as "again"' });
  await kept.waitFor({ timeout: waitMs });
  if (!(await kept.textContent()).includes("resume it with the editor's session list (VS Code: Ollie: Switch Session")) {
    throw new Error(`the switch said ${JSON.stringify(await kept.textContent())}`);
  }
  await send(chat, "/help");
  const resumeRow = chat.locator(notice).last();
  await until("/help's /resume row", async () => (await resumeRow.textContent())?.includes("resume one with the editor's session list"));
  if ((await resumeRow.textContent()).includes("ollie --session")) throw new Error("/help in the chat advised a terminal's ollie --session");
  await runCommand(page, "Ollie: Switch Session");
  await page.locator(".quick-input-widget .quick-input-title", { hasText: "Switch Session" }).waitFor({ timeout: waitMs });
  await page.locator(".quick-input-list .monaco-list-row", { hasText: "again" }).first().click();
  await chat.locator(".item.assistant", { hasText: "Again." }).waitFor({ timeout: waitMs });
  await screenshot("agent-switch-kept");
  log("the conversation /agent ended was kept: the chat said so, /help named the session list, Switch Session brought it back");
});
