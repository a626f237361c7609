// `ollie/permission` (server → client): the question's params, and the changed-files list of a turn.

import { FileChange, parseChanges } from "../review/hunks";
import type { ChangedFile, PermissionStep } from "./chatModel";
import { type StepDiff, parseDiff, parseLocations } from "./steps";
import { isObject } from "./json";

/** The params of an `ollie/permission` request. */
export interface PermissionRequest {
  session: string;
  step: PermissionStep;
  always: string;
  offered?: string[];
}

/** The request's params, or undefined when they lack a session or a step with an id and title. */
export function parsePermissionRequest(raw: unknown): PermissionRequest | undefined {
  if (!isObject(raw) || typeof raw.session !== "string" || !isObject(raw.step)) return undefined;
  const { id, kind, title, locations, diff, diffs, diffsMore, prefix, network, outside, code } = raw.step;
  if (typeof id !== "string" || typeof title !== "string") return undefined;
  const step: PermissionStep = { id, kind: typeof kind === "string" ? kind : "other", title, locations: parseLocations(locations) };
  const parsedDiff = parseDiff(diff);
  if (parsedDiff) step.diff = parsedDiff;
  if (Array.isArray(diffs)) step.diffs = diffs.map(parseDiff).filter((d): d is StepDiff => d !== undefined);
  if (typeof diffsMore === "number" && Number.isSafeInteger(diffsMore) && diffsMore > 0) step.diffsMore = diffsMore;
  if (typeof prefix === "string" && prefix) step.prefix = prefix;
  if (typeof code === "string" && code) step.code = code;
  if (isObject(network) && typeof network.host === "string" && Number.isInteger(network.port)) {
    step.network = { host: network.host, port: network.port as number, scheme: typeof network.scheme === "string" ? network.scheme : "" };
  }
  if (Array.isArray(outside)) step.outside = outside.filter((what): what is string => typeof what === "string");
  const request: PermissionRequest = { session: raw.session, step, always: typeof raw.always === "string" ? raw.always : "" };
  // The answers the question offers (an agent switch: "Allow once" and "Reject" alone, no feedback, which would reach no one).
  if (Array.isArray(raw.options)) request.offered = raw.options.flatMap((o) => (isObject(o) && typeof o.id === "string" ? [o.id] : []));
  return request;
}

/** The files of an `ollie/changes` result as the "Changed files" list shows them (+/- counts), and their turn. */
export function changedFilesOf(raw: unknown): { turn: number | null; files: ChangedFile[]; more: number } {
  const { turn, files, more } = parseChanges(raw);
  return { turn, files: files.map(summarize), more };
}

function summarize(change: FileChange): ChangedFile {
  const file: ChangedFile = { path: change.path, status: change.status, added: change.added, removed: change.removed };
  if (change.inEditor) file.inEditor = true;
  return file;
}

/** The list after an undo: files the turn no longer changes are marked undone, the rest take the new counts. */
export function mergeChanges(before: readonly ChangedFile[], after: readonly ChangedFile[]): ChangedFile[] {
  const now = new Map(after.map((f) => [f.path, f]));
  const merged = before.map((f) => now.get(f.path) ?? { ...f, undone: true });
  for (const f of after) if (!before.some((b) => b.path === f.path)) merged.push(f);
  return merged;
}
