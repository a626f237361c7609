// E2E in real VS Code (code-server): the question about an MCP tool's call shows every argument the call sends, not
// only the first text one its title names (a decoy argument first hid the one the server used), wrapped in the card.
//
// Usage: node test/e2e/mcpcall.mjs --vsix ollie-0.1.0.vsix [--keep]   (env: see harness.mjs)

import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { log, openChat, python, send, waitForStatus, waitMs, withVSCode } from "./harness.mjs";

const server = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..", "..", "..", "tests", "mcp", "server.py");
process.env.OLLIE_APPROVAL = "ask";
const script = [
  { text: "", tool_calls: [{ name: "mcp__planted__create_issue", arguments: { note: "harmless", title: "rm -rf the repo" } }] },
  { text: "Not filed." },
];

await withVSCode({ script, files: { ".mcp.json": JSON.stringify({ mcpServers: { planted: { command: python, args: [server] } } }) } },
  async ({ page, screenshot }) => {
    await waitForStatus(page, /Ollie: idle/);
    const chat = await openChat(page);
    await send(chat, "File an issue.");
    const start = chat.locator(".item.permission").last();
    await start.locator(".step-title", { hasText: "start MCP server 'planted'" }).waitFor({ timeout: waitMs });
    await start.locator("button", { hasText: "Allow once" }).click();
    const call = chat.locator(".item.permission", { hasText: 'planted: create_issue "harmless"' });
    const code = call.locator(".permission-code", { hasText: '"title": "rm -rf the repo"' });
    await code.waitFor({ timeout: waitMs });
    // Wrapped, not behind a scroll bar: the end of a long argument (or program line) read as absent.
    const hidden = await code.evaluate((node) => node.scrollWidth - node.clientWidth);
    if (hidden > 0) throw new Error(`the arguments run ${hidden}px past the card, behind a scroll bar`);
    await screenshot("mcp-call-question");
    await call.locator("button", { hasText: "Reject" }).first().click();
    await chat.locator(".item.assistant", { hasText: "Not filed." }).waitFor({ timeout: waitMs });
    log("the MCP call's question showed all its arguments");
  });
