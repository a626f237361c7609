// E2E in real VS Code (code-server): ollie's editor features, one window, two scenarios, each on its own file.
// - codeaction: ollie's code actions on a selection, with the backend down and then up. Down: Explain ends at once
//   with an error that says what to do, in the chat and as a warning. Up: Explain's prompt shows in the chat with the
//   code it is about (it came with no prompt: its answer under the turn before), the answer comes as a message too, and
//   the chat's "cannot be reached" help goes once the model has answered.
// - ghost: with OLLIE_COMPLETION_MODEL set, typing in a file shows the model's fill-in-the-middle answer as inline
//   (grey) text after the cursor; Tab accepts it.
// codeaction runs first: it needs nothing listening at the backend's URL, and its calc.py is only selected, never typed
// in, so no completion is asked before the scripted server answers Explain (a completion taking Explain's reply would
// fail Explain's check, not pass it).
//
// Usage: node test/e2e/lspfeatures.mjs --vsix ollie-0.1.0.vsix [--keep]   (env: see harness.mjs)

import * as fs from "node:fs";
import * as path from "node:path";
import { freePort, log, openChat, openFile, scenario, serverEnvFor, until, waitForStatus, waitMs, withVSCode } from "./harness.mjs";

const AREA = "def area(r):\n    return 3.14 * \n\nprint(area(2))\n";
const port = await freePort();
const settings = { "workbench.editor.enablePreview": false, "files.autoSave": "off", "editor.inlineSuggest.enabled": true };
const serverEnv = { ...serverEnvFor(`http://127.0.0.1:${port}/v1`), OLLIE_COMPLETION_MODEL: "scripted-model" };
// Explain's answer, then ghost's: each typing pause may ask once, every one gets the same answer.
const script = [{ text: "It adds two numbers." }, ...Array.from({ length: 20 }, () => ({ text: "r * r" }))];

/** Select all of calc.py and run ollie's Explain from the light bulb's menu. */
async function explain(page) {
  const editor = page.locator(".monaco-editor .view-lines").first();
  await editor.click();
  await page.keyboard.press("Control+A");
  await page.locator(".codicon-light-bulb, .codicon-lightbulb").first().waitFor({ timeout: waitMs });
  await page.locator(".codicon-light-bulb, .codicon-lightbulb").first().click();
  const action = page.locator(".action-widget .monaco-list-row", { hasText: "Ollie: Explain" }).first();
  await action.waitFor({ timeout: waitMs });
  await action.click();
}

await withVSCode({ script: null, files: { "calc.py": "def add(a, b):\n    return a + b\n", "area.py": AREA }, serverEnv, settings },
  async ({ page, workspace, startLLM, screenshot }) => {
    await scenario("codeaction", async () => {
      const chat = await openChat(page);
      await openFile(page, "calc.py");

      // 1. Nothing listens at the backend's URL.
      await explain(page);
      const down = chat.locator(".item.notice", { hasText: `set OLLIE_OPENAI_URL to the API's URL (now http://127.0.0.1:${port}/v1)` });
      await down.waitFor({ timeout: waitMs });
      await chat.locator(".item.user", { hasText: "Explain what this code does" }).waitFor({ timeout: waitMs });
      await page.locator(".notifications-toasts", { hasText: "cannot connect" }).waitFor({ timeout: waitMs });
      await screenshot("codeaction-backend-down");
      log("with the backend down, Explain said what to do in the chat and as a warning");

      // 2. The backend is up: the action's prompt shows in the chat, with the code it is about.
      await startLLM(script, { port });
      await waitForStatus(page, /Ollie: idle/);
      await explain(page);
      await chat.locator(".item.assistant", { hasText: "It adds two numbers." }).waitFor({ timeout: waitMs });
      const prompts = chat.locator(".item.user", { hasText: "Explain what this code does" });
      if ((await prompts.count()) !== 2) throw new Error(`the chat shows ${await prompts.count()} Explain prompts, not 2`);
      await prompts.last().locator(".meta", { hasText: /calc\.py:1-\d/ }).waitFor({ timeout: waitMs });
      await page.locator(".notifications-toasts", { hasText: "ollie: It adds two numbers." }).waitFor({ timeout: waitMs });
      // The model answered: the chat no longer says it cannot be reached (Bug: the banner stayed over the answer).
      await chat.locator("#onboarding").waitFor({ state: "hidden", timeout: waitMs });
      await screenshot("codeaction-explained");
      log("Explain's prompt showed in the chat with the code it was about, its answer in the chat and as a message");
    });

    await scenario("ghost", async () => {
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
    });
  },
);
