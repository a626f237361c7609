// E2E in real VS Code (code-server): with no file open, every Ollie command not hidden on purpose (`when: false`: the
// ones called with arguments) is in the command palette under its title; the review's ones (Undo All Changes to This
// File...) were hidden outside a review's diff, where a user looking for them found nothing. Run there, one says to
// open a review first; Ollie: Ask asks and is answered.
//
// Usage: node test/e2e/palette.mjs --vsix ollie-0.1.0.vsix [--keep]   (env: see harness.mjs)

import fs from "node:fs";
import path from "node:path";
import { askUntilReply, extensionRoot, log, runCommand, waitForNotification, waitForStatus, waitMs, withVSCode } from "./harness.mjs";

const manifest = JSON.parse(fs.readFileSync(path.join(extensionRoot, "package.json"), "utf8")).contributes;
const hidden = new Set(manifest.menus.commandPalette.filter((m) => m.when === "false").map((m) => m.command));
const titles = manifest.commands.filter((c) => !hidden.has(c.command)).map((c) => `${c.category}: ${c.title}`);

await withVSCode({ script: [{ text: "Hello from the palette." }] }, async ({ page, dataDir, screenshot }) => {
  // Its status shows once it is active: VS Code has registered the extensions (a palette opened before lists none).
  await waitForStatus(page, /Ollie: idle/);
  if ((await page.locator(".tabs-container .tab").count()) !== 0) throw new Error("a file is open");
  await page.keyboard.press("F1");
  const input = page.locator(".quick-input-widget input");
  await input.waitFor({ timeout: waitMs });
  for (const title of titles) {
    await input.fill(`>${title}`);
    await page.locator(".quick-input-list .monaco-list-row .label-name", { hasText: title }).first().waitFor({ timeout: waitMs })
      .catch(() => { throw new Error(`with no file open the palette has no ${title}`); });
  }
  await input.fill(">Ollie: Undo All");
  await screenshot("palette-no-file");
  await page.keyboard.press("Escape");
  log(`with no file open the palette has all ${titles.length} Ollie commands`);
  await runCommand(page, "Ollie: Undo All Changes to This File");
  await waitForNotification(page, 'open a change with "Ollie: Review Changes" first');
  log("a review command run with no review open said to open one");
  await askUntilReply(page, dataDir, "hi", "Hello from the palette.");
  await screenshot("palette-ask");
  log("Ollie: Ask with no file open asked and was answered");
});
