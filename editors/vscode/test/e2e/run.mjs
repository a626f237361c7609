// The chat scenarios in real VS Code (code-server + headless Chromium), against the real daemon and
// the scripted LLM server. The harness (start-up, helpers) is harness.mjs.
//
// Usage: node test/e2e/run.mjs --vsix ollie-0.1.0.vsix [--keep]

import * as fs from "node:fs";
import * as path from "node:path";
import { artifacts, chatFocused, daemonPids, fillInput, freePort, log, openChat, pickFile, runCommand, send, serverEnvFor, until, waitForSavedPrompt, waitForStatus, waitMs, withVSCode } from "./harness.mjs";

const edit = (file, before, after) => ({ name: "call_tool", arguments: { calls: [{ tool: "file_edit", args: [file, before, after] }] } });
// The scripted model, in the order the turns below ask it.
const ANSWER = "The file **hello.txt** says hello to the world, and that is all it says. See `hello.txt`, not `nowhere.py`.";
const LONG = Array.from({ length: 30 }, (_, i) => `Paragraph ${i + 1} of a long explanation that fills the view.`).join("\n\n");
const CODE = 'def greet():\n    return "hi"\n';
const HASH = "0123456789abcdef".repeat(12);
// A prompt with a long paste in it (a log): shown in a box of its own height, not as 80 lines pushing the chat away.
const STORY = `Tell me a long story.\n${Array.from({ length: 80 }, (_, i) => `pasted log line ${i + 1}`).join("\n")}`;
const SLOW = "This reply streams very slowly so that the user has time to press Stop. ".repeat(8);
const DOOMED = "This reply is cut short: the daemon is killed while it streams. ".repeat(8);
const FEEDBACK = "Use a GREETING constant instead";
const script = [
  // The first answer once the server is up: cut at the output token limit (a turn that reached the model, not "end").
  { text: "Up now, but this answer is cut at the token limit.", truncated: true },
  { text: "Let me read the file.", tool_calls: [{ name: "call_tool", arguments: { calls: [{ tool: "file_read", args: ["hello.txt"] }] } }] },
  // ~6 s of stream: a loaded machine's slow page reads still see it part-way at least three times.
  { text: ANSWER, chunk_size: 3, delay: 0.15 },
  { text: `${LONG}\n\nIts hash is ${HASH}, as [the file](hello.txt#L1) says.\n\nHere is the function:\n\n\`\`\`python greet.py\n${CODE}\`\`\`\n` },
  { text: "I will change it.", tool_calls: [edit("app.py", "'hi'", "'hello'")] },
  { text: "OK, I will use a constant." },
  { text: "Changing it now.", tool_calls: [edit("app.py", "'hi'", "'hello'")] },
  { text: "Done: greet now says hello." },
  { text: "That line sets SELECTION_MARKER to 42." },
  { text: "The chip holds the same line." },
  { text: SLOW, chunk_size: 2, delay: 0.25 },
  { text: DOOMED, chunk_size: 2, delay: 0.25 },
  { text: "Back after the crash." },
];
const APP = "def greet():\n    return 'hi'\n";
const files = { "hello.txt": "hello\n", "pkg/marker.py": "SELECTION_MARKER = 42\n", "app.py": APP, "scratch.py": "" };

// The daemon starts pointed at a port nothing listens on: onboarding first, then the model comes up there.
const port = await freePort();

/** The chat's whole text. */
const chatText = async (chat) => (await chat.locator("#log").textContent()) ?? "";

/** The chat log's scroll position. */
const scrollOf = (chat) => chat.locator("#log").evaluate((log) => ({ top: log.scrollTop, height: log.scrollHeight, client: log.clientHeight }));
const atBottom = ({ top, height, client }) => height - top - client <= 40;

async function activeTab(page, name) {
  await page.locator(".tabs-container .tab.active", { hasText: name }).first().waitFor({ timeout: waitMs });
}

async function openEditor(page, name) {
  await page.keyboard.press("Control+P");
  await page.locator(".quick-input-widget input").fill(name);
  await page.locator(".quick-input-list .monaco-list-row", { hasText: name }).first().waitFor({ timeout: waitMs });
  await page.keyboard.press("Enter");
  await activeTab(page, name);
}

// A resumed session shows its last PAGE messages at first; scrolling up loads the ones before (step 10).
const PAGE = 6;
// The light theme named (the browser's default scheme gives it too): its code block colour is its side bar's.
const settings = { "ollie.historyPageSize": PAGE, "workbench.colorTheme": "Default Light Modern" };

