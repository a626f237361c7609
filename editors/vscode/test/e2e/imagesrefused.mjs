// E2E in real VS Code (code-server): a prompt's image the model's vendor refused. Live, the prompt shows the image it
// went with and the error says what to do; after a window reload (the session keeps no such image: its note names it)
// the prompt says which image was left out and why, and labels it as a kept image is.
//
// Usage: node test/e2e/imagesrefused.mjs --vsix ollie-0.1.0.vsix [--keep]   (env: see harness.mjs)

import { log, openChat, pickFile, reloadChat, send, waitForStatus, waitMs, withVSCode } from "./harness.mjs";

// A real 24x16 red PNG.
const PNG = "iVBORw0KGgoAAAANSUhEUgAAABgAAAAQCAIAAACDRijCAAAAGklEQVR4nGO4o6FBFcQwatCoQaMGjRpEGQIA3r3CEG0ftIUAAAAASUVORK5CYII=";
const BYTES = Buffer.from(PNG, "base64").length;

await withVSCode({ script: [{ text: "Read without it." }], vision: false, files: { "docs/diagram.png": Buffer.from(PNG, "base64") } },
  async ({ page, screenshot }) => {
    await waitForStatus(page, /Ollie: idle/);
    const chat = await openChat(page);
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
