import assert from "node:assert/strict";
import { test } from "node:test";
import { ChatItem, ChatModel, unsavedTail } from "../../src/lib/chatModel";
import { OllieEvent } from "../../src/lib/protocol";
import { contextToMarkdown, forkNotice, historyItems, lastTurnEnding, modelFromHistory, STOP_LABELS, pageBefore, parseContextPage, readContext, startsWithResult } from "../../src/lib/history";
import { splitEditorContext } from "../../src/lib/promptContext";
import { isSessionClosed, rejectedLine } from "../../src/lib/steps";

const messages = [
  { role: "system", content: "sys" },
  { role: "user", content: "read a" },
  { role: "assistant", content: "", reasoning: "need the file", tool_calls: [{ id: "1", name: "file_read", arguments: '{"path":"a"}' }] },
  { role: "tool", content: "AAA", name: "file_read", tool_call_id: "1" },
  { role: "assistant", content: "It says AAA." },
];

test("a saved conversation becomes chat items", () => {
  const model = modelFromHistory(messages);
  assert.deepEqual(model.items.map((i) => i.kind), ["user", "reasoning", "tool", "assistant"]);
  const tool = model.items[2];
  assert.equal(tool.kind === "tool" && tool.result, "AAA");
  assert.equal(model.lastSeq, 0, "live events of the session must not be dropped as repeats");
});

test("the agent's notes a compaction left first are a notice, not the user's prompt", () => {
  const model = modelFromHistory([{ role: "user", content: "[ollie: the agent's own notes ...]", memory: true }, ...messages]);
  assert.deepEqual(model.items.map((i) => i.kind), ["notice", "user", "reasoning", "tool", "assistant"]);
  const notice = model.items[0];
  assert.equal(notice.kind === "notice" && notice.text, "Earlier conversation compacted: the agent goes on from its notes of it.");
});

test("each turn that changed files gets its Changed files under its last message at once, its files read later", () => {
  const turns = [
    { role: "user", content: "edit a" },
    { role: "assistant", content: "Edited a.", turnChanges: { turn: 1, files: 1 } },
    { role: "user", content: "edit b" },
    // Some of its files undone since: said over those left (they were listed as if it had changed no more).
    { role: "assistant", content: "Edited b.", turnChanges: { turn: 2, files: 3, undone: true } },
    { role: "user", content: "hi" },
    { role: "assistant", content: "Hello.", turnChanges: { turn: "4", files: 0 } },
    { role: "user", content: "note it" },
    // Its changes all undone since: listed so, as live (it was left out, as if the turn had changed nothing).
    { role: "assistant", content: "Noted.", turnChanges: { turn: 5, files: 0, undone: true } },
    { role: "user", content: "flood" },
    // Its end's diff failed: said unknown (it was left out, as if the turn had changed nothing), no files to ask.
    { role: "assistant", content: "Flooded.", turnChanges: { turn: 6, unknown: true } },
    { role: "user", content: "write" },
    // Why, as its end said it (the reason is saved with the turn); the next turn of the same reason is not said again.
    { role: "assistant", content: "Wrote.", turnChanges: { turn: 7, unknown: true, reason: "the home directory" } },
    { role: "user", content: "write more" },
    { role: "assistant", content: "Wrote more.", turnChanges: { turn: 8, unknown: true, reason: "the home directory", again: true } },
  ];
  const kinds = (page: ChatItem[]) => page.map((i) => i.kind === "changes" ? [i.turn, i.unknown] : i.kind);
  // A page that starts after the turn that said it (or a compaction that took it): its first turn of the run says it.
  assert.deepEqual(kinds(historyItems(turns.slice(-2), "s1")), ["user", "assistant", [8, "the home directory"]]);
  // Loaded above it later, the page before leaves that run's line out: said once, where it was shown first.
  assert.deepEqual(kinds(historyItems(turns.slice(-6, -2), "s1", "the home directory")), ["user", "assistant", [6, ""], "user", "assistant"]);
  assert.deepEqual(kinds(historyItems(turns.slice(-6, -2), "s1", "another reason")), ["user", "assistant", [6, ""], "user", "assistant", [7, "the home directory"]]);
  const items = historyItems(turns, "s1");
  assert.deepEqual(items.splice(-5).map((i) => i.kind === "changes" ? [i.turn, i.unknown] : i.kind), ["user", "assistant", [7, "the home directory"], "user", "assistant"]);
  const unknown = items.pop();
  assert.deepEqual(unknown?.kind === "changes" && [unknown.turn, unknown.unknown, unknown.pending], [6, "", undefined]);
  items.pop();
  items.pop();
  assert.deepEqual(items.map((i) => i.kind), ["user", "assistant", "changes", "user", "assistant", "changes", "user", "assistant", "user", "assistant", "changes"]);
  const lists = items.filter((i) => i.kind === "changes");
  // Drawn from the marks alone: each turn's count, its files to be asked for (ChangesLists.fill).
  assert.deepEqual(lists.map((i) => i.kind === "changes" && [i.session, i.turn, i.files, i.pending, i.undone]),
    [["s1", 1, [], 1, undefined], ["s1", 2, [], 3, true], ["s1", 5, [], 0, true]]);
  assert.equal(historyItems(turns).some((i) => i.kind === "changes"), false, "no session: no list");
});

