// E2E in real VS Code (code-server): two scenarios of one window, each in its own session (a failure names it).
// - retry: a reply that breaks off with a server error after its first words, then comes whole on the retry, shows
//   once: the retry's note, then the answer, without the words of the attempt that failed (they stayed above the
//   note, "Half an", as if the model had said them).
// - compacted: a session compacted (/compact) and then resumed (the window reloaded) starts with the agent's notes of
//   the turns compaction replaced. The chat says the conversation was compacted, and shows the user's turns (the
//   notes showed as her prompt: "[ollie: the agent's own notes ..." and the task state's JSON).
//
// Usage: node test/e2e/compacted.mjs --vsix ollie-0.1.0.vsix [--keep]   (env: see harness.mjs)

import { log, openChat, reloadChat, runCommand, scenario, send, until, waitMs, withVSCode } from "./harness.mjs";

const state = { goal: "explain the code", plan: ["explain"], plan_step: "explain", decisions: [], files: [] };
const script = [
  { text: "Half an answer", chunk_size: 5, stream_error: 503, drop: 2 }, { text: "Recovered whole." },
  { text: "The first answer." }, { text: JSON.stringify(state) },
];

await withVSCode({ script }, async ({ page, screenshot }) => {
  let chat = await openChat(page);
  await scenario("retry", async () => {
    await send(chat, "hi");
    await chat.locator(".item.assistant", { hasText: "Recovered whole." }).waitFor({ timeout: waitMs });
    await chat.locator(".item.notice", { hasText: "503" }).waitFor({ timeout: waitMs });
    await screenshot("retried");
    const answers = await chat.locator(".item.assistant").allTextContents();
    if (answers.some((text) => text.includes("Half"))) throw new Error(`the failed attempt's words still show: ${JSON.stringify(answers)}`);
    log("a retried reply shows once, without the failed attempt's words");
  });

  await scenario("compacted", async () => {
    await runCommand(page, "Ollie: New Session");
    await until("the new session's empty chat", async () => (await chat.locator("#log .item.user").count()) === 0);
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
});
