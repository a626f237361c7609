import assert from "node:assert/strict";
import { test } from "node:test";
import { composerAction } from "../../src/lib/composer";
import { SLASH_COMMANDS, applySlashCompletion, slashCompletions } from "../../src/lib/slash";

const key = (k: string, mods: Partial<Record<"shiftKey" | "ctrlKey" | "metaKey" | "altKey", boolean>> = {}) => ({
  key: k,
  shiftKey: false,
  ctrlKey: false,
  metaKey: false,
  altKey: false,
  ...mods,
});
const idle = { running: false, completing: false };
const busy = { running: true, completing: false };

test("Enter sends when idle and queues while a turn runs", () => {
  assert.equal(composerAction(key("Enter"), idle), "submit");
  assert.equal(composerAction(key("Enter"), busy), "queue");
});

test("Ctrl/Cmd/Alt+Enter injects into a running turn", () => {
  assert.equal(composerAction(key("Enter", { ctrlKey: true }), busy), "inject");
  assert.equal(composerAction(key("Enter", { metaKey: true }), busy), "inject");
  assert.equal(composerAction(key("Enter", { altKey: true }), busy), "inject");
  assert.equal(composerAction(key("Enter", { ctrlKey: true }), idle), "submit");
});

test("Shift+Enter is a new line; other keys do nothing special", () => {
  assert.equal(composerAction(key("Enter", { shiftKey: true }), busy), "newline");
  assert.equal(composerAction(key("a"), idle), "none");
  assert.equal(composerAction(key("ArrowDown"), idle), "none");
});

test("while completing, arrows move, Tab/Enter accept, Escape closes", () => {
  const completing = { running: false, completing: true };
  assert.equal(composerAction(key("ArrowDown"), completing), "nextCompletion");
  assert.equal(composerAction(key("ArrowUp"), completing), "previousCompletion");
  assert.equal(composerAction(key("Tab"), completing), "complete");
  assert.equal(composerAction(key("Enter"), completing), "complete");
  assert.equal(composerAction(key("Escape"), completing), "closeCompletion");
  assert.equal(composerAction(key("Enter", { shiftKey: true }), completing), "newline");
});

test("slash completion offers matching commands, shortest first", () => {
  assert.deepEqual(slashCompletions("/mo").map((c) => c.name), ["/model", "/models"]);
  assert.deepEqual(slashCompletions("/co").map((c) => c.name), ["/cost", "/compact", "/context"]);
  assert.equal(slashCompletions("/").length, SLASH_COMMANDS.length);
  assert.deepEqual(slashCompletions("/zzz"), []);
});

test("no completion once arguments are typed or for plain text", () => {
  assert.deepEqual(slashCompletions("/model gpt"), []);
  assert.deepEqual(slashCompletions("hello /mo"), []);
  assert.deepEqual(slashCompletions(""), []);
});

test("the protocol's core commands are offered", () => {
  const names = SLASH_COMMANDS.map((c) => c.name);
  for (const name of ["/model", "/agent", "/compact", "/context", "/usage", "/cost", "/clear", "/help"]) assert.ok(names.includes(name), name);
});

test("choosing a command that takes arguments leaves a space for them", () => {
  assert.equal(applySlashCompletion({ name: "/model", args: "[name]", description: "" }), "/model ");
  assert.equal(applySlashCompletion({ name: "/compact", description: "" }), "/compact");
});
