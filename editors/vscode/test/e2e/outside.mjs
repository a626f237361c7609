// E2E in real VS Code (code-server), approval `ask`: a step the model marks to run outside the sandbox is one card
// naming exactly what runs outside, with no "Allow always"; Allow once runs it, and nothing asks again (it was two
// questions: the step's card, then a notification asking about the same code).
//
// Usage: node test/e2e/outside.mjs --vsix ollie-0.1.0.vsix [--keep]   (env: see harness.mjs)

import * as fs from "node:fs";
import * as path from "node:path";
import { log, openChat, send, waitForStatus, waitMs, withVSCode } from "./harness.mjs";

const code = "echo ran > proof";
const script = [
  { text: "", tool_calls: [{ name: "execute_code", arguments: { steps: [{ code, elevated: true }] } }] },
  { text: "Ran it outside." },
];

await withVSCode({ script }, async ({ page, workspace, screenshot }) => {
  await waitForStatus(page, /Ollie: idle/);
  const chat = await openChat(page);
  await send(chat, "Run it outside the sandbox");
  const question = chat.locator(".item.permission").last();
  await question.locator(".permission-head", { hasText: "outside the sandbox" }).waitFor({ timeout: waitMs });
  await question.locator("pre.permission-outside", { hasText: code }).waitFor({ timeout: waitMs });
  if (await question.locator("button", { hasText: "Allow always" }).count()) throw new Error("leaving the sandbox offers \"Allow always\"");
  await screenshot("outside-question");
  await question.locator("button", { hasText: "Allow once" }).click();
  await chat.locator(".item.assistant", { hasText: "Ran it outside." }).waitFor({ timeout: waitMs });
  if (fs.readFileSync(path.join(workspace, "proof"), "utf8") !== "ran\n") throw new Error("the allowed step did not run");
  const asked = await chat.locator(".item.permission").count();
  const notes = await page.locator(".notifications-toasts", { hasText: "outside the sandbox" }).count();
  if (asked !== 1 || notes) throw new Error(`asked ${asked} card(s) and ${notes} notification(s) for one step`);
  log("one question showed what runs outside the sandbox, without Allow always, and its answer ran it");
});
