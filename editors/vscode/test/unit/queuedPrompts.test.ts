import assert from "node:assert/strict";
import { test } from "node:test";
import type { Daemon } from "../../src/daemon";
import { ChatModel } from "../../src/lib/chatModel";
import { QueueMemory, QueuedPrompts, SavedQueue, savedQueues } from "../../src/queuedPrompts";
import type { SessionHost } from "../../src/sessionHost";

// The daemon's answers come when the test says: each request waits until `answer(method, result)`.
class Answers {
  private readonly waiting: { method: string; resolve: (result: unknown) => void }[] = [];
  /** Every request sent, in order, with its params. */
  readonly sentLog: { method: string; params: unknown }[] = [];

  request(method: string, params?: unknown): Promise<unknown> {
    this.sentLog.push({ method, params });
    return new Promise((resolve) => this.waiting.push({ method, resolve }));
  }

  /** Answer the oldest request of `method` still waiting. */
  answer(method: string, result: unknown): void {
    const index = this.waiting.findIndex((w) => w.method === method);
    assert.ok(index >= 0, `no ${method} request waits`);
    this.waiting.splice(index, 1)[0].resolve(result);
  }

  /** Wait until a request of `method` was sent (fails when none is, all else done: the code never sends it). */
  async sent(method: string): Promise<void> {
    for (let turn = 0; !this.waiting.some((w) => w.method === method); turn++) {
      assert.ok(turn < 1000, `no ${method} request was sent`);
      await new Promise((resolve) => setImmediate(resolve));
    }
  }
}

function queue(memory?: QueueMemory): { prompts: QueuedPrompts; answers: Answers; model: ChatModel } {
  const answers = new Answers();
  const model = new ChatModel();
  const quiet = { info: () => undefined, warn: () => undefined };
  const host = {
    daemon: { request: (method: string, params?: unknown) => answers.request(method, params) } as unknown as Daemon,
    log: quiet,
    modelFor: () => model,
    changedIn: () => undefined,
  } as unknown as SessionHost;
  return { prompts: new QueuedPrompts(host, memory, () => undefined), answers, model };
}

const HELD = { running: false, queuedPrompts: ["Then summarise it."], queueHeld: true };
const notes = (model: ChatModel): unknown[] => model.items.flatMap((item) => (item.kind === "user" ? [item.note] : []));
const heldNotices = (model: ChatModel): number =>
  model.items.filter((item) => item.kind === "notice" && item.text.startsWith("Stop held the queue")).length;

test("after Stop the daemon's queue state marks the queue held, drawn after the turn's end", async () => {
  const { prompts, answers, model } = queue();
  model.apply({ session: "s", seq: 1, role: "turn", content: "start" });
  model.addUser("Then summarise it.", { note: "queued" });
  model.apply({ session: "s", seq: 2, role: "assistant", content: "Once upon" });
  model.apply({ session: "s", seq: 3, role: "turn", content: "interrupted" });
  const ended = prompts.turnEnded("s", "interrupted");
  answers.answer("ollie/state", HELD);
  await ended;
  assert.ok(prompts.holds("s"));
  assert.deepEqual(notes(model), ["held"]);
  // It was queued above the reply and its "Turn interrupted": held at the turn's end, it goes after them.
  assert.deepEqual(model.items.map((item) => item.kind), ["assistant", "turnEnd", "user", "notice"]);
  assert.equal(heldNotices(model), 1);
  // One prompt is "it" (it said "They run ... drops them").
  const said = model.items.flatMap((item) => (item.kind === "notice" ? [item.text] : []));
  assert.deepEqual(said, ["Stop held the queue: 1 queued prompt waits. Enter on an empty prompt sends it; it runs before your next prompt; /queued clear drops it."]);
});

test("text injected that no tool result took shows as the prompt it became, not injected and then sent again", async () => {
  const { prompts, model } = queue();
  model.apply({ session: "s", seq: 1, role: "turn", content: "start" });
  model.addUser("Use spaces.", { note: "injected" });
  prompts.queued("s", "Use spaces.", [], true);
  // A command typed meanwhile ends, not the turn: the text still waits for a tool result.
  void prompts.turnEnded("s", "command");
  assert.deepEqual(notes(model), ["injected"]);
  model.apply({ session: "s", seq: 2, role: "assistant", content: "A short story." });
  model.apply({ session: "s", seq: 3, role: "turn", content: "end" });
  await prompts.turnEnded("s", "end");
  assert.deepEqual(notes(model), ["queued"]);
  // The daemon runs it as a turn of its own: the one prompt moves on, shown as sent.
  model.apply({ session: "s", seq: 4, role: "user", content: "Use spaces." });
  prompts.started("s", "Use spaces.");
  assert.deepEqual(model.items.map((item) => item.kind), ["assistant", "turnEnd", "user"]);
  assert.deepEqual(notes(model), [undefined]);
});

