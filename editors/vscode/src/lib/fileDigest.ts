// A file's content digest, for telling a file rewritten with its very bytes (`sed -i` that matched nothing, a
// formatter with nothing to do: a new mtime) from one really changed. No `vscode` import (unit-tested). The
// workspace is hostile data: only a regular file is read, never through a link, never blocking, to a bound.

import { createHash } from "node:crypto";
import { constants } from "node:fs";
import * as fs from "node:fs/promises";

/** A file past this many bytes is not read: its mtime alone says whether it changed. */
export const MAX_DIGEST = 2 * 1024 * 1024;

/** The sha256 (hex) of the regular file at `file`, or undefined: not one (a link, a FIFO, gone) or over `max` bytes. */
export async function fileDigest(file: string, max = MAX_DIGEST): Promise<string | undefined> {
  let handle: fs.FileHandle;
  try {
    // O_NONBLOCK: a FIFO swapped in opens at once instead of waiting for a writer; O_NOFOLLOW: never a link.
    handle = await fs.open(file, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW);
  } catch {
    return undefined;
  }
  try {
    if (!(await handle.stat()).isFile()) return undefined;
    // Its size is not trusted: read to the end, or past the bound.
    const hash = createHash("sha256");
    const chunk = Buffer.alloc(64 * 1024);
    for (let length = 0; ; ) {
      const { bytesRead } = await handle.read(chunk, 0, chunk.length, length);
      if (bytesRead === 0) return hash.digest("hex");
      length += bytesRead;
      if (length > max) return undefined;
      hash.update(chunk.subarray(0, bytesRead));
    }
  } catch {
    return undefined;
  } finally {
    await handle.close();
  }
}

/** `file`'s stamp (`stamp()`: its mtime as the caller reads it) with its digest, the digest undefined when the stamp
 * moved while the file was read: a write landing between the two would pair the old stamp with the new content's
 * digest, and that change would later pass as "a rewrite with the same bytes". */
export async function stampedDigest<T>(stamp: () => Promise<T>, file: string): Promise<{ stamp: T; digest?: string }> {
  const before = await stamp();
  const digest = await fileDigest(file);
  return { stamp: before, digest: (await stamp()) === before ? digest : undefined };
}
