// Readable tool steps (protocol v2 `tool` / `steps` objects): parsing and how the chat labels them.

import { isObject, textOrNull } from "./json";

/** One file location of a step (`line` 1-based when known). */
export interface StepLocation {
  path: string;
  line?: number;
}

/** One file a step changed (`oldText` null: added; `newText` null: deleted; both null: binary). */
export interface StepDiff {
  path: string;
  oldText: string | null;
  newText: string | null;
}

export type StepStatus = "pending" | "in_progress" | "completed" | "failed";

/** The protocol's `tool` object of a call/step/tool event. */
export interface ToolStep {
  id: string;
  kind: string;
  title: string;
  status: StepStatus;
  locations: StepLocation[];
  diffs?: StepDiff[];
  /** How many files it changed past those `diffs` carries (the daemon bounds them; absent when none). */
  diffsMore?: number;
  /** The connections the call made through the egress proxy (on its `tool` event and in the history). */
  network?: StepConnection[];
  /** In a resumed history: the files it changed (PROTOCOL.md "History"), whose diffs the history does not keep. */
  files?: string[];
}

/** One connection of a step through the egress proxy (PROTOCOL.md `tool.network`). */
export interface StepConnection {
  host: string;
  port: number;
  verdict: string;
  how: string;
  /** The verdict with its `how` as the daemon's `[network]` lines say it (`allowed once`); absent from old daemons. */
  words?: string;
  sent: number;
  received: number;
  error?: string;
  /** On the one record adding up a step's connections past the first hundred: how many. */
  more?: number;
}

function parseConnection(raw: unknown): StepConnection | undefined {
  if (!isObject(raw) || typeof raw.host !== "string" || typeof raw.port !== "number" || typeof raw.verdict !== "string") return undefined;
  const count = (n: unknown) => (typeof n === "number" && n >= 0 ? n : 0);
  const c: StepConnection = { host: raw.host, port: raw.port, verdict: raw.verdict, how: typeof raw.how === "string" ? raw.how : "",
    sent: count(raw.sent), received: count(raw.received) };
  if (typeof raw.words === "string" && raw.words) c.words = raw.words;
  if (typeof raw.error === "string" && raw.error) c.error = raw.error;
  if (typeof raw.more === "number" && raw.more > 0) c.more = raw.more;
  return c;
}

function size(n: number): string {
  return n < 1024 ? `${n} B` : n < 1 << 20 ? `${(n / 1024).toFixed(1)} KB` : `${(n / (1 << 20)).toFixed(1)} MB`;
}

/** A connection as the `[network]` lines of a result say it: `pypi.org:443 allowed: on the allow list, sent 1.2 KB, ...`. */
export function connectionLine(c: StepConnection): string {
  const how = c.how ? ` (${c.how})` : "";
  const what = c.more ? `... ${c.more} more connections${how}` : `${c.host}:${c.port} ${c.words ?? `${c.verdict}${how}`}`;
  const line = `${what}, sent ${size(c.sent)}, received ${size(c.received)}`;
  return c.error ? `${line}; ${c.error}` : line;
}

const STATUSES = new Set<string>(["pending", "in_progress", "completed", "failed"]);

/** A `{path, line?}` list; malformed entries are dropped. */
export function parseLocations(raw: unknown): StepLocation[] {
  if (!Array.isArray(raw)) return [];
  return raw
    .filter((l): l is Record<string, unknown> => isObject(l) && typeof l.path === "string" && l.path !== "")
    .map((l) => (typeof l.line === "number" && l.line > 0 ? { path: l.path as string, line: l.line } : { path: l.path as string }));
}

/** One `{path, oldText, newText}` object, or undefined when it has no path. */
export function parseDiff(raw: unknown): StepDiff | undefined {
  if (!isObject(raw) || typeof raw.path !== "string") return undefined;
  return { path: raw.path, oldText: textOrNull(raw.oldText), newText: textOrNull(raw.newText) };
}

