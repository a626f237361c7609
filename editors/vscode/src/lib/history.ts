// Turning a saved conversation (`ollie/context` messages) into chat items and a readable document.

import { ChatItem, ChatModel, ToolItem } from "./chatModel";
import { isObject } from "./json";
import { type OllieEvent, parseToolImages, turnNumber } from "./protocol";
import { imageLabels, splitEditorContext } from "./promptContext";
import { StepDiff, ToolStep, isSessionClosed, parseDiff, parseToolStep, parseToolSteps, shownPath } from "./steps";

interface ToolCallLike {
  id?: string;
  name?: string;
  arguments?: string;
  function?: { name?: string; arguments?: string };
  /** The readable step, as the live `call` event carried it (PROTOCOL.md "ollie/context"). */
  tool?: unknown;
  steps?: unknown;
}

interface MessageLike {
  role?: string;
  content?: unknown;
  reasoning?: unknown;
  tool_calls?: ToolCallLike[] | null;
  name?: string;
  tool?: unknown;
  steps?: unknown;
  /** A reply the user cut off: its content ends with the engine's marker. */
  interrupted?: boolean;
  /** A prompt's editor-context items, one compact label each (`a.py:3-7`; PROTOCOL.md "History"). */
  contextLabels?: unknown;
  /** A prompt's images as the daemon lists them, `[{mime, bytes}]`; a tool result's, `[{mime, bytes, data?}]`. */
  images?: unknown;
  /** On a turn's last message, when the turn changed files: `{turn, files}` (its number, how many; PROTOCOL.md "History"). */
  turnChanges?: unknown;
  /** On a prompt: the number of the turn it starts (PROTOCOL.md "History"). */
  turn?: unknown;
  /** The agent's notes of the history a compaction replaced, first in it (PROTOCOL.md "History"). */
  memory?: unknown;
}

