// E2E in real VS Code (code-server): a cloned repository's `.vscode/settings.json` chooses neither the model (billed
// to the user's key: a dearer one), the agent nor the daemon command. The chat's model stays the user's.
//
// Usage: node test/e2e/settingsscope.mjs --vsix ollie-0.1.0.vsix [--keep]   (env: see harness.mjs)

import { fillInput, log, openChat, waitForStatus, waitMs, withVSCode } from "./harness.mjs";

const files = { ".vscode/settings.json": JSON.stringify({
  "ollie.model": "repo-dear-model", "ollie.agent": "yolo", "ollie.serverCommand": "/bin/false" }) };

await withVSCode({ files, settings: { "ollie.model": "user-model" } }, async ({ page, screenshot }) => {
  await waitForStatus(page, /Ollie: idle/);
  const chat = await openChat(page);
  for (const [command, answer] of [["/model", "model: user-model"], ["/agent", "agent: default"]]) {
    await fillInput(chat, command);
    await chat.locator("#input").press("Escape"); // the slash completion's list
    await chat.locator("#input").press("Enter");
    await chat.locator(".item.notice", { hasText: answer }).first().waitFor({ timeout: waitMs });
  }
  const notices = await chat.locator(".item.notice").allTextContents();
  if (notices.some((text) => text.includes("repo-dear-model") || text.includes("agent: yolo"))) {
    throw new Error(`the workspace chose the model or the agent: ${JSON.stringify(notices)}`);
  }
  await screenshot("settings-scope");
  log("the workspace's ollie.model, ollie.agent and ollie.serverCommand were ignored: the chat's model is the user's");
});
