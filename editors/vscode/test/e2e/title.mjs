// E2E in real VS Code (code-server): the chat header shows the session's title as soon as the daemon gives it. The
// first prompt titles the session while its turn still streams (the header said "New chat" until the turn ended);
// `/rn` renames it at once; New Session says "New chat" again, and switching back shows the name: both from the
// buttons in the chat view's title bar, where Copilot Chat and Claude Code have theirs (there were none). A prompt's
// "Fork from here" (shown while the prompt is hovered or focused: on every prompt it took a line) switches the chat
// to a fork up to that turn, titled "<title> (fork)", and the chat says so and that the files stay as they are; the
// history lists both, each row with its turns (it said none: two sessions of one title were not told apart), and
// "Ollie: Fork Chat" forks the whole chat. The header shows the whole title (two lines) at the default width, and in
// a side bar dragged narrow, the approval picker under it ("Ask before edits" beside it cut it to ten letters or so).
// The composer names the model and a non-default agent; a click switches.
// Then, in the same window (scenario hosthung): a prompt sent while the extension host hangs, and which it never takes
// (it is killed, and VS Code starts another), comes back in the input of the chat made anew, said, and goes when sent
// again. (The page cleared its input as it posted: the prompt was in neither the chat nor the input.)
// Then (scenario commands, in a chat of its own): a command's answer laid out in columns (/help) keeps its columns in the
// chat, a description that wraps going on under its column (it was wrapped in a proportional font, each description
// starting somewhere else); a typo's answer is one error line naming the closest command (it was the whole list).
// `/rewind` and `/agent NAME` typed in the chat take the turns they cut out of it (they stayed in sight, as if the
// model still had them); a `/rewind` that failed takes nothing. The conversation `/agent NAME` ends is kept as a saved
// session (it was lost): the chat says so, Switch Session brings it back; `/help` says what resumes a session here (it
// advised a terminal's `ollie --session`). A user's sandbox.yaml with a misspelt key is a warning notification as the
// session opens (no step runs in this scenario).
// Then (scenario retry, in a chat of its own): a reply that breaks off with a server error after its first words, then
// comes whole on the retry, shows once: the retry's note, then the answer, without the words of the attempt that
// failed (they stayed above the note, "Half an", as if the model had said them); one that fails for good (a 400) shows
// the error without the words it streamed (the session never kept them).
// Then (scenario compacted, in a chat of its own): a session compacted (/compact) and then resumed (its daemon killed,
// the chat read back from disk by the one the extension restarts, as a window reload does) starts with the agent's
// notes of the turns compaction replaced. The chat says the conversation was compacted, and shows the user's turns
// (the notes showed as her prompt: "[ollie: the agent's own notes ..." and the task state's JSON).
// Then (scenario plan, in a chat of its own): the agent's task plan shows above the prompt as a compact checklist
// (Plan 1/2 · the step now; done steps ticked, the one in progress marked) as its steps change it, folded to one line
// once all are done ("Plan done · 10 steps") and open again as one is added, 150 steps counted as 150 (60 done: the 90
// left each a row, the next ones in sight; the 50 check-offs of one call each done, though its result was cut to its
// cap); `/rewind` puts back the plan the rewound turn found, `/clear` takes it away, and the conversation `/clear`
// kept, switched back to, has its plan again. (VS Code never showed the plan: the daemon did not send it.)
// Last (scenario settingsscope, in a chat of its own): the window's repository, a clone, has a `.vscode/settings.json`
// choosing neither the model (billed to the user's key: a dearer one), the agent nor the daemon command. The chat's model
// stays the user's; and when the repository changes those values (a pull, a branch switch), the daemon is not restarted:
// the chat stays (it was, and the chat emptied: a command typed as the window opened lost its answer). The user's own
// change restarts it.
//
// Usage: node test/e2e/title.mjs --vsix ollie-0.1.0.vsix [--keep]   (env: see harness.mjs)

import * as fs from "node:fs";
import * as path from "node:path";
import { chatFocused, chatFrame, daemonPids, dragSideBar, fillInput, log, ollieOutput, openChat, ownPids, runCommand, scenario, send, until, waitForNotification, waitForStatus, waitMs, withVSCode, work } from "./harness.mjs";

