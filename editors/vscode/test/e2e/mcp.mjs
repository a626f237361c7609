// E2E in real VS Code (code-server): MCP in the chat. A workspace's own MCP server (.mcp.json, hostile content) is
// asked about in the chat with the program it would run before anything starts; allowed always, the turn uses its
// tool. Then `@` offers the server's resource beside the workspace's files; picked, it is a chip, and the daemon
// reads it through the server into the prompt.
//
// Usage: node test/e2e/mcp.mjs --vsix ollie-0.1.0.vsix [--keep]   (env: see harness.mjs)

import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { log, openChat, python, send, waitForSavedPrompt, waitForStatus, waitMs, withVSCode } from "./harness.mjs";

const server = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..", "..", "..", "tests", "mcp", "server.py");
const mcpJson = JSON.stringify({ mcpServers: { planted: { command: python, args: [server] } } });
const script = [
  { text: "Adding.", tool_calls: [{ name: "mcp__planted__add", arguments: { a: 20, b: 22 } }] },
  { text: "It is 42." },
  { text: "The readme greets you." },
];

await withVSCode({ script, files: { "notes.txt": "notes\n", ".mcp.json": mcpJson }, settings: { "files.autoSave": "off" } },
  async ({ page, dataDir, screenshot }) => {
    await waitForStatus(page, /Ollie: idle/);
    const chat = await openChat(page);

    // 1. The workspace's server: a question in the chat, with its whole command line; nothing ran before it.
    await send(chat, "Add 20 and 22.");
    const question = chat.locator(".item.permission").last();
    const title = question.locator(".step-title", { hasText: "start MCP server 'planted'" });
    await title.waitFor({ timeout: waitMs });
    const shown = (await title.textContent()) ?? "";
    if (!shown.includes(server) || !shown.includes(".mcp.json")) throw new Error(`the question does not show the program: ${shown}`);
    // Its long paths wrap inside the card (they ran past its right edge, cut off by the view).
    const past = await title.evaluate((node) => node.getBoundingClientRect().right - node.closest(".item.permission").getBoundingClientRect().right);
    if (past > 0) throw new Error(`the question's command line runs ${past}px past its card`);
    await screenshot("mcp-question");
    // No "Reject with feedback": the answer reaches only the server's start, nothing would carry the text to the model.
    if (await question.locator("button", { hasText: "feedback" }).count()) throw new Error("an MCP question offers feedback");
    await question.locator("button", { hasText: "Allow always" }).click();
    // Remembered for the workspace (ollie's state), not "for the rest of the session".
    await question.locator(".permission-answer", { hasText: "Allowed for this workspace from now on" }).waitFor({ timeout: waitMs });
    await chat.locator(".item.assistant", { hasText: "It is 42." }).waitFor({ timeout: waitMs });
    await waitForSavedPrompt(dataDir, ["It is 42."]);
    log("a workspace's MCP server was asked about in the chat with its command line, no feedback offered; allowed always (this workspace), its tool ran");

    // 2. `@` lists the server's resource under the files; the chip's text reaches the model, read by the daemon.
    await chat.locator("#input").fill("");
    await chat.locator("#input").pressSequentially("@");
    await chat.locator("#slash li", { hasText: "@file" }).waitFor({ timeout: waitMs });
    await chat.locator("#input").press("Enter");
    await page.locator(".quick-input-widget .quick-input-title", { hasText: "MCP resource" }).waitFor({ timeout: waitMs });
    await page.locator(".quick-input-widget input").fill("note://");
    await page.locator(".quick-input-list .monaco-list-row", { hasText: "planted: note://readme" }).first().waitFor({ timeout: waitMs });
    await screenshot("mcp-resource-pick");
    await page.keyboard.press("Enter");
    await chat.locator("#chips .chip", { hasText: "planted: note://readme" }).waitFor({ timeout: waitMs });
    await send(chat, "What does the readme say?");
    await chat.locator(".item.assistant", { hasText: "The readme greets you." }).waitFor({ timeout: waitMs });
    await chat.locator(".item.user", { hasText: "What does the readme say?" }).locator(".meta", { hasText: "planted: note://readme" })
      .waitFor({ timeout: waitMs });
    await waitForSavedPrompt(dataDir, ["MCP resource: note://readme (server planted)", "the readme of the test server"]);
    await screenshot("mcp-resource-sent");
    log("@ offered the MCP server's resource; its chip's text reached the model's prompt, read by the daemon");
  },
);
