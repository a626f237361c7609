// E2E in real VS Code (code-server): ollie's editor features, one window, four scenarios, the last three each on its own file.
// - nolsp: ollie-lsp is not on PATH (and ollie.serverCommand empty) but in ~/.local/bin, where pipx put it. The chat says
//   what to do (it said to install what was installed; blank before that), and does not run it; a prompt sent anyway
//   stays in the chat with that answer (it was blank and swallowed the prompt). And the window's own checks: code-server
//   asks a stranger for its password, checks its cookie without argon2, and started no built-in that no test uses.
//   Then she sets ollie.serverCommand: the daemon starts (a settings change restarts it), for the scenarios below.
// - codeaction: ollie's code actions on a selection, with the backend down and then up. Down: Explain ends at once
//   with an error that points to the chat's onboarding, which says what to do (it said it again), and as a warning. Up: Explain's prompt shows in the chat with the
//   code it is about (it came with no prompt: its answer under the turn before), the answer comes as a message too, and
//   the chat's "cannot be reached" help goes once the model has answered.
// - modellinks: what a hostile model's answer names runs no command and writes no hidden file. A code action's short
//   answer comes as a notification, and VS Code makes `[label](command:id?args)` in one a link it opens with commands
//   allowed (any command, with arguments: text typed into a terminal): it is shown as text. Apply on a code block whose
//   fence names `cfg.ini`, a link the cloned repository carries to `.git/config` (which tool code may not write, and
//   whose `core.fsmonitor` git runs as the user), is refused: it put the model's config in the editor, one Save away
//   from the disk. A longer answer, the document the daemon has VS Code open (window/showDocument), made the same link
//   one a Ctrl+click ran while it was markdown: it is plain text, where only web addresses and files link. Its answers
//   say "sums" where codeaction's say "adds": each toast is its own scenario's.
// - ghost: with OLLIE_COMPLETION_MODEL set, typing in a file shows the model's fill-in-the-middle answer as inline
//   (grey) text after the cursor; Tab accepts it.
// codeaction runs after nolsp: it needs nothing listening at the backend's URL. Until ghost, calc.py is only selected and
// nothing is typed in an editor, so no completion is asked before the scripted server has answered the chat (a
// completion taking a chat reply would fail that scenario's check, not pass it); ghost's answers come last.
//
// Usage: node test/e2e/lspfeatures.mjs --vsix ollie-0.1.0.vsix [--keep]   (env: see harness.mjs)

import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { daemon, freePort, log, openChat, openFile, runCommand, scenario, send, serverEnvFor, UNUSED_BUILTINS, until, waitForStatus, waitMs, withVSCode } from "./harness.mjs";

// nolsp: no ollie-lsp on the PATH code-server (and so the extension) gets; the daemon is started by its full path.
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

const COMMAND = "command:workbench.action.terminal.sendSequence?%7B%22text%22%3A%22touch%20pwned%5Cn%22%7D";
const CONFIG = "[core]\n\tbare = false\n";
const AREA = "def area(r):\n    return 3.14 * \n\nprint(area(2))\n";
const port = await freePort();
const settings = { "workbench.editor.enablePreview": false, "files.autoSave": "off", "editor.inlineSuggest.enabled": true };
// At debug level the daemon's log (daemon.log, a failure's artifact) says each inline request's steps: asked,
// cancelled, sent to the model, answered.
const serverEnv = { ...serverEnvFor(`http://127.0.0.1:${port}/v1`), OLLIE_COMPLETION_MODEL: "scripted-model", OLLIE_LOG_LEVEL: "DEBUG" };
// codeaction's answer, modellinks', then ghost's: each typing pause may ask once, every one gets the same answer.
const script = [
  { text: "It adds two numbers." },
  { text: `It sums two numbers. [Open the fix](${COMMAND})` },
  { text: `It sums two numbers.\n\nSee [the docs](https://example.com/docs) and [Open the fix](${COMMAND}).\n` },
  { text: "Use this config:\n\n```ini cfg.ini\n[core]\n\tfsmonitor = touch pwned\n```\n" },
  ...Array.from({ length: 20 }, () => ({ text: "r * r" })),
];

