// E2E in real VS Code (code-server), approval `ask`: a step the model marks to run outside the sandbox is one card
// naming exactly what runs outside, with no "Allow always"; Allow once runs it, and nothing asks again (it was two
// questions: the step's card, then a notification asking about the same code). Under `auto` the elevation alone is
// the same card, its code's lines whole in a <pre> (it was a notification that ran them together on one line), and
// the chat shows them once (an info line above the card said them again).
//
// Usage: node test/e2e/outside.mjs --vsix ollie-0.1.0.vsix [--keep]   (env: see harness.mjs)

import * as fs from "node:fs";
import * as path from "node:path";
import { log, openChat, send, waitForStatus, waitMs, withVSCode } from "./harness.mjs";

const code = "echo ran > proof";
const program = "echo one > later\necho two >> later";
const script = [
  { text: "", tool_calls: [{ name: "execute_code", arguments: { steps: [{ code, elevated: true }] } }] },
  { text: "Ran it outside." },
  { text: "", tool_calls: [{ name: "execute_code", arguments: { steps: [{ code: program, elevated: true }] } }] },
  { text: "Not run." },
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

  await chat.locator("#approval").selectOption("auto");
  await chat.locator('#approval[data-mode="auto"]').waitFor({ timeout: waitMs });
  await send(chat, "Run the other one outside");
  const elevation = chat.locator(".item.permission").nth(1);
  const shown = elevation.locator("pre.permission-outside");
  await shown.waitFor({ timeout: waitMs });
  if ((await shown.innerText()) !== program) throw new Error(`the card showed ${JSON.stringify(await shown.innerText())}`);
  const offered = await elevation.locator(".permission-buttons button").allInnerTexts();
  if (offered.map((b) => b.trim()).join("|") !== "Allow once|Reject|Reject with feedback…") throw new Error(`the card offered ${offered}`);
  await screenshot("outside-auto-question");
  // The card shows the program; the chat said it a second time above, as "asking to run outside the sandbox: ...".
  const said = (await chat.locator("#log").innerText()).split("echo two >> later").length - 1;
  if (said !== 1) throw new Error(`the chat shows the program ${said} times`);
  await elevation.locator('button[data-outcome="reject"]').click();
  await chat.locator(".item.assistant", { hasText: "Not run." }).waitFor({ timeout: waitMs });
  if (fs.existsSync(path.join(workspace, "later"))) throw new Error("the rejected program ran");
  if (await page.locator(".notifications-toasts", { hasText: "outside the sandbox" }).count()) throw new Error("a notification asked too");
  log("under auto the elevation was a card with the program's lines whole, no Allow always, and Reject kept it in");
});
