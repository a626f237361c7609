// E2E in real VS Code (code-server): ollie's code actions on a selection, with the backend down and then up.
// Down: Explain ends at once with an error that says what to do, in the chat and as a warning. Up: Explain's prompt
// shows in the chat with the code it is about (it came with no prompt: its answer under the turn before), the answer
// comes as a message too, and the chat's "cannot be reached" help goes once the model has answered.
//
// Usage: node test/e2e/codeaction.mjs --vsix ollie-0.1.0.vsix [--keep]   (env: see harness.mjs)

import { freePort, log, openChat, openFile, serverEnvFor, waitForStatus, waitMs, withVSCode } from "./harness.mjs";

const port = await freePort();
const settings = { "workbench.editor.enablePreview": false, "files.autoSave": "off" };
const serverEnv = serverEnvFor(`http://127.0.0.1:${port}/v1`);

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

await withVSCode({ script: null, files: { "calc.py": "def add(a, b):\n    return a + b\n" }, serverEnv, settings },
  async ({ page, startLLM, screenshot }) => {
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
    await startLLM([{ text: "It adds two numbers." }], { port });
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
  },
);
