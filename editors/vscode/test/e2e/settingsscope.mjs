// E2E in real VS Code (code-server): a cloned repository's `.vscode/settings.json` chooses neither the model (billed
// to the user's key: a dearer one), the agent nor the daemon command. The chat's model stays the user's; and when the
// repository changes those values (a pull, a branch switch), the daemon is not restarted: the chat stays (it was, and
// the chat emptied: a command typed as the window opened lost its answer). The user's own change restarts it.
//
// Usage: node test/e2e/settingsscope.mjs --vsix ollie-0.1.0.vsix [--keep]   (env: see harness.mjs)

import * as fs from "node:fs";
import * as path from "node:path";
import { fillInput, log, ollieOutput, openChat, runCommand, waitForStatus, waitMs, withVSCode } from "./harness.mjs";

const repoSettings = (model, agent, title) => JSON.stringify({ "ollie.model": model, "ollie.agent": agent, "ollie.serverCommand": "/bin/false", "window.title": title });
const files = { ".vscode/settings.json": repoSettings("repo-dear-model", "yolo", "repo-before") };

await withVSCode({ files, settings: { "ollie.model": "user-model" } }, async ({ page, screenshot, workspace, userData }) => {
  await waitForStatus(page, /Ollie: idle/);
  const chat = await openChat(page);
  // Enter runs a command typed whole, its completion list open or not yet (it completed `/model ` and took a second Enter).
  const ask = async (command, answer) => {
    await fillInput(chat, command);
    await chat.locator("#input").press("Enter");
    await chat.locator(".item.notice", { hasText: answer }).first().waitFor({ timeout: waitMs });
  };
  await ask("/model", "model: user-model");
  // The repository's values change on disk; its window.title shows when VS Code has read them. The chat's next
  // message to the extension comes after that change: a restart it caused has begun by then.
  fs.writeFileSync(path.join(workspace, ".vscode", "settings.json"), repoSettings("repo-dearer-model", "plan", "repo-after"));
  await page.waitForFunction(() => document.title.includes("repo-after"), null, { timeout: waitMs });
  await ask("/agent", "agent: default");
  const notices = await chat.locator(".item.notice").allTextContents();
  if (notices.some((text) => /repo-dear|agent: (yolo|plan)/.test(text))) {
    throw new Error(`the workspace chose the model or the agent: ${JSON.stringify(notices)}`);
  }
  // A restart starts a fresh chat: the first command's answer went with it.
  if (!notices.some((text) => text.includes("model: user-model")) || /restarting/.test(ollieOutput(userData))) {
    throw new Error(`the repository's ignored settings restarted the daemon: the chat holds ${JSON.stringify(notices)}`);
  }
  await screenshot("settings-scope");
  log("the workspace's ollie.model, ollie.agent and ollie.serverCommand were ignored: the chat's model is the user's");
  log("the repository's changed settings restarted nothing: the chat kept its answers");
  // The user's own change (in the Settings editor: code-server does not see settings.json written behind its back)
  // still restarts the daemon with it.
  await runCommand(page, "Preferences: Open User Settings");
  await page.locator(".settings-editor .suggest-input-container").waitFor({ timeout: waitMs });
  await page.keyboard.type("ollie.model");
  await page.locator('.setting-item-contents:has-text("Model name") input').first().fill("user-model-2");
  await chat.locator("#model", { hasText: "user-model-2" }).waitFor({ timeout: waitMs });
  log("the user's own change of ollie.model restarted the daemon with it");
});
