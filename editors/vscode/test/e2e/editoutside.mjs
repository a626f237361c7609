// E2E in real VS Code (code-server, approval `ask` as a user has it): the agent edits a file outside the workspace.
// The edit is refused without a question, and the line under the call says which file and key would allow it (filesystem.rw in the
// user's sandbox.yaml), as a step's refusal does.
//
// Usage: node test/e2e/editoutside.mjs --vsix ollie-0.1.0.vsix [--keep]   (env: see harness.mjs)

import * as fs from "node:fs";
import * as path from "node:path";
import { log, openChat, send, waitForStatus, waitMs, work, withVSCode } from "./harness.mjs";

const outside = path.join(work, "elsewhere", "todo.txt");
fs.mkdirSync(path.dirname(outside), { recursive: true });
fs.writeFileSync(outside, "one\n");
const script = [
  { tool_calls: [{ name: "call_tool", arguments: { calls: [{ tool: "file_edit", args: [outside, "one", "two"] }] } }] },
  { text: "It is outside the workspace: not changed." },
];

await withVSCode({ script }, async ({ page, screenshot }) => {
  await waitForStatus(page, /Ollie: idle/);
  const chat = await openChat(page);
  await send(chat, `change one to two in ${outside}`);
  await chat.locator(".item.assistant", { hasText: "It is outside the workspace: not changed." }).waitFor({ timeout: waitMs });
  // Under the call's title, not inside its collapsed "Input and output": the line a user reads.
  const why = chat.locator(".step-error", { hasText: "is outside the writable paths of sandbox policy 'default'" });
  await why.waitFor({ timeout: waitMs });
  const said = await why.innerText();
  if (!/the user can add its directory to filesystem\.rw in \S+sandbox\.yaml/.test(said)) throw new Error(`the refusal says: ${said}`);
  await screenshot("edit-outside");
  log(`chat: ${JSON.stringify(await chat.locator("#log").innerText())}`);
  if (fs.readFileSync(outside, "utf8") !== "one\n") throw new Error("the file outside the workspace was changed");
  log("an edit outside the workspace: refused, the chat says which file and key would allow it");
});
