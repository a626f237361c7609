import assert from "node:assert/strict";
import { test } from "node:test";
import { parseEvent, parseStateChanged, sessionIdOf } from "../../src/lib/protocol";
import { MAX_CHIPS, MAX_PROMPT_LENGTH, Unposted, modelLabel, parseWebviewMessage, refusedPrompt } from "../../src/lib/webviewMessages";

test("valid webview messages pass, extra fields are dropped", () => {
  assert.deepEqual(parseWebviewMessage({ type: "submit", text: "hi", evil: "<script>" }), { type: "submit", text: "hi" });
  assert.deepEqual(parseWebviewMessage({ type: "queue", text: "next" }), { type: "queue", text: "next" });
  assert.deepEqual(parseWebviewMessage({ type: "inject", text: "also" }), { type: "inject", text: "also" });
  assert.deepEqual(parseWebviewMessage({ type: "interrupt", text: 5 }), { type: "interrupt" });
  assert.deepEqual(parseWebviewMessage({ type: "ready" }), { type: "ready" });
  assert.deepEqual(parseWebviewMessage({ type: "loadEarlier", offset: -5 }), { type: "loadEarlier" }, "the page to load is the host's to know");
});

test("the chat's actions are validated field by field", () => {
  assert.deepEqual(parseWebviewMessage({ type: "submit", text: "hi", chips: ["ab12", "cd34"] }), { type: "submit", text: "hi", chips: ["ab12", "cd34"] });
  assert.deepEqual(parseWebviewMessage({ type: "queue", text: "later", chips: ["ab12"] }), { type: "queue", text: "later", chips: ["ab12"] }, "a queued prompt keeps its chips");
  assert.deepEqual(parseWebviewMessage({ type: "submit", text: "hi", chips: ["ab12", 5] }), { type: "submit", text: "hi" });
  assert.deepEqual(parseWebviewMessage({ type: "submit", text: "hi", chips: Array(MAX_CHIPS + 1).fill("a") }), { type: "submit", text: "hi" });
  assert.deepEqual(parseWebviewMessage({ type: "openFile", path: "src/a.py", line: 3 }), { type: "openFile", path: "src/a.py", line: 3 });
  assert.deepEqual(parseWebviewMessage({ type: "openFile", path: "a.py", line: -1 }), { type: "openFile", path: "a.py" });
  assert.deepEqual(parseWebviewMessage({ type: "openDiff", item: 4, path: "a.py" }), { type: "openDiff", item: 4, path: "a.py" });
  assert.deepEqual(parseWebviewMessage({ type: "undo", item: 4 }), { type: "undo", item: 4 });
  assert.deepEqual(parseWebviewMessage({ type: "code", action: "insert", code: "x = 1\n", file: "a.py" }), { type: "code", action: "insert", code: "x = 1\n", file: "a.py" });
  assert.deepEqual(parseWebviewMessage({ type: "permission", item: 2, outcome: "reject_with_feedback", feedback: "no" }), {
    type: "permission",
    item: 2,
    outcome: "reject_with_feedback",
    feedback: "no",
  });
  assert.deepEqual(parseWebviewMessage({ type: "permission", item: 3, outcome: "allow_session" }), { type: "permission", item: 3, outcome: "allow_session" });
  assert.deepEqual(parseWebviewMessage({ type: "setApproval", mode: "auto-edit" }), { type: "setApproval", mode: "auto-edit" });
  assert.deepEqual(parseWebviewMessage({ type: "checkBackend" }), { type: "checkBackend" });
  assert.deepEqual(parseWebviewMessage({ type: "checkPaths", paths: ["a.py"] }), { type: "checkPaths", paths: ["a.py"] });
  // A file named with a newline or an override: its link (drawn escaped) opens it (the click was dropped here).
  assert.deepEqual(parseWebviewMessage({ type: "openFile", path: "a\nb\u202etxt" }), { type: "openFile", path: "a\nb\u202etxt" });
  for (const bad of [
    { type: "openFile", path: "a\u0000b" },
    { type: "openFile" },
    { type: "openDiff", item: 0, path: "a.py" },
    { type: "undo", item: 1.5 },
    { type: "code", action: "run", code: "rm -rf /" },
    { type: "code", action: "copy" },
    { type: "permission", item: 2, outcome: "allow_forever" },
    { type: "setApproval", mode: "yolo" },
    { type: "checkPaths", paths: "a.py" },
    { type: "checkPaths", paths: Array(201).fill("a.py") },
  ]) {
    assert.equal(parseWebviewMessage(bad), undefined, JSON.stringify(bad));
  }
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
  // A tool's images: only the four image types, and only base64 goes into the data: URL the chat draws; the step of
  // the batch that read each kept when it is an index.
  const images = [{ mime: "image/png", bytes: 3, data: "iVBO", step: 1 }, { mime: "image/svg+xml", bytes: 9, data: "PHN2Zz4=" },
    { mime: "image/gif", bytes: 2, data: "x\"><script>", step: -1 }, { mime: "image/jpeg", bytes: "9" }];
  assert.deepEqual(parseEvent({ session: "s", seq: 1, role: "tool", images })?.images,
    [{ mime: "image/png", bytes: 3, data: "iVBO", step: 1 }, { mime: "image/gif", bytes: 2 }]);
  // A turn's end lists what it changed; a file without its counts is dropped.
  const changed = [
    { path: "a.py", status: "modified", added: 2, removed: 1, inEditor: true },
    { path: "b.py", status: "added", added: 3, removed: 0, inEditor: false },
    { path: "c.py", status: "modified" },
  ];
  assert.deepEqual(parseEvent({ session: "s", seq: 2, role: "turn", content: "end", turnChanges: { turn: 4, files: 3, changed } })?.turnChanges, {
    turn: 4,
    files: [
      { path: "a.py", status: "modified", added: 2, removed: 1, inEditor: true },
      { path: "b.py", status: "added", added: 3, removed: 0 },
    ],
  });
  assert.equal(parseEvent({ session: "s", seq: 2, role: "turn", content: "end", turnChanges: { turn: 4, files: 3 } })?.turnChanges, undefined);
  // Its end's diff failed: not known, and why (a reason that is no string is not said).
  assert.deepEqual(parseEvent({ session: "s", seq: 2, role: "turn", content: "end", turnChanges: { turn: 4, unknown: true, reason: "too many" } })?.turnChanges,
    { turn: 4, files: [], unknown: "too many" });
  assert.equal(parseEvent({ session: "s", seq: 2, role: "turn", content: "end", turnChanges: { turn: 4, unknown: true, reason: 3 } })?.turnChanges?.unknown, "");
  // The reason an earlier turn's end gave (each turn's in the home directory): said there, not under every turn.
  assert.equal(parseEvent({ session: "s", seq: 2, role: "turn", content: "end", turnChanges: { turn: 5, unknown: true, reason: "too many", again: true } })?.turnChanges, undefined);
  // A list bounded by the daemon: how many it left out, shown with the list (a `more` that is no count is dropped).
  const bounded = (more: unknown) => parseEvent({ session: "s", seq: 2, role: "turn", content: "end", turnChanges: { turn: 4, files: 150, changed: changed.slice(0, 1), more } })?.turnChanges;
  assert.equal(bounded(149)?.more, 149);
  for (const bad of [0, -1, 1.5, "149", null]) assert.equal(bounded(bad)?.more, undefined);
  const step = { id: "c1", kind: "read", title: "Read a.py", status: "completed", locations: [{ path: "a.py" }] };
  const withStep = parseEvent({ session: "s", seq: 2, role: "tool", name: "call_tool", content: "ok", tool: step, steps: [step] });
  assert.deepEqual([withStep?.tool, withStep?.steps], [step, [step]]);
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
  assert.equal(parseStateChanged({ session: "s", state: "idle", title: "Sea haiku" })?.title, "Sea haiku");
  assert.equal(parseStateChanged({ session: "s", state: "idle", title: 3 })?.title, undefined);
  assert.equal(parseStateChanged({ session: "s" }), undefined);
});

