import assert from "node:assert/strict";
import { test } from "node:test";
import type { Daemon } from "../../src/daemon";
import { ChatModel } from "../../src/lib/chatModel";
import { QueueMemory, QueuedPrompts, SavedPrompt } from "../../src/queuedPrompts";
import type { SessionHost } from "../../src/sessionHost";

// The daemon's answers come when the test says: each request waits until `answer(method, result)`.
class Answers {
  private readonly waiting: { method: string; resolve: (result: unknown) => void }[] = [];

  request(method: string): Promise<unknown> {
    return new Promise((resolve) => this.waiting.push({ method, resolve }));
  }

  /** Answer the oldest request of `method` still waiting. */
  answer(method: string, result: unknown): void {
    const index = this.waiting.findIndex((w) => w.method === method);
    assert.ok(index >= 0, `no ${method} request waits`);
    this.waiting.splice(index, 1)[0].resolve(result);
  }

  /** Wait until a request of `method` was sent. */
  async sent(method: string): Promise<void> {
    while (!this.waiting.some((w) => w.method === method)) await new Promise((resolve) => setImmediate(resolve));
  }
}

function queue(memory?: QueueMemory): { prompts: QueuedPrompts; answers: Answers; model: ChatModel } {
  const answers = new Answers();
  const model = new ChatModel();
  const quiet = { info: () => undefined, warn: () => undefined };
  const host = {
    daemon: { request: (method: string) => answers.request(method) } as unknown as Daemon,
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

test("after Stop the daemon's queue state marks the queue held", async () => {
  const { prompts, answers, model } = queue();
  model.addUser("Then summarise it.", { note: "queued" });
  const ended = prompts.turnEnded("s", "interrupted");
  answers.answer("ollie/state", HELD);
  await ended;
  assert.ok(prompts.holds("s"));
  assert.deepEqual(notes(model), ["held"]);
  assert.equal(heldNotices(model), 1);
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

test("a fresh daemon showing another session forgets the prompts saved for the one before (a Restart starts fresh)", async () => {
  let saved: { session: string; prompts: SavedPrompt[] } | undefined = { session: "s", prompts: [{ text: "Then summarise it.", contexts: [] }] };
  const memory: QueueMemory = { get: () => saved, set: (value) => void (saved = value) };
  const { prompts, model } = queue(memory);
  await prompts.restore("fresh");
  assert.equal(saved, undefined);
  // That session resumed later, and its daemon restarted after a crash: nothing comes back held.
  await prompts.restore("s");
  assert.equal(prompts.holds("s"), false);
  assert.deepEqual(model.items, []);
});
