import assert from "node:assert/strict";
import { test } from "node:test";
import { parseEvent, parseStateChanged, sessionIdOf } from "../../src/lib/protocol";
import { MAX_PROMPT_LENGTH, parseWebviewMessage } from "../../src/lib/webviewMessages";

test("valid webview messages pass, extra fields are dropped", () => {
  assert.deepEqual(parseWebviewMessage({ type: "submit", text: "hi", evil: "<script>" }), { type: "submit", text: "hi" });
  assert.deepEqual(parseWebviewMessage({ type: "queue", text: "next" }), { type: "queue", text: "next" });
  assert.deepEqual(parseWebviewMessage({ type: "inject", text: "also" }), { type: "inject", text: "also" });
  assert.deepEqual(parseWebviewMessage({ type: "interrupt", text: 5 }), { type: "interrupt" });
  assert.deepEqual(parseWebviewMessage({ type: "ready" }), { type: "ready" });
});

test("malformed webview messages are rejected", () => {
  for (const bad of [
    null,
    undefined,
    "submit",
    ["submit", "x"],
    {},
    { type: 3 },
    { type: "submit" },
    { type: "submit", text: 42 },
    { type: "submit", text: "   " },
    { type: "submit", text: "x".repeat(MAX_PROMPT_LENGTH + 1) },
    { type: "runShell", text: "rm -rf /" },
    { type: "__proto__", text: "x" },
  ]) {
    assert.equal(parseWebviewMessage(bad), undefined, JSON.stringify(bad)?.slice(0, 60));
  }
});

test("ollie/event params are checked", () => {
  assert.deepEqual(parseEvent({ session: "1-a", seq: 3, role: "call", name: "ls", content: "{}" }), {
    session: "1-a",
    seq: 3,
    role: "call",
    name: "ls",
    content: "{}",
  });
  assert.equal(parseEvent({ session: "1-a", seq: "3", role: "assistant", content: "x" }), undefined);
  assert.equal(parseEvent({ seq: 1, role: "assistant" }), undefined);
  assert.equal(parseEvent({ session: "s", seq: 1, role: "info", name: 5 }), undefined);
  assert.equal(parseEvent({ session: "s", seq: 1, role: "turn" })?.content, "");
});

test("ollie/stateChanged params are checked", () => {
  assert.deepEqual(parseStateChanged({ session: "s", state: "thinking", running: true, cost: 0.5 }), {
    session: "s",
    state: "thinking",
    running: true,
    contextSize: undefined,
    usage: undefined,
    cost: 0.5,
  });
  assert.equal(parseStateChanged({ session: "s" }), undefined);
});

test("a session entry's id is `session` or `id`", () => {
  assert.equal(sessionIdOf({ session: "1-a" }), "1-a");
  assert.equal(sessionIdOf({ id: "2-b" }), "2-b");
  assert.equal(sessionIdOf({ title: "x" }), undefined);
});
