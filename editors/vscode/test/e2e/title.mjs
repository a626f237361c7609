// E2E in real VS Code (code-server): the chat header shows the session's title as soon as the daemon gives it. The
// first prompt titles the session while its turn still streams (the header said "New chat" until the turn ended);
// `/rn` renames it at once; New Session says "New chat" again, and switching back shows the name: both from the
// buttons in the chat view's title bar, where Copilot Chat and Claude Code have theirs (there were none). A prompt's
// "Fork from here" switches the chat to a fork up to that turn, titled "<title> (fork)", and the chat says so and that
// the files stay as they are; the history lists both, and
// "Ollie: Fork Chat" forks the whole chat. The composer names the model and a non-default agent; a click switches.
// Then, in the same window (scenario hosthung): a prompt sent while the extension host hangs, and which it never takes
// (it is killed, and VS Code starts another), comes back in the input of the chat made anew, said, and goes when sent
// again. (The page cleared its input as it posted: the prompt was in neither the chat nor the input.)
// Last (scenario settingsscope, in a chat of its own): the window's repository, a clone, has a `.vscode/settings.json`
// choosing neither the model (billed to the user's key: a dearer one), the agent nor the daemon command. The chat's model
// stays the user's; and when the repository changes those values (a pull, a branch switch), the daemon is not restarted:
// the chat stays (it was, and the chat emptied: a command typed as the window opened lost its answer). The user's own
// change restarts it.
//
// Usage: node test/e2e/title.mjs --vsix ollie-0.1.0.vsix [--keep]   (env: see harness.mjs)

import * as fs from "node:fs";
import * as path from "node:path";
import { chatFocused, chatFrame, fillInput, log, ollieOutput, openChat, ownPids, runCommand, scenario, send, until, waitForStatus, waitMs, withVSCode } from "./harness.mjs";

const SLOW = "The sea rolls in slowly, wave after wave, so that the user has time to look. ".repeat(10);
const script = [{ text: SLOW, chunk_size: 2, delay: 0.25 }, { text: "The moon hangs low over the water." }, { text: "The parser reads tokens." }];
const PROMPT = "Write a haiku about the sea";
const HUNG = "Tell me about the parser.";

const header = (chat, text) => chat.locator("#title", { hasText: text });
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
    await chat.locator(".item.user", { hasText: MOON }).locator("button.fork").waitFor({ timeout: waitMs });
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
    await page.keyboard.press("Escape");
    log("Fork from here switched the chat to a fork up to that turn, and the history lists both");

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