// The engine's note at the end of a cut-off reply (ollie.agent.history.INTERRUPTED_REPLY); the chat says it its own way.
const INTERRUPTED_MARK = /\s*\[interrupted by the user: this reply was cut off here\]\s*$/;
// The result of a call an interrupt cut short (ollie.agent.toolround: INTERRUPTED_RESULT, or CLOSED_RESULT when the
// session was closed under it, as a window reload does while the call waits on its approval question).
const INTERRUPTED_CALL = /^\[interrupted (by the user )?before this call finished/;

// Why a resumed step names an image rather than drawing it (PROTOCOL.md "History": a collapsed result keeps no data).
const RESUMED_IMAGE = "a resumed chat has its type and size only";

function text(value: unknown): string {
  if (typeof value === "string") return value;
  if (value === undefined || value === null) return "";
  return JSON.stringify(value);
}

function messagesOf(raw: unknown): MessageLike[] {
  return Array.isArray(raw) ? raw.filter((m): m is MessageLike => typeof m === "object" && m !== null) : [];
}

// The turn `message` ends and how many files it changed, when it changed files (0: all of them undone since, as the
// live list said); `files` -1 when not known, with why as its end said it (none when an earlier turn shown said it:
// `saidAbove`; the first in view says it, that turn being on a page not loaded, or compacted away).
function changedTurn(message: MessageLike, saidAbove: boolean): { turn: number; files: number; undone: boolean; reason?: string } | undefined {
  const marked = message.turnChanges;
  if (isObject(marked) && marked.again === true && saidAbove) return undefined;
  if (isObject(marked) && Number.isInteger(marked.turn) && marked.unknown === true) {
    return { turn: marked.turn as number, files: -1, undone: false, reason: typeof marked.reason === "string" ? marked.reason : "" };
  }
  if (!isObject(marked) || !Number.isInteger(marked.turn) || !Number.isInteger(marked.files)) return undefined;
  const undone = marked.undone === true;
  return (marked.files as number) > 0 || undone ? { turn: marked.turn as number, files: marked.files as number, undone } : undefined;
}

function stringList(value: unknown): string[] | undefined {
  return Array.isArray(value) && value.length > 0 && value.every((v) => typeof v === "string") ? (value as string[]) : undefined;
}

/** A chat model holding a resumed session's conversation; `lastTurnResult` (its `info`) marks how the last turn ended. */
export function modelFromHistory(messages: unknown, lastTurnResult?: unknown, seq = 0, session?: string): ChatModel {
  const model = new ChatModel();
  model.historySeq = seq;
  for (const item of historyItems(messages, session)) model.add(item);
  for (const item of lastTurnEnding(lastTurnResult)) model.add(item);
  // Steps and no reply after them, the turn over (its result known): it failed, or stopped as they ran (the session
  // closed), with nothing said under them; the chat ended at the steps as if they still ran. As Neovim says it.
  const last = model.items.filter((item) => item.kind !== "changes").at(-1);
  if (lastTurnResult !== undefined && last?.kind === "tool") model.add({ kind: "turnEnd", id: 0, stop: "no_answer" });
  return model;
}

const COMPACTED = "Earlier conversation compacted: the agent goes on from its notes of it.";

// The history keeps no error text (the live chat's `error` event is not saved): what is known is that it failed.
const FAILED_TURN = "This prompt failed before the model answered it in full (the error was not saved). Send it again to retry.";

/** The line under a turn that ended other than normally, by its stop reason (no line for the others). */
export const STOP_LABELS: Record<string, string> = {
  interrupted: "Turn interrupted",
  closed: "Turn stopped: the window reloaded or closed before it ended",
  max_steps: "Stopped: step limit reached",
  max_tokens: "Cut off: the reply reached the model's output token limit",
  error: "Turn ended with an error",
  cut_short: "Cut short: the daemon stopped (what it had shown of this turn was not saved)",
  no_answer: "No answer after these steps: the turn failed or stopped",
};

/** What the live chat showed at the end of a turn that failed, hit the step limit or was cut off, from the session's `lastTurnResult`. */
export function lastTurnEnding(lastTurnResult: unknown): ChatItem[] {
  if (lastTurnResult === "error") {
    return [{ kind: "notice", id: 0, level: "error", text: FAILED_TURN }, { kind: "turnEnd", id: 0, stop: "error" }];
  }
  // An interrupted reply is marked by its message; other endings leave nothing to say.
  const stop = lastTurnResult === "max_steps" || lastTurnResult === "max_tokens" ? lastTurnResult : "";
  return stop ? [{ kind: "turnEnd", id: 0, stop }] : [];
}

/** A saved conversation (`ollie/context` messages) as chat items, steps from their `tool` objects like the live chat,
 * and, with the `session`, each turn's "Changed files" under its last message, where the live chat added them: drawn
 * from the turn's mark (`pending`: its count), its files to be read apart (ChangesLists.fill). A page before those shown
 * leaves out its last "not known" line of `saidBelow`'s reason: the run it ends is said once, below, where it was first shown. */
export function historyItems(messages: unknown, session?: string, saidBelow?: string): ChatItem[] {
  const model = new ChatModel();
  let seq = 0;
  const feed = (role: string, content: string, name?: string, step?: { tool?: unknown; steps?: unknown; images?: unknown }) => {
    const event: OllieEvent = { session: "", seq: ++seq, role, name, content };
    const tool = parseToolStep(step?.tool);
    const steps = parseToolSteps(step?.steps);
    // A result's images: drawn when the daemon sends their data, else named (it keeps no data once the model read them).
    const images = parseToolImages(step?.images)?.map((i) => (i.data ? i : { ...i, why: RESUMED_IMAGE }));
    if (tool) event.tool = tool;
    if (steps && steps.length > 0) event.steps = steps;
    if (images) event.images = images;
    model.apply(event);
  };
  const all = messagesOf(messages);
  let saidAbove = false;
  all.forEach((message, index) => {
    switch (message.role) {
      case "user": {
        // The agent's notes of the history compaction replaced (PROTOCOL.md "History"): never the user's prompt.
        if (message.memory === true) {
          model.addNotice("info", COMPACTED);
          break;
        }
        const { prompt, contextLabels } = splitEditorContext(text(message.content));
        // The daemon's labels when it sends them (PROTOCOL.md "History"), else those read from the blocks.
        const labels = [...(stringList(message.contextLabels) ?? contextLabels ?? []), ...imageLabels(message.images)];
        // The turn it starts (PROTOCOL.md "History"): what "Fork from here" names.
        model.addUser(prompt, { contextLabels: labels, ...(turnNumber(message.turn) ? { turn: message.turn } : {}) });
        break;
      }
      case "assistant": {
        if (text(message.reasoning)) feed("reasoning", text(message.reasoning));
        const reply = message.interrupted === true ? text(message.content).replace(INTERRUPTED_MARK, "") : text(message.content);
        if (reply) feed("assistant", reply);
        for (const call of message.tool_calls ?? []) {
          feed("call", call.arguments ?? call.function?.arguments ?? "", call.name ?? call.function?.name ?? "", call);
        }
        // Shown as the live chat shows a turn the user stopped.
        if (message.interrupted === true) feed("turn", "interrupted");
        break;
      }
      case "tool":
        feed("tool", text(message.content), message.name ?? "", message);
        // An interrupt ends the turn under its calls: after the last result of the batch, the live chat's end line.
        // One the session's close cut short (a window reload) was not stopped by her: said so, not "interrupted".
        if (INTERRUPTED_CALL.test(text(message.content)) && all[index + 1]?.role !== "tool") {
          feed("turn", isSessionClosed(text(message.content)) ? "closed" : "interrupted");
        }
        break;
      default:
        break;
    }
    const changed = changedTurn(message, saidAbove);
    saidAbove ||= changed?.files === -1;
    if (session !== undefined && changed?.files === -1) model.add({ kind: "changes", id: 0, session, turn: changed.turn, files: [], unknown: changed.reason });
    else if (session !== undefined && changed) model.add({ kind: "changes", id: 0, session, turn: changed.turn, files: [], pending: changed.files, ...(changed.undone ? { undone: true } : {}) });
  });
  const last = model.items.filter((item) => item.kind === "changes" && !!item.unknown).at(-1);
  return model.items.filter((item) => item !== last || item.kind !== "changes" || item.unknown !== saidBelow);
}

/** The diffs a resumed turn's steps showed live, which the history does not keep (PROTOCOL.md "History"): a call's
 * own (`own`, by its id: those `ollie/changes` read from the checkpoints around it) on its steps, each the files it
 * names; a call without them gets each file the turn changed (`files`, as `ollie/changes` lists them, with their texts)
 * under the turn's last step that changed it (its `files`; without them, a completed edit step that names it), a file
 * two steps changed once, over the turn (and so does a call's edit of an open document, which no checkpoint saw).
 * `changes` is the turn's "Changed files" item among `items`, after its steps; returns the tool items given diffs. */
export function giveTurnDiffs(items: readonly ChatItem[], changes: ChatItem, files: readonly (StepDiff & { inEditor?: boolean })[], cwd = "",
  own: Readonly<Record<string, readonly StepDiff[]>> = {}): ToolItem[] {
  const byPath = new Map(files.map((f) => [f.path, f]));
  const under = cwd.endsWith("/") ? cwd : `${cwd}/`;
  const relative = (path: string) => (cwd && path.startsWith(under) ? path.slice(under.length) : path);
  const given: ToolItem[] = [];
  for (let index = items.indexOf(changes) - 1; index >= 0 && items[index].kind !== "user"; index--) {
    const item = items[index];
    if (item.kind !== "tool" || item.rejected) continue;
    // Its own diffs, else the turn's: a step that names a file another step changed too shows only what it did.
    const mine = item.step && Object.hasOwn(own, item.step.id) ? new Map(own[item.step.id].map((f) => [f.path, f])) : undefined;
    // A batch's diffs go on its inner steps (the chat draws theirs), a single call's on its step.
    const steps: ToolStep[] = item.steps?.length ? [...item.steps].reverse() : item.step ? [item.step] : [];
    for (const step of steps) {
      if (step.diffs?.length) continue;
      const edited = step.kind === "edit" && step.status === "completed" ? step.locations.map((l) => l.path) : [];
      const diffs = (step.files ?? (mine && steps.length === 1 ? [...mine.keys()] : edited)).flatMap((path) => {
        // An open document's edits: no checkpoint saw them, so only the turn's listing has them.
        const file = mine?.get(relative(path)) ?? (!mine || byPath.get(relative(path))?.inEditor ? byPath.get(relative(path)) : undefined);
        byPath.delete(relative(path));
        return file ? [{ path: file.path, oldText: file.oldText, newText: file.newText }] : [];
      });
      if (diffs.length === 0) continue;
      step.diffs = diffs;
      if (!given.includes(item)) given.push(item);
    }
  }
  return given;
}

/** The `steps` of an `ollie/changes` result: each call's own diffs by its id (absent from an older daemon). */
export function parseOwnDiffs(raw: unknown): Record<string, StepDiff[]> {
  const steps = isObject(raw) && isObject(raw.steps) ? raw.steps : {};
  return Object.fromEntries(Object.entries(steps).filter((e): e is [string, unknown[]] => Array.isArray(e[1]))
    .map(([id, diffs]) => [id, diffs.map(parseDiff).filter((d): d is StepDiff => d !== undefined)]));
}

/** What the chat says once a fork opens: its title is cut off in a narrow header (only "(fork)" told it apart), and
 * a fork "from" a turn reads as if the files went back there too (PROTOCOL.md: they stay as they are). */
export function forkNotice(title: unknown, turn?: number): string {
  const named = typeof title === "string" && title ? `"${title}"` : "a fork";
  const where = turn === undefined ? "with the whole conversation" : `with the conversation up to turn ${turn}`;
  return `This chat is now ${named}, ${where}; the original is in Switch Session. ` +
    `Files were not changed: they stay as they are now${turn === undefined ? "" : `, not as they were after turn ${turn}`}.`;
}

/** One page of `ollie/context`: its messages, how many the session has in all, where the next page starts. */
export interface ContextPage {
  messages: unknown[];
  total: number;
  next?: number;
  systemPrompt?: unknown;
  /** Whether a turn ran when the daemon read these messages (said with them: asked apart, it may have begun or ended
   * in between); absent from a daemon that does not say. */
  running?: boolean;
  /** The last `ollie/event` whose news the history holds (PROTOCOL.md "ollie/context"); absent from an older daemon. */
  seq?: number;
}

/** An `ollie/context` result as a page; a daemon that does not say `total` sent them all. */
export function parseContextPage(raw: unknown): ContextPage {
  const record = typeof raw === "object" && raw !== null ? (raw as Record<string, unknown>) : {};
  const messages = Array.isArray(record.messages) ? record.messages : [];
  const total = typeof record.total === "number" && Number.isInteger(record.total) && record.total >= messages.length ? record.total : messages.length;
  const page: ContextPage = { messages, total };
  if (typeof record.next === "number" && Number.isInteger(record.next)) page.next = record.next;
  if (record.systemPrompt !== undefined) page.systemPrompt = record.systemPrompt;
  if (typeof record.running === "boolean") page.running = record.running;
  if (typeof record.seq === "number" && Number.isInteger(record.seq) && record.seq >= 0) page.seq = record.seq;
  return page;
}

/** The messages from `offset` (`limit` of them, or all to the end), page after page: the daemon answers at most 1,000
 * at a time and says where the next page starts (`next`). */
export async function readContext(
  request: (params: { offset: number; limit?: number }) => Promise<unknown>,
  offset = 0,
  limit?: number,
): Promise<ContextPage> {
  const stop = limit === undefined ? Infinity : offset + limit;
  const whole: ContextPage = { messages: [], total: 0 };
  for (let at = offset; ; ) {
    const page = parseContextPage(await request(limit === undefined ? { offset: at } : { offset: at, limit: stop - at }));
    whole.messages.push(...page.messages);
    whole.total = page.total;
    whole.systemPrompt ??= page.systemPrompt;
    // The last page's: it holds the end of the history, where a running turn's prompt is.
    if (page.running !== undefined) whole.running = page.running;
    if (page.seq !== undefined) whole.seq = page.seq;
    // Only forward: a `next` that does not move on would ask for the same page for ever.
    if (page.next === undefined || page.next <= at || page.next >= stop) return whole;
    at = page.next;
  }
}

/** Whether a page starts with a tool result: its call is on the page before, and would show as a second step. */
export function startsWithResult(messages: readonly unknown[]): boolean {
  const first = messages[0];
  return typeof first === "object" && first !== null && (first as { role?: unknown }).role === "tool";
}

/** The `offset` of the page of at most `size` messages that ends where `end` starts (the one before it). */
export function pageBefore(end: number, size: number): { offset: number; limit: number } {
  const offset = Math.max(0, end - size);
  return { offset, limit: end - offset };
}

/** The model's context as a Markdown document for "Ollie: Show Context". */
export function contextToMarkdown(context: { systemPrompt?: unknown; messages?: unknown }): string {
  const parts = ["# Ollie context", "", "## System prompt", "", "```text", text(context.systemPrompt), "```"];
  for (const message of messagesOf(context.messages)) {
    parts.push("", `## ${message.role ?? "?"}${message.name ? ` (${message.name})` : ""}`, "");
    if (text(message.reasoning)) parts.push("> " + text(message.reasoning).replace(/\n/g, "\n> "), "");
    if (text(message.content)) parts.push(message.role === "tool" ? "```text\n" + text(message.content) + "\n```" : text(message.content));
    for (const call of message.tool_calls ?? []) {
      parts.push("", `Tool call \`${call.name ?? call.function?.name ?? "?"}\`:`, "```json", call.arguments ?? call.function?.arguments ?? "", "```");
    }
  }
  return parts.join("\n") + "\n";
}

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** How long ago `value` (an ISO time or epoch ms) was, as a short phrase ("2 h ago"); "" when it is not a time. */
export function relativeTime(value: unknown, now: number): string {
  const time = typeof value === "string" || typeof value === "number" ? new Date(value).getTime() : NaN;
  if (Number.isNaN(time)) return "";
  const ago = Math.max(0, now - time);
  if (ago < MINUTE) return "seconds ago";
  if (ago < HOUR) return `${Math.floor(ago / MINUTE)} min ago`;
  if (ago < DAY) return `${Math.floor(ago / HOUR)} h ago`;
  if (ago < 2 * DAY) return "yesterday";
  if (ago < 30 * DAY) return `${Math.floor(ago / DAY)} days ago`;
  return new Date(time).toISOString().slice(0, 10);
}

/** One saved session as the history list shows it. */
export interface HistoryEntry {
  id: string;
  title: string;
  label: string;
  description: string;
  current: boolean;
  /** Archived: kept and listed on request; the daemon resumes or changes it once unarchived. */
  archived: boolean;
  /** Where another daemon runs it now (`"<host> (pid N)"`), when one does. */
  liveOn?: string;
}

/**
 * Saved sessions' infos (`ollie/session/list`), page after page by the daemon's `nextCursor` until none follows or
 * `max` are listed: a cursor, unlike an offset, shows no session twice when one is added between pages.
 */
export async function listSessions(request: (params: { limit: number; cursor?: string }) => Promise<unknown>, max = 1000, size = 100): Promise<unknown[]> {
  const sessions: unknown[] = [];
  let cursor: string | undefined;
  const seen = new Set<string>();
  do {
    const page = (await request(cursor === undefined ? { limit: size } : { limit: size, cursor })) as { sessions?: unknown; nextCursor?: unknown } | null;
    if (Array.isArray(page?.sessions)) sessions.push(...page.sessions);
    cursor = typeof page?.nextCursor === "string" && !seen.has(page.nextCursor) ? page.nextCursor : undefined; // never the same page again
    if (cursor !== undefined) seen.add(cursor);
  } while (cursor !== undefined && sessions.length < max);
  return sessions.slice(0, max);
}

/** Saved sessions (`ollie/session/list` infos) as history entries, most recent first as listed. */
export function historyEntries(sessions: unknown, current: string | undefined, now: number): HistoryEntry[] {
  const infos = Array.isArray(sessions) ? sessions.filter((s): s is Record<string, unknown> => typeof s === "object" && s !== null) : [];
  const entries: HistoryEntry[] = [];
  for (const info of infos) {
    const id = typeof info.id === "string" ? info.id : typeof info.session === "string" ? info.session : undefined;
    if (!id) continue;
    const title = typeof info.title === "string" ? info.title.trim() : "";
    // A session nobody named and that never ran a turn holds nothing to go back to, unless a rewind of every turn
    // emptied it and can still be undone (`rewindUndo`): listed for that undo, after a restart too.
    const rewound = !title && info.rewindUndo === true;
    if (!title && !info.lastTurnResult && !rewound && id !== current) continue;
    const when = relativeTime(info.lastActive ?? info.createdAt, now);
    const agent = typeof info.agent === "string" ? info.agent : "";
    // As Neovim's picker and the terminal's /sessions: two sessions of one title made in one minute differ by it.
    const turns = typeof info.turns === "number" && Number.isInteger(info.turns) && info.turns >= 0 ? `${info.turns} turn${info.turns === 1 ? "" : "s"}` : "";
    // Another daemon sharing the store runs it now (`liveOn`): loading it here is refused until that one lets go.
    const liveOn = typeof info.liveOn === "string" && info.liveOn ? info.liveOn : undefined;
    // Shared to a team channel (docs/TEAM.md): whose it is and which team.
    const shared = typeof info.team === "string" && info.team ? `team ${info.team} · ${typeof info.owner === "string" ? info.owner : "?"}` : "";
    const entry: HistoryEntry = {
      id,
      title,
      // A teammate's title is hers (shared sessions): drawn escaped, as any other party's text.
      label: shownPath(title) || (rewound ? "Rewound session (/rewind undo in its chat puts it back)" : "Untitled session"),
      description: [id === current ? "current" : "", liveOn ? `live on ${liveOn}` : "", shared, when, turns, agent, info.archived === true ? "archived" : ""]
        .filter(Boolean)
        .join(" · "),
      current: id === current,
      archived: info.archived === true,
    };
    if (liveOn) entry.liveOn = liveOn;
    entries.push(entry);
  }
  return entries;
}

// PROTOCOL.md error table: an archived session (-32002), one another daemon runs (-32007), a team-shared session only
// its owner may change (-32008).
const SESSION_ARCHIVED = -32002;
const SESSION_LIVE_ELSEWHERE = -32007;
const SESSION_FORBIDDEN = -32008;

/** What the history offers for an archived session (its button, and picking it). */
export const UNARCHIVE_AND_RESUME = "Unarchive and resume";
// JSON-RPC's "method not found": a daemon older than `ollie/session/unarchive`.
const METHOD_NOT_FOUND = -32601;

/** Why an archived session could not be unarchived, for the user; undefined for errors that are not a refusal. */
export function unarchiveRefusal(err: unknown, label: string): string | undefined {
  if (typeof err !== "object" || err === null) return undefined;
  const { code } = err as { code?: unknown };
  if (code === METHOD_NOT_FOUND) {
    return `Ollie: "${label}" is archived, and this ollie daemon cannot unarchive sessions: update ollie to bring it back.`;
  }
  // Its user already has an active main session (-32602 says so), or it is a teammate's (-32008).
  const { message } = err as { message?: unknown };
  if (code === -32602 && typeof message === "string") return `Ollie: ${message.replace(/^Invalid params: (session: )?/, "")}`;
  return sessionRefusal(err);
}

/** What to tell the user when the daemon refused a history action for a reason they can act on; undefined for other errors. */
export function sessionRefusal(err: unknown): string | undefined {
  if (typeof err !== "object" || err === null) return undefined;
  const { code, message } = err as { code?: unknown; message?: unknown };
  if (typeof message !== "string" || !message) return undefined;
  // Archived meanwhile (by another window): the daemon's message names only the id.
  if (code === SESSION_ARCHIVED) return "Ollie: that session was archived: an archived session cannot be resumed or changed.";
  // The daemon's message already says where it runs, or whose it is: shown as it is.
  return code === SESSION_LIVE_ELSEWHERE || code === SESSION_FORBIDDEN ? `Ollie: ${message}` : undefined;
}
