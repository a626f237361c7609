// E2E in real VS Code (code-server): ghost text from ollie. With OLLIE_COMPLETION_MODEL set, typing in a file
// shows the model's fill-in-the-middle answer as inline (grey) text after the cursor; Tab accepts it.
//
// Usage: node test/e2e/ghost.mjs --vsix ollie-0.1.0.vsix [--keep]   (env: see harness.mjs)

import * as fs from "node:fs";
import * as path from "node:path";
import { freePort, log, openFile, serverEnvFor, until, waitForStatus, withVSCode } from "./harness.mjs";

const AREA = "def area(r):\n    return 3.14 * \n\nprint(area(2))\n";
// Each typing pause may ask once: every one gets the same answer.
const script = Array.from({ length: 20 }, () => ({ text: "r * r" }));
const port = await freePort();

await withVSCode(
  {
    script: null,
    files: { "area.py": AREA },
    serverEnv: { ...serverEnvFor(`http://127.0.0.1:${port}/v1`), OLLIE_COMPLETION_MODEL: "scripted-model" },
    settings: { "workbench.editor.enablePreview": false, "files.autoSave": "off", "editor.inlineSuggest.enabled": true },
  },
  async ({ page, workspace, startLLM, screenshot }) => {
    await startLLM(script, { port });
    await waitForStatus(page, /Ollie: idle/);
    await openFile(page, "area.py");
    // The cursor at the end of `    return 3.14 * `, as a user typing the expression.
    await page.locator(".monaco-editor .view-lines").first().click();
    await page.keyboard.press("Control+Home");
    await page.keyboard.press("ArrowDown");
    await page.keyboard.press("End");
    await page.keyboard.type("(");
    await page.keyboard.press("Backspace");
    // Ghost text is drawn in the line, in elements of its own (`ghost-text*` classes), not in the document.
    const shown = await until("the ghost text", () => page.evaluate(() => {
      const parts = [...document.querySelectorAll(".monaco-editor .view-lines [class*='ghost-text']")];
      // Spaces are drawn as nbsp; the parts may come more than once (the answer's first length is what is shown).
      const text = parts.map((e) => e.textContent ?? "").join("").replace(/\u00a0/g, " ");
      return text.includes("r * r") ? text : "";
    })).catch(async (err) => {
      // What the lines hold, for the failure's artifacts (the screenshot does not tell ghost text from text).
      const html = await page.evaluate(() => document.querySelector(".monaco-editor .view-lines")?.innerHTML ?? "");
      fs.writeFileSync(path.join(process.env.OLLIE_E2E_ARTIFACTS ?? ".", "view-lines.html"), html);
      throw err;
    });
    await screenshot("ghost-text");
    log(`ghost text shown: ${JSON.stringify(shown.slice(0, "r * r".length))}`);
    await page.keyboard.press("Tab");
    await page.keyboard.press("Control+S");
    const file = path.join(workspace, "area.py");
    await until("the accepted completion saved", async () => fs.readFileSync(file, "utf8").includes("return 3.14 * r * r\n"));
    log("ollie's ghost text showed after the cursor and Tab accepted it");
  },
);
