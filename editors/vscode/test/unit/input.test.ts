import assert from "node:assert/strict";
import { test } from "node:test";
import { composerAction, contextTrigger } from "../../src/lib/composer";
import { parseCommandList } from "../../src/lib/protocol";
import { applySlashCompletion, isSlashCommand, slashCompletions, typedWhole } from "../../src/lib/slash";

// What `ollie/listCommands` answers (a part of it), as the extension parses it.
const COMMANDS = parseCommandList({
  commands: [
    { name: "/model", args: "[name]", description: "show or switch the model", destructive: false },
    { name: "/models", args: "", description: "list the backend's models", destructive: false },
    { name: "/compact", args: "", description: "compact the history now", destructive: true },
    { name: "/context", args: "", description: "context size", destructive: false },
    { name: "/cost", args: "", description: "cost", destructive: false },
    { name: "/help", args: "[command]", description: "this list", destructive: false },
    { name: "/agents", args: "", description: "list the agent configs", destructive: false },
    { name: "/agent", args: "[name]", description: "show or switch the agent config", destructive: true },
  ],
});

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

test("Escape stops a running turn; idle, or with a completion list open, it does not", () => {
  assert.equal(composerAction(key("Escape"), busy), "stop");
  assert.equal(composerAction(key("Escape"), idle), "none");
  assert.equal(composerAction(key("Escape"), { running: true, completing: true }), "closeCompletion");
});

test("ArrowUp in an empty input takes back the latest queued prompt; in typed text it moves the caret", () => {
  assert.equal(composerAction(key("ArrowUp"), { ...busy, empty: true }), "takeBack");
  assert.equal(composerAction(key("ArrowUp"), { ...idle, empty: true }), "takeBack");
  assert.equal(composerAction(key("ArrowUp"), { ...busy, empty: false }), "none");
  assert.equal(composerAction(key("ArrowUp"), { running: true, completing: true, empty: true }), "previousCompletion");
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

test("Enter sends a command typed whole (it took a second Enter); Tab still completes it", () => {
  const whole = { running: false, completing: true, typedWhole: true };
  assert.equal(composerAction(key("Enter"), whole), "submit");
  assert.equal(composerAction(key("Enter"), { ...whole, running: true }), "queue");
  assert.equal(composerAction(key("Tab"), whole), "complete");
  assert.equal(composerAction(key("ArrowDown"), whole), "nextCompletion");
  const [model, models] = slashCompletions("/model", COMMANDS);
  assert.ok(typedWhole("/model", model));
  assert.ok(!typedWhole("/model", models), "/models selected: Enter completes it");
  assert.ok(!typedWhole("/ask", { name: "/ask", args: "<prompt>" }), "a command that needs its argument is completed");
  assert.ok(!typedWhole("@file", { name: "@file", args: "" }), "a context trigger still adds its chip");
});

test("slash completion: prefix matches first, safe commands before destructive ones, then by name", () => {
  assert.deepEqual(slashCompletions("/mo", COMMANDS).map((c) => c.name), ["/model", "/models"]);
  assert.deepEqual(slashCompletions("/co", COMMANDS).map((c) => c.name), ["/context", "/cost", "/compact"]);
  assert.equal(slashCompletions("/", COMMANDS).at(-1)?.name, "/compact", "the destructive one goes last");
  assert.equal(slashCompletions("/", COMMANDS).length, COMMANDS.length);
  // A word inside a name matches after the prefix matches: /st finds /cost.
  assert.deepEqual(slashCompletions("/st", COMMANDS).map((c) => c.name), ["/cost"]);
  assert.deepEqual(slashCompletions("/zzz", COMMANDS), []);
  // The name typed whole comes first, destructive or not (Enter on `/agent` completed `/agents`).
  assert.deepEqual(slashCompletions("/agent", COMMANDS).map((c) => c.name), ["/agent", "/agents"]);
  assert.deepEqual(slashCompletions("/mo", []), [], "no commands until the daemon has listed them");
});

test("@ offers a file chip and # the selection chip, for the word at the caret", () => {
  assert.deepEqual(contextTrigger("@", 1), { kind: "file", start: 0, end: 1 });
  assert.deepEqual(contextTrigger("explain @ma", 11), { kind: "file", start: 8, end: 11 });
  assert.deepEqual(contextTrigger("look at #sel", 12), { kind: "selection", start: 8, end: 12 });
  assert.equal(contextTrigger("issue #12", 9), undefined, "a number is not the selection");
  assert.equal(contextTrigger("mail me@host", 12), undefined, "an @ inside a word is text");
  assert.equal(contextTrigger("@file then more", 15), undefined, "only the word at the caret");
});

test("no completion once arguments are typed or for plain text", () => {
  assert.deepEqual(slashCompletions("/model gpt", COMMANDS), []);
  assert.deepEqual(slashCompletions("hello /mo", COMMANDS), []);
  assert.deepEqual(slashCompletions("", COMMANDS), []);
});

test("listCommands results are read field by field, malformed entries dropped", () => {
  assert.deepEqual(COMMANDS[0], { name: "/model", args: "[name]", description: "show or switch the model", destructive: false });
  assert.equal(COMMANDS.find((c) => c.name === "/compact")?.destructive, true);
  const odd = parseCommandList({ commands: [{ name: "clear" }, { name: 3 }, "x", { name: "/kill", destructive: "yes" }] });
  assert.deepEqual(odd, [{ name: "/kill", args: "", description: "", destructive: false }]);
  assert.deepEqual(parseCommandList(undefined), []);
});

test("choosing a command that takes arguments leaves a space for them", () => {
  assert.equal(applySlashCompletion({ name: "/model", args: "[name]" }), "/model ");
  assert.equal(applySlashCompletion({ name: "/compact", args: "" }), "/compact");
});

test("a prompt that starts with a path is no slash command: it waits behind queued prompts as a prompt", () => {
  assert.equal(isSlashCommand("/model x"), true);
  assert.equal(isSlashCommand("  /clear"), true);
  assert.equal(isSlashCommand("/mcp:github:review 12"), true);
  assert.equal(isSlashCommand("/usr/bin/env python3 fails: why?"), false);
  assert.equal(isSlashCommand("/ alone"), false);
  assert.equal(isSlashCommand("fix /model"), false);
});
