// E2E in real VS Code (code-server): what the chat asks before a step reaches outside, two scenarios of one window.
// - mcp: a workspace's own MCP server (.mcp.json, hostile content) is asked about in the chat with the program it would
//   run before anything starts; allowed always, the turn uses its tool. Then `@` offers the server's resource beside the
//   workspace's files; picked, it is a chip, and the daemon reads it through the server into the prompt.
// - network: a step's connection to a host outside the sandbox's network allow-list is asked in the chat as "Allow
//   network access to other.test:PORT?" (the egress proxy holds it meanwhile). Deny: the host receives nothing and the
//   model is told 403; Allow once: the request goes through; Allow for this session: it does, and so do the session's
//   later steps' requests there, unasked.
// mcp runs first: the workspace's server is asked about before the session's first turn.
//
// Usage: node test/e2e/mcpnetwork.mjs --vsix ollie-0.1.0.vsix [--keep]   (env: see harness.mjs)

import * as fs from "node:fs";
import * as http from "node:http";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { log, openChat, python, scenario, send, waitForSavedPrompt, waitForStatus, waitMs, withVSCode } from "./harness.mjs";

const server = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..", "..", "..", "tests", "mcp", "server.py");
const mcpJson = JSON.stringify({ mcpServers: { planted: { command: python, args: [server] } } });
const mcpScript = [
  { text: "Adding.", tool_calls: [{ name: "mcp__planted__add", arguments: { a: 20, b: 22 } }] },
  { text: "It is 42." },
  { text: "The readme greets you." },
];

// A real server on the host's loopback standing in for a remote host: the daemon's proxy maps the name to it.
const seen = [];
const host = http.createServer((req, res) => {
  seen.push(req.url);
  res.end("hello");
});
await new Promise((resolve) => host.listen(0, "127.0.0.1", resolve));
const target = `other.test:${host.address().port}`;
// The daemon resolves the name by OLLIE_TEST_NET_HOSTS through the sitecustomize of ollie.testing.nethosts.env.
process.env.OLLIE_TEST_NET_HOSTS = "other.test=127.0.0.1,late.test=127.0.0.1";
process.env.PYTHONPATH = fileURLToPath(new URL("../../../../core/ollie/testing/site", import.meta.url));
// `auto`: the step runs unasked; its connection to a host the policy does not list is still asked.
process.env.OLLIE_APPROVAL = "auto";

const fetch = (path) => ({
  text: "",
  tool_calls: [{ name: "execute_code", arguments: { steps: [{ code: `curl -s -w ' status %{http_code}' http://${target}${path}` }] } }],
});
// A step whose request goes in the background and which ends once the test creates `release` (its program gave up).
const givingUp = {
  text: "",
  tool_calls: [{ name: "execute_code", arguments: { steps: [{ code: `(curl -s http://late.test:${host.address().port}/late &) ; while [ ! -e release ]; do sleep 0.05; done; echo gave up` }] } }],
};
const networkScript = [fetch("/denied"), { text: "The host said no." }, fetch("/allowed"), { text: "Fetched it." },
  fetch("/session"), { text: "Fetched for the session." }, fetch("/unasked"), { text: "Fetched unasked." },
  givingUp, { text: "The step gave up; thinking on. ".repeat(10) + "Done.", chunk_size: 8, delay: 0.1 }];