test("several injects no tool result took run as one prompt, shown once with them all", async () => {
  const { prompts, model } = queue();
  model.apply({ session: "s", seq: 1, role: "turn", content: "start" });
  for (const text of ["Use spaces.", "And short lines."]) {
    model.addUser(text, { note: "injected" });
    prompts.queued("s", text, [], true);
  }
  model.apply({ session: "s", seq: 2, role: "turn", content: "end" });
  await prompts.turnEnded("s", "end");
  model.apply({ session: "s", seq: 3, role: "user", content: "Use spaces.\nAnd short lines." });
  prompts.started("s", "Use spaces.\nAnd short lines.");
  const users = model.items.flatMap((item) => (item.kind === "user" ? [[item.text, item.note]] : []));
  assert.deepEqual(users, [["Use spaces.\nAnd short lines.", undefined]]);
});

test("two injects a Stop held as one joined prompt both stay held, and remembered, after a command typed meanwhile", async () => {
  const memory = windowState();
  const { prompts, answers, model } = queue(memory);
  model.apply({ session: "s", seq: 1, role: "turn", content: "start" });
  for (const text of ["Use spaces.", "And short lines."]) {
    model.addUser(text, { note: "injected" });
    prompts.queued("s", text, [], true);
  }
  model.apply({ session: "s", seq: 2, role: "turn", content: "interrupted" });
  // The daemon queued what no tool result took as one prompt, and holds it.
  const joined = { running: false, queuedPrompts: ["Use spaces.\nAnd short lines."], queueHeld: true };
  const stopped = prompts.turnEnded("s", "interrupted");
  answers.answer("ollie/state", joined);
  await stopped;
  const commanded = prompts.turnEnded("s", "command");
  answers.answer("ollie/state", joined);
  await commanded;
  assert.deepEqual(notes(model), ["held", "held"]);
  assert.deepEqual(memory.saved?.[0].prompts.map((p) => p.text), ["Use spaces.", "And short lines."]);
});

test("a queue state answered after a restart cleared the queue marks nothing held", async () => {
  const { prompts, answers, model } = queue();
  model.addUser("Then summarise it.", { note: "queued" });
  // Stop, then Restart before the old daemon's answer came (its stop timed out, its connection still open).
  const ended = prompts.turnEnded("s", "interrupted");
  prompts.clear();
  answers.answer("ollie/state", HELD);
  await ended;
  assert.equal(prompts.holds("s"), false);
  assert.deepEqual(notes(model), ["queued"]);
  assert.equal(heldNotices(model), 0);
});

test("a queue state asked before the user's next prompt does not hold again the queue that prompt released", async () => {
  const { prompts, answers, model } = queue();
  model.addUser("Then summarise it.", { note: "queued" });
  const stopped = prompts.turnEnded("s", "interrupted");
  answers.answer("ollie/state", HELD);
  await stopped;
  // A command's turn ends (asked again), then the next prompt goes behind the held one before that answer came.
  const commanded = prompts.turnEnded("s", "command");
  const behind = prompts.sendBehind("s", "And list the files.", []);
  await answers.sent("ollie/queue");
  answers.answer("ollie/queue", { depth: 2 });
  await behind;
  await answers.sent("ollie/queue/run");
  assert.equal(prompts.holds("s"), false);
  answers.answer("ollie/state", { running: true, queuedPrompts: ["Then summarise it.", "And list the files."], queueHeld: true });
  await commanded;
  assert.equal(prompts.holds("s"), false);
  assert.deepEqual(notes(model), ["queued", "queued"]);
  assert.equal(heldNotices(model), 1);
});

// The window's state, kept across the reloads and crashes of a test.
function windowState(): QueueMemory & { saved: readonly SavedQueue[] | undefined } {
  const state = {
    saved: undefined as readonly SavedQueue[] | undefined,
    get: () => state.saved,
    set: (value: readonly SavedQueue[] | undefined) => void (state.saved = value),
  };
  return state;
}

const prompt = (text: string) => ({ text, contexts: [] });

// A daemon that showed the last one's sessions again started: re-queueing `session`'s prompts, each accepted.
async function restored(prompts: QueuedPrompts, answers: Answers, session: string, count: number, injects = 0): Promise<void> {
  const restoring = prompts.restore(session);
  for (let i = 0; i < count; i++) {
    await answers.sent("ollie/queue");
    answers.answer("ollie/queue", { depth: i + 1 });
  }
  for (let i = 0; i < injects; i++) {
    await answers.sent("ollie/inject");
    answers.answer("ollie/inject", {});
  }
  await restoring;
}

