// E2E in real VS Code (code-server): ollie-lsp is not on PATH (no ollie.serverCommand) but in ~/.local/bin, where
// pipx put it. The chat says what to do (it said to install what was installed; blank before that), and does not run
// it; a prompt sent anyway stays in the chat with that answer (it was blank and swallowed the prompt).
//
// Usage: node test/e2e/nolsp.mjs --vsix ollie-0.1.0.vsix [--keep]   (env: see harness.mjs)

import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { log, openChat, runCommand, UNUSED_BUILTINS, until, waitMs, withVSCode } from "./harness.mjs";

// No ollie-lsp on the PATH code-server (and so the extension) gets.
process.env.PATH = (process.env.PATH ?? "").split(path.delimiter).filter((dir) => !fs.existsSync(path.join(dir, "ollie-lsp"))).join(path.delimiter);
// Installed by pipx for this user, in a directory her PATH lacks: a daemon that says so if it is run.
const home = fs.mkdtempSync(path.join(os.tmpdir(), "ollie-e2e-home-"));
const ran = path.join(home, "ran");
fs.mkdirSync(path.join(home, ".local", "bin"), { recursive: true });
fs.writeFileSync(path.join(home, ".local", "bin", "ollie-lsp"), `#!/bin/sh\ntouch '${ran}'\n`, { mode: 0o755 });
process.env.HOME = home;

/** The extensions the window's extension host activated, from its log. */
function activated(userData) {
  const logs = fs.readdirSync(path.join(userData, "logs"), { recursive: true }).filter((f) => f.endsWith("remoteexthost.log"));
  const lines = logs.flatMap((f) => fs.readFileSync(path.join(userData, "logs", f), "utf8").split("\n"));
  return lines.map((line) => /_doActivateExtension (\S+),/.exec(line)?.[1]).filter(Boolean);
}

await withVSCode({ script: null, serverEnv: {}, settings: { "ollie.serverCommand": "" } }, async ({ page, userData, screenshot }) => {
  const chat = await openChat(page);
  const missing = chat.locator(".item.notice", { hasText: `ollie-lsp is in ${home}/.local/bin, which is not on PATH` });
  await missing.waitFor({ timeout: waitMs });
  if (!((await missing.textContent()) ?? "").includes('run "pipx ensurepath"')) throw new Error("the chat does not say how to put it on PATH");
  if (fs.existsSync(ran)) throw new Error("the ollie-lsp off PATH was run");
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
  log("with no ollie-lsp on PATH the chat says how to put it there, and a prompt sent stays with the answer");
  // Another user of the machine, who has its port but not the session cookie, gets the login page (it served him
  // the workbench and its terminal, as the tester, under `--auth none`).
  const stranger = await fetch(new URL(page.url()).origin + "/", { redirect: "manual" });
  if (stranger.status !== 302 || !(stranger.headers.get("location") ?? "").includes("login")) throw new Error(`code-server served a stranger: ${stranger.status}`);
  log("code-server asks another user for its password");
  // The session cookie is the password as code-server was given it: an argon2 hash (from a plain PASSWORD) made it
  // run argon2 at every request, ~7 of the ~11 CPU-s it spent on a window.
  const cookie = (await page.context().cookies()).find((c) => c.name.startsWith("code-server-session"));
  const value = decodeURIComponent(cookie?.value ?? "");
  if (!value || value.startsWith("$argon2")) throw new Error(`code-server checks an argon2 hash at every request: ${value.slice(0, 12)}`);
  log("code-server checks the session cookie without argon2");
  // The window starts no built-in that no test uses (Git and GitHub started before Ollie, at each window's CPU).
  const started = await until("Ollie's activation in the extension host's log", () => {
    const ids = activated(userData);
    return ids.includes("ollie.ollie") && ids;
  });
  const unused = started.filter((id) => UNUSED_BUILTINS.has(id.replace(/^vscode\./, "")));
  if (unused.length) throw new Error(`the window started built-ins no test uses: ${unused}`);
  log(`the window activated no built-in that no test uses (it activated ${started.join(", ")})`);
});
fs.rmSync(home, { recursive: true, force: true });