/** A `tool` object, or undefined when it lacks an id or title. */
export function parseToolStep(raw: unknown): ToolStep | undefined {
  if (!isObject(raw) || typeof raw.id !== "string" || typeof raw.title !== "string") return undefined;
  const step: ToolStep = {
    id: raw.id,
    kind: typeof raw.kind === "string" ? raw.kind : "other",
    title: raw.title,
    status: typeof raw.status === "string" && STATUSES.has(raw.status) ? (raw.status as StepStatus) : "pending",
    locations: parseLocations(raw.locations),
  };
  if (Array.isArray(raw.diffs)) step.diffs = raw.diffs.map(parseDiff).filter((d): d is StepDiff => d !== undefined);
  if (typeof raw.diffsMore === "number" && Number.isSafeInteger(raw.diffsMore) && raw.diffsMore > 0) step.diffsMore = raw.diffsMore;
  if (Array.isArray(raw.files)) step.files = raw.files.filter((f): f is string => typeof f === "string");
  if (Array.isArray(raw.network)) step.network = raw.network.map(parseConnection).filter((c): c is StepConnection => c !== undefined);
  return step;
}

/** A `steps` list (the inner calls of a batch); malformed entries are dropped. */
export function parseToolSteps(raw: unknown): ToolStep[] | undefined {
  if (!Array.isArray(raw)) return undefined;
  return raw.map(parseToolStep).filter((s): s is ToolStep => s !== undefined);
}

/** A step's status as the chat draws it: the daemon's, `rejected` for one the user did not allow (not a failure),
 * `in_buffer` for an edit made in an open file's buffer that the editor would not save (`bufferOnlyLine`), or `closed`
 * for one its session's close cut short (`isSessionClosed`). */
export type ShownStatus = StepStatus | "rejected" | "in_buffer" | "closed";

const STATUS_ICONS: Record<ShownStatus, { icon: string; label: string }> = {
  pending: { icon: "circle-large-outline", label: "pending" },
  in_progress: { icon: "loading", label: "in progress" },
  completed: { icon: "pass", label: "completed" },
  failed: { icon: "error", label: "failed" },
  rejected: { icon: "circle-slash", label: "rejected by you" },
  in_buffer: { icon: "warning", label: "done, in the editor only" },
  closed: { icon: "debug-stop", label: "not finished: ollie stopped" },
};

// The first line of the result the engine's file tools give an edit the editor took into its buffer but would not save
// over a change made on disk (tools/execute/editordocs.py): failed for the model, which must not go on as if the file
// held it, but the edit was made. A step's own output cannot start the result: it comes under the `[label]` line.
const BUFFER_ONLY = /^\[[^\n]*\] error: [^\n]*: your edit is in the editor's buffer only, not saved: ([^\n]*?) changed on disk since /;

/** What a failed step whose edit stayed in the editor's buffer (see BUFFER_ONLY) says under its title, done with a
 * warning: what she does about it; "" for any other result. */
export function bufferOnlyLine(result: string): string {
  const file = BUFFER_ONLY.exec(result)?.[1];
  return file === undefined ? "" : `Edited in the editor only, not saved: ${shownPath(file)} changed on disk since the ` +
    "editor read it. Merge the two and save it, or reload it from disk.";
}

// The start of the result the engine gives a step the user answered No (ollie.agent.approval; PROTOCOL.md).
const USER_REJECTED = "rejected: the user did not allow ";

/** Whether a failed step's result says the user rejected it (it did not run: no error). */
export function isUserRejection(result: string): boolean {
  return result.startsWith(USER_REJECTED);
}

// The result of a call whose session was closed under it (ollie.agent.toolround.CLOSED_RESULT): a window reload or
// close, or ollie stopping, while it ran or its question waited. Nobody's failure: not drawn in red as one.
// The whole result, not its start: a step's own output that starts so is not ollie's word.
const SESSION_CLOSED = "[interrupted before this call finished: the session was closed (its editor closed, or ollie stopped)]";