test("prompts queued in two sessions both come back after a reload, each when its session is shown", async () => {
  const memory = windowState();
  const before = queue(memory).prompts;
  before.queued("a", "Then summarise it.", []);
  before.queued("b", "And list the files.", []);
  // The window reloads: the next extension host starts a daemon that shows b again; a is switched to later.
  const { prompts, answers, model } = queue(memory);
  prompts.clear();
  prompts.carry();
  await restored(prompts, answers, "b", 1);
  assert.ok(prompts.holds("b"));
  await restored(prompts, answers, "a", 1);
  assert.ok(prompts.holds("a"));
  assert.deepEqual(model.items.flatMap((item) => (item.kind === "user" ? [[item.text, item.note]] : [])), [
    ["And list the files.", "held"],
    ["Then summarise it.", "held"],
  ]);
  // Shown again, a's prompts are not queued twice.
  await prompts.restore("a");
  assert.deepEqual(memory.saved?.map((s) => s.session), ["b", "a"]);
});

test("a crash while another session is shown keeps the queue of the session whose turn ran", async () => {
  const memory = windowState();
  const { prompts, answers, model } = queue(memory);
  // a's turn runs with a prompt queued behind it; the user looks at b (or types into the fresh chat) when the
  // daemon crashes, and the restarted one shows b first.
  prompts.queued("a", "Then summarise it.", []);
  prompts.clear();
  prompts.carry();
  await prompts.restore("b");
  assert.equal(prompts.holds("b"), false);
  // Another crash before a was shown: still saved.
  prompts.clear();
  prompts.carry();
  await prompts.restore("fresh");
  await restored(prompts, answers, "a", 1);
  assert.ok(prompts.holds("a"));
  assert.deepEqual(notes(model), ["held"]);
  // Once it ran, the window forgets it.
  prompts.started("a", "Then summarise it.");
  assert.equal(memory.saved, undefined);
});

test("/queued clear forgets that session's saved prompts only", async () => {
  const memory = windowState();
  const { prompts, answers } = queue(memory);
  prompts.queued("a", "Then summarise it.", []);
  prompts.queued("b", "And list the files.", []);
  const ended = prompts.turnEnded("a", "command");
  answers.answer("ollie/state", { running: false, queuedPrompts: [], queueHeld: false });
  await ended;
  assert.deepEqual(memory.saved?.map((s) => s.session), ["b"]);
});

test("a window remembers the queues of a handful of sessions, the latest", () => {
  const memory = windowState();
  const { prompts } = queue(memory);
  for (let i = 0; i < 20; i++) prompts.queued(`s${i}`, "Then summarise it.", []);
  assert.deepEqual(memory.saved?.map((s) => s.session), ["s12", "s13", "s14", "s15", "s16", "s17", "s18", "s19"]);
});

test("the saved queues read back from the window's state take the single queue an older version saved", () => {
  assert.deepEqual(savedQueues({ session: "s", prompts: [prompt("Then summarise it.")] }), [{ session: "s", prompts: [prompt("Then summarise it.")] }]);
  assert.deepEqual(savedQueues([{ session: "s", prompts: [{ text: 1 }] }, { prompts: [] }, null]), []);
  assert.deepEqual(savedQueues(undefined), []);
});

test("Restart forgets every session's saved prompts (it starts fresh), handing them back for the input, oldest first", async () => {
  const memory = windowState();
  const before = queue(memory).prompts;
  before.queued("a", "Then summarise it.", []);
  before.queued("b", "And list the files.", []);
  const { prompts, model } = queue(memory);
  prompts.clear();
  assert.deepEqual(prompts.forget().map((p) => p.text), ["Then summarise it.", "And list the files."]);
  assert.equal(memory.saved, undefined);
  await prompts.restore("a");
  // That session resumed later, and its daemon restarted after a crash: nothing comes back held.
  prompts.clear();
  prompts.carry();
  await prompts.restore("a");
  await prompts.restore("b");
  assert.equal(prompts.holds("a"), false);
  assert.deepEqual(model.items, []);
});

test("injected text is kept with the queued prompts until a tool result takes it, and then only what came after", () => {
  const memory = windowState();
  const { prompts } = queue(memory);
  const file = { uri: "file:///w/notes.txt" };
  prompts.queued("s", "Then summarise it.", []);
  prompts.queued("s", "Use tabs.", [file], true);
  assert.deepEqual(memory.saved?.[0].prompts, [prompt("Then summarise it."), { text: "Use tabs.", contexts: [file], injected: true }]);
  prompts.taken("s");
  prompts.queued("s", "And spaces.", [], true);
  // Restart hands back what no turn took, with the queued prompt, in order.
  assert.deepEqual(prompts.forget().map((p) => p.text), ["Then summarise it.", "And spaces."]);
});

