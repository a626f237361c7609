// A file's content digest, for telling a file rewritten with its very bytes (`sed -i` that matched nothing, a
// formatter with nothing to do: a new mtime) from one really changed. No `vscode` import (unit-tested). The
// workspace is hostile data: only a regular file is read, never through a link, never blocking, to a bound.

import { createHash } from "node:crypto";
import { constants } from "node:fs";
import * as fs from "node:fs/promises";

/** A file past this many bytes is not read: its mtime alone says whether it changed. */
export const MAX_DIGEST = 2 * 1024 * 1024;

/** The bytes of the regular file at `file`, or undefined: not one (a link, a FIFO, gone) or over `max` bytes. */
async function readBounded(file: string, max: number): Promise<Buffer | undefined> {
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
    const chunks: Buffer[] = [];
    for (let length = 0; ; ) {
      const chunk = Buffer.alloc(64 * 1024);
      const { bytesRead } = await handle.read(chunk, 0, chunk.length, length);
      if (bytesRead === 0) return Buffer.concat(chunks);
      length += bytesRead;
      if (length > max) return undefined;
      chunks.push(chunk.subarray(0, bytesRead));
    }
  } catch {
    return undefined;
  } finally {
    await handle.close();
  }
}

const sha256 = (bytes: Buffer): string => createHash("sha256").update(bytes).digest("hex");

/** The sha256 (hex) of the regular file at `file`, or undefined: not one (a link, a FIFO, gone) or over `max` bytes. */
export async function fileDigest(file: string, max = MAX_DIGEST): Promise<string | undefined> {
  const bytes = await readBounded(file, max);
  return bytes && sha256(bytes);
}

/** Whether the regular file at `file` holds `text` itself, as UTF-8 (a BOM aside): saving an editor's `text` of it
 * writes the very bytes it has, over nothing. */
export async function holdsText(file: string, text: string): Promise<boolean> {
  const bytes = await readBounded(file, MAX_DIGEST);
  try {
    return bytes !== undefined && new TextDecoder("utf-8", { fatal: true }).decode(bytes) === text;
  } catch {
    return false; // not UTF-8: not this text as the editor saves it
  }
}

/** Whether `bytes` are text other than `text` (an editor's text of a file: no BOM, its own line ends), read as UTF-8,
 * or as UTF-16 when they hold a NUL (VS Code reads such a file as UTF-16 even without a BOM; as UTF-8 its NULs made
 * it other text). Bytes in another encoding cannot be told apart: false. */
export function holdsOtherText(bytes: Buffer, text: string): boolean {
  const lines = (s: string): string => s.replace(/\r\n?/g, "\n");
  // UTF-8 too: text with a NUL and an odd length is no UTF-16, and read as nothing it passed for the editor's text.
  const encodings = bytes.includes(0) ? ["utf-16le", "utf-16be", "utf-8"] : ["utf-8"];
  const read = encodings.flatMap((encoding) => {
    try {
      // The decoder drops a BOM.
      return [lines(new TextDecoder(encoding, { fatal: true }).decode(bytes))];
    } catch {
      return [];
    }
  });
  return read.length > 0 && !read.includes(lines(text));
}

/** `file`'s stamp (`stamp()`: its mtime as the caller reads it) with its digest, the digest undefined when the stamp
 * moved while the file was read: a write landing between the two would pair the old stamp with the new content's
 * digest, and that change would later pass as "a rewrite with the same bytes". With `text` (what an editor holds of
 * the file, clean), `otherText` says the file holds other text already: it changed after the editor read it. */
export async function stampedDigest<T>(
  stamp: () => Promise<T>,
  file: string,
  text?: string,
): Promise<{ stamp: T; digest?: string; otherText: boolean }> {
  const before = await stamp();
  const bytes = await readBounded(file, MAX_DIGEST);
  const otherText = bytes !== undefined && text !== undefined && holdsOtherText(bytes, text);
  return { stamp: before, digest: bytes && (await stamp()) === before ? sha256(bytes) : undefined, otherText };
}