test("garbage history gives an empty model", () => {
  assert.equal(modelFromHistory("nope").items.length, 0);
  assert.equal(modelFromHistory([null, 3]).items.length, 0);
});

test("the context document shows the system prompt, messages and tool calls", () => {
  const doc = contextToMarkdown({ systemPrompt: "You are ollie.", messages });
  assert.match(doc, /## System prompt\n\n```text\nYou are ollie\.\n```/);
  assert.match(doc, /## user\n\nread a/);
  assert.match(doc, /Tool call `file_read`:\n```json\n\{"path":"a"\}/);
  assert.match(doc, /## tool \(file_read\)\n\n```text\nAAA\n```/);
});

test("a saved prompt's editor context becomes its label", () => {
  const saved = "<editor-context>\nFile: marker.py (python)\nSelected text:\n```python\nX = 1\n```\n</editor-context>\n\nWhat does this do?";
  assert.deepEqual(splitEditorContext(saved), { prompt: "What does this do?", contextLabels: ["marker.py (selection)"] });
  assert.deepEqual(splitEditorContext("plain prompt"), { prompt: "plain prompt" });
  const resource = "<editor-context>\nMCP resource: note://readme (server t)\n```\nthe readme\n```\n</editor-context>\n\nsummarise";
  assert.deepEqual(splitEditorContext(resource), { prompt: "summarise", contextLabels: ["t: note://readme"] });
  const noted = "What now?\n\nthe user undid these changes of yours (turn 4): app.py (the whole file, back to before your change)";
  assert.deepEqual(splitEditorContext(noted), { prompt: "What now?" }, "the engine's undo note is for the model");
  const model = modelFromHistory([{ role: "user", content: saved }]);
  assert.deepEqual(model.items[0], { kind: "user", id: 1, text: "What does this do?", contextLabels: ["marker.py (selection)"] });
});

test("a prompt with several context items gets one label per item, the daemon's when it sends them", () => {
  const block = (header: string) => `<editor-context>\n${header}\n\`\`\`python\nShowing line 99:\n\`\`\`\n</editor-context>`;
  const saved = [block("File: a.py (python)\nLocation: lines 3-5\nSelected text:"), block("File: notes.txt\nShowing line 1:"), "<editor-context>\nFile: b.py\n</editor-context>", "compare them"].join("\n\n");
  assert.deepEqual(splitEditorContext(saved), { prompt: "compare them", contextLabels: ["a.py:3-5", "notes.txt:1", "b.py"] });
  const ours = modelFromHistory([{ role: "user", content: saved }]);
  assert.deepEqual(ours.items[0], { kind: "user", id: 1, text: "compare them", contextLabels: ["a.py:3-5", "notes.txt:1", "b.py"] });
  const theirs = modelFromHistory([{ role: "user", content: saved, contextLabels: ["x.py:1", "y.py"] }]);
  assert.deepEqual(theirs.items[0], { kind: "user", id: 1, text: "compare them", contextLabels: ["x.py:1", "y.py"] });
  const bad = modelFromHistory([{ role: "user", content: saved, contextLabels: [3] }]);
  assert.deepEqual(bad.items[0], ours.items[0], "labels that are not strings are read from the blocks instead");
});

// The shapes of tests/lsp/test_history_render.py: each call and result carries the live `tool` object.
const edit = { id: "c1", kind: "edit", title: "Edit calc.py", status: "completed", locations: [{ path: "calc.py", line: 2 }] };
const batch = { id: "c2", kind: "read", title: "Read calc.py and 1 more", status: "failed", locations: [{ path: "calc.py" }] };
const inner = [
  { id: "c2/1", kind: "read", title: "Read calc.py", status: "completed", locations: [{ path: "calc.py" }] },
  { id: "c2/2", kind: "read", title: "Read missing.py", status: "failed", locations: [{ path: "missing.py" }] },
];
const saved = [
  { role: "user", content: "fix add" },
  { role: "assistant", content: "", tool_calls: [{ id: "c1", name: "call_tool", arguments: "{}", tool: edit }] },
  { role: "tool", content: "ok", tool_call_id: "c1", tool: edit },
  { role: "assistant", content: "", tool_calls: [{ id: "c2", name: "call_tool", arguments: "{}", tool: batch, steps: inner }] },
  { role: "tool", content: "[call 2 file_read] exit 1", tool_call_id: "c2", tool: batch, steps: inner },
  { role: "assistant", content: "Half an answer\n\n[interrupted by the user: this reply was cut off here]", interrupted: true },
];

test("resumed steps are the live chat's: title, status (failed too), locations with lines, inner steps", () => {
  const items = historyItems(saved);
  assert.deepEqual(items.map((i) => i.kind), ["user", "tool", "tool", "assistant", "turnEnd"]);
  const [first, second] = items.filter((i) => i.kind === "tool");
  assert.ok(first.kind === "tool" && second.kind === "tool");
  assert.equal(first.step?.title, "Edit calc.py");
  assert.deepEqual(first.step?.locations, [{ path: "calc.py", line: 2 }]);
  assert.equal(first.result, "ok");
  assert.equal(second.step?.status, "failed");
  assert.equal(second.isError, true);
  assert.deepEqual(second.steps?.map((s) => [s.title, s.status]), [["Read calc.py", "completed"], ["Read missing.py", "failed"]]);
});

test("a resumed step the user rejected reads as her No (its card is gone), not as a failure; one that failed still fails", () => {
  const step = (title: string) => ({ id: title, kind: "edit", title, locations: [], status: "failed" });
  const items = historyItems([
    { role: "user", content: "make the test stricter" },
    { role: "assistant", content: "", tool_calls: [{ id: "1", name: "file_edit", arguments: "{}", tool: step("Edit test.py") }, { id: "2", name: "file_edit", arguments: "{}", tool: step("Edit b.py") }] },
    { role: "tool", content: "rejected: the user did not allow 'Edit test.py'; it was not run.\nThe user's feedback: keep it loose", name: "file_edit", tool_call_id: "1", tool: step("Edit test.py") },
    { role: "tool", content: "error: b.py: no such file", name: "file_edit", tool_call_id: "2", tool: step("Edit b.py") },
  ]);
  const [rejected, failed] = items.filter((i) => i.kind === "tool");
  assert.ok(rejected.kind === "tool" && failed.kind === "tool");
  assert.equal(rejected.rejected, true);
  assert.equal(rejected.rejectedInCard, undefined, "no card here says it: the step does");
  assert.equal(rejectedLine(rejected.result ?? ""), "Rejected by you, not run. Your feedback: keep it loose");
  assert.equal(failed.rejected, undefined);
  assert.equal(failed.isError, true);
});

test("a resumed step keeps its connections (tool.network, saved with the session)", () => {
  const network = [{ host: "other.test", port: 8080, verdict: "denied", how: "deny", sent: 0, received: 0 }];
  const fetch = { id: "c3", kind: "execute", title: "Run `curl`", status: "completed", locations: [], network };
  const [item] = historyItems([
    { role: "assistant", content: "", tool_calls: [{ id: "c3", name: "execute_code", arguments: "{}", tool: fetch }] },
    { role: "tool", content: "[step 1 bash] exit 0", tool_call_id: "c3", tool: fetch },
  ]);
  assert.ok(item.kind === "tool");
  assert.deepEqual(item.step?.network, network);
});

test("an interrupted reply shows its text without the engine's marker, then ends as interrupted", () => {
  const items = historyItems(saved);
  const reply = items.find((i) => i.kind === "assistant");
  assert.equal(reply?.kind === "assistant" && reply.text, "Half an answer");
  assert.deepEqual(items[items.length - 1], { kind: "turnEnd", id: items.length, stop: "interrupted" });
  // A reply not marked interrupted keeps its text as it is.
  const plain = historyItems([{ role: "assistant", content: "[interrupted by the user: this reply was cut off here]" }]);
  assert.equal(plain.length, 1);
});

test("a turn whose calls an interrupt cut short ends after the batch, as the live chat showed it; a reload's says so", () => {
  // A window reload while the call waited on its approval question closed the session under it (CLOSED_RESULT).
  const asked = { id: "c4", kind: "edit", title: "Edit notes.txt", status: "failed", locations: [] };
  const closed = "[interrupted before this call finished: the session was closed (its editor closed, or ollie stopped)]";
  const reloaded = historyItems([
    { role: "user", content: "edit the notes" },
    { role: "assistant", content: "Editing.", tool_calls: [{ id: "c4", name: "call_tool", arguments: "{}", tool: asked }] },
    { role: "tool", content: closed, tool_call_id: "c4", tool: asked },
  ]);
  assert.deepEqual(reloaded.map((i) => i.kind), ["user", "assistant", "tool", "turnEnd"]);
  // She did not stop it: the turn's end says the window's reload did, and the step is no failure of hers or the model's.
  assert.deepEqual(reloaded.at(-1), { kind: "turnEnd", id: 4, stop: "closed" });
  assert.equal(STOP_LABELS.closed, "Turn stopped: the window reloaded or closed before it ended");
  assert.equal(isSessionClosed(closed), true);
  assert.equal(isSessionClosed("[interrupted by the user before this call finished]"), false);
  // Stop during a batch of two calls: one end line, after both results; the next turn goes on below it.
  const stopped = "[interrupted by the user before this call finished]";
  const batch = historyItems([
    { role: "user", content: "read both" },
    { role: "assistant", content: "", tool_calls: [{ id: "a", name: "file_read", arguments: "{}" }, { id: "b", name: "file_read", arguments: "{}" }] },
    { role: "tool", content: stopped, tool_call_id: "a" },
    { role: "tool", content: stopped, tool_call_id: "b" },
    { role: "user", content: "go on" },
  ]);
  assert.deepEqual(batch.map((i) => i.kind), ["user", "tool", "tool", "turnEnd", "user"]);
  // A result that merely mentions an interrupt is no end of a turn.
  const quoted = historyItems([{ role: "tool", content: "grep: [interrupted before this call finished" }]);
  assert.deepEqual(quoted.map((i) => i.kind), ["tool"]);
});

test("the first prompt of a resumed session is its first item", () => {
  const model = modelFromHistory(saved);
  assert.deepEqual(model.items[0], { kind: "user", id: 1, text: "fix add" });
});

test("context pages: the total (or the messages' count), and the page before a given one", () => {
  assert.deepEqual(parseContextPage({ messages: [1, 2], total: 40 }), { messages: [1, 2], total: 40 });
  assert.deepEqual(parseContextPage({ messages: [1, 2] }), { messages: [1, 2], total: 2 });
  assert.deepEqual(parseContextPage({ messages: [1, 2], total: 1 }), { messages: [1, 2], total: 2 });
  assert.deepEqual(parseContextPage(null), { messages: [], total: 0 });
  // Whether a turn ran when the messages were read: said with them (a separate ollie/state may straddle its start).
  assert.deepEqual(parseContextPage({ messages: [1], total: 1, running: true }), { messages: [1], total: 1, running: true });
  assert.deepEqual(parseContextPage({ messages: [1], total: 1, running: "yes" }), { messages: [1], total: 1 });
  assert.deepEqual(pageBefore(450, 200), { offset: 250, limit: 200 });
  assert.deepEqual(pageBefore(150, 200), { offset: 0, limit: 150 });
  assert.deepEqual(pageBefore(0, 200), { offset: 0, limit: 0 });
});

test("a long context is read page by page, following the daemon's `next`, and only forward", async () => {
  const all = Array.from({ length: 2500 }, (_, n) => n);
  const asked: object[] = [];
  // As the daemon answers: at most 1,000 a page, `next` while more follow.
  const daemon = async (params: { offset: number; limit?: number }) => {
    asked.push(params);
    const end = Math.min(all.length, params.offset + Math.min(1000, params.limit ?? all.length));
    return { systemPrompt: "sp", messages: all.slice(params.offset, end), total: all.length, ...(end < all.length ? { next: end } : {}) };
  };
  const whole = await readContext(daemon);
  assert.deepEqual(whole, { messages: all, total: 2500, systemPrompt: "sp" });
  assert.deepEqual(asked, [{ offset: 0 }, { offset: 1000 }, { offset: 2000 }]);
  asked.length = 0;
  assert.deepEqual((await readContext(daemon, 900, 1200)).messages, all.slice(900, 2100));
  assert.deepEqual(asked, [{ offset: 900, limit: 1200 }, { offset: 1900, limit: 200 }]);
  // A `next` that does not move on ends the reading.
  assert.deepEqual((await readContext(async () => ({ messages: [1], total: 9, next: 0 }))).messages, [1]);
  // A turn that began while the pages were read: the last page's word holds (its prompt is on that page).
  const begun = async (params: { offset: number }) => ({ ...(await daemon(params)), running: params.offset >= 2000 });
  assert.equal((await readContext(begun)).running, true);
  assert.equal((await readContext(begun, 0, 1000)).running, false);
});

test("an earlier page goes before the items shown, with ids below theirs", () => {
  const model = modelFromHistory(saved.slice(3));
  const before = model.items.map((i) => i.id);
  const older = model.prepend(historyItems(saved.slice(0, 3)));
  assert.deepEqual(older.map((i) => [i.kind, i.id]), [["user", -1], ["tool", 0]], "a call and its result: one item");
  assert.deepEqual(model.items.map((i) => i.id), [-1, 0, ...before]);
  assert.equal(model.items[0].kind, "user");
  const oldest = model.prepend(historyItems([{ role: "user", content: "first" }]));
  assert.deepEqual(oldest.map((i) => i.id), [-2]);
  assert.equal(model.add({ kind: "notice", id: 0, level: "info", text: "new" }).id, before[before.length - 1] + 1, "new items still count up");
});

test("a resumed session whose last turn failed shows the failure after it, as the live chat did", () => {
  const model = modelFromHistory([{ role: "user", content: "hello?" }], "error");
  assert.deepEqual(model.items.map((i) => i.kind), ["user", "notice", "turnEnd"]);
  const notice = model.items[1];
  assert.ok(notice.kind === "notice" && notice.level === "error" && /prompt failed/.test(notice.text));
  assert.deepEqual(model.items[2], { kind: "turnEnd", id: 3, stop: "error" });
  assert.deepEqual(lastTurnEnding("max_steps").map((i) => i.kind === "turnEnd" && i.stop), ["max_steps"]);
  // A reply cut at the token limit says so under it, live and resumed.
  assert.deepEqual(lastTurnEnding("max_tokens").map((i) => i.kind === "turnEnd" && i.stop), ["max_tokens"]);
  assert.match(STOP_LABELS.max_tokens, /cut off.*output token limit/i);
  for (const fine of ["end", "interrupted", "", undefined, 7]) assert.deepEqual(lastTurnEnding(fine), [], String(fine));
  assert.equal(modelFromHistory([{ role: "user", content: "hi" }], "end").items.length, 1);
});

test("a resumed turn that ended at its steps, with no reply after them, says so under them, as Neovim does", () => {
  // It showed the steps and nothing under them, as if they still ran.
  const steps = messages.slice(0, 4);
  const ends = (result: unknown, history = steps) => modelFromHistory(history, result, 0, "s").items.filter((i) => i.kind === "turnEnd").map((i) => i.kind === "turnEnd" && i.stop);
  for (const over of ["end", "interrupted", ""]) assert.deepEqual(ends(over), ["no_answer"], over);
  assert.equal(STOP_LABELS.no_answer, "No answer after these steps: the turn failed or stopped");
  // Under the turn's "Changed files", where Neovim draws it too.
  const changed = [...steps.slice(0, 3), { ...steps[3], turnChanges: { turn: 1, files: 1 } }];
  assert.deepEqual(modelFromHistory(changed, "end", 0, "s").items.slice(-2).map((i) => i.kind), ["changes", "turnEnd"]);
  // A failure or step limit says its own line; a running turn (no result) and a turn answered say none.
  assert.deepEqual(ends("error"), ["error"]);
  assert.deepEqual(ends("max_steps"), ["max_steps"]);
  assert.deepEqual(ends(undefined), []);
  assert.deepEqual(ends("end", messages), []);
});

test("a page that starts with a tool result is one whose call is on the page before (it is fetched with it)", () => {
  assert.ok(startsWithResult(saved.slice(2)));
  assert.ok(!startsWithResult(saved.slice(1)));
  assert.ok(!startsWithResult([]));
  // Split, a call and its result would show as two steps: the call without a result, the result without input.
  assert.equal(historyItems(saved.slice(0, 2)).length + historyItems(saved.slice(2, 3)).length, 3);
  assert.equal(historyItems(saved.slice(0, 3)).length, 2);
});

test("a saved prompt's images show as labels (type and size, the daemon sends no data)", async () => {
  const { modelFromHistory } = await import("../../src/lib/history");
  const { imageLabels } = await import("../../src/lib/promptContext");
  assert.deepEqual(imageLabels([{ mime: "image/png", bytes: 12_345 }, { mime: "image/jpeg", bytes: 10 }]), ["image: png, 12 KB", "image: jpeg, 1 KB"]);
  const model = modelFromHistory([{ role: "user", content: "what is this", images: [{ mime: "image/png", bytes: 2048 }] }]);
  const user = model.items.find((i) => i.kind === "user");
  assert.deepEqual(user && user.kind === "user" ? user.contextLabels : undefined, ["image: png, 2 KB"]);
});

test("a resumed step has its result's images: drawn when the daemon sends their data, else named with why", async () => {
  const { historyItems } = await import("../../src/lib/history");
  const images = [{ mime: "image/png", bytes: 3, data: "iVBO" }, { mime: "image/png", bytes: 12_345 }, { mime: "image/svg+xml", bytes: 9 }];
  const items = historyItems([
    { role: "assistant", content: "", tool_calls: [{ id: "c1", name: "call_tool", arguments: "{}" }] },
    { role: "tool", tool_call_id: "c1", name: "call_tool", content: "[cold result of call_tool collapsed: 1 lines]", images },
  ]);
  const tool = items.find((i) => i.kind === "tool");
  assert.deepEqual(tool && tool.kind === "tool" ? tool.images : undefined, [
    { mime: "image/png", bytes: 3, data: "iVBO" },
    { mime: "image/png", bytes: 12_345, why: "a resumed chat has its type and size only" },
  ]);
});

test("a chat drawn from history has seen the events its page tells of (ollie/queue's `seen`)", async () => {
  // A session that ran before this window had its events: the first prompt queued must say the user saw the turn end
  // (the history's `seq`), or the daemon runs it as a follow-up of a turn the user saw end.
  const pages = [{ messages: [{ role: "user", content: "hi" }], total: 2, next: 1, seq: 3 }, { messages: [{ role: "assistant", content: "hello" }], total: 2, seq: 7 }];
  const read = await readContext(async ({ offset }) => pages[offset]);
  assert.equal(read.seq, 7, "the last page's seq");
  const model = modelFromHistory(read.messages, undefined, read.seq);
  assert.equal(model.seen, 7);
  model.apply({ seq: 9, role: "assistant", content: "more" } as never);
  assert.equal(model.seen, 9, "a later live event moves it on");
  for (const bad of [-1, 1.5, "4"]) assert.equal(parseContextPage({ messages: [], seq: bad }).seq, undefined);
});

test("a saved prompt keeps the number of the turn it starts; one without (a fork's copy) has none", () => {
  const model = modelFromHistory([
    { role: "user", content: "copied" }, { role: "assistant", content: "a" },
    { role: "user", content: "own", turn: 1 }, { role: "assistant", content: "b" }, { role: "user", content: "odd", turn: "2" },
  ]);
  assert.deepEqual(model.items.filter((i) => i.kind === "user").map((i) => i.kind === "user" && i.turn), [undefined, 1, undefined]);
});

test("a fork's notice names the fork, where it was cut, and that the files were not taken back", () => {
  assert.equal(forkNotice("Fix add (fork)", 2), 'This chat is now "Fix add (fork)", with the conversation up to turn 2; the original is in ' +
    "Switch Session. Files were not changed: they stay as they are now, not as they were after turn 2.");
  assert.equal(forkNotice(undefined), "This chat is now a fork, with the whole conversation; the original is in Switch Session. " +
    "Files were not changed: they stay as they are now.");
});

test("a reply the daemon saved before it died, its turn not ended, shows once in the chat read back", () => {
  // Bug: killed while a postTurn hook ran, the answer saved, the restored chat showed it twice: read back, then again
  // as "Cut short".
  const live = new ChatModel();
  let seq = 0;
  for (const [role, content] of [["turn", "start"], ["user", "hello"], ["assistant", "The answer "], ["assistant", "saved whole."]]) {
    live.apply({ session: "s", seq: ++seq, role, content } as OllieEvent);
  }
  const tail = unsavedTail(live);
  const saved = modelFromHistory([{ role: "user", content: "hello" }, { role: "assistant", content: "The answer saved whole." }]);
  assert.deepEqual(saved.addCutShort(tail), []);
  assert.deepEqual(saved.items.map((i) => i.kind), ["user", "assistant"]);
  // Only the prompt saved (it died mid-reply): what streamed shows, cut short.
  const unsaved = modelFromHistory([{ role: "user", content: "hello" }]);
  assert.deepEqual(unsaved.addCutShort(tail).map((i) => i.kind), ["assistant", "turnEnd"]);
  // Its steps saved, the reply after them not: what streamed shows under them, cut short, not "no answer" too.
  const steps = modelFromHistory([...messages.slice(1, 4)], "end");
  assert.deepEqual(steps.addCutShort(tail).map((i) => i.kind), ["user", "assistant", "turnEnd"]);
  assert.deepEqual(steps.items.filter((i) => i.kind === "turnEnd").map((i) => i.kind === "turnEnd" && i.stop), ["cut_short"]);
});

test("resumed, a shell step that changed files gets back their diffs under it (the files it names)", async () => {
  const { giveTurnDiffs } = await import("../../src/lib/history");
  const run = { id: "1", kind: "execute", title: "Run `sed -i s/a/b/ b.txt`", status: "completed", locations: [], files: ["b.txt"] };
  const fix = { id: "2", kind: "edit", title: "Edit c.py", status: "completed", locations: [{ path: "c.py" }], files: ["c.py", "d.py"] };
  const history = [
    { role: "user", content: "fix them", turn: 1 },
    { role: "assistant", content: "", tool_calls: [{ id: "1", name: "execute_code", arguments: "{}", tool: run }] },
    { role: "tool", content: "ok", name: "execute_code", tool_call_id: "1", tool: run },
    { role: "assistant", content: "", tool_calls: [{ id: "2", name: "file_edit", arguments: "{}", tool: fix }] },
    { role: "tool", content: "ok", name: "file_edit", tool_call_id: "2", tool: fix },
    { role: "assistant", content: "Fixed.", turnChanges: { turn: 1, files: 3 } },
  ];
  const items = historyItems(history, "s");
  const changes = items.find((i) => i.kind === "changes");
  assert.ok(changes);
  const files = ["b.txt", "c.py", "d.py"].map((path) => ({ path, oldText: "a\n", newText: "b\n" }));
  const tools = items.filter((i) => i.kind === "tool");
  assert.deepEqual(giveTurnDiffs(items, changes, files), [tools[1], tools[0]]);
  assert.deepEqual(tools.map((t) => t.kind === "tool" && t.step?.diffs), [[files[0]], [files[1], files[2]]]);
});

test("resumed, a turn's allowed edit steps get back their diffs from the turn's changes; a rejected one none", async () => {
  const { giveTurnDiffs } = await import("../../src/lib/history");
  const edit = (id: string, path: string, status: string) => ({ id, kind: "edit", title: `Edit ${path}`, status, locations: [{ path }] });
  const call = (id: string, tool: object, steps?: object[]) => ({ id, name: "call_tool", arguments: "{}", tool, ...(steps ? { steps } : {}) });
  const batch = edit("b", "a.py", "completed");
  const inner = [edit("b1", "/w/a.py", "completed"), edit("b2", "a.py", "completed")];
  const history = [
    { role: "user", content: "edit them", turn: 1 },
    { role: "assistant", content: "", tool_calls: [call("1", edit("1", "app.py", "completed"))] },
    { role: "tool", content: "replaced 1 occurrence in app.py at line 2:", name: "call_tool", tool_call_id: "1", tool: edit("1", "app.py", "completed") },
    { role: "assistant", content: "", tool_calls: [call("2", edit("2", "b.py", "failed"))] },
    { role: "tool", content: "Rejected by the user", name: "call_tool", tool_call_id: "2", tool: edit("2", "b.py", "failed") },
    { role: "assistant", content: "", tool_calls: [call("3", batch, inner)] },
    { role: "tool", content: "done", name: "call_tool", tool_call_id: "3", tool: batch, steps: inner },
    { role: "assistant", content: "Edited.", turnChanges: { turn: 1, files: 2 } },
  ];
  const items = historyItems(history, "s");
  const changes = items.find((i) => i.kind === "changes");
  assert.ok(changes);
  const files = [{ path: "app.py", oldText: "x = 1\ny = 'hi'\n", newText: "x = 1\ny = 'hello'\n" }, { path: "a.py", oldText: null, newText: "a\n" }];
  const given = giveTurnDiffs(items, changes, files, "/w");
  const tools = items.filter((i) => i.kind === "tool");
  assert.deepEqual(given, [tools[2], tools[0]]);
  assert.deepEqual(tools[0].kind === "tool" && tools[0].step?.diffs, [files[0]]);
  assert.equal(tools[1].kind === "tool" && tools[1].step?.diffs, undefined, "the rejected step shows no diff");
  // A file two steps of a batch edited: its change over the turn once, under the last of them.
  assert.deepEqual(tools[2].kind === "tool" && tools[2].steps?.map((s) => s.diffs), [undefined, [files[1]]]);
});

test("resumed, two steps of one file each get their own diffs back, not the turn's; a call without them the turn's", async () => {
  const { giveTurnDiffs, parseOwnDiffs } = await import("../../src/lib/history");
  const edit = (id: string, files: string[]) => ({ id, kind: "edit", title: `Edit ${files[0]}`, status: "completed", locations: [{ path: files[0] }], files });
  // The second also edited an open document (d.py), which no checkpoint saw: the turn's change of it goes there.
  const steps = [edit("1", ["a.py", "b.py"]), edit("2", ["a.py", "d.py"]), edit("3", ["c.py"])];
  const history = [
    { role: "user", content: "edit them", turn: 1 },
    ...steps.flatMap((tool) => [
      { role: "assistant", content: "", tool_calls: [{ id: tool.id, name: "call_tool", arguments: "{}", tool }] },
      { role: "tool", content: "ok", name: "call_tool", tool_call_id: tool.id, tool },
    ]),
    { role: "assistant", content: "Edited.", turnChanges: { turn: 1, files: 3 } },
  ];
  const items = historyItems(history, "s");
  const changes = items.find((i) => i.kind === "changes");
  assert.ok(changes);
  const diff = (path: string, oldText: string, newText: string) => ({ path, oldText, newText });
  const files = [diff("a.py", "a\n", "A!\n"), diff("b.py", "b\n", "B\n"), diff("c.py", "c\n", "C\n"), { ...diff("d.py", "d\n", "D\n"), inEditor: true }];
  // The first names b.py too (a crafted log): its own diffs have none, so it shows none (before: the turn's b.py).
  const own = parseOwnDiffs({ steps: { 1: [diff("a.py", "a\n", "A\n")], 2: [diff("a.py", "A\n", "A!\n"), { path: 7 }], 3: "x" } });
  assert.deepEqual(own, { 1: [diff("a.py", "a\n", "A\n")], 2: [diff("a.py", "A\n", "A!\n")] });
  giveTurnDiffs(items, changes, files, "", own);
  const tools = items.filter((i) => i.kind === "tool");
  assert.deepEqual(tools.map((t) => t.kind === "tool" && t.step?.diffs), [[own[1][0]], [own[2][0], diff("d.py", "d\n", "D\n")], [files[2]]]);
});