test("injected text the turn ended without taking runs as the daemon's queued prompt, joined: then it is forgotten", () => {
  const memory = windowState();
  const { prompts } = queue(memory);
  prompts.queued("s", "Use tabs.", [], true);
  prompts.queued("s", "Then summarise it.", []);
  prompts.queued("s", "And spaces.", [], true);
  prompts.started("s", "Use tabs.\nAnd spaces.");
  assert.deepEqual(memory.saved?.[0].prompts, [prompt("Then summarise it.")]);
  prompts.started("s", "Then summarise it.");
  assert.equal(memory.saved, undefined);
});

test("injected text saved across a reload comes back as a held queued prompt, which no tool result drops", async () => {
  const memory = windowState();
  queue(memory).prompts.queued("s", "Use tabs.", [], true);
  const { prompts, answers, model } = queue(memory);
  prompts.clear();
  prompts.carry();
  await restored(prompts, answers, "s", 0, 1);
  assert.ok(prompts.holds("s"));
  assert.deepEqual(notes(model), ["held"]);
  prompts.taken("s");
  assert.deepEqual(memory.saved?.[0].prompts, [{ ...prompt("Use tabs."), parts: [prompt("Use tabs.")] }]);
});

test("two injects not taken when the window reloaded come back as one held prompt, after the queued one, as the daemon runs them", async () => {
  const memory = windowState();
  const before = queue(memory).prompts;
  before.queued("s", "Use tabs.", [], true);
  before.queued("s", "Then summarise it.", []);
  before.queued("s", "And short lines.", [], true);
  const { prompts, answers, model } = queue(memory);
  prompts.clear();
  prompts.carry();
  await restored(prompts, answers, "s", 1, 2);
  assert.deepEqual(model.items.flatMap((item) => (item.kind === "user" ? [[item.text, item.note]] : [])), [
    ["Then summarise it.", "held"],
    ["Use tabs.\nAnd short lines.", "held"],
  ]);
  assert.ok(model.items.some((item) => item.kind === "notice" && item.text.includes("2 queued prompts wait")));
});

test("injects with their own files not taken when the window reloaded go back as injects, each file before its text, as the daemon joined them", async () => {
  const memory = windowState();
  const before = queue(memory).prompts;
  const [a, b] = [{ uri: "file:///w/a.txt" }, { uri: "file:///w/b.txt" }];
  before.queued("s", "Use tabs.", [a], true);
  before.queued("s", "And wide ones.", [b], true);
  const { prompts, answers, model } = queue(memory);
  prompts.clear();
  prompts.carry();
  await restored(prompts, answers, "s", 0, 2);
  // Queued as one prompt with both files, the daemon put both blocks before both lines.
  assert.deepEqual(answers.sentLog, [
    { method: "ollie/inject", params: { session: "s", text: "Use tabs.", context: a } },
    { method: "ollie/inject", params: { session: "s", text: "And wide ones.", context: b } },
  ]);
  assert.deepEqual(model.items.flatMap((item) => (item.kind === "user" ? [[item.text, item.note, item.contextLabels]] : [])), [
    ["Use tabs.\nAnd wide ones.", "held", ["a.txt", "b.txt"]],
  ]);
  // It runs as the daemon joined it: one prompt, shown once, and no longer waiting.
  const block = (name: string) => `<editor-context>\nFile: ${name}\n</editor-context>\n\n`;
  const content = `${block("a.txt")}Use tabs.\n${block("b.txt")}And wide ones.`;
  model.apply({ session: "s", seq: 1, role: "turn", content: "start" });
  model.apply({ session: "s", seq: 2, role: "user", content });
  prompts.started("s", content);
  assert.deepEqual(model.items.flatMap((item) => (item.kind === "user" ? [[item.text, item.note]] : [])), [["Use tabs.\nAnd wide ones.", undefined]]);
  assert.equal(memory.saved, undefined);
});

test("a prompt another window queued comes back with the context items and images the daemon gives back", async () => {
  const { prompts, answers } = queue();
  const lines = { uri: "file:///w/calc.py", range: { start: { line: 2, character: 0 }, end: { line: 5, character: 0 } } };
  const back = prompts.takeBack("s");
  await answers.sent("ollie/popQueue");
  const text = "<editor-context>\nFile: calc.py (python)\nShowing lines 3-5:\n```python\nx\n```\n</editor-context>\n\nExplain it.";
  answers.answer("ollie/popQueue", { text, images: [{ data: "AAAA", mimeType: "image/png" }], context: [lines] });
  // Bug: its chips were lost (`contexts: []`): sent again, the prompt no longer said which lines it meant.
  assert.deepEqual(await back, { text: "Explain it.", contexts: [lines], images: [{ name: "image 1", data: "data:image/png;base64,AAAA" }] });
});
