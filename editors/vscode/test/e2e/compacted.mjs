// E2E in real VS Code (code-server): a session compacted (/compact) and then resumed (the window reloaded) starts with
// the agent's notes of the turns compaction replaced. The chat says the conversation was compacted, and shows the
// user's turns (the notes showed as her prompt: "[ollie: the agent's own notes ..." and the task state's JSON).
//
// Usage: node test/e2e/compacted.mjs --vsix ollie-0.1.0.vsix [--keep]   (env: see harness.mjs)

import { log, openChat, reloadChat, send, waitMs, withVSCode } from "./harness.mjs";

const state = { goal: "explain the code", plan: ["explain"], plan_step: "explain", decisions: [], files: [] };
const script = [{ text: "The first answer." }, { text: JSON.stringify(state) }];

await withVSCode({ script }, async ({ page, screenshot }) => {
  let chat = await openChat(page);
  await send(chat, "first question");
  await chat.locator(".item.assistant", { hasText: "The first answer." }).waitFor({ timeout: waitMs });
  await send(chat, "/compact");
  await chat.locator(".item.notice", { hasText: "compacted:" }).waitFor({ timeout: waitMs });
  chat = await reloadChat(page);
  await chat.locator(".item.assistant", { hasText: "The first answer." }).waitFor({ timeout: waitMs });
  const notice = chat.locator(".item.notice", { hasText: "Earlier conversation compacted" });
  await notice.waitFor({ timeout: waitMs });
  const prompts = await chat.locator(".item.user").allTextContents();
  if (prompts.length !== 1 || !prompts[0].includes("first question")) throw new Error(`the prompts shown: ${JSON.stringify(prompts)}`);
  await screenshot("compacted-resumed");
  log("a compacted session resumed says it was compacted, the agent's notes no prompt of hers");
});
