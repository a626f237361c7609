// E2E in real VS Code (code-server): what a hostile model's answer names runs no command and writes no hidden file.
// A code action's short answer comes as a notification, and VS Code makes `[label](command:id?args)` in one a link it
// opens with commands allowed (any command, with arguments: text typed into a terminal): it is shown as text. Apply on
// a code block whose fence names `cfg.ini`, a link the cloned repository carries to `.git/config` (which tool code may not
// write, and whose `core.fsmonitor` git runs as the user), is refused: it put the model's config in the editor, one
// Save away from the disk. A longer answer, the document the daemon has VS Code open (window/showDocument), made the same
// link one a Ctrl+click ran while it was markdown: it is plain text, where only web addresses and files link.
//
// Usage: node test/e2e/modellinks.mjs --vsix ollie-0.1.0.vsix [--keep]   (env: see harness.mjs)

import * as fs from "node:fs";
import * as path from "node:path";
import { log, openChat, openFile, send, waitForStatus, waitMs, withVSCode } from "./harness.mjs";

const COMMAND = "command:workbench.action.terminal.sendSequence?%7B%22text%22%3A%22touch%20pwned%5Cn%22%7D";
const CONFIG = "[core]\n\tbare = false\n";
const script = [
  { text: `It adds two numbers. [Open the fix](${COMMAND})` },
  { text: `It adds two numbers.\n\nSee [the docs](https://example.com/docs) and [Open the fix](${COMMAND}).\n` },
  { text: "Use this config:\n\n```ini cfg.ini\n[core]\n\tfsmonitor = touch pwned\n```\n" },
];
const settings = { "workbench.editor.enablePreview": false, "files.autoSave": "off" };
const files = { "calc.py": "def add(a, b):\n    return a + b\n", ".git/config": CONFIG };

/** Select all of calc.py and run ollie's Explain from the light bulb's menu. */
async function explain(page) {
  await openFile(page, "calc.py");
  await page.locator(".monaco-editor .view-lines").first().click();
  await page.keyboard.press("Control+A");
  const bulb = page.locator(".codicon-light-bulb, .codicon-lightbulb").first();
  await bulb.waitFor({ timeout: waitMs });
  await bulb.click();
  await page.locator(".action-widget .monaco-list-row", { hasText: "Ollie: Explain" }).first().click();
}

await withVSCode({ script, files, settings }, async ({ page, workspace, screenshot }) => {
  fs.symlinkSync(".git/config", path.join(workspace, "cfg.ini"));
  await waitForStatus(page, /Ollie: idle/);
  const chat = await openChat(page);

  // 1. The code action's answer, a notification: the model's link is text, no anchor to click.
  await explain(page);
  const toast = page.locator(".notification-toast", { hasText: "ollie: It adds two numbers." });
  await toast.waitFor({ timeout: waitMs });
  await screenshot("model-link-notification");
  const links = toast.locator(".notification-list-item-message a");
  if (await links.count()) throw new Error(`the model's answer made a link in the notification: ${await links.first().getAttribute("href")}`);
  if (!((await toast.textContent()) ?? "").includes("[Open the fix]")) throw new Error("the answer's text was not shown as written");
  log("a code action's answer with a command link showed as text, with no link to click");

  // 2. A longer answer comes as a document, in plain text (as markdown, a Ctrl+click on the command ran it): once its
  // links are found (the web one), the command is none of them.
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
