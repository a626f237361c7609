// Whether a file the model named is really inside the workspace: symlinks resolved first, so a
// workspace link to /etc or ~/.ssh does not pass for a workspace file. No `vscode` import (unit-tested).

import * as fs from "node:fs/promises";
import * as path from "node:path";

/** Resolves symlinks of an existing path (fs.realpath's shape). */
export type Realpath = (file: string) => Promise<string>;

// The real path of `file`, or for one that does not exist yet (Apply creates it) the real path of
// its nearest existing ancestor with the rest appended.
async function realOrNearest(file: string, realpath: Realpath): Promise<string> {
  const rest: string[] = [];
  let current = path.resolve(file);
  for (;;) {
    try {
      return path.join(await realpath(current), ...rest.reverse());
    } catch {
      const parent = path.dirname(current);
      if (parent === current) return path.resolve(file);
      rest.push(path.basename(current));
      current = parent;
    }
  }
}

/** Whether path `child` lies inside `root` (or is it), as written: no symlinks resolved. */
export function within(child: string, root: string): boolean {
  const relative = path.relative(root, child);
  return relative === "" || (relative !== ".." && !relative.startsWith(`..${path.sep}`) && !path.isAbsolute(relative));
}

/** `file` (absolute) relative to the first workspace folder holding it, symlinks resolved on both; undefined outside. */
export async function workspaceRelative(file: string, folders: readonly string[], realpath: Realpath = fs.realpath): Promise<string | undefined> {
  const real = await realOrNearest(file, realpath);
  for (const folder of folders) {
    const root = await realOrNearest(folder, realpath);
    if (within(real, root)) return path.relative(root, real);
  }
  return undefined;
}

/** Whether `file` (absolute), symlinks resolved, lies inside one of the workspace `folders` (also resolved). */
export async function isInsideWorkspace(file: string, folders: readonly string[], realpath: Realpath = fs.realpath): Promise<boolean> {
  return (await workspaceRelative(file, folders, realpath)) !== undefined;
}