test("a session entry's id is `session` or `id`", () => {
  assert.equal(sessionIdOf({ session: "1-a" }), "1-a");
  assert.equal(sessionIdOf({ id: "2-b" }), "2-b");
  assert.equal(sessionIdOf({ title: "x" }), undefined);
});

test("a submit's or a queued prompt's pasted images are checked; inject takes none", async () => {
  const { MAX_IMAGES, MAX_IMAGE_DATA } = await import("../../src/lib/webviewMessages");
  const png = { name: "shot.png", data: "data:image/png;base64,iVBORw0KGgo=" };
  assert.deepEqual(parseWebviewMessage({ type: "submit", text: "see", images: [png] }), { type: "submit", text: "see", images: [png] });
  for (const images of [
    [{ name: "x.png", data: "data:text/html;base64,PHNjcmlwdD4=" }],
    [{ name: "x.png", data: "javascript:alert(1)" }],
    [{ name: "a\u0000b", data: png.data }],
    [{ name: "big.png", data: "data:image/png;base64," + "A".repeat(MAX_IMAGE_DATA) }],
    Array(MAX_IMAGES + 1).fill(png),
    "not a list",
  ]) {
    assert.equal(parseWebviewMessage({ type: "submit", text: "see", images }), undefined, "refused whole, not sent without");
    assert.equal(parseWebviewMessage({ type: "queue", text: "later", images }), undefined, "refused whole, not queued without");
  }
  // Queued during a turn, a prompt keeps its images (it was refused: they went only with a prompt sent when idle).
  assert.deepEqual(parseWebviewMessage({ type: "queue", text: "later", images: [png] }), { type: "queue", text: "later", images: [png] });
  assert.equal(parseWebviewMessage({ type: "inject", text: "also", images: [png] }), undefined);
});

