// E2E in real VS Code (code-server): a reply that breaks off with a server error after its first words, then comes
// whole on the retry, shows once: the retry's note, then the answer, without the words of the attempt that failed
// (they stayed above the note, "Half an", as if the model had said them).
//
// Usage: node test/e2e/retry.mjs --vsix ollie-0.1.0.vsix [--keep]   (env: see harness.mjs)

import { log, openChat, send, waitMs, withVSCode } from "./harness.mjs";

const script = [{ text: "Half an answer", chunk_size: 5, stream_error: 503, drop: 2 }, { text: "Recovered whole." }];

await withVSCode({ script }, async ({ page, screenshot }) => {
  const chat = await openChat(page);
  await send(chat, "hi");
  await chat.locator(".item.assistant", { hasText: "Recovered whole." }).waitFor({ timeout: waitMs });
  await chat.locator(".item.notice", { hasText: "503" }).waitFor({ timeout: waitMs });
  await screenshot("retried");
  const answers = await chat.locator(".item.assistant").allTextContents();
  if (answers.some((text) => text.includes("Half"))) throw new Error(`the failed attempt's words still show: ${JSON.stringify(answers)}`);
  log("a retried reply shows once, without the failed attempt's words");
});