// Every message to and from the daemon in the Ollie output (a failure's artifacts): this test once saw its first prompt
// vanish, the model asked nothing (CI, once).
await withVSCode({ script: [...mcpScript, ...networkScript], files: { "notes.txt": "notes\n", ".mcp.json": mcpJson },
  settings: { "files.autoSave": "off", "ollie.trace.server": "verbose" } }, async ({ page, dataDir, workspace, screenshot }) => {
  await waitForStatus(page, /Ollie: idle/);
  const chat = await openChat(page);

  await scenario("mcp", async () => {
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
  });

  await scenario("network", async () => {
    // The mcp scenario's question is the session's too: this scenario's are those after it.
    const before = await chat.locator(".item.permission").count();
    await send(chat, "Fetch it");
    let question = chat.locator(".item.permission").last();
    await question.locator(".permission-head", { hasText: `Allow network access to ${target}?` }).waitFor({ timeout: waitMs });
    // The step that asked, by its title alone: the head names the host already.
    const note = question.locator(".permission-note", { hasText: "Asked by the step: Run `curl" });
    await note.waitFor({ timeout: waitMs });
    if ((await note.textContent()).includes("connect to")) throw new Error(`the step line repeats the question: ${await note.textContent()}`);
    await question.locator(".permission-note", { hasText: "in this and later sessions" }).waitFor({ timeout: waitMs });
    await question.locator("button", { hasText: "Always allow" }).waitFor({ timeout: waitMs });
    await question.locator("button", { hasText: "Allow for this session" }).waitFor({ timeout: waitMs });
    // No "Reject with feedback": the answer reaches only the proxy, nothing would carry the text to the model.
    if (await question.locator("button", { hasText: "feedback" }).count()) throw new Error("a network question offers feedback");
    if (await question.locator("textarea").count()) throw new Error("a network question has a feedback field");
    await screenshot("network-question");
    await question.locator("button", { hasText: "Deny" }).click();
    await question.locator(".permission-answer", { hasText: "Denied" }).waitFor({ timeout: waitMs });
    await chat.locator(".item.assistant", { hasText: "The host said no." }).waitFor({ timeout: waitMs });
    if (seen.length) throw new Error(`the denied host received ${JSON.stringify(seen)}`);
    // The step shows its connection under its title (tool.network), not only inside "Input and output".
    await chat.locator(".item.tool").last().locator(".step-network .connection.denied",
      { hasText: `${target} denied (you said no), sent 0 B, received 0 B` }).waitFor({ timeout: waitMs });
    await screenshot("network-denied");
    log("a network question named the host; Deny sent it nothing");

    await send(chat, "Try again");
    question = chat.locator(".item.permission").last();
    await question.locator(".permission-head", { hasText: `Allow network access to ${target}?` }).waitFor({ timeout: waitMs });
    await question.locator("button", { hasText: "Allow once" }).click();
    await chat.locator(".item.assistant", { hasText: "Fetched it." }).waitFor({ timeout: waitMs });
    if (JSON.stringify(seen) !== JSON.stringify(["/allowed"])) throw new Error(`the host received ${JSON.stringify(seen)}`);
    await chat.locator(".item.tool").last().locator(".step-network .connection.allowed", { hasText: `${target} allowed once` })
      .waitFor({ timeout: waitMs });
    await screenshot("network-allowed");
    log("Allow once let the request through");

    await send(chat, "Once more");
    question = chat.locator(".item.permission").last();
    await question.locator(".permission-head", { hasText: `Allow network access to ${target}?` }).waitFor({ timeout: waitMs });
    await question.locator("button", { hasText: "Allow for this session" }).click();
    await question.locator(".permission-answer", { hasText: "Allowed for this session" }).waitFor({ timeout: waitMs });
    await chat.locator(".item.assistant", { hasText: "Fetched for the session." }).waitFor({ timeout: waitMs });
    await send(chat, "And again");
    await chat.locator(".item.assistant", { hasText: "Fetched unasked." }).waitFor({ timeout: waitMs });
    const asked = (await chat.locator(".item.permission").count()) - before;
    if (asked !== 3) throw new Error(`${asked} network questions: the session's answer did not hold`);
    if (JSON.stringify(seen) !== JSON.stringify(["/allowed", "/session", "/unasked"])) throw new Error(`the host received ${JSON.stringify(seen)}`);
    await chat.locator(".item.tool").last().locator(".step-network .connection.allowed", { hasText: `${target} allowed for this session` })
      .waitFor({ timeout: waitMs });
    await screenshot("network-session");
    log("Allow for this session let the session's later requests through unasked");

    // The step ends while its question waits: the card says it is no longer asked, its buttons gone, mid-turn.
    await send(chat, "Fetch another");
    question = chat.locator(".item.permission").last();
    await question.locator(".permission-head", { hasText: `Allow network access to late.test:` }).waitFor({ timeout: waitMs });
    fs.writeFileSync(path.join(workspace, "release"), "");
    await question.locator(".permission-answer", { hasText: "No longer asked (its step or turn ended first)" }).waitFor({ timeout: waitMs });
    if (await question.locator("button", { hasText: "Allow once" }).count()) throw new Error("a withdrawn question still has its buttons");
    await screenshot("network-withdrawn");
    await chat.locator(".item.assistant", { hasText: "Done." }).waitFor({ timeout: waitMs });
    if (seen.includes("/late")) throw new Error("the withdrawn question's request reached the host");
    log("a question whose step ended first said it was no longer asked");
  });
});
host.close();
