import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { test } from "node:test";
import { queueMemory, StateStore } from "../../src/queueMemory";

// The window's workspaceState as VS Code keeps it: each value as JSON, rewritten whole at each update.
class State implements StateStore {
  readonly written: string[] = [];
  private readonly values = new Map<string, string>();
  get(key: string): unknown {
    const value = this.values.get(key);
    return value === undefined ? undefined : JSON.parse(value);
  }
  update(key: string, value: unknown): void {
    const json = JSON.stringify(value);
    this.written.push(json ?? "");
    if (json === undefined) this.values.delete(key);
    else this.values.set(key, json);
  }
}

const PASTED = `data:image/png;base64,${"iVBORw0KGgo".repeat(100_000)}`;

test("a queued prompt's pasted image is kept in a file, not in the window's state, and comes back after a reload", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ollie-queue-"));
  try {
    const state = new State();
    const memory = queueMemory(state, dir);
    const picture = { text: "what is it?", contexts: [], images: [{ name: "pasted image 1", data: PASTED }, { name: "a.png", path: "a.png" }] };
    memory.set([{ session: "s", prompts: [picture] }]);
    memory.set([{ session: "s", prompts: [picture, { text: "and then", contexts: [] }] }]);
    // Bug: each save wrote the image's bytes whole into the state (megabytes at every queued prompt and turn start).
    assert.ok(state.written.every((w) => w.length < 1000), `the state holds ${Math.max(...state.written.map((w) => w.length))} characters`);
    assert.equal(fs.readdirSync(dir).length, 1);
    // A reload: a new window reads the state and the files back.
    assert.deepEqual(queueMemory(state, dir).get(), [{ session: "s", prompts: [picture, { text: "and then", contexts: [] }] }]);
    memory.set([{ session: "s", prompts: [{ text: "and then", contexts: [] }] }]);
    assert.deepEqual(fs.readdirSync(dir), []); // the prompt ran: its image's file goes
    // A state an earlier build wrote (the image inline) reads as it was.
    state.update("ollie.queued", [{ session: "s", prompts: [picture] }]);
    assert.deepEqual(queueMemory(state, dir).get(), [{ session: "s", prompts: [picture] }]);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
