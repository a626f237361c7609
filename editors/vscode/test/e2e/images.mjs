// E2E in real VS Code (code-server): images in the chat, two scenarios of one window.
// - images: an image pasted into the chat input shows as a chip and goes with the prompt (the daemon saves it with the
//   prompt: it reached the engine); a dropped one too; a file that says it is a PNG but is not is refused by the daemon,
//   and the chat says why; each image the model reads with file_read in a batch is drawn under the step that read it,
//   and after a window reload (the result collapsed once the model read it: its data is not kept) named under it.
// - refused: in a new chat switched (/model) to a model whose vendor refuses images: live, the prompt shows the image it
//   went with and the error says what to do; after a window reload (the session keeps no such image: its note names
//   it) the prompt says which image was left out and why, and labels it as a kept image is.
//
// Usage: node test/e2e/images.mjs --vsix ollie-0.1.0.vsix [--keep]   (env: see harness.mjs)

import * as fs from "node:fs";
import * as path from "node:path";
import { chatFocused, chatFrame, daemonPids, fillInput, giveImage, log, openChat, pickFile, reloadChat, runCommand, scenario, send, waitForSavedPrompt, waitForStatus, waitMs, withVSCode } from "./harness.mjs";

// A real 24x16 red PNG.
const PNG = "iVBORw0KGgoAAAANSUhEUgAAABgAAAAQCAIAAACDRijCAAAAGklEQVR4nGO4o6FBFcQwatCoQaMGjRpEGQIA3r3CEG0ftIUAAAAASUVORK5CYII=";
const BYTES = Buffer.from(PNG, "base64").length;
const FAKE = Buffer.from("#!/bin/sh\necho not a picture\n").toString("base64");

const script = [{ text: "A red rectangle, 24 by 16." }, { text: "The same red one." }, { text: "A diagram in red." },
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

await withVSCode({ script, textModel: TEXT_MODEL, files: { "notes.txt": "notes\n", "docs/diagram.png": Buffer.from(PNG, "base64"),
  "docs/big.png": Buffer.concat([Buffer.from(PNG, "base64"), Buffer.alloc(1_200_000)]) }, settings: { "files.autoSave": "off" } }, async ({ page, dataDir, screenshot }) => {
  await waitForStatus(page, /Ollie: idle/);
  const chat = await openChat(page);

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
    const resumed = await reloadChat(page);
    for (const [file, label] of [["diagram.png", "image: png, 1 KB"], ["big.png", "image: png, 1172 KB"]]) {
      await resumed.locator(`${UNDER(file)} .step-image-label`, { hasText: `${label} (not drawn: a resumed chat has its type and size only)` }).waitFor({ timeout: waitMs });
    }
    await noneUnderTheCall(resumed);
    await screenshot("image-tool-result-resumed");
    log("resumed, each step named the image it read");

    // A session saved before images named their step (its marks `image/png 1234`): both under the call, as they were.
    // (Killed, not stopped, once it is rewritten: the daemon stopped by the reload wrote back the session it held.)
    const sessions = path.join(dataDir, "ollie", "sessions");
    for (const file of fs.readdirSync(sessions).filter((f) => f.endsWith(".jsonl")).map((f) => path.join(sessions, f))) {
      fs.writeFileSync(file, fs.readFileSync(file, "utf8").replace(/"(image\/png \d+) \d+"/g, '"$1"'));
    }
    for (const pid of daemonPids()) process.kill(pid, "SIGKILL");
    const old = await reloadChat(page);
    for (const label of ["image: png, 1 KB", "image: png, 1172 KB"]) {
      await old.locator(".item.tool > .step-images .step-image-label", { hasText: label }).waitFor({ timeout: waitMs });
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

    const resumed = await reloadChat(page);
    const note = `[1 image left out: the model does not take images (image/png, ${BYTES} bytes)]`;
    await resumed.locator(".item.user", { hasText: note }).filter({ hasText: "image: png, 1 KB" }).waitFor({ timeout: waitMs });
    await resumed.locator(".item.assistant", { hasText: "Read without it." }).waitFor({ timeout: waitMs });
    await screenshot("image-refused-resumed");
    log("resumed, the prompt named the image left out and why");
  });
});
