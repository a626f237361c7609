// A second, independent ACP client: the official TypeScript SDK drives `ollie acp` through one
// prompt with a tool call and prints what it saw as JSON (tests/acp/test_typescript_client.py).
// Usage: node prompt_with_tool.mjs WORKSPACE AGENT_COMMAND [ARGS...]
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import { client, ndJsonStream, PROTOCOL_VERSION } from "@agentclientprotocol/sdk";

const [workspace, command, ...args] = process.argv.slice(2);
const agent = spawn(command, args, { stdio: ["pipe", "pipe", "inherit"], cwd: workspace });
const stream = ndJsonStream(Writable.toWeb(agent.stdin), Readable.toWeb(agent.stdout));
const updates = [];
const app = client().onNotification("session/update", ({ params }) => {
  updates.push(params.update);
});
const result = await app.connectWith(stream, async (ctx) => {
  const init = await ctx.request("initialize", { protocolVersion: PROTOCOL_VERSION, clientCapabilities: {} });
  const session = await ctx.request("session/new", { cwd: workspace, mcpServers: [] });
  const response = await ctx.request("session/prompt", {
    sessionId: session.sessionId,
    prompt: [{ type: "text", text: "read hello.py" }],
  });
  // The mode slot: the approval mode, kept in sync when it is set as a config option.
  const changed = await ctx.request("session/set_config_option", {
    sessionId: session.sessionId, configId: "mode", value: "read-only",
  });
  // The legacy mode state follows right after the answer: wait for it (the test's timeout bounds this).
  while (!updates.some((u) => u.sessionUpdate === "current_mode_update")) {
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return {
    init, sessionId: session.sessionId, stopReason: response.stopReason,
    modes: session.modes, configOptions: session.configOptions, changedOptions: changed.configOptions,
  };
});
agent.stdin.end();
process.stdout.write(JSON.stringify({ ...result, updates }) + "\n");
await new Promise((resolve) => agent.on("exit", resolve));
