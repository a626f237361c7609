// E2E in real VS Code (code-server), one window, two scenarios (each was a window of its own; a failure names its
// scenario):
// - pickers: text another party chose, in the pick lists. A hostile backend lists a model id holding `$(pass-filled)`,
//   a line break and a U+202E: Switch Model drew the `$(...)` as a tick icon and the rest reversed (the label was the
//   id as it came, and the id is what the pick sends back). It now shows the id escaped, and picking it switches to the
//   id itself: the daemon's `/model` answer and the composer name it escaped too. A session's title (a teammate's,
//   shared) with the same is drawn escaped in Switch Session and the chat's header; a user's MCP server whose prompt
//   and resource names hold the same, in Ollie: MCP Servers. A workspace file `a<U+202E>txt.exe` added to a prompt is
//   named escaped in its bubble (red team 53: reversed, as a prompt taken back from the queue was).
// - imagebound: the daemon holds a bound of what waits in all its sessions (prompts queued, and sent ones waiting for
//   their turn). Three sessions each stream a slow story with a long prompt queued behind it; a prompt with a pasted
//   image sent in a fourth is refused before its image is read (-32010): the chat says why, and the prompt is back in
//   the input with its image (it was gone: only the error said it).
// pickers runs first: imagebound leaves three sessions streaming.
//
// Usage: node test/e2e/imagebound.mjs --vsix ollie-0.1.0.vsix [--keep]   (env: see harness.mjs)

import * as fs from "node:fs";
import * as path from "node:path";
import { fillInput, giveImage, log, openChat, pickFile, python, runCommand, scenario, send, serverEnvFor, until, waitMs, withVSCode, work } from "./harness.mjs";

const HOSTILE = "m2 $(pass-filled) approved\n\u202eexe.txt";
// As the pick shows it (shownLabel: `\$(` draws as `$(`) and as the composer does (shownPath).
const SHOWN = "m2 $(pass-filled) approved\\x0a\\u202eexe.txt";
// As the daemon's `/model` says it (escapes.one_name).
const SAID = "model: m2 $(pass-filled) approved\\n\\u202eexe.txt (served by 127.0.0.1:";
const TITLE = "Sea $(pass-filled) approved\u202etxt.exe";

// The user's MCP server (the daemon's user config, isolatedEnv), whose prompt and resource names are made to forge.
const config = path.join(work, "xdg", "config", "ollie");
fs.mkdirSync(config, { recursive: true });
const server = path.resolve(import.meta.dirname, "..", "..", "..", "..", "tests", "mcp", "server.py");
fs.writeFileSync(path.join(config, "mcp.json"), JSON.stringify({ mcpServers: { t: { command: python, args: [server, "forged"] } } }));

/** The visible pick list's row holding `text`, once there: its text as drawn, and whether it holds an icon of `name`. */
async function row(page, text, name) {
  const found = page.locator(".quick-input-list .monaco-list-row", { hasText: text }).first();
  await found.waitFor({ timeout: waitMs });
  return { text: await found.innerText(), icons: await found.locator(`.codicon-${name}`).count(), found };
}

// A real 24x16 red PNG.
const PNG = "iVBORw0KGgoAAAANSUhEUgAAABgAAAAQCAIAAACDRijCAAAAGklEQVR4nGO4o6FBFcQwatCoQaMGjRpEGQIA3r3CEG0ftIUAAAAASUVORK5CYII=";
const SLOW = { text: "This reply streams very slowly so that the user has time to act. ".repeat(10), chunk_size: 2, delay: 0.25 };
// At a cap of 1,000 bytes an image, a session queues 16,000 bytes and the daemon holds 32,000: three of these, queued
// in three sessions, are past the daemon's bound.
const LONG = "Then read this long note carefully. ".repeat(400);