/** Whether a step's result says its session closed under it (the window reloaded while it ran or asked). */
export function isSessionClosed(result: string): boolean {
  return result.trim() === SESSION_CLOSED;
}

/** The line under a step its session's close cut short: what happened, and how she goes on. */
export const CLOSED_LINE = "Not finished: the window reloaded or closed (ollie stopped with it) while this step ran or " +
  "waited for your answer. Send a prompt to go on; it is asked again if needed.";

/** The line under a rejected step's title: what it was, and the feedback given with the No. */
export function rejectedLine(result: string): string {
  const feedback = /\nThe user's feedback: ([^]*)$/.exec(result)?.[1].trim();
  return feedback ? `Rejected by you, not run. Your feedback: ${feedback}` : "Rejected by you, not run";
}

/** The codicon (without `codicon-`) and the spoken label for a step status. */
export function statusIcon(status: ShownStatus): { icon: string; label: string } {
  return STATUS_ICONS[status] ?? STATUS_ICONS.pending;
}

const KIND_ICONS: Record<string, string> = {
  read: "file",
  edit: "edit",
  delete: "trash",
  move: "arrow-right",
  search: "search",
  execute: "terminal",
  think: "lightbulb",
  fetch: "globe",
};

/** The codicon for a step kind (`tools` for anything else). */
export function kindIcon(kind: string): string {
  return KIND_ICONS[kind] ?? "tools";
}

/** `path` or `path:line`, as a location link shows it. */
export function locationLabel(location: StepLocation): string {
  return shownPath(location.path) + (location.line ? `:${location.line}` : "");
}

/** A path as drawn: each control and bidi override as an escape (`\u202e`), as the daemon shows the model's code: the
 * editor obeys a U+202E, so the name read would not be the file's (its link still opens the real path). */
export function shownPath(path: string): string {
  return path.replace(/[\u0000-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]/g,
    (c) => `\\${c < "\u0100" ? "x" : "u"}${c.charCodeAt(0).toString(16).padStart(c < "\u0100" ? 2 : 4, "0")}`);
}

/** Another party's text (a model id, a session's title, an MCP server's names) as a pick list shows it: `shownPath`, and
 * each `$(` escaped, as VS Code draws `$(check)` in an item's label, description and detail as an icon. */
export function shownLabel(text: string): string {
  return shownPath(text).replace(/\$\(/g, "\\$(");
}

/** What a question says of the files it edits that hold the user's unsaved changes ("" for none). */
export function unsavedLine(files: readonly string[]): string {
  if (!files.length) return "";
  const names = files.map(shownPath);
  const named = names.length === 1 ? names[0] : `${names.slice(0, -1).join(", ")} and ${names[names.length - 1]}`;
  return `${named} ${files.length === 1 ? "has" : "have"} your unsaved changes: allowing saves them with the edit${files.length === 1 ? "" : "s"}.`;
}

/** The locations a step's own row shows: a batch's inner steps show theirs, so only the ones none of them names. */
export function headLocations(step: ToolStep, steps: readonly ToolStep[] | undefined): StepLocation[] {
  if (!steps || steps.length === 0) return step.locations;
  const shown = new Set(steps.flatMap((s) => s.locations.map((l) => l.path)));
  return step.locations.filter((l) => !shown.has(l.path));
}

/** The first line of a failed step's output that says something (a traceback's or pytest's: the last): not a
 * `[call 1 x] exit 1` header, nor the `[stderr]` line that opens its error output (the refusal of a read-only file
 * showed as "[stderr]"). The sandbox's own note, when there is one, whole: it says which file and key would allow the
 * step (the line before it, a list of the policy's paths, was cut before it came). */
export function failureLine(result: string): string {
  // The note starts its line; a step's line that reads as one is marked as its output (results.py's `_own`), or
  // starts with what trim() takes off (a U+FEFF): shown as it, it gave the step's words as ollie's.
  const blocked = result.split("\n").find((l) => l.startsWith("[warning] blocked by ollie's sandbox: ") &&
    !l.includes("(this line is the step's output)"));
  if (blocked) return shownPath(blocked.trim().slice("[warning] ".length));
  const lines = result.split("\n").map((l) => l.replace(/^[\t\v\f\r ]+|[\t\v\f\r ]+$/g, "")); // (a U+FEFF kept: escaped)
  const line = lines.find((l) => l && !/^\[[^\]]*\]\s*exit \d+$|^\[stderr\]$/.test(l)) ?? "";
  return /^Traceback \(most recent call last\):$|^=+ .* =+$/.test(line) ? outcomeLine(result) : headWords(line);
}

