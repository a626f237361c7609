// E2E in real VS Code (code-server): what the chat asks before a step reaches outside, and images in the chat: five
// scenarios of one window (each failure names its scenario).
// - mcp: a workspace's own MCP server (.mcp.json, hostile content) is asked about in the chat with the program it would
//   run before anything starts; allowed always, the turn uses its tool. Then `@` offers the server's resource beside the
//   workspace's files; picked, it is a chip, and the daemon reads it through the server into the prompt.
// - mcpcall (was mcpcall.mjs, a window of its own): under `ask`, the question about an MCP tool's call shows every
//   argument the call sends, wrapped in the card, not only the first text one its title names (a decoy argument first
//   hid the one the server used).
// - network: a step's connection to a host outside the sandbox's network allow-list is asked in the chat as "Allow
//   network access to other.test:PORT?" (the egress proxy holds it meanwhile). Deny: the host receives nothing and the
//   model is told 403; Allow once: the request goes through; Allow for this session: it does, and so do the session's
//   later steps' requests there, unasked.
// - images: an image pasted into the chat input shows as a chip and goes with the prompt (the daemon saves it with the
//   prompt: it reached the engine); a dropped one too; a file that says it is a PNG but is not is refused by the daemon,
//   and the chat says why; each image the model reads with file_read in a batch is drawn under the step that read it,
//   and once resumed (the daemon killed and restarted, the chat read back from disk, as a window reload does; the result
//   collapsed once the model read it: its data is not kept) named under it.
// - refused: in a new chat switched (/model) to a model whose vendor refuses images: live, the prompt shows the image it
//   went with and the error says what to do; resumed (the daemon killed and restarted, the chat read back from disk; the
//   session keeps no such image: its note names it) the prompt says which image was left out and why, and labels it as a
//   kept image is.
// mcp runs first: the workspace's server is asked about before the session's first turn.
//
// Usage: node test/e2e/mcpnetwork.mjs --vsix ollie-0.1.0.vsix [--keep]   (env: see harness.mjs)

import * as fs from "node:fs";
import * as http from "node:http";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { chatFocused, chatFrame, daemonPids, fillInput, giveImage, log, openChat, pickFile, python, runCommand, scenario, send, waitForSavedPrompt, waitForStatus, waitMs, withVSCode, work } from "./harness.mjs";

const server = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..", "..", "..", "tests", "mcp", "server.py");
const mcpJson = JSON.stringify({ mcpServers: { planted: { command: python, args: [server] } } });
const mcpScript = [
  { text: "Adding.", tool_calls: [{ name: "mcp__planted__add", arguments: { a: 20, b: 22 } }] },
  { text: "It is 42." },
  { text: "The readme greets you." },
  { text: "", tool_calls: [{ name: "mcp__planted__create_issue", arguments: { note: "harmless", title: "rm -rf the repo" } }] },
  { text: "Not filed." },
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
  // Held before its end until the withdrawn question was looked at: mid-turn however slow the page (it streamed for 4 s).
  givingUp, { text: "The step gave up; thinking on. ".repeat(10) + "Done.", chunk_size: 8, hold: path.join(work, "thought-on") }];

// A real 24x16 red PNG.
const PNG = "iVBORw0KGgoAAAANSUhEUgAAABgAAAAQCAIAAACDRijCAAAAGklEQVR4nGO4o6FBFcQwatCoQaMGjRpEGQIA3r3CEG0ftIUAAAAASUVORK5CYII=";
const BYTES = Buffer.from(PNG, "base64").length;
const FAKE = Buffer.from("#!/bin/sh\necho not a picture\n").toString("base64");

const imagesScript = [{ text: "A red rectangle, 24 by 16." }, { text: "The same red one." }, { text: "A diagram in red." },
  { text: "Reading it.", tool_calls: [{ name: "call_tool", arguments: { calls: [{ tool: "file_read", args: ["docs/diagram.png"] }, { tool: "file_read", args: ["docs/big.png"] }] } }] },
  { text: "It is red." }, { text: "Read without it." }];
// A second model the scripted server lists, which refuses images as a vendor does (its listing says nothing of it).
const TEXT_MODEL = "scripted-text-model";