test("a prompt's Fork from here names a turn from 1; a turn end's number is read, a bad one left out", () => {
  assert.deepEqual(parseWebviewMessage({ type: "fork", turn: 3, session: "other" }), { type: "fork", turn: 3 });
  for (const turn of [0, -1, 1.5, "2", undefined]) assert.equal(parseWebviewMessage({ type: "fork", turn }), undefined, String(turn));
  assert.equal(parseEvent({ session: "s", seq: 1, role: "turn", content: "end_turn", turn: 2 })?.turn, 2);
  assert.equal(parseEvent({ session: "s", seq: 1, role: "turn", content: "end_turn", turn: 0 })?.turn, undefined);
});

test("the composer names the session's model, and its agent when it is not the default; its click asks to switch", () => {
  assert.equal(modelLabel({ agent: "default", model: "qwen3:8b" }), "qwen3:8b");
  assert.equal(modelLabel({ agent: "plan", model: "gpt-4.1" }), "plan · gpt-4.1");
  // Picked from a hostile server's list: its U+202E reversed the composer's line.
  assert.equal(modelLabel({ agent: "default", model: "m\u202eid" }), "m\\u202eid");
  assert.equal(modelLabel({ agent: "", model: "" }), "");
  assert.deepEqual(parseWebviewMessage({ type: "switchModel", model: "evil" }), { type: "switchModel" });
});

test("a prompt the host refuses is given back with why: over the limit, a bad image, images with injected text", () => {
  const long = "x".repeat(MAX_PROMPT_LENGTH + 1);
  assert.deepEqual(refusedPrompt({ type: "submit", text: long }), { text: long, why: "it is over 1,000,000 characters" });
  const named = { name: "n".repeat(300), data: "data:image/png;base64,AAAA" };
  assert.match(refusedPrompt({ type: "submit", text: "look", images: [named] })?.why ?? "", /an image was refused .*256 characters/);
  assert.match(refusedPrompt({ type: "inject", text: "also", images: [] })?.why ?? "", /images do not go into a running turn/);
  assert.equal(refusedPrompt({ type: "queue", text: "later", images: [] }), undefined, "queued with its images");
  assert.equal(refusedPrompt({ type: "submit", text: "fine" }), undefined, "taken: nothing to give back");
  assert.equal(refusedPrompt({ type: "submit", text: 5 }), undefined, "no text to give back");
  assert.equal(refusedPrompt({ type: "openFile", path: "\0" }), undefined, "no prompt");
});

test("a put-back for a page never up waits for the next page when that one goes: never lost with it", () => {
  const posted: string[] = [];
  const send = (m: string) => posted.push(m);
  const unposted = new Unposted<string>();
  unposted.post("before any page", send);
  unposted.disposed(); // the page went before it said it was ready
  unposted.post("while none", send);
  assert.deepEqual(posted, []);
  assert.deepEqual(unposted.ready(), ["before any page", "while none"], "the next page gets both");
  unposted.post("page up", send);
  assert.deepEqual(posted, ["page up"]);
  unposted.disposed();
  unposted.post("for the next page", send);
  assert.deepEqual(posted, ["page up"]);
  assert.deepEqual(unposted.ready(), ["for the next page"]);
});
