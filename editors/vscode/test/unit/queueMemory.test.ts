import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { test } from "node:test";
import { MAX_IMAGE_DATA } from "../../src/lib/webviewMessages";
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

test("hostile storage: a FIFO, a directory, a huge file or a link where an image's file is, or a linked folder, is never read, followed nor swept", () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "ollie-queue-"));
  try {
    const dir = path.join(root, "queued-images");
    const elsewhere = path.join(root, "elsewhere");
    fs.mkdirSync(dir);
    fs.mkdirSync(elsewhere);
    fs.writeFileSync(path.join(elsewhere, "notes.txt"), "the user's");
    const names = ["0", "1", "2", "3"].map((n) => `${n.repeat(8)}-0000-0000-0000-000000000000`);
    execFileSync("mkfifo", [path.join(dir, names[0])]);
    fs.mkdirSync(path.join(dir, names[1]));
    fs.writeFileSync(path.join(dir, names[2]), "A".repeat(MAX_IMAGE_DATA + 1));
    fs.symlinkSync(path.join(elsewhere, "notes.txt"), path.join(dir, names[3]));
    const state = new State();
    state.update("ollie.queued", [{ session: "s", prompts: [{ text: "t", contexts: [], images: names.map((file) => ({ name: "p", file })) }] }]);
    // Bug: the FIFO's read waited for a writer, the extension host held for ever as the window opened.
    const memory = queueMemory(state, dir);
    const images = memory.get()?.[0]?.prompts[0]?.images ?? [];
    assert.ok(images.length === 4 && images.every((i) => !("data" in i)), "none of them is read as an image");
    // Bug: the directory's removal threw: no queue was saved again. The files go, the directory stays.
    memory.set([]);
    assert.equal(state.get("ollie.queued"), undefined);
    assert.deepEqual(fs.readdirSync(dir), [names[1]]);
    // Bug: a sweep of a folder that is a link removed the files where it points.
    fs.rmSync(dir, { recursive: true });
    fs.symlinkSync(elsewhere, dir);
    queueMemory(state, dir).set([{ session: "s", prompts: [{ text: "t", contexts: [], images: [{ name: "p", data: PASTED }] }] }]);
    queueMemory(state, dir).set([]);
    assert.deepEqual(fs.readdirSync(elsewhere), ["notes.txt"]);
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
});