await withVSCode({ script: [{ text: "Hello." }, SLOW, SLOW, SLOW], textModel: HOSTILE, files: { "a\u202etxt.exe": "x\n" },
  serverEnv: (url) => ({ ...serverEnvFor(url), OLLIE_MAX_IMAGE_BYTES: "1000" }) }, async ({ page, screenshot }) => {
  const chat = await openChat(page);
  await scenario("pickers", async () => {
    await pickFile(page, chat, "txt.exe");
    await send(chat, "what is in it?");
    const about = await chat.locator(".item.user .meta", { hasText: "about" }).first().innerText({ timeout: waitMs });
    await screenshot("prompt-about-hostile-file-name");
    if (about.includes("\u202e") || !about.includes("a\\u202etxt.exe")) throw new Error(`the prompt's bubble named the file as it came: ${JSON.stringify(about)}`);
    await chat.locator(".item.assistant", { hasText: "Hello." }).waitFor({ timeout: waitMs });
    log("a prompt's bubble names a workspace file's U+202E escaped");

    const model = chat.locator("#model");
    await model.filter({ hasText: /^scripted-model$/ }).waitFor({ timeout: waitMs });

    await runCommand(page, "Ollie: Switch Model");
    const pick = await row(page, "approved", "pass-filled");
    await screenshot("switch-model-hostile-id");
    if (pick.icons !== 0 || !pick.text.includes(SHOWN)) {
      throw new Error(`Switch Model drew the server's id as it came: ${JSON.stringify(pick.text)}, ${pick.icons} icon(s)`);
    }
    log("Switch Model shows a hostile server's model id escaped: no icon, no line break, no reversal");
    await pick.found.click();
    await model.filter({ hasText: SHOWN }).waitFor({ timeout: waitMs });
    // The daemon switched to the id itself (one_name of it), not to the label shown.
    await fillInput(chat, "/model");
    await chat.locator("#input").press("Enter");
    await chat.locator(".item.notice", { hasText: SAID }).last().waitFor({ timeout: waitMs });
    // The pick's switch is said in the chat, shown: not again in a toast over its input (which hid the composer's model).
    if (await page.locator(".notification-toast", { hasText: "(served by" }).count()) throw new Error("the model switch was said in a toast too");
    await screenshot("switched-to-hostile-id");
    log("picking it switched to the id itself; the composer and /model name it escaped");

    await send(chat, `/rn ${TITLE}`);
    const header = await chat.locator("#title", { hasText: "Sea" }).getAttribute("title", { timeout: waitMs });
    if (header !== "Sea $(pass-filled) approved\\u202etxt.exe") throw new Error(`the chat's header drew the title as it came: ${JSON.stringify(header)}`);
    await runCommand(page, "Ollie: Switch Session");
    const session = await row(page, "approved", "pass-filled");
    await screenshot("switch-session-hostile-title");
    if (session.icons !== 0 || !session.text.includes("Sea $(pass-filled) approved\\u202etxt.exe")) {
      throw new Error(`Switch Session drew the title as it came: ${JSON.stringify(session.text)}, ${session.icons} icon(s)`);
    }
    await page.keyboard.press("Escape");
    log("Switch Session and the chat's header show such a title escaped");

    await runCommand(page, "Ollie: MCP Servers");
    const mcp = await row(page, "ready", "pass-filled");
    await screenshot("mcp-servers-hostile-names");
    if (mcp.icons !== 0 || mcp.text.includes("\u202e") || !mcp.text.includes("/mcp:t:p $(pass-filled)\\x0a  ok (stdio): ready\\x0a")) {
      throw new Error(`MCP Servers drew the server's names as they came: ${JSON.stringify(mcp.text)}, ${mcp.icons} icon(s)`);
    }
    await page.keyboard.press("Escape");
    log("MCP Servers shows a server's prompt and resource names escaped");
  });

  await scenario("imagebound", async () => {
    for (const name of ["Alpha", "Beta", "Gamma"]) {
      await runCommand(page, "Ollie: New Session");
      await until("the new session's empty chat", async () => (await chat.locator("#log .item.user").count()) === 0);
      await send(chat, `${name}: tell a slow story.`);
      await chat.locator(".item.assistant", { hasText: "This reply" }).waitFor({ timeout: waitMs });
      await chat.locator("#stop").waitFor({ state: "visible", timeout: waitMs });
      await send(chat, LONG);
      await chat.locator(".item.user .meta", { hasText: "queued" }).waitFor({ timeout: waitMs });
    }
    await runCommand(page, "Ollie: New Session");
    await until("the new session's empty chat", async () => (await chat.locator("#log .item.user").count()) === 0);
    await giveImage(chat, "paste", "image.png", PNG);
    await chat.locator(".chip.image", { hasText: "pasted image 1" }).waitFor({ timeout: waitMs });
    await send(chat, "What is in this picture?");
    await chat.locator(".item.notice", { hasText: "of prompts waiting in this daemon's sessions are over the" }).waitFor({ timeout: waitMs });
    await chat.locator(".item.notice", { hasText: "The prompt was not sent: it is back in the input." }).waitFor({ timeout: waitMs });
    await until("the prompt back in the input", async () => (await chat.locator("#input").inputValue()) === "What is in this picture?");
    await chat.locator(".chip.image", { hasText: "pasted image 1" }).waitFor({ timeout: waitMs });
    await screenshot("image-bound-refused");
    log("a prompt past what the daemon holds was refused: the chat said why, and it was back in the input with its image");
  });
});
