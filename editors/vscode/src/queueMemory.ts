// The window's queued prompts kept across a reload (a QueueMemory): the prompts in VS Code's workspaceState, each pasted
// image's bytes in a file of the extension's storage, written once. VS Code rewrites a state value whole at each update
// (a save at every queued prompt and every turn's start): kept inline, pasted screenshots (up to 40 MiB a prompt) made
// each save as large. The daemon cannot keep them: a reload ends it, its queue with it.

import { randomUUID } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { QueueMemory, SavedPrompt, SavedQueue, savedQueues } from "./queuedPrompts";
import { ImageSource, MAX_IMAGE_DATA } from "./lib/webviewMessages";

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

/** A saved image's data read back: a plain file of at most one image's size, never through a link, never waiting on a
 * FIFO (the storage is another program's to write too: a synchronous read of one held the extension host for ever). */
function readStored(file: string): string | undefined {
  let fd: number | undefined;
  try {
    fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK);
    const stat = fs.fstatSync(fd);
    return stat.isFile() && stat.size <= MAX_IMAGE_DATA ? fs.readFileSync(fd, "utf8") : undefined;
  } catch {
    return undefined;
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}

/** Remove the files of `dir` not `kept`: only in a folder that is no link (a linked one's sweep removed the files where
 * it points), only files (a directory there made every save throw). */
function sweep(dir: string, kept: Set<string>): void {
  try {
    if (!fs.lstatSync(dir).isDirectory()) return;
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) if (!entry.isDirectory() && !kept.has(entry.name)) fs.rmSync(path.join(dir, entry.name), { force: true });
  } catch {
    // gone, or not ours to list: nothing to sweep
  }
}

/** The queue memory of a window whose state is `state`, its images' files in `dir` (none: kept inline). */
export function queueMemory(state: StateStore, dir: string | undefined): QueueMemory {
  const files = new Map<string, string>(); // a pasted image's data: URL -> its file
  const withImages = (queues: readonly SavedQueue[], image: (i: StoredImage) => StoredImage): SavedQueue[] =>
    queues.map(({ session, prompts }) => ({ session, prompts: prompts.map((p): SavedPrompt => (p.images ? { ...p, images: p.images.map(image) as ImageSource[] } : p)) }));
  // Read back once: a file gone (its storage cleared) leaves the image unread, and the daemon refuses the prompt.
  let saved = withImages(savedQueues(state.get(KEY)), (i) => {
    const file = "file" in i ? i.file : undefined;
    if (!dir || typeof file !== "string" || !FILE.test(file)) return i;
    const data = readStored(path.join(dir, file));
    if (data === undefined) return i;
    files.set(data, file);
    return { name: i.name, data };
  });
  const stored = (i: StoredImage): StoredImage => {
    if (!dir || !("data" in i)) return i;
    let file = files.get(i.data);
    if (file === undefined) {
      file = randomUUID();
      try {
        fs.mkdirSync(dir, { recursive: true });
        if (!fs.lstatSync(dir).isDirectory()) return i; // a link: kept inline, nothing written where it points
        fs.writeFileSync(path.join(dir, file), i.data, { flag: "wx" }); // a new file, never one planted there
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
      if (dir) sweep(dir, kept);
    },
  };
}
