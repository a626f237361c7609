// The window's queued prompts kept across a reload (a QueueMemory): the prompts in VS Code's workspaceState, each pasted
// image's bytes in a file of the extension's storage, written once. VS Code rewrites a state value whole at each update
// (a save at every queued prompt and every turn's start): kept inline, pasted screenshots (up to 40 MiB a prompt) made
// each save as large. The daemon cannot keep them: a reload ends it, its queue with it.

import { randomUUID } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { QueueMemory, SavedPrompt, SavedQueue, savedQueues } from "./queuedPrompts";
import { ImageSource } from "./lib/webviewMessages";

/** Where the prompts are kept (VS Code's workspaceState). */
export interface StateStore {
  get(key: string): unknown;
  update(key: string, value: unknown): unknown;
}

const KEY = "ollie.queued";
// A name this module gave: the state never makes the path of another file.
const FILE = /^[0-9a-f-]{36}$/;

/** An image as the state keeps it: a pasted one by its file. */
type StoredImage = ImageSource | { name: string; file: string };

/** The queue memory of a window whose state is `state`, its images' files in `dir` (none: kept inline). */
export function queueMemory(state: StateStore, dir: string | undefined): QueueMemory {
  const files = new Map<string, string>(); // a pasted image's data: URL -> its file
  const withImages = (queues: readonly SavedQueue[], image: (i: StoredImage) => StoredImage): SavedQueue[] =>
    queues.map(({ session, prompts }) => ({ session, prompts: prompts.map((p): SavedPrompt => (p.images ? { ...p, images: p.images.map(image) as ImageSource[] } : p)) }));
  // Read back once: a file gone (its storage cleared) leaves the image unread, and the daemon refuses the prompt.
  let saved = withImages(savedQueues(state.get(KEY)), (i) => {
    const file = "file" in i ? i.file : undefined;
    if (!dir || typeof file !== "string" || !FILE.test(file)) return i;
    try {
      const data = fs.readFileSync(path.join(dir, file), "utf8");
      files.set(data, file);
      return { name: i.name, data };
    } catch {
      return i;
    }
  });
  const stored = (i: StoredImage): StoredImage => {
    if (!dir || !("data" in i)) return i;
    let file = files.get(i.data);
    if (file === undefined) {
      file = randomUUID();
      try {
        fs.mkdirSync(dir, { recursive: true });
        fs.writeFileSync(path.join(dir, file), i.data);
      } catch {
        return i; // kept inline, as before
      }
      files.set(i.data, file);
    }
    return { name: i.name, file };
  };
  return {
    get: () => saved,
    set(queues) {
      saved = [...(queues ?? [])];
      const slim = withImages(saved, stored);
      void state.update(KEY, slim.length ? slim : undefined);
      // The files of images no prompt waits with any more go.
      const kept = new Set(slim.flatMap((q) => q.prompts.flatMap((p) => (p.images ?? []).map((i: StoredImage) => ("file" in i ? i.file : "")))));
      for (const [data, file] of files) if (!kept.has(file)) files.delete(data);
      if (dir && fs.existsSync(dir)) for (const file of fs.readdirSync(dir)) if (!kept.has(file)) fs.rmSync(path.join(dir, file), { force: true });
    },
  };
}