const SLOW = "The sea rolls in slowly, wave after wave, so that the user has time to look. ".repeat(10);
// A reply whose one step is one of the agent's task_* tools (plan's).
const task = (tool, ...args) => ({ text: "", tool_calls: [{ name: "call_tool", arguments: { calls: [{ tool, args }] } }] });
// compacted's task state, the answer its /compact asks the model for.
// plan's third turn: eight steps more, all done but the last, the one in progress below the list's fold.
const LATER = ["lex", "parse", "check", "emit", "link", "optimise", "document", "release"];
// plan's sixth turn: 139 steps more, 50 of them checked off in the same call, each check-off printing the whole plan
// (the result past its 128 KiB cap: the steps past the cut read as failed, the card red, though all of them ran).
const LONG = Array.from({ length: 139 }, (_, n) => `s${n + 12} of the long plan`);
const CHECKS = Array.from({ length: 50 }, (_, n) => ({ tool: "task_check", args: [String(n + 11)] }));
const STATE = { goal: "explain the code", plan: ["explain"], plan_step: "explain", decisions: [], files: [] };
const script = [{ text: SLOW, chunk_size: 2, delay: 0.25 }, { text: "The moon hangs low over the water." }, { text: "The parser reads tokens." },
  { text: "Hello." }, { text: "Again." },
  { text: "Half an answer", chunk_size: 5, stream_error: 503, drop: 2 }, { text: "Recovered whole." },
  { text: "Broken off mid-word", chunk_size: 5, stream_error: 400, drop: 2 },
  { text: "The first answer." }, { text: JSON.stringify(STATE) },
  task("task_add", "write the parser", "test it"), { text: "Planned." }, task("task_check", "1"), { text: "Written." },
  { text: "", tool_calls: [{ name: "call_tool", arguments: { calls: [{ tool: "task_add", args: LATER },
    ...LATER.map((_, n) => ({ tool: "task_check", args: [String(n + 2)] }))] } }] }, { text: "Nearly there." },
  task("task_check", "10"), { text: "Finished." }, task("task_add", "ship it"), { text: "Added." },
  { text: "", tool_calls: [{ name: "call_tool", arguments: { calls: [{ tool: "task_add", args: LONG }, ...CHECKS] } }] },
  { text: "Long." }];
const PROMPT = "Write a haiku about the sea";
const HUNG = "Tell me about the parser.";

const policy = path.join(work, "xdg", "config", "ollie", "sandbox.yaml"); // the daemon's user config (isolatedEnv)

/** The left edge, in pixels, of `word` in the chat's notice that holds it. */
async function leftOf(chat, notice, word) {
  return chat.locator(notice).last().locator(".column-last", { hasText: word }).evaluate((node, needle) => {
    const text = node.firstChild;
    const range = document.createRange();
    const at = text.textContent.indexOf(needle);
    range.setStart(text, at);
    range.setEnd(text, at + needle.length);
    return range.getBoundingClientRect().left;
  }, word);
}

const header = (chat, text) => chat.locator("#title", { hasText: text });

// Whether the header's title shows whole (not cut by the approval picker beside it), and where the picker is.
const titleLayout = (chat) => chat.locator("#title").evaluate((title) => {
  const picker = document.querySelector(".approval").getBoundingClientRect();
  const whole = title.clientWidth > 0 && title.scrollWidth <= title.clientWidth && title.scrollHeight <= title.clientHeight;
  return { whole, below: picker.top >= title.getBoundingClientRect().bottom - 1 };
});

/** The chat's title, "Sea haiku (fork)", shows whole at the default width (the picker beside it) and in a side bar
 * dragged narrow (the picker under it): it was cut to ten letters or so by "Ask before edits". */
async function headerFits(page, chat, screenshot) {
  let layout = await titleLayout(chat);
  if (!layout.whole || layout.below) throw new Error(`at the default width the header cuts the title or wraps: ${JSON.stringify(layout)}`);
  await screenshot("header-default-width");
  const width = await dragSideBar(page, 90);
  await until("the narrow header's title shown whole, the picker under it", async () => {
    layout = await titleLayout(chat);
    return layout.whole && layout.below;
  }).catch(() => {
    throw new Error(`in a side bar ${width}px wide the header shows ${JSON.stringify(layout)}`);
  });
  await screenshot("header-narrow");
  await dragSideBar(page, -90);
}

const repoSettings = (model, agent, title) => JSON.stringify({ "ollie.model": model, "ollie.agent": agent, "ollie.serverCommand": "/bin/false", "window.title": title });
const files = { ".vscode/settings.json": repoSettings("repo-dear-model", "yolo", "repo-before") };

