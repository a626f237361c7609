// E2E in real VS Code (code-server): the daemon holds a bound of what waits in all its sessions (prompts queued, and
// sent ones waiting for their turn). Three sessions each stream a slow story with a long prompt queued behind it; a
// prompt with a pasted image sent in a fourth is refused before its image is read (-32010): the chat says why, and the
// prompt is back in the input with its image (it was gone: only the error said it).
//
// Usage: node test/e2e/imagebound.mjs --vsix ollie-0.1.0.vsix [--keep]   (env: see harness.mjs)

import { giveImage, log, openChat, runCommand, send, serverEnvFor, until, waitMs, withVSCode } from "./harness.mjs";

// A real 24x16 red PNG.
const PNG = "iVBORw0KGgoAAAANSUhEUgAAABgAAAAQCAIAAACDRijCAAAAGklEQVR4nGO4o6FBFcQwatCoQaMGjRpEGQIA3r3CEG0ftIUAAAAASUVORK5CYII=";
const SLOW = { text: "This reply streams very slowly so that the user has time to act. ".repeat(10), chunk_size: 2, delay: 0.25 };
// At a cap of 1,000 bytes an image, a session queues 16,000 bytes and the daemon holds 32,000: three of these, queued
// in three sessions, are past the daemon's bound.
const LONG = "Then read this long note carefully. ".repeat(400);

await withVSCode({ script: [SLOW, SLOW, SLOW], serverEnv: (url) => ({ ...serverEnvFor(url), OLLIE_MAX_IMAGE_BYTES: "1000" }) }, async ({ page, screenshot }) => {
  const chat = await openChat(page);
  for (const name of ["Alpha", "Beta", "Gamma"]) {
    if (name !== "Alpha") {
      await runCommand(page, "Ollie: New Session");
      await until("the new session's empty chat", async () => (await chat.locator("#log .item.user").count()) === 0);
    }
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
