// E2E in real VS Code (code-server): ollie-lsp is not installed (not on PATH, no ollie.serverCommand). The chat says
// what to do, and a prompt sent anyway stays in the chat with that answer (it was blank and swallowed the prompt).
//
// Usage: node test/e2e/nolsp.mjs --vsix ollie-0.1.0.vsix [--keep]   (env: see harness.mjs)

import * as fs from "node:fs";
import * as path from "node:path";
import { log, openChat, runCommand, waitMs, withVSCode } from "./harness.mjs";

// No ollie-lsp on the PATH code-server (and so the extension) gets.
process.env.PATH = (process.env.PATH ?? "").split(path.delimiter).filter((dir) => !fs.existsSync(path.join(dir, "ollie-lsp"))).join(path.delimiter);

await withVSCode({ script: null, serverEnv: {}, settings: { "ollie.serverCommand": "" } }, async ({ page, screenshot }) => {
  const chat = await openChat(page);
  const missing = chat.locator(".item.notice", { hasText: "Cannot find ollie-lsp on PATH" });
  await missing.waitFor({ timeout: waitMs });
  if (!((await missing.textContent()) ?? "").includes("pipx install ollie-agent")) throw new Error("the chat does not say how to install it");
  await screenshot("no-ollie-lsp-start");
  // The same error's toast covers the chat's input in a small window: the user closes it.
  await runCommand(page, "Notifications: Clear All Notifications");
  const input = chat.locator("#input");
  await input.click();
  await input.fill("hello?");
  await input.press("Enter");
  await chat.locator(".item.user", { hasText: "hello?" }).waitFor({ timeout: waitMs });
  await chat.locator(".item.notice", { hasText: "Ollie: Restart" }).last().waitFor({ timeout: waitMs });
  await screenshot("no-ollie-lsp");
  log("with no ollie-lsp the chat says how to install it, and a prompt sent stays with the answer");
  // Another user of the machine, who has its port but not the session cookie, gets the login page (it served him
  // the workbench and its terminal, as the tester, under `--auth none`).
  const stranger = await fetch(new URL(page.url()).origin + "/", { redirect: "manual" });
  if (stranger.status !== 302 || !(stranger.headers.get("location") ?? "").includes("login")) throw new Error(`code-server served a stranger: ${stranger.status}`);
  log("code-server asks another user for its password");
});
