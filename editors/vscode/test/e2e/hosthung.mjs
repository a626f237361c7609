// E2E in real VS Code (code-server): a prompt sent while the extension host hangs, and which it never takes (it is
// killed, and VS Code starts another), comes back in the input of the chat made anew, said, and goes when sent again.
// (The page cleared its input as it posted: the prompt was in neither the chat nor the input.)
//
// Usage: node test/e2e/hosthung.mjs --vsix ollie-0.1.0.vsix [--keep]   (env: see harness.mjs)

import { chatFrame, log, openChat, ownPids, send, until, waitForStatus, waitMs, withVSCode } from "./harness.mjs";

const PROMPT = "Tell me about the parser.";

await withVSCode({ script: [{ text: "The parser reads tokens." }] }, async ({ page, screenshot }) => {
  await waitForStatus(page, /Ollie: idle/);
  let chat = await openChat(page);
  // This run's extension host stops (as one unresponsive), the prompt is sent, and the host dies before taking it.
  const hosts = ownPids("--type=extensionHost");
  if (hosts.length !== 1) throw new Error(`expected this run's one extension host, found ${JSON.stringify(hosts)}`);
  process.kill(hosts[0], "SIGSTOP");
  await send(chat, PROMPT);
  if ((await chat.locator("#input").inputValue()) !== "") throw new Error("the input kept the prompt it posted");
  process.kill(hosts[0], "SIGKILL");

  // VS Code starts another host, whose chat page has the prompt back in its input, with the note.
  await until("the prompt back in the input of the chat made anew", async () => {
    chat = await chatFrame(page);
    return (await chat.locator("#input").inputValue().catch(() => "")) === PROMPT;
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