await withVSCode({ script: null, files, settings, serverEnv: serverEnvFor(`http://127.0.0.1:${port}/v1`) }, async ({ page, workspace, dataDir, startLLM, screenshot }) => {
  const chat = await openChat(page);
  log("chat view open");
  // An approval mode picked while the daemon still starts is applied once it is up (it was lost).
  await chat.locator("#approval").selectOption("read-only");

  // 1. Onboarding: no backend answers, so the empty view says what to do; the first turn fails fast with the hint.
  const onboarding = chat.locator("#onboarding");
  await onboarding.waitFor({ state: "visible", timeout: waitMs });
  await fillInput(chat, "/approval");
  await chat.locator("#input").press("Enter");
  await chat.locator(".item.notice", { hasText: "approval: read-only" }).waitFor({ timeout: waitMs });
  if ((await chat.locator("#approval").inputValue()) !== "read-only") throw new Error("the picker lost the mode picked at start-up");
  await chat.locator("#approval").selectOption("ask");
  const help = (await onboarding.textContent()) ?? "";
  if (!/cannot be reached/.test(help) || !/Check again/.test(help)) throw new Error(`onboarding says: ${JSON.stringify(help)}`);
  // A server that is down: no key offered (it would not start it), the daemon's env-variable hint not repeated, and a
  // button that opens the setting its URL is in.
  const buttons = await onboarding.locator("button").allTextContents();
  if (buttons.some((b) => /API key/.test(b)) || /OLLIE_/.test(help)) throw new Error(`onboarding offers ${JSON.stringify(buttons)}: ${help}`);
  await screenshot("onboarding");
  await onboarding.locator("button", { hasText: "Open ollie.serverEnv" }).click();
  const settingsEditor = page.locator(".settings-editor");
  await settingsEditor.locator(".setting-item-title", { hasText: "Server Env" }).first().waitFor({ timeout: waitMs });
  await screenshot("onboarding-server-env");
  // This VS Code shows Settings as a modal over the window: Escape closes it (a first one may clear its search).
  await until("the settings closed", async () => {
    if (!(await settingsEditor.isVisible())) return true;
    await page.keyboard.press("Escape");
    return false;
  });
  log("the onboarding of a server that is down offers Check again and ollie.serverEnv, not an API key");
  const started = Date.now();
  await send(chat, "hello?");
  const failure = chat.locator(".item.notice.error").first();
  await failure.waitFor({ timeout: 30000 });
  const failedAfter = Date.now() - started;
  if (failedAfter > 20000) throw new Error(`the first turn took ${failedAfter} ms to fail`);
  // The onboarding above says what failed and what to do: the error points to it (it said it all again, with the
  // daemon's hint in environment variables).
  await failure.filter({ hasText: "Ollie cannot take a turn yet (see above: what to do)" }).waitFor({ timeout: waitMs });
  if (/cannot connect|OLLIE_/.test(await chatText(chat))) throw new Error(`the chat says the onboarding's problem again: ${await chatText(chat)}`);
  log("the first turn's error pointed to the onboarding, not said it again");
  log(`onboarding shown; the first turn failed after ${failedAfter} ms: ${(await failure.textContent())?.slice(0, 160)}`);
  await screenshot("first-turn-error");
  // Check again with the backend still down restarts the daemon; the chat keeps its session (the prompt stays).
  await chat.locator(".item.user", { hasText: "hello?" }).evaluate((node) => (node.dataset.before = "check"));
  await onboarding.locator("button", { hasText: "Check again" }).click();
  await chat.locator('.item.user:not([data-before="check"])', { hasText: "hello?" }).waitFor({ timeout: waitMs });
  // The restored chat is read from the saved session: its failed last prompt still says it failed.
  await chat.locator(".item.notice.error", { hasText: "This prompt failed" }).waitFor({ timeout: waitMs });
  await chat.locator('.item.turnEnd[data-stop="error"]').waitFor({ timeout: waitMs });
  await onboarding.waitFor({ state: "visible", timeout: waitMs });
  await screenshot("restored-failed-prompt");
  await startLLM(script, { port });
  // The server came up and the user, not pressing Check again, asks: the turn reaches the model, which is cut at its
  // token limit. The onboarding goes (it stayed over the answer, pointing at ollie.serverEnv: only a turn that ended
  // "end" asked again).
  await send(chat, "Are you up?");
  await chat.locator(".item.assistant", { hasText: "Up now" }).waitFor({ timeout: waitMs });
  await chat.locator('.item.turnEnd[data-stop="max_tokens"]').waitFor({ timeout: waitMs });
  await onboarding.waitFor({ state: "hidden", timeout: waitMs });
  await waitForStatus(page, /Ollie: idle/);
  await screenshot("onboarding-gone");
  log("a turn that reached the model, cut at its token limit: the onboarding is gone");

  // 2. A step: its title, status and file link (which opens the file); the answer streams as markdown.
  await send(chat, "What does hello.txt say?");
  await chat.locator(".item.user", { hasText: "What does hello.txt say?" }).waitFor({ timeout: waitMs });
  const step = chat.locator(".item.tool").last();
  await step.locator(".step-title", { hasText: "Read hello.txt" }).waitFor({ timeout: waitMs });
  const answer = chat.locator(".item.assistant").last();
  // Each change of the answer as the page draws it (no sampling that a loaded machine could space out).
  const streamed = await chat.locator("#log").evaluate((log, timeout) => new Promise((resolve) => {
    const seen = new Set();
    const observer = new MutationObserver(() => look());
    const done = () => {
      observer.disconnect();
      resolve(seen.size);
    };
    const look = () => {
      const text = [...log.querySelectorAll(".item.assistant")].at(-1)?.textContent ?? "";
      if (text.startsWith("The file")) seen.add(text.length);
      if (text.includes("not nowhere.py.")) done();
    };
    observer.observe(log, { childList: true, subtree: true, characterData: true });
    look();
    setTimeout(done, timeout);
  }), waitMs);
  if (!((await answer.textContent()) ?? "").includes("says hello to the world, and that is all it says.")) throw new Error("the answer was not shown");
  if ((await answer.locator("strong", { hasText: "hello.txt" }).count()) !== 1) throw new Error("the answer was not rendered as markdown");
  if (streamed < 3) throw new Error(`the answer did not stream (saw ${streamed} partial lengths)`);
  await step.locator('[data-status="completed"] .status-icon.codicon-pass').waitFor({ timeout: waitMs });
  if ((await step.getAttribute("data-tool-name")) !== "call_tool") throw new Error("the step lost its tool name");
  // Bare file names are not web links; a path that exists links to the file, one that does not stays text.
  await answer.locator('a.file-link[data-path="hello.txt"]').waitFor({ timeout: waitMs });
  if (await answer.locator('a[href^="http"]').count()) throw new Error("a file name was linkified as a web address");
  if (await answer.locator('a[data-path="nowhere.py"]').count()) throw new Error("a missing file was linked");
  await step.locator("summary", { hasText: "Input and output" }).click();
  const result = (await step.locator(".tool-result").textContent()) ?? "";
  if (!/hello/.test(result)) throw new Error(`tool output not shown: ${JSON.stringify(result)}`);
  if (!/"tool": "file_read"/.test((await step.locator(".tool-args").textContent()) ?? "")) throw new Error("tool input not shown");
  await waitForStatus(page, /Ollie: idle · \$/);
  await screenshot("step-and-answer");
  await step.locator('.step-head a.file-link[data-path="hello.txt"]').click();
  await activeTab(page, "hello.txt");
  log(`step "Read hello.txt" completed, its link opened the file; the answer streamed (${streamed} partial renders)`);

  // 3. A code block: Copy puts it on the clipboard, Insert puts it at the cursor of the editor.
  await openEditor(page, "scratch.py");
  await send(chat, "Show me a greeting function");
  const block = chat.locator(".item.assistant .code-block").last();
  await block.waitFor({ timeout: waitMs });
  if ((await block.getAttribute("data-file")) !== "greet.py") throw new Error("the code block's file name was not read");
  await block.scrollIntoViewIfNeeded();
  await screenshot("code-block");
  // VS Code's default webview style gives every `code` a background: inside a block it boxed each line's text.
  const codeBackground = await block.locator("pre code").evaluate((code) => getComputedStyle(code).backgroundColor);
  if (!/^(transparent|rgba\(0, 0, 0, 0\))$/.test(codeBackground)) throw new Error(`the code in a block has its own background ${codeBackground}`);
  // An answer's inline code stands out from the chat in the light theme (its background was Light Modern's code block
  // colour, the side bar's: `nowhere.py` looked like any word).
  const inline = chat.locator(".item.assistant code", { hasText: "nowhere.py" }).first();
  const [chatBackground, inlineBackground] = await inline.evaluate((code) => [document.body, code].map((node) => getComputedStyle(node).backgroundColor));
  if (inlineBackground === chatBackground) throw new Error(`inline code's background is the chat's, ${chatBackground}`);
  log("in the light theme inline code stands out from the chat");
  await block.locator('button[data-action="copy"]').click();
  await until("Copy to put the code on the clipboard", async () => (await page.evaluate(() => navigator.clipboard.readText())) === CODE, 10000);
  await block.locator('button[data-action="insert"]').click();
  await page.locator(".monaco-editor .view-line", { hasText: 'return "hi"' }).first().waitFor({ timeout: waitMs });
  await activeTab(page, "scratch.py");
  // Apply writes the block into the file its fence names (greet.py: new, so it is created), unsaved.
  await block.locator('button[data-action="apply"]').click();
  await activeTab(page, "greet.py");
  await page.locator(".monaco-editor .view-line", { hasText: "def greet" }).first().waitFor({ timeout: waitMs });
  if (!fs.existsSync(path.join(workspace, "greet.py"))) throw new Error("Apply did not create greet.py");
  log("Copy, Insert and Apply on a code block work");
  // A long word (a hash, a URL) wraps in the view: the chat never scrolls sideways, so it was cut off at the edge.
  const widths = await chat.locator("#log").evaluate((log) => ({ scroll: log.scrollWidth, client: log.clientWidth }));
  if (widths.scroll > widths.client) throw new Error(`a long word overflows the chat: ${JSON.stringify(widths)}`);
  // A markdown link to a workspace file opens it (it did nothing).
  await chat.locator(".item.assistant a", { hasText: "the file" }).click();
  await activeTab(page, "hello.txt");
  log("a long word wraps; a markdown link to a file opens it");

  // 4. Scroll: a prompt sent while scrolled up is scrolled to; an approval question with the diff, rejected with feedback.
  await chat.locator("#log").evaluate((log) => (log.scrollTop = 0));
  await send(chat, "Make greet say hello");
  const sent = chat.locator(".item.user", { hasText: "Make greet say hello" });
  await sent.waitFor({ timeout: waitMs });
  await until("the view to scroll to the sent prompt", async () => atBottom(await scrollOf(chat)))
    .catch(async (err) => { throw new Error(`${err.message}: ${JSON.stringify(await scrollOf(chat))}`); });
  const question = chat.locator(".item.permission").last();
  await question.locator(".step-title", { hasText: "Edit app.py" }).waitFor({ timeout: waitMs });
  await question.locator(".diff tr.added", { hasText: "'hello'" }).waitFor({ timeout: waitMs });
  await question.locator(".diff tr.removed", { hasText: "'hi'" }).waitFor({ timeout: waitMs });
  if (!atBottom(await scrollOf(chat))) throw new Error("the question arrived off-screen");
  // The feedback field shows only once asked for.
  if (await question.locator("textarea").isVisible()) throw new Error("the feedback field shows before Reject with feedback");
  await screenshot("permission");
  await question.locator("button", { hasText: "Reject with feedback" }).click();
  await question.locator("textarea").fill(FEEDBACK);
  await screenshot("permission-feedback");
  await question.locator("textarea").press("Enter");
  await question.locator(".permission-answer", { hasText: "Rejected with feedback" }).waitFor({ timeout: waitMs });
  await chat.locator(".item.assistant", { hasText: "OK, I will use a constant." }).waitFor({ timeout: waitMs });
  // The feedback field grew the chat while it was open: the answer after it must still come into view.
  await until("the answer to the feedback in view (it arrived off-screen)",
    async () => atBottom(await scrollOf(chat)) && !(await chat.locator("#jump").isVisible()));
  await waitForSavedPrompt(dataDir, [FEEDBACK]);
  if (fs.readFileSync(path.join(workspace, "app.py"), "utf8") !== APP) throw new Error("the rejected edit was made");
  // The card says "Rejected with feedback"; the daemon's "rejected: Edit app.py" line would say it twice.
  if ((await chat.locator(".item.notice").allTextContents()).some((t) => t.startsWith("rejected: "))) throw new Error("the answer is shown twice");
  await screenshot("permission-rejected");
  log("the view scrolled to the sent prompt; the approval question showed its diff; the feedback reached the model");

  // 5. Approval mode auto-edit: the edit runs, its diff shows inline; the turn's changed files can be opened and undone.
  await chat.locator("#approval").selectOption("auto-edit");
  // The daemon took it: the header it sends back shows the mode.
  await chat.locator('#approval[data-mode="auto-edit"]').waitFor({ timeout: waitMs });
  await send(chat, "Do it anyway");
  const editStep = chat.locator(".item.tool", { has: chat.locator(".step-title", { hasText: "Edit app.py" }) }).last();
  await editStep.locator(".diff tr.added", { hasText: "'hello'" }).waitFor({ timeout: waitMs });
  await chat.locator(".item.assistant", { hasText: "Done: greet now says hello." }).waitFor({ timeout: waitMs });
  if ((await chat.locator(".item.permission").count()) !== 1) throw new Error("auto-edit still asked");
  const changes = chat.locator(".item.changes").last();
  await changes.locator('a.file-link[data-path="app.py"]').waitFor({ timeout: waitMs });
  await changes.locator(".stat .added", { hasText: "+1" }).waitFor({ timeout: waitMs });
  await screenshot("diff-and-changes");
  await editStep.locator('button[data-action="openDiff"]').click();
  await page.locator(".monaco-diff-editor .view-line", { hasText: "'hello'" }).first().waitFor({ timeout: waitMs });
  await screenshot("open-diff");
  // A file of the Changed files list opens its review (before ↔ after of the turn).
  await changes.locator('a.file-link[data-path="app.py"]').click();
  await page.locator(".tabs-container .tab.active", { hasText: "app.py (Ollie, turn" }).first().waitFor({ timeout: waitMs });
  // The user edits the turn's own line after it (an edit elsewhere is kept by the undo): the undo is refused, and
  // the chat says so.
  const edited = fs.readFileSync(path.join(workspace, "app.py"), "utf8");
  fs.writeFileSync(path.join(workspace, "app.py"), edited.replace("'hello'", "'hello, mine'"));
  await changes.locator('button[data-action="undo"][data-path="app.py"]').click();
  await changes.locator(".changes-message", { hasText: "Undo refused: app.py: the file was edited" }).waitFor({ timeout: waitMs });
  if (!fs.readFileSync(path.join(workspace, "app.py"), "utf8").includes("'hello, mine'")) throw new Error("a refused undo touched the file");
  await screenshot("undo-refused");
  fs.writeFileSync(path.join(workspace, "app.py"), edited);
  await changes.locator('button[data-action="undo"][data-path="app.py"]').click();
  await changes.locator("li.undone", { hasText: "app.py" }).waitFor({ timeout: waitMs });
  if (await changes.locator(".changes-message").count()) throw new Error("the refusal stayed after a successful undo");
  await until("Undo to put app.py back as it was", () => fs.readFileSync(path.join(workspace, "app.py"), "utf8") === APP);
  log("auto-edit ran the edit with its inline diff; Open diff and the Changed files link opened diff editors; a stale Undo was refused, then Undo reverted app.py");

  // 6. Slash commands complete with descriptions; safe ones first, destructive ones marked.
  await fillInput(chat, "");
  await chat.locator("#input").pressSequentially("/co");
  const rows = chat.locator("#slash li");
  await rows.filter({ hasText: "/compact" }).waitFor({ timeout: waitMs });
  await rows.filter({ hasText: "compact the history now" }).locator(".slash-destructive").waitFor({ timeout: waitMs });
  const names = await rows.locator(".slash-name").allTextContents();
  if (names.indexOf("/compact") < names.indexOf("/cost")) throw new Error(`a destructive command is listed first: ${names}`);
  await screenshot("slash");
  await fillInput(chat, "");
  await chat.locator("#input").pressSequentially("/comp");
  await chat.locator("#input").press("Tab");
  if ((await chat.locator("#input").inputValue()) !== "/compact") throw new Error("slash completion did not complete /compact");
  await fillInput(chat, "");
  log(`slash completion: ${names.join(" ")}`);

  // 7. Switch Agent offers the daemon's agents (ollie/listAgents) with their descriptions, the current one marked and
  // highlighted, and says a switch starts a new conversation, this one kept: Enter at once keeps the agent and the
  // conversation (it switched to the first listed, clearing the session).
  await runCommand(page, "Ollie: Switch Agent");
  await page.locator(".quick-input-widget .quick-input-title", { hasText: "Switch Agent" }).waitFor({ timeout: waitMs });
  await page.locator(".quick-input-list .monaco-list-row", { hasText: "read-only" }).first().waitFor({ timeout: waitMs });
  await page.locator(".quick-input-list .monaco-list-row.focused", { hasText: "current" }).filter({ hasText: "default" }).waitFor({ timeout: waitMs });
  const warned = await page.locator(".quick-input-widget .quick-input-title").textContent();
  if (!warned?.includes("another starts a new chat; this one is kept in Switch Session")) throw new Error(`the agent pick says ${JSON.stringify(warned)}`);
  await screenshot("agent-pick");
  await page.keyboard.press("Enter");
  await page.locator(".quick-input-widget").waitFor({ state: "hidden", timeout: waitMs });
  await fillInput(chat, "/agent");
  await chat.locator("#input").press("Enter");
  await chat.locator(".item.notice", { hasText: "agent: default" }).waitFor({ timeout: waitMs });
  if ((await chatText(chat)).includes("session cleared")) throw new Error("Enter in the agent pick switched the agent, clearing the chat");
  log("the agent pick highlights the current agent and says a switch keeps the chat's conversation; Enter kept both");

  // 8. Ask About Selection sends the file, range and selected text as context; labelled by its workspace-relative
  // path, as after a reload (the name alone: every Python package has an `__init__.py`).
  await openEditor(page, "marker.py");
  await page.locator(".monaco-editor .view-line", { hasText: "SELECTION_MARKER" }).click();
  await page.keyboard.press("Control+A");
  await runCommand(page, "Ollie: Ask About Selection");
  await page.waitForFunction(() => /Ask About Selection/.test(document.querySelector(".quick-input-widget .quick-input-title")?.textContent ?? ""), null, { timeout: waitMs });
  // The box says what the question is about, not just "Prompt".
  await page.locator(".quick-input-widget", { hasText: "Ask about pkg/marker.py:1" }).waitFor({ timeout: waitMs });
  await page.locator(".quick-input-widget input").fill("What does this line do?");
  await page.keyboard.press("Enter");
  await chat.locator(".item.user", { hasText: "about pkg/marker.py:1" }).waitFor({ timeout: waitMs });
  await chat.locator(".item.assistant", { hasText: "sets SELECTION_MARKER to 42" }).waitFor({ timeout: waitMs });
  await waitForSavedPrompt(dataDir, ["SELECTION_MARKER = 42", "What does this line do?"]);
  // @ offers a workspace file as the prompt's context: a chip, removable.
  await fillInput(chat, "");
  await chat.locator("#input").pressSequentially("@");
  await chat.locator("#slash li", { hasText: "@file" }).waitFor({ timeout: waitMs });
  await chat.locator("#input").press("Enter");
  await page.locator(".quick-input-widget .quick-input-title", { hasText: "Add a file" }).waitFor({ timeout: waitMs });
  await page.locator(".quick-input-widget input").fill("hello.txt");
  await page.locator(".quick-input-list .monaco-list-row", { hasText: "hello.txt" }).first().waitFor({ timeout: waitMs });
  await page.keyboard.press("Enter");
  await chat.locator("#chips .chip", { hasText: "hello.txt" }).waitFor({ timeout: waitMs });
  if ((await chat.locator("#input").inputValue()) !== "") throw new Error("the typed @ stayed in the prompt");
  await chat.locator("#chips .chip-remove").click();
  await chat.locator("#chips .chip").waitFor({ state: "detached", timeout: waitMs });
  // The same through a #selection chip on the chat's input.
  await fillInput(chat, "");
  await chat.locator("#input").pressSequentially("#sel");
  await chat.locator("#slash li", { hasText: "#selection" }).waitFor({ timeout: waitMs });
  await chat.locator("#input").press("Tab");
  await chat.locator("#chips .chip", { hasText: "pkg/marker.py:1" }).waitFor({ timeout: waitMs });
  // A second chip joins the first: the selection and a file, both sent with the prompt.
  await pickFile(page, chat, "hello.txt");
  const chipLabels = await chat.locator("#chips .chip-label").allTextContents();
  if (chipLabels.join("|") !== "pkg/marker.py:1|hello.txt") throw new Error(`the input holds the chips ${JSON.stringify(chipLabels)}`);
  await screenshot("selection-and-file-chips");
  await send(chat, "Explain the chip");
  await chat.locator(".item.user", { hasText: "Explain the chip" }).locator(".meta", { hasText: "about pkg/marker.py:1, hello.txt" }).waitFor({ timeout: waitMs });
  await chat.locator(".item.assistant", { hasText: "The chip holds the same line." }).waitFor({ timeout: waitMs });
  await waitForSavedPrompt(dataDir, ["SELECTION_MARKER = 42", "File: hello.txt", "Explain the chip"]);
  if (await chat.locator("#chips .chip").count()) throw new Error("the chips stayed after the prompt was sent");
  log("Ask About Selection, then a #selection and an @file chip together: both reached the model's prompt");

  // 9. A slow reply: scrolled up, the view stays put and offers "Jump to latest"; queue, inject, Stop.
  await send(chat, STORY);
  const pasted = await chat.locator(".item.user .text", { hasText: "pasted log line 80" }).evaluate((text) => ({ shown: text.clientHeight, all: text.scrollHeight }));
  if (pasted.shown >= pasted.all || pasted.shown > 400) throw new Error(`a long prompt is shown at full height: ${JSON.stringify(pasted)}`);
  const stop = chat.locator("#stop");
  await stop.waitFor({ state: "visible", timeout: waitMs });
  // The running turn's Queue, Inject and Stop are one group at the view's right, on one row at the side bar's default
  // width (Queue stayed up by the model's name, Inject and Stop went to the left of a second row). In a narrow side bar
  // they wrap: Stop stays inside the view (it was cut off at the edge).
  const { apart, stopClipped } = await chat.evaluate(() => {
    const box = (id) => document.getElementById(id).getBoundingClientRect();
    const right = () => document.body.getBoundingClientRect().right;
    const apart = new Set(["send", "inject", "stop"].map((id) => box(id).top)).size > 1 || right() - box("stop").right > 12;
    document.body.style.width = "200px";
    const stopClipped = box("stop").right > right() + 1;
    document.body.style.width = "";
    return { apart, stopClipped };
  });
  if (apart) throw new Error("Queue, Inject and Stop are not one row at the right of the side bar");
  if (stopClipped) throw new Error("Stop is cut off in a narrow side bar");
  await screenshot("running-buttons");
  const slow = chat.locator(".item.assistant", { hasText: "This reply" });
  await slow.waitFor({ timeout: waitMs });
  // Reduced motion (the test profile's workbench.reduceMotion): the status bar's busy icon stands still.
  await waitForStatus(page, /Ollie: thinking/);
  if (await page.locator(".statusbar-item", { hasText: "Ollie:" }).locator(".codicon-modifier-spin").count()) throw new Error("the status bar's busy icon spins under reduced motion");
  await chat.locator("#log").evaluate((log) => (log.scrollTop = 0));
  const jump = chat.locator("#jump");
  await jump.waitFor({ state: "visible", timeout: waitMs });
  if ((await scrollOf(chat)).top !== 0) throw new Error("the stream scrolled a reader who had scrolled up");
  await screenshot("jump-to-latest");
  // Its label is on one line in the side bar's default width (it broke in two: a pill placed from the view's middle).
  const jumpLines = await jump.evaluate((button) => button.getBoundingClientRect().height / parseFloat(getComputedStyle(button).fontSize));
  if (jumpLines > 2.5) throw new Error(`Jump to latest's label wraps: ${jumpLines} ems high`);
  await jump.click();
  await jump.waitFor({ state: "hidden", timeout: waitMs });
  if (!atBottom(await scrollOf(chat))) throw new Error("Jump to latest did not reach the bottom");
  // A chip stays with a prompt Enter queues while the turn runs.
  await fillInput(chat, "");
  await chat.locator("#input").pressSequentially("#sel");
  await chat.locator("#slash li", { hasText: "#selection" }).waitFor({ timeout: waitMs });
  await chat.locator("#input").press("Tab");
  await chat.locator("#chips .chip", { hasText: "pkg/marker.py:1" }).waitFor({ timeout: waitMs });
  await send(chat, "Then summarise it.");
  await chat.locator(".item.user", { hasText: "Then summarise it." }).locator(".meta", { hasText: "queued · about pkg/marker.py:1" }).waitFor({ timeout: waitMs });
  if (await chat.locator("#chips .chip").count()) throw new Error("the chip stayed after the prompt was queued");
  await send(chat, "Keep it short.", "Control+Enter");
  await chat.locator(".item.user", { hasText: "Keep it short." }).locator(".meta", { hasText: "injected" }).waitFor({ timeout: waitMs });
  // Ollie: Rewind while the turn runs says to stop it first, before any pick (the daemon's refusal came as an error,
  // "Invalid params: session: ...", once she had picked a turn and confirmed).
  await runCommand(page, "Ollie: Rewind");
  await page.locator(".notification-toast", { hasText: "Ollie: a turn is running: stop it (Ollie: Stop), then rewind." })
    .waitFor({ timeout: waitMs });
  if (await page.locator(".quick-input-widget .quick-input-title", { hasText: "Rewind to before" }).isVisible()) {
    throw new Error("the Rewind pick showed while the turn ran");
  }
  // Escape in the prompt box stops the turn, as Stop does (queue.mjs clicks Stop).
  await chat.locator("#input").press("Escape");
  await chat.locator('.item.turnEnd[data-stop="interrupted"]').waitFor({ state: "visible", timeout: waitMs });
  await stop.waitFor({ state: "hidden", timeout: waitMs });
  // What the user sees of the queue once Stop is done; Restart (step 10) before it raced the chat's bookkeeping of the
  // stopped turn, which could hold the queue of the session again after the restart and run it before the next prompt.
  await chat.locator(".item.user", { hasText: "Then summarise it." }).locator(".meta", { hasText: "held" }).waitFor({ timeout: waitMs });
  // (The injected prompt too, when Stop came before the turn took it.)
  await chat.locator(".item.notice", { hasText: "Stop held the queue" }).waitFor({ timeout: waitMs });
  await screenshot("escape-stopped");
  const partial = (await slow.textContent()) ?? "";
  if (partial.length >= SLOW.trim().length) throw new Error("the slow reply finished instead of being interrupted");
  log(`jump to latest shown while scrolled up, the busy icon still (reduced motion); queue and inject accepted; Escape interrupted the turn after ${partial.length} of ${SLOW.length} characters`);

  // 10. Restart starts a fresh daemon (an empty view); Switch Session resumes the saved conversation from disk.
  // Whether the failed "hello?" turn began this session depends on whether Check again had to restart the
  // daemon (a daemon that checks a failed backend again keeps the session): the resumed chat must match this one.
  const shownTitle = ((await chat.locator("#title").textContent()) ?? "").trim();
  const shownFirst = await chat.locator(".item.user .text").first().textContent();
  if (!shownTitle) throw new Error("the view header shows no session title");
  await runCommand(page, "Ollie: Restart");
  // The fresh view holds no prompt of the old session: the held ones are back in the input, which it says.
  await chat.locator(".item.user").first().waitFor({ state: "detached", timeout: waitMs });
  await chat.locator(".item.notice", { hasText: "The daemon restarted" }).waitFor({ timeout: waitMs });
  await waitForStatus(page, /Ollie: idle/);
  await runCommand(page, "Ollie: Switch Session");
  await page.locator(".quick-input-widget .quick-input-title", { hasText: "Switch Session" }).waitFor({ timeout: waitMs });
  await page.locator(".quick-input-list .monaco-list-row", { hasText: shownTitle }).first().click();
  // Only the last pages come first (more if one does not fill the view); scrolling to the top loads the earlier ones.
  await chat.locator(".item.user", { hasText: "Tell me a long story." }).waitFor({ timeout: waitMs });
  const earlierButton = chat.locator("#log .earlier");
  await earlierButton.waitFor({ state: "visible", timeout: waitMs });
  if (await chat.locator(".item.user", { hasText: "What does hello.txt say?" }).count()) throw new Error("the whole session was loaded at once");
  await screenshot("resumed-last-page");
  const shownBefore = await chat.locator(".item").count();
  await until("scrolling up to load the earlier messages", async () => {
    await chat.locator("#log").evaluate((log) => (log.scrollTop = 0));
    return !(await earlierButton.isVisible());
  });
  await chat.locator(".item.user", { hasText: "What does hello.txt say?" }).waitFor({ timeout: waitMs });
  // A call and its result on two pages were drawn as two steps: each step shows once.
  const stepIds = await chat.locator(".item.tool .step-head .step-row").evaluateAll((rows) => rows.map((row) => row.dataset.stepId));
  if (new Set(stepIds).size !== stepIds.length) throw new Error(`a step shows twice after loading earlier pages: ${stepIds}`);
  log(`scrolling up loaded the earlier pages: ${shownBefore} items, then ${await chat.locator(".item").count()}`);
  await chat.locator('.item.tool[data-tool-name="call_tool"]').first().waitFor({ timeout: waitMs });
  await chat.locator(".item.tool").first().scrollIntoViewIfNeeded();
  await screenshot("resumed");
  // The session's first prompt leads (it may have been sent while a restarted daemon was still being asked for its state).
  const resumedPrompts = await chat.locator(".item.user .text").allTextContents();
  if (resumedPrompts[0] !== shownFirst) throw new Error(`the resumed chat starts with ${JSON.stringify(resumedPrompts.slice(0, 2))}, not ${JSON.stringify(shownFirst)}`);
  if (resumedPrompts.some((p) => p.includes("the user undid"))) throw new Error("the engine's undo note shows as the user's words");
  // Resumed steps render like live ones: title, status, file link.
  const resumedStep = chat.locator(".item.tool").first();
  await resumedStep.locator(".step-title", { hasText: "Read hello.txt" }).waitFor({ timeout: waitMs });
  await resumedStep.locator('[data-status="completed"] a.file-link[data-path="hello.txt"]').waitFor({ timeout: waitMs });
  // The reply cut off by Stop says so after a resume too, without the engine's marker.
  await chat.locator('.item.turnEnd[data-stop="interrupted"]').last().waitFor({ state: "visible", timeout: waitMs });
  if ((await chatText(chat)).includes("[interrupted by the user")) throw new Error("the engine's interrupt marker shows in the resumed chat");
  await chat.locator(".item.assistant", { hasText: "and that is all it says." }).waitFor({ timeout: waitMs });
  await chat.locator(".item.user", { hasText: "about pkg/marker.py" }).first().waitFor({ timeout: waitMs });
  const header = (await chat.locator("#title").textContent()) ?? "";
  if (header.trim() !== shownTitle) throw new Error(`the view header shows ${JSON.stringify(header)}, not the session's title ${JSON.stringify(shownTitle)}`);

  // 11. New Session empties the view again.
  await runCommand(page, "Ollie: New Session");
  await chat.locator(".item").first().waitFor({ state: "detached", timeout: waitMs });
  log("Restart, Switch Session (resumed from disk, titled) and New Session work");

  // 11b. History: archive the old session; it leaves the list, "Show archived" lists it marked, picking it says why not.
  await chatFocused(page, chat);
  await runCommand(page, "Ollie: Show History");
  const oldRow = page.locator(".quick-input-list .monaco-list-row", { hasText: shownTitle }).first();
  await oldRow.waitFor({ timeout: waitMs });
  await oldRow.hover();
  await oldRow.locator(".codicon-archive").click();
  await page.locator(".notifications-toasts .notification-toast", { hasText: `archived "${shownTitle}"` }).first().waitFor({ timeout: waitMs });
  const showArchived = page.locator('.quick-input-widget .quick-input-titlebar [aria-label="Show archived sessions"]');
  await showArchived.waitFor({ timeout: waitMs });
  if (await page.locator(".quick-input-list .monaco-list-row", { hasText: shownTitle }).count()) throw new Error("the archived session is still listed");
  // The toggle is the list's last item too: typed and taken with Enter, from the keyboard.
  await page.locator(".quick-input-widget input").fill("Show archived");
  await page.locator(".quick-input-list .monaco-list-row.focused", { hasText: "Show archived sessions" }).waitFor({ timeout: waitMs });
  await page.keyboard.press("Enter");
  await page.locator(".quick-input-widget .quick-input-title", { hasText: "archived shown" }).waitFor({ timeout: waitMs });
  const archivedRow = page.locator(".quick-input-list .monaco-list-row", { hasText: shownTitle }).filter({ hasText: "archived" }).first();
  await archivedRow.waitFor({ timeout: waitMs });
  await archivedRow.filter({ hasText: "Unarchive and resume" }).waitFor({ timeout: waitMs });
  await screenshot("history-archived");
  // Picking it offers nothing else: it is unarchived and resumed, its conversation back in the chat.
  await archivedRow.click();
  await page.locator(".notifications-toasts .notification-toast", { hasText: `unarchived "${shownTitle}"` }).first().waitFor({ timeout: waitMs });
  await chat.locator(".item.user", { hasText: "Tell me a long story." }).waitFor({ timeout: waitMs });
  const unarchivedHeader = ((await chat.locator("#title").textContent()) ?? "").trim();
  if (unarchivedHeader !== shownTitle) throw new Error(`the unarchived session's header shows ${JSON.stringify(unarchivedHeader)}`);
  await screenshot("history-unarchived");
  log("an archived session leaves the history, Show archived lists it marked, and picking it unarchives and resumes it");

  // 11c. The daemon dies mid-turn (killed): the chat says so plainly, the composer is not left "running", the client's
  // restart brings the same conversation back, and the next prompt is answered.
  await send(chat, "One more story, please.");
  await chat.locator(".item.assistant", { hasText: "This reply is cut short" }).waitFor({ timeout: waitMs });
  const killed = daemonPids();
  if (killed.length !== 1) throw new Error(`expected one daemon, found ${killed}`);
  process.kill(killed[0], "SIGKILL");
  await chat.locator(".item.notice.error", { hasText: "The Ollie daemon stopped during this turn" }).waitFor({ timeout: waitMs });
  if ((await chatText(chat)).includes("Pending response rejected")) throw new Error("the chat shows the client's jargon for the lost turn");
  await waitForStatus(page, /Ollie: idle/);
  await chat.locator(".item.user", { hasText: "Tell me a long story." }).waitFor({ timeout: waitMs });
  // The chat brought back from disk may lack the lost prompt: it still says what happened.
  await chat.locator(".item.notice.error", { hasText: "stopped unexpectedly and was restarted" }).waitFor({ timeout: waitMs });
  // Said once the restored session's queue was restored: the prompt queued before Restart (step 10) ended with that
  // daemon, and does not come back held to run before the next prompt.
  if (await chat.locator(".item.user .meta", { hasText: "held" }).count()) throw new Error("a prompt queued before Restart came back held");
  await chat.locator("#stop").waitFor({ state: "hidden", timeout: waitMs });
  if ((await chat.locator("#send").textContent()) !== "Send") throw new Error("the composer still queues: it thinks the dead turn runs");
  await screenshot("daemon-restarted");
  await send(chat, "Are you back?");
  await chat.locator(".item.assistant", { hasText: "Back after the crash." }).waitFor({ timeout: waitMs });
  if ((await chatText(chat)).includes("session not found")) throw new Error("the prompt went to a session the new daemon does not know");
  log("a daemon killed mid-turn: the chat said so, came back with the same conversation, and the next prompt was answered");

  await screenshot("final");
  log(`screenshots in ${artifacts}`);
});