/** The images box right under the batch's step that read `file`. */
const UNDER = (file) => `.item.tool .substeps > .substep:has-text("${file}") + .step-images`;

/** The call's own images box (where all of a call's images were) is empty: each went under its step. */
async function noneUnderTheCall(chat) {
  const own = await chat.locator(".item.tool > .step-images").evaluateAll((boxes) => boxes.map((b) => b.childElementCount));
  if (own.some((n) => n > 0)) throw new Error(`images stayed under the call: ${own}`);
}

// Every message to and from the daemon in the Ollie output (a failure's artifacts): this test once saw its first prompt
// vanish, the model asked nothing (CI, once).
await withVSCode({ script: [...mcpScript, ...networkScript, ...imagesScript], textModel: TEXT_MODEL,
  files: { "notes.txt": "notes\n", ".mcp.json": mcpJson, "docs/diagram.png": Buffer.from(PNG, "base64"),
    "docs/big.png": Buffer.concat([Buffer.from(PNG, "base64"), Buffer.alloc(1_200_000)]) },
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

  await scenario("mcpcall", async () => {
    // Under `ask`, a user's default (this window runs `auto`): the question about the server's tool call shows every
    // argument the call sends, not only the first text one its title names (a decoy put first hid the one it used).
    await chat.locator("#approval").selectOption("ask");
    await chat.locator('#approval[data-mode="ask"]').waitFor({ timeout: waitMs });
    await send(chat, "File an issue.");
    const call = chat.locator(".item.permission", { hasText: 'planted: create_issue "harmless"' });
    const code = call.locator(".permission-code", { hasText: '"title": "rm -rf the repo"' });
    await code.waitFor({ timeout: waitMs });
    // Wrapped, not behind a scroll bar: the end of a long argument (or program line) read as absent.
    const hidden = await code.evaluate((node) => node.scrollWidth - node.clientWidth);
    if (hidden > 0) throw new Error(`the arguments run ${hidden}px past the card, behind a scroll bar`);
    await screenshot("mcp-call-question");
    await call.locator("button", { hasText: "Reject" }).first().click();
    await chat.locator(".item.assistant", { hasText: "Not filed." }).waitFor({ timeout: waitMs });
    await chat.locator("#approval").selectOption("auto");
    await chat.locator('#approval[data-mode="auto"]').waitFor({ timeout: waitMs });
    log("the MCP call's question showed all its arguments");
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
    await screenshot("network-question");
    // A no with words: the model hears why on the step's connection line (it was hidden: said to reach only the proxy).
    await question.locator("button", { hasText: "Deny with feedback" }).click();
    await question.locator("textarea").fill("it must work offline");
    await question.locator("button", { hasText: "Send feedback" }).click();
    await question.locator(".permission-answer", { hasText: "Denied with feedback" }).waitFor({ timeout: waitMs });
    await chat.locator(".item.assistant", { hasText: "The host said no." }).waitFor({ timeout: waitMs });
    if (seen.length) throw new Error(`the denied host received ${JSON.stringify(seen)}`);
    // The step shows its connection under its title (tool.network), not only inside "Input and output".
    await chat.locator(".item.tool").last().locator(".step-network .connection.denied",
      { hasText: `${target} denied (you said no), sent 0 B, received 0 B` }).waitFor({ timeout: waitMs });
    await screenshot("network-denied");
    log("a network question named the host; Deny with feedback sent it nothing");

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
    // Reduced motion (the test profile's workbench.reduceMotion): the running step's icon stands still.
    const running = chat.locator('[data-status="in_progress"] > .status-icon').first();
    if ((await running.evaluate((node) => getComputedStyle(node).animationName)) !== "none") throw new Error("a running step's icon spins under reduced motion");
    fs.writeFileSync(path.join(workspace, "release"), "");
    await question.locator(".permission-answer", { hasText: "No longer asked (its step or turn ended first)" }).waitFor({ timeout: waitMs });
    if (await question.locator("button", { hasText: "Allow once" }).count()) throw new Error("a withdrawn question still has its buttons");
    await screenshot("network-withdrawn");
    fs.writeFileSync(path.join(work, "thought-on"), ""); // the turn ends
    await chat.locator(".item.assistant", { hasText: "Done." }).waitFor({ timeout: waitMs });
    // The reply's last words show before its turn has ended: the next scenario's prompt waits for the turn's end (sent
    // as it ended, the prompt stayed in the input unsent: CI once).
    await waitForStatus(page, /Ollie: idle/);
    if (seen.includes("/late")) throw new Error("the withdrawn question's request reached the host");
    log("a question whose step ended first said it was no longer asked; its running step's icon stood still (reduced motion)");
  });

  await scenario("images", async () => {
    await giveImage(chat, "paste", "image.png", PNG); // a screenshot from the clipboard comes named image.png
    await chat.locator(".chip.image", { hasText: "pasted image 1" }).waitFor({ timeout: waitMs });
    await chat.locator("#input").fill("What is in this picture?");
    await screenshot("image-chip");
    await chat.locator("#input").press("Enter");
    await chat.locator(".item.assistant", { hasText: "A red rectangle, 24 by 16." }).waitFor({ timeout: waitMs });
    await chat.locator(".item.user", { hasText: "image: pasted image 1" }).waitFor({ timeout: waitMs });
    if (await chat.locator(".chip.image").count()) throw new Error("the image chip stayed after the prompt was sent");
    await waitForSavedPrompt(dataDir, ["What is in this picture?", `"images"`, PNG]);
    await screenshot("image-answered");
    log("a pasted image showed as a chip, went with the prompt and was saved with it");

    await giveImage(chat, "drop", "shot.png", PNG);
    await chat.locator(".chip.image", { hasText: "shot.png" }).waitFor({ timeout: waitMs });
    await send(chat, "And this dropped one?");
    await chat.locator(".item.assistant", { hasText: "The same red one." }).waitFor({ timeout: waitMs });
    log("a dropped image went with the prompt");

    // The @ file picker: an image file is an image chip, read by the daemon beneath the workspace.
    await chat.locator("#input").click();
    await pickFile(page, chat, "diagram.png");
    await chat.locator(".chip.image", { hasText: "docs/diagram.png" }).waitFor({ timeout: waitMs });
    await send(chat, "What does the diagram show?");
    await chat.locator(".item.assistant", { hasText: "A diagram in red." }).waitFor({ timeout: waitMs });
    await waitForSavedPrompt(dataDir, ["What does the diagram show?", `"images"`, PNG]);
    log("an image file picked with @ went with the prompt as an image");

    // The model reads an image: its step shows the picture it was shown (it showed only "Read docs/diagram.png").
    await send(chat, "Read the diagram yourself");
    await chat.locator(".item.assistant", { hasText: "It is red." }).waitFor({ timeout: waitMs });
    // Each under the step of the batch that read it (both were under the call, after its last step).
    const drawn = chat.locator(`${UNDER("diagram.png")} img.step-image`);
    await drawn.waitFor({ timeout: waitMs });
    const size = await drawn.evaluate((img) => `${img.naturalWidth}x${img.naturalHeight} ${img.alt}`);
    if (size !== "24x16 image: png, 1 KB") throw new Error(`the step's image drew as ${size}`);
    // One past the 1 MiB a step's images may come to comes without its data: named, with its size.
    await chat.locator(`${UNDER("big.png")} .step-image-label`, { hasText: "image: png, 1172 KB (not drawn: a step shows 1 MiB of images)" }).waitFor({ timeout: waitMs });
    await noneUnderTheCall(chat);
    await screenshot("image-tool-result");
    log("an image the model read showed under its step, one over 1 MiB named with its size under its own");

    await giveImage(chat, "paste", "evil.png", FAKE);
    await chat.locator(".chip.image", { hasText: "evil.png" }).waitFor({ timeout: waitMs });
    await send(chat, "Look at this one");
    await chat.locator(".item.notice", { hasText: "evil.png is not a PNG, JPEG, GIF or WebP image" }).waitFor({ timeout: waitMs });
    await screenshot("image-refused");
    log("a file that is not an image was refused by the daemon and the chat said why");

    // Resumed: the step names each image it read (it showed no sign of them); the daemon keeps no data once read.
    // Read back from disk by the daemon the extension restarts once this one, its turn over, is killed (as a window
    // reload does, without one: ~4 CPU-s).
    await waitForStatus(page, /Ollie: idle/);
    for (const pid of daemonPids()) process.kill(pid, "SIGKILL");
    const resumed = chat;
    await resumed.locator(".item.notice.error", { hasText: "stopped unexpectedly and was restarted" }).waitFor({ timeout: waitMs });
    for (const [file, label] of [["diagram.png", "image: png, 1 KB"], ["big.png", "image: png, 1172 KB"]]) {
      await resumed.locator(`${UNDER(file)} .step-image-label`, { hasText: `${label} (not drawn: a resumed chat has its type and size only)` }).waitFor({ timeout: waitMs });
    }
    await noneUnderTheCall(resumed);
    await screenshot("image-tool-result-resumed");
    log("resumed, each step named the image it read");

    // A session saved before images named their step (its marks `image/png 1234`): both under the call, as they were.
    // (Killed, not stopped, once it is rewritten: a daemon stopped writes back the session it holds. The extension
    // restarts it and brings the chat back from disk, as a window reload does, without one.)
    const sessions = path.join(dataDir, "ollie", "sessions");
    for (const file of fs.readdirSync(sessions).filter((f) => f.endsWith(".jsonl")).map((f) => path.join(sessions, f))) {
      fs.writeFileSync(file, fs.readFileSync(file, "utf8").replace(/"(image\/png \d+) \d+"/g, '"$1"'));
    }
    for (const pid of daemonPids()) process.kill(pid, "SIGKILL");
    await resumed.locator(".item.notice.error", { hasText: "stopped unexpectedly and was restarted" }).waitFor({ timeout: waitMs });
    for (const label of ["image: png, 1 KB", "image: png, 1172 KB"]) {
      await resumed.locator(".item.tool > .step-images .step-image-label", { hasText: label }).waitFor({ timeout: waitMs });
    }
    await screenshot("image-tool-result-old-session");
    log("a session saved before steps were kept showed its images under the call");
  });

  await scenario("refused", async () => {
    await runCommand(page, "Ollie: New Session");
    const chat = await chatFrame(page);
    await chat.locator("#empty").waitFor({ timeout: waitMs });
    await chatFocused(page, chat);
    await fillInput(chat, `/model ${TEXT_MODEL}`);
    await chat.locator("#input").press("Enter");
    await chat.locator(".item.notice", { hasText: `model: ${TEXT_MODEL}` }).waitFor({ timeout: waitMs });
    await chat.locator("#input").click();
    await pickFile(page, chat, "diagram.png");
    await chat.locator(".chip.image", { hasText: "docs/diagram.png" }).waitFor({ timeout: waitMs });
    await send(chat, "What does the diagram show?");
    await chat.locator(".item.notice", { hasText: "does not take images" }).waitFor({ timeout: waitMs });
    await chat.locator(".item.user", { hasText: "image: docs/diagram.png" }).waitFor({ timeout: waitMs });
    await send(chat, "Read it yourself");
    await chat.locator(".item.assistant", { hasText: "Read without it." }).waitFor({ timeout: waitMs });
    await screenshot("image-refused-live");
    log("live, the prompt named its image and the error said the model takes none");

    // Resumed: read back from disk by the daemon the extension restarts once this one, its turn over, is killed (as a
    // window reload does, without one).
    await waitForStatus(page, /Ollie: idle/);
    for (const pid of daemonPids()) process.kill(pid, "SIGKILL");
    await chat.locator(".item.notice.error", { hasText: "stopped unexpectedly and was restarted" }).waitFor({ timeout: waitMs });
    const note = `[1 image left out: the model does not take images (image/png, ${BYTES} bytes)]`;
    await chat.locator(".item.user", { hasText: note }).filter({ hasText: "image: png, 1 KB" }).waitFor({ timeout: waitMs });
    await chat.locator(".item.assistant", { hasText: "Read without it." }).waitFor({ timeout: waitMs });
    await screenshot("image-refused-resumed");
    log("resumed, the prompt named the image left out and why");
  });
});
host.close();
