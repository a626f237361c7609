// E2E in real VS Code (code-server, auto-save off as on the desktop): the daily loop. calc.py is open, notes.txt
// open with the user's unsaved line; a turn edits calc.py (through its buffer) and runs `python3 test_calc.py`,
// which must pass: the buffer was saved (ollie/saveDocuments) before the command ran. notes.txt stays unsaved. The run's
// step shows the line its output ended with under its title. A program's approval question shows its code whole.
//
// Usage: node test/e2e/dailyloop.mjs --vsix ollie-0.1.0.vsix [--keep]   (env: see harness.mjs)

import * as fs from "node:fs";
import * as path from "node:path";
import { chatFrame, freePort, log, openFile, runCommand, serverEnvFor, typeUnsaved, waitForSavedPrompt, waitForStatus, waitMs, withVSCode } from "./harness.mjs";

const CALC = "def add(a, b):\n    return a - b\n";
const FIXED = "def add(a, b):\n    return a + b\n";
const TEST = "from calc import add\n\nassert add(2, 3) == 5, f'add(2, 3) is {add(2, 3)}'\nprint('tests passed')\n";
const NOTES = "my notes\n";

const script = [
  { text: "Fixing add.", tool_calls: [{ name: "call_tool", arguments: { calls: [{ tool: "file_edit", args: ["calc.py", "a - b", "a + b"] }] } }] },
  { text: "Running the tests.", tool_calls: [{ name: "execute_code", arguments: { steps: [{ code: "python3 test_calc.py", language: "bash" }] } }] },
  { text: "Fixed add; the tests pass." },
  {
    text: "Documenting it.",
    tool_calls: [{ name: "call_tool", arguments: { calls: [
      { tool: "file_edit", args: ["calc.py", "def add(a, b):\n", "def add(a, b):\n    \"\"\"The sum.\"\"\"\n"] },
      { tool: "file_edit", args: ["test_calc.py", "print('tests passed')", "print('all tests passed')"] },
    ] } }],
  },
  { text: "Documented." },
  { text: "Cleaning up.", tool_calls: [{ name: "execute_code", arguments: { steps: [{ code: "rm -f build.log\nrm -rf ~/.cache/thing" }] } }] },
  { text: "Left it as it was." },
];

const dirty = (page, name) => page.locator(".tabs-container .tab.dirty", { hasText: name }).count();

// Steps run without approval questions here (those are tested in run.mjs and review.mjs).
const port = await freePort();

await withVSCode(
  {
    script: null,
    files: { "calc.py": CALC, "test_calc.py": TEST, "notes.txt": NOTES },
    serverEnv: { ...serverEnvFor(`http://127.0.0.1:${port}/v1`), OLLIE_APPROVAL: "auto" },
    settings: { "workbench.editor.enablePreview": false, "files.autoSave": "off" },
  },
  async ({ page, workspace, dataDir, startLLM, screenshot }) => {
    await startLLM(script, { port });
    await waitForStatus(page, /Ollie: idle/);
    // The user has typed a line into notes.txt and not saved it.
    await typeUnsaved(page, "notes.txt", "the user's unsaved line");
    await openFile(page, "calc.py");

    await runCommand(page, "Ollie: Ask");
    await page.locator(".quick-input-widget input").fill("fix add and run the tests");
    await page.keyboard.press("Enter");
    await waitForSavedPrompt(dataDir, ["Fixed add; the tests pass."]);
    // The run's result, as the model was told it: the edited code ran.
    await waitForSavedPrompt(dataDir, ["tests passed"]);
    if (fs.readFileSync(path.join(workspace, "calc.py"), "utf8") !== FIXED) throw new Error("calc.py on disk is not the edit");
    await page.locator(".monaco-editor .view-line", { hasText: "return a + b" }).first().waitFor({ timeout: waitMs });
    if (await dirty(page, "calc.py")) throw new Error("calc.py's buffer was left unsaved");
    if ((await dirty(page, "notes.txt")) !== 1) throw new Error("notes.txt (the user's unsaved line) was saved");
    if (fs.readFileSync(path.join(workspace, "notes.txt"), "utf8") !== NOTES) throw new Error("notes.txt was written");
    const chat = await chatFrame(page);
    await chat.locator(".item", { hasText: "Fixed add; the tests pass." }).first().waitFor({ timeout: waitMs });
    // The run's step says how the tests ended under its title, its output closed (it showed only a check mark).
    const ran = chat.locator(".item.tool", { has: chat.locator(".step-title", { hasText: "python3 test_calc.py" }) });
    const outcome = await ran.locator(".step-outcome").textContent({ timeout: waitMs });
    if (outcome !== "tests passed" || !(await ran.locator(".step-outcome").isVisible())) throw new Error(`the run's step says ${JSON.stringify(outcome)}`);
    await screenshot("daily-loop");
    log("edit then test: calc.py was edited in its buffer and saved, the tests ran the fix and passed; notes.txt stayed unsaved");

    // Asked first (approval `ask`): each step's question shows its diff; once allowed, the diff shows once, in the
    // step's result (before: in each question and again in the result).
    await chat.locator("#approval").selectOption("ask");
    // The daemon took it: the header it sends back shows the mode.
    await chat.locator('#approval[data-mode="ask"]').waitFor({ timeout: waitMs });
    await runCommand(page, "Ollie: Ask");
    await page.locator(".quick-input-widget input").fill("document add");
    await page.keyboard.press("Enter");
    for (let n = 0; n < 2; n++) {
      const question = chat.locator(".item.permission").nth(n);
      await question.locator(".diff").waitFor({ timeout: waitMs });
      await question.locator("button", { hasText: "Allow once" }).click();
    }
    await chat.locator(".item.assistant", { hasText: "Documented." }).waitFor({ timeout: waitMs });
    for (const added of ["The sum.", "all tests passed"]) {
      const shown = await chat.locator(".diff tr.added", { hasText: added }).count();
      if (shown !== 1) throw new Error(`the diff adding ${JSON.stringify(added)} is shown ${shown} times`);
    }
    await screenshot("allowed-diff-once");
    log("each allowed edit's diff is shown once");

    // A program's question shows its code whole: its title holds the first line alone (the rest could not be read).
    await runCommand(page, "Ollie: Ask");
    await page.locator(".quick-input-widget input").fill("clean up");
    await page.keyboard.press("Enter");
    const program = chat.locator(".item.permission").nth(2);
    await program.locator(".permission-code", { hasText: "rm -rf ~/.cache/thing" }).waitFor({ timeout: waitMs });
    await screenshot("program-question");
    await program.locator('button[data-outcome="reject"]').click();
    await chat.locator(".item.assistant", { hasText: "Left it as it was." }).waitFor({ timeout: waitMs });
    log("a program's question showed its code whole");
  },
);