await withVSCode({ script, files, settings: { "ollie.model": "scripted-model" } }, async ({ page, screenshot, workspace, userData }) => {
  await waitForStatus(page, /Ollie: idle/);
  let chat = await openChat(page);
  await scenario("title", async () => {
    await header(chat, "New chat").waitFor({ timeout: waitMs });

    // 1. The first prompt's words are the title while its answer still streams.
    await send(chat, PROMPT);
    await chat.locator(".item.assistant", { hasText: "The sea rolls in" }).waitFor({ timeout: waitMs });
    await header(chat, PROMPT).waitFor({ timeout: waitMs });
    // Whole, on two lines beside the approval picker at the default width (it was cut to "Write a h...").
    await until("the whole title in the header", async () => (await titleLayout(chat)).whole).catch(async () => {
      throw new Error(`the header cuts the title: ${JSON.stringify(await titleLayout(chat))}`);
    });
    if (!(await chat.locator("#stop").isVisible())) throw new Error("the turn ended before the title was checked");
    await screenshot("title-during-first-turn");
    log("the header showed the first prompt's title while its turn streamed");
    await chat.locator("#stop").click();
    await chat.locator('.item.turnEnd[data-stop="interrupted"]').waitFor({ timeout: waitMs });

    // 2. /rn renames it in the header at once.
    await send(chat, "/rn Sea haiku");
    await header(chat, "Sea haiku").waitFor({ timeout: waitMs });
    await screenshot("title-renamed");

    log("/rn renamed the header at once");

    // 3. The view's title bar: + starts a new chat, the history button picks the renamed one back.
    // (The view's own header holds them too, hidden while the view is the side bar's only one.)
    const action = (label) => page.locator(`.part.auxiliarybar .action-label[aria-label="${label}"]`).filter({ visible: true });
    await action("New Session").click();
    await header(chat, "New chat").waitFor({ timeout: waitMs });
    await chatFocused(page, chat);
    await action("Switch Session").click();
    await page.locator(".quick-input-widget .quick-input-title", { hasText: "Switch Session" }).waitFor({ timeout: waitMs });
    await screenshot("title-history-button");
    await page.locator(".quick-input-list .monaco-list-row", { hasText: "Sea haiku" }).first().click();
    await header(chat, "Sea haiku").waitFor({ timeout: waitMs });
    await chat.locator(".item.user", { hasText: PROMPT }).waitFor({ timeout: waitMs });
    log("the view's New Session and Switch Session buttons started a new chat and resumed the earlier one");

    // 4. A prompt's "Fork from here": the chat goes on in a fork with the conversation up to the end of that turn.
    const MOON = "And one about the moon";
    await send(chat, MOON);
    await chat.locator(".item.assistant", { hasText: "The moon hangs low" }).waitFor({ timeout: waitMs });
    const bubble = chat.locator(".item.user", { hasText: MOON });
    await bubble.locator("button.fork").waitFor({ timeout: waitMs });
    // It shows over the prompt's corner while the prompt is hovered or focused: on every prompt it took a line of the
    // side bar. Tab reaches it (from the turn before's), and shows it.
    const shown = async () => (await bubble.locator(".prompt-actions").evaluate((n) => getComputedStyle(n).opacity)) === "1";
    await page.mouse.move(1, 1);
    const below = await bubble.evaluate((n) => n.getBoundingClientRect().bottom - n.querySelector(".text").getBoundingClientRect().bottom);
    if (await shown() || below > 12) throw new Error(`an unhovered prompt shows Fork from here (${below}px under its text)`);
    await chat.locator(".item.user", { hasText: PROMPT }).locator("button.fork").focus();
    await page.keyboard.press("Tab");
    if (!(await bubble.locator("button.fork").evaluate((n) => n === document.activeElement)) || !(await shown())) {
      throw new Error("Tab did not reach and show the prompt's Fork from here");
    }
    await chat.evaluate(() => document.activeElement.blur());
    await bubble.hover();
    if (!(await shown())) throw new Error("a hovered prompt does not show Fork from here");
    await screenshot("fork-buttons");
    await chat.locator(".item.user", { hasText: PROMPT }).locator("button.fork").click();
    await header(chat, "Sea haiku (fork)").waitFor({ timeout: waitMs });
    await chat.locator(".item.user", { hasText: PROMPT }).waitFor({ timeout: waitMs });
    if (await chat.locator(".item.user", { hasText: MOON }).count()) throw new Error("the fork of turn 1 shows turn 2");
    // The header cuts a long title: the chat says it is the fork, and that the files did not go back to turn 1.
    await chat.locator(".item.notice", { hasText: 'This chat is now "Sea haiku (fork)", with the conversation up to turn 1' })
      .filter({ hasText: "Files were not changed" }).waitFor({ timeout: waitMs });
    await screenshot("fork-from-here");
    await action("Switch Session").click();
    const row = (text) => page.locator(".quick-input-list .monaco-list-row", { hasText: text });
    await row("Sea haiku (fork)").first().waitFor({ timeout: waitMs });
    await screenshot("fork-in-history");
    if (!(await row("Sea haiku").count() >= 2)) throw new Error("the history does not list the source beside its fork");
    // Each row says its turns, as Neovim's picker and the terminal's /sessions do: the source ran two.
    const rows = await row("Sea haiku").allTextContents();
    const source = rows.find((r) => !r.includes("(fork)")) ?? "";
    if (!/· 2 turns\b/.test(source) || !rows.every((r) => /· \d+ turns?\b/.test(r))) throw new Error(`the history rows do not say their turns: ${JSON.stringify(rows)}`);
    await page.keyboard.press("Escape");
    await page.locator(".quick-input-widget").waitFor({ state: "hidden", timeout: waitMs });
    log("Fork from here showed on a prompt's hover or focus alone, switched the chat to a fork up to that turn, and the "
      + "history lists both, each with its turns");
    await headerFits(page, chat, screenshot);
    log("the header shows the whole title at the default width and in a narrow side bar, the approval picker compact");

    // 5. "Ollie: Fork Chat": the whole chat, forked again.
    await runCommand(page, "Ollie: Fork Chat");
    await header(chat, "Sea haiku (fork) (fork)").waitFor({ timeout: waitMs });
    await chat.locator(".item.notice", { hasText: 'This chat is now "Sea haiku (fork) (fork)", with the whole conversation' }).waitFor({ timeout: waitMs });
    await chat.locator(".item.user", { hasText: PROMPT }).waitFor({ timeout: waitMs });
    log("Ollie: Fork Chat forked the whole chat");

    // 6. The composer names the model (and an agent that is not the default), as Copilot Chat's and Claude Code's do: a
    // click offers Switch Model; a switch of agent (the pick, or `/agent` typed in the chat) shows at once.
    const model = chat.locator("#model");
    await model.filter({ hasText: /^scripted-model$/ }).waitFor({ timeout: waitMs });
    await model.click();
    await page.locator(".quick-input-widget .quick-input-title", { hasText: "Switch Model" }).waitFor({ timeout: waitMs });
    await page.keyboard.press("Escape");
    await runCommand(page, "Ollie: Switch Agent");
    await page.locator(".quick-input-list .monaco-list-row", { hasText: "plan" }).first().waitFor({ timeout: waitMs });
    await page.locator(".quick-input-widget input").fill("plan");
    await page.keyboard.press("Enter");
    await model.filter({ hasText: /^plan · scripted-model$/ }).waitFor({ timeout: waitMs });
    await screenshot("composer-model");
    // Switched by a command typed in the chat, too.
    await send(chat, "/agent default");
    await model.filter({ hasText: /^scripted-model$/ }).waitFor({ timeout: waitMs });
    log("the composer names the model, opens Switch Model, and shows the agent once switched, by the pick or by /agent");
  });

  await scenario("hosthung", async () => {
    // This run's extension host stops (as one unresponsive), the prompt is sent, and the host dies before taking it.
    const hosts = ownPids("--type=extensionHost");
    if (hosts.length !== 1) throw new Error(`expected this run's one extension host, found ${JSON.stringify(hosts)}`);
    process.kill(hosts[0], "SIGSTOP");
    await send(chat, HUNG);
    if ((await chat.locator("#input").inputValue()) !== "") throw new Error("the input kept the prompt it posted");
    process.kill(hosts[0], "SIGKILL");

    // VS Code starts another host, whose chat page has the prompt back in its input, with the note.
    await until("the prompt back in the input of the chat made anew", async () => {
      chat = await chatFrame(page);
      return (await chat.locator("#input").inputValue().catch(() => "")) === HUNG;
    });
    await chat.locator("#imageNote", { hasText: "back in the input" }).waitFor({ timeout: waitMs });
    await screenshot("hosthung-prompt-back");
    log("the prompt the hung extension host never took came back in the input, said");

    // Sent again to the new host, it runs.
    await waitForStatus(page, /Ollie: idle/);
    await chat.locator("#input").press("Enter");
    await chat.locator(".item.assistant", { hasText: "The parser reads tokens." }).waitFor({ timeout: waitMs });
    log("sent again, it ran");
  });

  await scenario("commands", async () => {
    // A chat of its own, opened with a broken sandbox.yaml (taken away after: the next chats open without its warning).
    fs.mkdirSync(path.dirname(policy), { recursive: true });
    fs.writeFileSync(policy, "netwrok:\n  enabled: true\n");
    await runCommand(page, "Ollie: New Session");
    await chat.locator("#empty").waitFor({ timeout: waitMs });
    await chatFocused(page, chat);
    const said = `ollie: ${policy}: key 'netwrok': unknown key; fix the file: no step runs until it loads`;
    await waitForNotification(page, said);
    // Expanded, as a user reads a long one: the whole text in sight.
    const item = page.locator(".notifications-center .notification-list-item", { hasText: said }).first();
    await item.locator(".codicon-notifications-expand").click();
    await until("the notification expanded", async () => (await item.locator(".codicon-notifications-collapse").count()) > 0);
    await screenshot("policy-notification");
    await runCommand(page, "Notifications: Clear All Notifications");
    log("the broken sandbox.yaml was a notification naming its file and key as the session opened");
    await send(chat, "hi");
    await chat.locator(".item.assistant", { hasText: "Hello." }).waitFor({ timeout: waitMs });
    // The turn's end drawn (the page's running state came before it): /help is sent, not queued for a turn's end.
    await chat.locator('.item.turnEnd[data-stop="end"]').waitFor({ state: "attached", timeout: waitMs });
    const notice = ".item.notice.info";
    await send(chat, "/help");
    await chat.locator(notice, { hasText: "rename the session" }).waitFor({ timeout: waitMs });
    const columns = [await leftOf(chat, notice, "stop this session"), await leftOf(chat, notice, "rename the session"),
      await leftOf(chat, notice, "show or change the working directory")];
    // The /network row, one line from the daemon (the chat breaks it), goes on under the descriptions on each line.
    const network = await chat.locator(notice).last().locator(".column-last", { hasText: "and the hosts allowed" })
      .evaluate((node) => { const all = document.createRange(), lines = new Map(); all.selectNodeContents(node);
        for (const box of all.getClientRects()) lines.set(box.top, Math.min(lines.get(box.top) ?? box.left, box.left));
        return [...lines.values()]; }); // each line's start (a line's boxes past it are its words)
    if (network.length < 2) throw new Error(`/help: the /network row did not wrap (${network.length} line)`);
    columns.push(...network);
    if (new Set(columns).size !== 1) throw new Error(`/help: the descriptions start at ${columns.join(", ")} px`);
    await send(chat, "/rewnd");
    const typo = chat.locator(".item.notice.error").last();
    await until("the typo's error", async () => (await typo.textContent())?.includes("unknown command /rewnd: did you mean /rewind? (/help lists the commands)"));
    if ((await typo.textContent()).includes("rename the session")) throw new Error("a typo's answer listed every command");
    await screenshot("command-columns");
    log("/help kept its columns; a typo's error named the closest command alone");
    // A `!cmd` that exits non-zero shows failed, as a failed step (its ✗, a red border); one that worked does not.
    await send(chat, "!echo fine");
    await chat.locator(".item.notice.exec", { hasText: "fine" }).waitFor({ timeout: waitMs });
    await send(chat, "!echo broke; exit 3");
    await chat.locator(".item.notice.exec.failed", { hasText: "[exit 3]" }).waitFor({ timeout: waitMs });
    await chat.locator(".item.notice.exec.failed .codicon-error").waitFor({ timeout: waitMs });
    if ((await chat.locator(".item.notice.exec.failed", { hasText: "fine" }).count()) > 0) throw new Error("the !cmd that worked shows failed");
    await screenshot("command-shell-failed");
    log("a !cmd that exited non-zero showed failed, one that worked did not");

    const gone = (text) => until(`"${text}" gone from the chat`, async () => (await chat.locator(".item", { hasText: text }).count()) === 0);
    await send(chat, "/rewind");
    await chat.locator(".item.notice", { hasText: "rewound to before turn 1" }).waitFor({ timeout: waitMs });
    await gone("Hello.");
    await send(chat, "again");
    await chat.locator(".item.assistant", { hasText: "Again." }).waitFor({ timeout: waitMs });
    await send(chat, "/agent coding");
    await chat.locator(".item.notice", { hasText: "session cleared" }).waitFor({ timeout: waitMs });
    await gone("Again.");
    await send(chat, "/rewind abc");
    await chat.locator(".item.notice.error", { hasText: "takes a turn number" }).waitFor({ timeout: waitMs });
    await chat.locator(".item.notice", { hasText: "session cleared" }).waitFor({ timeout: waitMs });
    await screenshot("command-cut");
    log("/rewind and /agent took the turns they cut out of the chat; a failed /rewind took nothing");

    const kept = chat.locator(".item.notice", { hasText: 'the previous conversation is saved as "again"' });
    await kept.waitFor({ timeout: waitMs });
    if (!(await kept.textContent()).includes("resume it with Ollie: Switch Session")) {
      throw new Error(`the switch said ${JSON.stringify(await kept.textContent())}`);
    }
    await send(chat, "/help");
    const resumeRow = chat.locator(notice).last();
    // Its summary wrapped to the column (80 wide, as in a terminal), a line an element: read without the breaks.
    await until("/help's /resume row", async () => (await resumeRow.textContent())?.replace(/\s+/g, "").includes("resumeonewithOllie:SwitchSession"));
    if ((await resumeRow.textContent()).includes("ollie --session")) throw new Error("/help in the chat advised a terminal's ollie --session");
    await runCommand(page, "Ollie: Switch Session");
    await page.locator(".quick-input-widget .quick-input-title", { hasText: "Switch Session" }).waitFor({ timeout: waitMs });
    await page.locator(".quick-input-list .monaco-list-row", { hasText: "again" }).first().click();
    await chat.locator(".item.assistant", { hasText: "Again." }).waitFor({ timeout: waitMs });
    await screenshot("agent-switch-kept");
    log("the conversation /agent ended was kept: the chat said so, /help named the session list, Switch Session brought it back");
    fs.rmSync(policy);
  });

  await scenario("retry", async () => {
    await runCommand(page, "Ollie: New Session");
    await chat.locator("#empty").waitFor({ timeout: waitMs });
    await chatFocused(page, chat);
    await send(chat, "hi");
    await chat.locator(".item.assistant", { hasText: "Recovered whole." }).waitFor({ timeout: waitMs });
    await chat.locator(".item.notice", { hasText: "503" }).waitFor({ timeout: waitMs });
    await screenshot("retried");
    const answers = await chat.locator(".item.assistant").allTextContents();
    if (answers.some((text) => text.includes("Half"))) throw new Error(`the failed attempt's words still show: ${JSON.stringify(answers)}`);
    log("a retried reply shows once, without the failed attempt's words");
    // A request that fails for good after its first words (a 400 is not retried): the error, without those words
    // above it (they stayed, though the session never kept them: a resumed chat had none).
    await send(chat, "and then?");
    await chat.locator('.item.turnEnd[data-stop="error"]').waitFor({ timeout: waitMs });
    const after = await chat.locator(".item.assistant").allTextContents();
    if (after.some((text) => text.includes("Broke"))) throw new Error(`the failed request's words still show: ${JSON.stringify(after)}`);
    await screenshot("failed-for-good");
    log("a request that failed for good shows its error, without the words it had streamed");
  });

  await scenario("compacted", async () => {
    await runCommand(page, "Ollie: New Session");
    await until("the new session's empty chat", async () => (await chat.locator("#log .item.user").count()) === 0);
    await send(chat, "first question");
    await chat.locator(".item.assistant", { hasText: "The first answer." }).waitFor({ timeout: waitMs });
    await send(chat, "/compact");
    await chat.locator(".item.notice", { hasText: "compacted:" }).waitFor({ timeout: waitMs });
    // Resumed: read back from disk by the daemon the extension restarts once this one, its turn over, is killed (as a
    // window reload does, without one: ~4 CPU-s).
    await waitForStatus(page, /Ollie: idle/);
    for (const pid of daemonPids()) process.kill(pid, "SIGKILL");
    await chat.locator(".item.notice.error", { hasText: "stopped unexpectedly and was restarted" }).waitFor({ timeout: waitMs });
    await chat.locator(".item.assistant", { hasText: "The first answer." }).waitFor({ timeout: waitMs });
    const notice = chat.locator(".item.notice", { hasText: "Earlier conversation compacted" });
    await notice.waitFor({ timeout: waitMs });
    const prompts = await chat.locator(".item.user").allTextContents();
    if (prompts.length !== 1 || !prompts[0].includes("first question")) throw new Error(`the prompts shown: ${JSON.stringify(prompts)}`);
    await screenshot("compacted-resumed");
    log("a compacted session resumed says it was compacted, the agent's notes no prompt of hers");
  });

  await scenario("plan", async () => {
    // A chat of its own: the agent's task plan, a checklist above the prompt, as its steps change it.
    await runCommand(page, "Ollie: New Session");
    await until("the new session's empty chat", async () => (await chat.locator("#log .item.user").count()) === 0);
    const summary = (text) => chat.locator("#planSummary", { hasText: text }).waitFor({ timeout: waitMs });
    await send(chat, "plan it");
    await chat.locator(".item.assistant", { hasText: "Planned." }).waitFor({ timeout: waitMs });
    await summary("Plan 0/2 · write the parser");
    await send(chat, "write it");
    await chat.locator(".item.assistant", { hasText: "Written." }).waitFor({ timeout: waitMs });
    await summary("Plan 1/2 · test it");
    const steps = await chat.locator("#planSteps .plan-step").evaluateAll((rows) => rows.map((row) => `${row.className}: ${row.textContent.trim()}`));
    if (steps.join(" | ") !== "plan-step completed: write the parser | plan-step in_progress: test it") throw new Error(`the plan shows ${JSON.stringify(steps)}`);
    await screenshot("plan");
    log("the agent's plan showed above the prompt, a checklist following its steps");
    // A plan longer than the list's height scrolls to the step in progress (it showed its first steps, all done).
    await send(chat, "go on");
    await summary("Plan 9/10 · release");
    // The plan grew by eight rows as the turn ran: the chat, shorter from below, still shows its end (its reply went
    // under the plan, "Jump to latest" offered).
    await chat.locator(".item.assistant", { hasText: "Nearly there." }).waitFor({ timeout: waitMs });
    // Its steps say what each did to the plan (nine cards read "Update the plan").
    await chat.locator(".item", { hasText: "Add 8 steps to the plan" }).locator("text=Check off step 9").waitFor({ timeout: waitMs });
    await until("the chat's end in sight", () => chat.locator("#log").evaluate((log) => log.scrollHeight - log.scrollTop - log.clientHeight <= 40), 5000);
    if (await chat.locator("#jump").isVisible()) throw new Error("the chat that followed the turn offers Jump to latest");
    const inSight = (text) => chat.locator("#planSteps .plan-step", { hasText: text }).evaluate((row) => {
      const [shown, list] = [row.getBoundingClientRect(), row.parentElement.getBoundingClientRect()];
      return shown.top >= list.top - 1 && shown.bottom <= list.bottom + 1;
    });
    await until("the step in progress in sight", () => inSight("release"), 5000);
    await screenshot("plan-long");
    // Scrolled back to its first steps, the list stays there as the header changes (an approval mode picked).
    const top = () => chat.locator("#planSteps").evaluate((list) => list.scrollTop);
    await chat.locator("#planSteps").evaluate((list) => { list.scrollTop = 0; });
    for (const mode of ["auto-edit", "ask"]) {
      await chat.locator("#approval").selectOption(mode);
      await chat.locator(`#approval[data-mode="${mode}"]`).waitFor({ timeout: waitMs });
    }
    if (await top() !== 0) throw new Error(`the plan scrolled by itself to ${await top()} as the header changed`);
    log("a long plan shows its step in progress, and stays where she scrolled it");
    // A short window (a laptop's, the chat in the panel): the plan leaves the chat more height than it takes (its seven
    // rows took all but three lines of it).
    await page.setViewportSize({ width: 1100, height: 420 });
    const height = (id) => chat.locator(id).evaluate((node) => node.clientHeight);
    await until("the chat taller than the plan", async () => await height("#log") > await height("#planSteps"), 5000);
    await screenshot("plan-short-window");
    await page.setViewportSize({ width: 1100, height: 720 });
    // Every step done, the plan folds to one line (it stayed open, taking the room above the prompt); a step added
    // opens it again.
    const open = () => chat.locator("#plan").evaluate((plan) => plan.open);
    await send(chat, "finish it");
    await summary("Plan done · 10 steps");
    if (await open()) throw new Error("the finished plan stays open above the prompt");
    await screenshot("plan-done");
    await send(chat, "one more");
    await summary("Plan 10/11 · ship it");
    if (!await open()) throw new Error("the plan a step was added to stays folded");
    log("a finished plan folds to one line, and opens again as a step is added");
    // Past 100 steps the daemon sends the plan summarised: the count is of every step (it counted each summary as one),
    // and with 90 left each of them is a row, the 51 done before the last nine in one.
    await send(chat, "go long");
    await summary("Plan 60/150 · s61 of the long plan");
    const rows = await chat.locator("#planSteps .plan-step").evaluateAll((rows) => rows.map((row) => `${row.className}: ${row.textContent.trim()}`));
    const expected = ["plan-step completed: … 51 steps done", ...Array.from({ length: 9 }, (_, n) => `plan-step completed: s${n + 52} of the long plan`),
      ...Array.from({ length: 90 }, (_, n) => `plan-step ${n ? "pending" : "in_progress"}: s${n + 61} of the long plan`)];
    if (JSON.stringify(rows) !== JSON.stringify(expected)) throw new Error(`the plan of 150 steps shows ${JSON.stringify(rows)}`);
    // The step in progress in sight with the next ones (it was at the list's foot, the 89 left below it).
    await until("the step in progress and the next two in sight", async () => await inSight("s61 of") && await inSight("s63 of"), 5000);
    // Its card's title says each change once ("Add 139 steps to the plan and 50 more" read as 189 steps added).
    await chat.locator(".item.tool .step-title", { hasText: "Add 139 steps to the plan, check off 50 steps" }).first().waitFor({ timeout: waitMs });
    const headerTop = await chat.locator("#header").evaluate((header) => header.getBoundingClientRect().top);
    if (headerTop < 0) throw new Error(`the plan scrolled the chat's header out of sight by ${-headerTop}px`);
    // Each check-off ran: none of them reads as failed (a cut result's steps past the cut did: tests/lsp/test_plan.py).
    await chat.locator(".item.assistant", { hasText: "Long." }).waitFor({ timeout: waitMs });
    const card = chat.locator(".item.tool", { hasText: "Add 139 steps to the plan" });
    const failed = await card.locator('.step-row[data-status="failed"]').allTextContents();
    if (failed.length || await card.locator('.substep[data-status="completed"]').count() !== 51) {
      throw new Error(`check-offs that ran read as failed: ${JSON.stringify(failed)}`);
    }
    await screenshot("plan-150");
    log("a plan of 150 steps, 60 done, counts all of them and shows each step left; its check-offs read as done");
    await send(chat, "/rewind 2");
    await summary("Plan 0/2 · write the parser");
    await send(chat, "/clear");
    await until("no plan after /clear", async () => chat.locator("#plan").isHidden());
    await runCommand(page, "Ollie: Switch Session");
    await page.locator(".quick-input-widget .quick-input-title", { hasText: "Switch Session" }).waitFor({ timeout: waitMs });
    await page.locator(".quick-input-list .monaco-list-row", { hasText: "plan it" }).first().click();
    await chat.locator(".item.assistant", { hasText: "Planned." }).waitFor({ timeout: waitMs });
    await summary("Plan 0/2 · write the parser");
    await screenshot("plan-resumed");
    log("/rewind put back the plan its turn found, /clear took it away, the conversation it kept came back with it");
  });

  await scenario("settingsscope", async () => {
    // A chat of its own: the notices of title's /agent are not the repository's doing.
    await runCommand(page, "Ollie: New Session");
    await chat.locator("#empty").waitFor({ timeout: waitMs });
    await chatFocused(page, chat);
    // Enter runs a command typed whole, its completion list open or not yet (it completed `/model ` and took a second Enter).
    const ask = async (command, answer) => {
      await fillInput(chat, command);
      await chat.locator("#input").press("Enter");
      await chat.locator(".item.notice", { hasText: answer }).first().waitFor({ timeout: waitMs });
    };
    await ask("/model", "model: scripted-model");
    // The repository's values change on disk; its window.title shows when VS Code has read them. The chat's next
    // message to the extension comes after that change: a restart it caused has begun by then.
    fs.writeFileSync(path.join(workspace, ".vscode", "settings.json"), repoSettings("repo-dearer-model", "plan", "repo-after"));
    await page.waitForFunction(() => document.title.includes("repo-after"), null, { timeout: waitMs });
    await ask("/agent", "agent: default");
    const notices = await chat.locator(".item.notice").allTextContents();
    if (notices.some((text) => /repo-dear|agent: (yolo|plan)/.test(text))) {
      throw new Error(`the workspace chose the model or the agent: ${JSON.stringify(notices)}`);
    }
    // A restart starts a fresh chat: the first command's answer went with it.
    if (!notices.some((text) => text.includes("model: scripted-model")) || /restarting/.test(ollieOutput(userData))) {
      throw new Error(`the repository's ignored settings restarted the daemon: the chat holds ${JSON.stringify(notices)}`);
    }
    await screenshot("settings-scope");
    log("the workspace's ollie.model, ollie.agent and ollie.serverCommand were ignored: the chat's model is the user's");
    log("the repository's changed settings restarted nothing: the chat kept its answers");
    // The user's own change (in the Settings editor: code-server does not see settings.json written behind its back)
    // still restarts the daemon with it.
    await runCommand(page, "Preferences: Open User Settings");
    await page.locator(".settings-editor .suggest-input-container").waitFor({ timeout: waitMs });
    await page.keyboard.type("ollie.model");
    await page.locator('.setting-item-contents:has-text("Model name") input').first().fill("user-model-2");
    await chat.locator("#model", { hasText: "user-model-2" }).waitFor({ timeout: waitMs });
    log("the user's own change of ollie.model restarted the daemon with it");
  });
});