/** The last line of a finished command's output that says something (a test run's "1 passed in 0.02s"), shown under
 * its title as a terminal shows it: past exit headers, `[stderr]` and a banner's `===`. */
export function outcomeLine(result: string): string {
  const lines = result.split("\n").map((l) => l.trim().replace(/^=+\s*|\s*=+$/g, ""));
  return headWords(lines.filter((l) => l && !/^\[[^\]]*\]\s*exit \d+$|^\[stderr\]$/.test(l)).pop() ?? "");
}

/** A step's output line as its title's line shows it: what a terminal leaves of it (past its last `\r`), escaped as
 * `shownPath` (the step printed it: a U+202E reversed the line, an editor obeys it), cut at 200 characters. */
function headWords(line: string): string {
  const shown = shownPath(line.slice(line.lastIndexOf("\r") + 1));
  return shown.length > 200 ? `${shown.slice(0, 197)}…` : shown;
}

/** The status a step item has without a `tool` object (v1 events): from the result text. */
export function legacyStatus(result: string | undefined, isError: boolean): StepStatus {
  if (result === undefined) return "in_progress";
  return isError ? "failed" : "completed";
}

/** A one-line headline for a step without a `tool` object: the tool name and a short look at its arguments. */
export function legacyTitle(name: string, args: string): string {
  let preview = args;
  try {
    const parsed: unknown = JSON.parse(args);
    // call_tool {"calls": [{"tool": "file_read", "args": ["a.py"]}]} reads as `file_read a.py`.
    if (isObject(parsed) && Array.isArray(parsed.calls)) {
      preview = parsed.calls
        .filter(isObject)
        .map((c) => [c.tool, ...(Array.isArray(c.args) ? c.args : [])].filter((p) => typeof p === "string").join(" "))
        .join("; ");
    } else if (isObject(parsed)) {
      preview = Object.values(parsed).filter((v) => typeof v === "string").join(" ");
    }
  } catch {
    // not JSON: the raw text
  }
  const flat = preview.replace(/\s+/g, " ").trim();
  const short = flat.length > 70 ? `${flat.slice(0, 67)}…` : flat;
  return short ? `${name}: ${short}` : name;
}

/** Every diff of a step and its inner steps, each file once (the last one wins). */
export function stepDiffs(step: ToolStep | undefined, steps: readonly ToolStep[] | undefined): StepDiff[] {
  const byPath = new Map<string, StepDiff>();
  const sources = steps && steps.length > 0 ? steps : step ? [step] : [];
  for (const source of sources) for (const diff of source.diffs ?? []) byPath.set(diff.path, diff);
  if (byPath.size === 0) for (const diff of step?.diffs ?? []) byPath.set(diff.path, diff);
  return [...byPath.values()];
}

/** How many files a step changed past the diffs it carries: the whole call's count, else its inner steps' summed. */
export function stepDiffsMore(step: ToolStep | undefined, steps: readonly ToolStep[] | undefined): number {
  return step?.diffsMore ?? (steps ?? []).reduce((n, s) => n + (s.diffsMore ?? 0), 0);
}

/** The line under a step's diffs that says how many files it changed past them, and where they are listed. */
export function diffsMoreLine(more: number): string {
  return `… and ${more} more file${more === 1 ? "" : "s"} changed (see the turn's Changed files)`;
}
