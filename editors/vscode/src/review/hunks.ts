// The review's pure logic: `ollie/changes` results parsed, where each hunk sits in the new text,
// the `ollie/review/undo` params of a hunk, and a refused undo said plainly.

import { isObject, textOrNull } from "../lib/json";

/** One hunk of a changed file (unified-diff numbering, no context lines). */
export interface Hunk {
  oldStart: number;
  oldLines: number;
  newStart: number;
  newLines: number;
  lines: string[];
}

/** One file of `ollie/changes`. */
export interface FileChange {
  path: string;
  status: string;
  binary: boolean;
  oldText: string | null;
  newText: string | null;
  /** Lines added and removed (counted by the daemon: a text too long to diff has no hunks but has counts). */
  added: number;
  removed: number;
  hunks: Hunk[];
  /** The change went to a document open in the editor (unsaved), not to the disk. */
  inEditor: boolean;
}

/** An `ollie/changes` result: its first files (100, 4 MiB of text), `more` counting those it left out. */
export interface TurnChanges {
  turn: number | null;
  files: FileChange[];
  more: number;
  /** With `changed: true`: the turn the daemon looked back from to the last one that changed files. */
  last?: number;
}

/** `ollie/review/undo` params. */
export interface UndoParams {
  session?: string;
  path: string;
  turn?: number;
  hunk?: number;
}

function count(value: unknown): number {
  return typeof value === "number" && Number.isInteger(value) && value >= 0 ? value : 0;
}

function parseHunk(raw: unknown): Hunk | undefined {
  if (!isObject(raw)) return undefined;
  const lines = Array.isArray(raw.lines) ? raw.lines.filter((l): l is string => typeof l === "string") : [];
  return { oldStart: count(raw.oldStart), oldLines: count(raw.oldLines), newStart: count(raw.newStart), newLines: count(raw.newLines), lines };
}

/** An `ollie/changes` result; malformed files and hunks are dropped. */
export function parseChanges(raw: unknown): TurnChanges {
  const turn = isObject(raw) && typeof raw.turn === "number" ? raw.turn : null;
  const files = isObject(raw) && Array.isArray(raw.files) ? raw.files : [];
  return {
    turn,
    files: files
      .filter((f): f is Record<string, unknown> => isObject(f) && typeof f.path === "string")
      .map((f) => ({
        path: f.path as string,
        status: typeof f.status === "string" ? f.status : "modified",
        binary: f.binary === true,
        oldText: textOrNull(f.oldText),
        newText: textOrNull(f.newText),
        added: count(f.added),
        removed: count(f.removed),
        hunks: (Array.isArray(f.hunks) ? f.hunks : []).map(parseHunk).filter((h): h is Hunk => h !== undefined),
        inEditor: f.inEditor === true,
      })),
    more: isObject(raw) ? count(raw.more) : 0,
    ...(isObject(raw) && typeof raw.last === "number" ? { last: raw.last } : {}),
  };
}

/** The 0-based line of the new text where a hunk's actions go (a pure deletion: the line after it). */
export function hunkAnchorLine(hunk: Hunk, lineCount: number): number {
  // Unified diffs number an empty side by the line before it: `+4,0` means "after line 4".
  const line = hunk.newLines === 0 ? hunk.newStart : hunk.newStart - 1;
  return Math.max(0, Math.min(line, Math.max(0, lineCount - 1)));
}

/** The hunk whose lines (in the new text) hold 0-based `line`; a deletion counts at its anchor line. */
export function hunkAtLine(hunks: readonly Hunk[], line: number, lineCount: number): number | undefined {
  const index = hunks.findIndex((hunk) => {
    const start = hunkAnchorLine(hunk, lineCount);
    return line >= start && line < start + Math.max(1, hunk.newLines);
  });
  return index < 0 ? undefined : index;
}

/** A short label of a hunk: `+2 −1 at line 7`. */
export function describeHunk(hunk: Hunk): string {
  const added = hunk.lines.filter((l) => l.startsWith("+")).length;
  const removed = hunk.lines.filter((l) => l.startsWith("-")).length;
  const parts = [added ? `+${added}` : "", removed ? `−${removed}` : ""].filter(Boolean).join(" ");
  return `${parts || "change"} at line ${Math.max(1, hunk.newLines ? hunk.newStart : hunk.newStart + 1)}`;
}

/** A key naming a hunk by content, stable while other hunks of the file are undone (their indices shift). */
export function hunkKey(hunk: Hunk): string {
  return `${hunk.oldStart},${hunk.oldLines}|${hunk.lines.join("")}`;
}

/** The `ollie/review/undo` params for hunk `hunk` (undefined: the whole file) of a turn's change. */
export function undoParams(target: { session?: string; turn?: number | null; path: string }, hunk?: number): UndoParams {
  const params: UndoParams = { path: target.path };
  if (target.session) params.session = target.session;
  if (typeof target.turn === "number") params.turn = target.turn;
  if (hunk !== undefined) params.hunk = hunk;
  return params;
}

/** A `-32003` message (`stale: <path>: <why>; undo refused`) as `<path>: <why>`: the caller says it was refused. */
export function staleReason(message: string): string {
  return message.replace(/^stale:\s*/, "").replace(/;\s*undo refused\.?$/, "");
}

/** What to tell the user when an undo was refused; a stale file is named plainly. */
export function undoFailureMessage(path: string, error: { code?: unknown; message?: unknown }): string {
  const message = typeof error.message === "string" ? error.message : String(error.message ?? "");
  if (error.code === -32003 || /^stale:/.test(message)) {
    return `Ollie: cannot undo the change to ${path}: the file changed since this turn (${staleReason(message)}). Your edits are kept.`;
  }
  return `Ollie: undo of ${path} failed: ${message}`;
}