/** Select all of calc.py and run ollie's Explain from the light bulb's menu. */
async function explain(page) {
  await openFile(page, "calc.py");
  await page.locator(".monaco-editor .view-lines").first().click();
  await page.keyboard.press("Control+A");
  await page.locator(".codicon-light-bulb, .codicon-lightbulb").first().waitFor({ timeout: waitMs });
  await page.locator(".codicon-light-bulb, .codicon-lightbulb").first().click();
  const action = page.locator(".action-widget .monaco-list-row", { hasText: "Ollie: Explain" }).first();
  await action.waitFor({ timeout: waitMs });
  await action.click();
}

await withVSCode({ script: null, files: { "calc.py": "def add(a, b):\n    return a + b\n", "area.py": AREA, ".git/config": CONFIG }, serverEnv, settings: { ...settings, "ollie.serverCommand": "" } },
  async ({ page, workspace, userData, startLLM, screenshot }) => {
    await scenario("nolsp", async () => {
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
      // She sets the daemon's command in the Settings editor (code-server does not see settings.json written behind
      // its back): the change starts it, for the scenarios below.
      await runCommand(page, "Notifications: Clear All Notifications");
      await runCommand(page, "Preferences: Open User Settings");
      await page.locator(".settings-editor .suggest-input-container").waitFor({ timeout: waitMs });
      await page.keyboard.type("ollie.serverCommand");
      await page.locator('.setting-item-contents:has-text("Server Command") input').first().fill(daemon);
      await waitForStatus(page, /Ollie: idle/);
      if (fs.existsSync(ran)) throw new Error("the ollie-lsp off PATH was run");
      // Closed as she would, at its title's X (the Settings editor opens as a modal over the window).
      await page.locator(".modal-editor-header .codicon-close").first().click();
      await page.locator(".modal-editor-part .settings-editor").waitFor({ state: "hidden", timeout: waitMs });
    });

    await scenario("codeaction", async () => {
      const chat = await openChat(page);

      // 1. Nothing listens at the backend's URL: the onboarding says so and what to do, the failed turn points to it.
      await chat.locator("#onboarding", { hasText: `http://127.0.0.1:${port}/v1 cannot be reached` }).waitFor({ timeout: waitMs });
      await explain(page);
      await chat.locator(".item.notice.error", { hasText: "Ollie cannot take a turn yet (see above: what to do)" }).waitFor({ timeout: waitMs });
      await chat.locator(".item.user", { hasText: "Explain what this code does" }).waitFor({ timeout: waitMs });
      await page.locator(".notifications-toasts", { hasText: "cannot connect" }).waitFor({ timeout: waitMs });
      await screenshot("codeaction-backend-down");
      log("with the backend down, Explain said what to do in the chat and as a warning");

      // 2. The backend is up: the action's prompt shows in the chat, with the code it is about.
      await startLLM(script, { port });
      await waitForStatus(page, /Ollie: idle/);
      await explain(page);
      await chat.locator(".item.assistant", { hasText: "It adds two numbers." }).waitFor({ timeout: waitMs });
      const prompts = chat.locator(".item.user", { hasText: "Explain what this code does" });
      if ((await prompts.count()) !== 2) throw new Error(`the chat shows ${await prompts.count()} Explain prompts, not 2`);
      await prompts.last().locator(".meta", { hasText: /calc\.py:1-\d/ }).waitFor({ timeout: waitMs });
      await page.locator(".notifications-toasts", { hasText: "ollie: It adds two numbers." }).waitFor({ timeout: waitMs });
      // The model answered: the chat no longer says it cannot be reached (Bug: the banner stayed over the answer).
      await chat.locator("#onboarding").waitFor({ state: "hidden", timeout: waitMs });
      await screenshot("codeaction-explained");
      log("Explain's prompt showed in the chat with the code it was about, its answer in the chat and as a message");
    });

    await scenario("modellinks", async () => {
      fs.symlinkSync(".git/config", path.join(workspace, "cfg.ini"));
      const chat = await openChat(page);
      // 1. The code action's answer, a notification: the model's link is text, no anchor to click.
      await explain(page);
      const toast = page.locator(".notification-toast", { hasText: "ollie: It sums two numbers." });
      await toast.waitFor({ timeout: waitMs });
      await screenshot("model-link-notification");
      const links = toast.locator(".notification-list-item-message a");
      if (await links.count()) throw new Error(`the model's answer made a link in the notification: ${await links.first().getAttribute("href")}`);
      if (!((await toast.textContent()) ?? "").includes("[Open the fix]")) throw new Error("the answer's text was not shown as written");
      log("a code action's answer with a command link showed as text, with no link to click");

      // 2. A longer answer comes as a document, in plain text (as markdown, a Ctrl+click on the command ran it): once
      // its links are found (the web one), the command is none of them.
      await explain(page);
      await page.locator(".tabs-container .tab", { hasText: /answer-\d+\./ }).waitFor({ timeout: waitMs });
      await page.locator(".statusbar-item", { hasText: /^(Plain Text|Markdown)$/ }).waitFor({ timeout: waitMs });
      const mode = await page.locator(".statusbar-item", { hasText: /^(Plain Text|Markdown)$/ }).first().textContent();
      if (mode !== "Plain Text") throw new Error(`the answer document is ${mode}, whose links run commands`);
      await page.locator(".monaco-editor .detected-link", { hasText: "https://example.com/docs" }).waitFor({ timeout: waitMs });
      await screenshot("model-link-document");
      const commandLinks = page.locator(".monaco-editor .detected-link", { hasText: "command:" });
      if (await commandLinks.count()) throw new Error("the answer document made the model's command a link to Ctrl+click");
      log("a code action's longer answer, a document, made no link of the model's command");

      // 3. Apply on a block whose fence names a workspace link to .git/config: refused, nothing in the editor.
      await send(chat, "How do I configure git?");
      const block = chat.locator(".item.assistant .code-block").last();
      await block.waitFor({ timeout: waitMs });
      await block.locator('button[data-action="apply"]').click();
      await page.locator(".notification-toast", { hasText: "cfg.ini leads to .git/config, a hidden file: not applied" }).waitFor({ timeout: waitMs });
      await screenshot("apply-through-link-refused");
      if (await page.locator(".tabs-container .tab", { hasText: "cfg.ini" }).count()) throw new Error("Apply opened the linked .git/config");
      if (fs.readFileSync(path.join(workspace, ".git", "config"), "utf8") !== CONFIG) throw new Error(".git/config changed");
      log("Apply of a block naming a link to .git/config was refused, and the file is unchanged");
    });

    await scenario("ghost", async () => {
      await waitForStatus(page, /Ollie: idle/);
      await openFile(page, "area.py");
      // The cursor at the end of `    return 3.14 * `, as a user typing the expression.
      await page.locator(".monaco-editor .view-lines").first().click();
      await page.keyboard.press("Control+Home");
      await page.keyboard.press("ArrowDown");
      await page.keyboard.press("End");
      await page.keyboard.type("(");
      await page.keyboard.press("Backspace");
      // Ghost text is drawn in the line, in elements of its own (`ghost-text*` classes), not in the document.
      const shown = await until("the ghost text", () => page.evaluate(() => {
        const parts = [...document.querySelectorAll(".monaco-editor .view-lines [class*='ghost-text']")];
        // Spaces are drawn as nbsp; the parts may come more than once (the answer's first length is what is shown).
        const text = parts.map((e) => e.textContent ?? "").join("").replace(/\u00a0/g, " ");
        return text.includes("r * r") ? text : "";
      })).catch(async (err) => {
        // What the lines hold, for the failure's artifacts (the screenshot does not tell ghost text from text).
        const html = await page.evaluate(() => document.querySelector(".monaco-editor .view-lines")?.innerHTML ?? "");
        fs.writeFileSync(path.join(process.env.OLLIE_E2E_ARTIFACTS ?? ".", "view-lines.html"), html);
        throw err;
      });
      await screenshot("ghost-text");
      log(`ghost text shown: ${JSON.stringify(shown.slice(0, "r * r".length))}`);
      await page.keyboard.press("Tab");
      await page.keyboard.press("Control+S");
      const file = path.join(workspace, "area.py");
      await until("the accepted completion saved", async () => fs.readFileSync(file, "utf8").includes("return 3.14 * r * r\n"));
      log("ollie's ghost text showed after the cursor and Tab accepted it");
    });
  },
);
fs.rmSync(home, { recursive: true, force: true });
