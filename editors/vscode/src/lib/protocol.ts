// Wire shapes of the ollie daemon protocol (shared/PROTOCOL.md), as the extension uses them.

import { ToolStep, parseToolStep, parseToolSteps } from "./steps";
import type { ChangedFile } from "./chatModel";
import { isObject } from "./json";

export type StopReason = "end" | "interrupted" | "max_steps" | "max_tokens" | "refusal" | "error" | "command" | string;

/** One `ollie/event` notification. */
export interface OllieEvent {
  session: string;
  seq: number;
  role: string;
  name?: string;
  content: string;
  /** v2: the readable step of a call/step/tool event. */
  tool?: ToolStep;
  /** v2: the inner steps of a `call_tool` batch. */
  steps?: ToolStep[];
  /** On a `turn` end: the files the turn changed (PROTOCOL.md "Notifications"), absent when none. */
  turnChanges?: TurnChanges;
  /** On a `turn` end: the number of the turn that ended (absent when it got none). */
  turn?: number;
  /** On a `tool` result: the images the tool returned. */
  images?: ToolImage[];
}

/** An image a tool returned: what it is, its size, its base64 when small enough to draw (else `why` it is not), and
 * the step of the call's batch that read it (absent for an MCP tool's, or a session saved before steps were kept). */
export interface ToolImage {
  mime: string;
  bytes: number;
  data?: string;
  why?: string;
  step?: number;
}

// Only what the daemon reads as an image is drawn, and only base64 goes into the data: URL.
const IMAGE_MIMES = new Set(["image/png", "image/jpeg", "image/gif", "image/webp"]);
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** The `images` of a `tool` event or history message; one of another type, or not base64, is dropped. */
export function parseToolImages(raw: unknown): ToolImage[] | undefined {
  if (!Array.isArray(raw)) return undefined;
  const images = raw.filter((i) => isObject(i) && typeof i.mime === "string" && IMAGE_MIMES.has(i.mime) && Number.isInteger(i.bytes))
    .map((i) => ({ mime: i.mime, bytes: i.bytes, ...(typeof i.data === "string" && BASE64.test(i.data) ? { data: i.data } : {}),
      ...(Number.isInteger(i.step) && i.step >= 0 ? { step: i.step } : {}) }) as ToolImage);
  return images.length ? images : undefined;
}

/** What a turn changed, as its `turn` end event lists it: its number and each file with its line counts. */
export interface TurnChanges {
  turn: number;
  files: ChangedFile[];
  /** How many files it changed past those listed (the event lists the first 100 at most). */
  more?: number;
  /** Its end's diff failed: why ("" when not said). What it changed is not known; `files` is empty. */
  unknown?: string;
}

/** One `ollie/stateChanged` notification. */
export interface StateChanged {
  session: string;
  state: string;
  running: boolean;
  contextSize?: unknown;
  usage?: unknown;
  cost?: unknown;
  /** The session's title ("" while it has none); absent from a daemon before it was sent. */
  title?: string;
  /** The agent's task plan, when it changed (docs/PROTOCOL.md, `ollie/state`'s `plan`). */
  plan?: PlanStep[];
}

/** One step of the agent's task plan. */
export interface PlanStep {
  content: string;
  status: "completed" | "in_progress" | "pending";
  /** On a long plan's `… N steps done` / `… N more steps`: the steps it stands for, and how many of them are done. */
  steps?: number;
  done?: number;
}

/** [done, all] of a plan's steps: a summary counts the steps it stands for (past 100 steps the daemon summarises). */
export function planCounts(plan: PlanStep[]): [number, number] {
  return plan.reduce(([done, all], step) => [done + (step.done ?? +(step.status === "completed")), all + (step.steps ?? 1)], [0, 0]);
}

/** The plan of an `ollie/state` or `ollie/stateChanged` (undefined when it has none or it is malformed). */
export function parsePlan(raw: unknown): PlanStep[] | undefined {
  if (!Array.isArray(raw)) return undefined;
  return raw.filter((s): s is PlanStep => isObject(s) && typeof s.content === "string" && ["completed", "in_progress", "pending"].includes(s.status as string));
}

/** Editor context bound to a prompt (`ollie/submit` `context`). */
export interface EditorContext {
  uri: string;
  range?: { start: { line: number; character: number }; end: { line: number; character: number } };
  selection?: string;
  languageId?: string;
  /** The MCP server whose resource `uri` is: the daemon reads it through the server. */
  mcpServer?: string;
}

export interface SubmitResult {
  session: string;
  reply: string;
  stop: StopReason;
  error?: string;
  /** A `!cmd` that exited non-zero (or timed out). */
  failed?: boolean;
}

/** One entry of `ollie/session/list`; only `session`/`id` is relied on. */
export interface SessionInfo {
  session?: string;
  id?: string;
  title?: string;
  agent?: string;
  kind?: string;
  updated?: string | number;
  archived?: boolean;
  [key: string]: unknown;
}

/** One MCP server of `ollie/mcp/list`: its state (and why it failed) and the tools the model gets from it. */
export interface McpServerInfo {
  name: string;
  state: string;
  error: string;
  tools: string[];
  prompts: string[];
  /** The resources it offers, to add to a prompt as context. */
  resources: { uri: string; name: string }[];
}

/** The servers of an `ollie/mcp/list` result; malformed entries are dropped. */
export function parseMcpList(raw: unknown): McpServerInfo[] {
  const servers = (raw as { servers?: unknown } | null)?.servers;
  if (!Array.isArray(servers)) return [];
  const names = (list: unknown): string[] =>
    Array.isArray(list) ? list.map((t) => (t as { name?: unknown })?.name).filter((n): n is string => typeof n === "string") : [];
  const resources = (list: unknown): { uri: string; name: string }[] =>
    (Array.isArray(list) ? list : []).flatMap((r: { uri?: unknown; name?: unknown } | null) =>
      typeof r?.uri === "string" ? [{ uri: r.uri, name: typeof r.name === "string" ? r.name : "" }] : []);
  return servers.flatMap((s: { name?: unknown; state?: unknown; error?: unknown; tools?: unknown; prompts?: unknown; resources?: unknown }) =>
    typeof s?.name === "string" && typeof s.state === "string"
      ? [{ name: s.name, state: s.state, error: typeof s.error === "string" ? s.error : "", tools: names(s.tools), prompts: names(s.prompts),
           resources: resources(s.resources) }]
      : [],
  );
}

/** One slash command of `ollie/listCommands`. */
export interface SlashCommand {
  name: string;
  args: string;
  description: string;
  destructive: boolean;
}

/** A name to pick (`ollie/listModels`, `ollie/listAgents`) and what to show beside it. */
export interface NamedChoice {
  name: string;
  description: string;
}

/** The choices of a listModels or listAgents result, and the one in use. */
export interface Choices {
  current?: string;
  choices: NamedChoice[];
}

/** Whether `value` is a turn's number as the daemon counts them (from 1). */
export function turnNumber(value: unknown): value is number {
  return Number.isInteger(value) && (value as number) >= 1;
}

/** The params of an `ollie/event` notification, or undefined when they do not have its shape. */
export function parseEvent(raw: unknown): OllieEvent | undefined {
  if (!isObject(raw)) return undefined;
  const { session, seq, role, name, content } = raw;
  if (typeof session !== "string" || typeof seq !== "number" || typeof role !== "string") return undefined;
  if (name !== undefined && name !== null && typeof name !== "string") return undefined;
  const event: OllieEvent = {
    session,
    seq,
    role,
    name: typeof name === "string" ? name : undefined,
    content: typeof content === "string" ? content : content === undefined || content === null ? "" : JSON.stringify(content),
  };
  const tool = parseToolStep(raw.tool);
  const steps = parseToolSteps(raw.steps);
  if (tool) event.tool = tool;
  if (steps && steps.length > 0) event.steps = steps;
  const changes = parseTurnChanges(raw.turnChanges);
  if (changes) event.turnChanges = changes;
  if (turnNumber(raw.turn)) event.turn = raw.turn as number;
  const images = parseToolImages(raw.images);
  if (images) event.images = images;
  return event;
}

// A file the end event lists without a path, status or counts is dropped.
function parseTurnChanges(raw: unknown): TurnChanges | undefined {
  // Not known for the reason an earlier turn's end gave (each turn's in the home directory): said there, not again.
  if (isObject(raw) && raw.again === true) return undefined;
  if (isObject(raw) && Number.isInteger(raw.turn) && raw.unknown === true) {
    return { turn: raw.turn as number, files: [], unknown: typeof raw.reason === "string" ? raw.reason : "" };
  }
  if (!isObject(raw) || !Number.isInteger(raw.turn) || !Array.isArray(raw.changed)) return undefined;
  const files: ChangedFile[] = [];
  for (const f of raw.changed) {
    if (!isObject(f) || typeof f.path !== "string" || typeof f.status !== "string" || !Number.isInteger(f.added) || !Number.isInteger(f.removed)) continue;
    const file: ChangedFile = { path: f.path, status: f.status, added: f.added as number, removed: f.removed as number };
    if (f.inEditor === true) file.inEditor = true;
    files.push(file);
  }
  const more = raw.more;
  return Number.isInteger(more) && (more as number) > 0 ? { turn: raw.turn as number, files, more: more as number } : { turn: raw.turn as number, files };
}

/** The params of an `ollie/stateChanged` notification, or undefined when malformed. */
export function parseStateChanged(raw: unknown): StateChanged | undefined {
  if (!isObject(raw)) return undefined;
  const { session, state, running } = raw;
  if (typeof session !== "string" || typeof state !== "string") return undefined;
  const parsed: StateChanged = { session, state, running: running === true, contextSize: raw.contextSize, usage: raw.usage, cost: raw.cost };
  if (typeof raw.title === "string") parsed.title = raw.title;
  const plan = parsePlan(raw.plan);
  if (plan) parsed.plan = plan;
  return parsed;
}

/** The id of a session-list entry (the daemon may call it `session` or `id`). */
export function sessionIdOf(info: SessionInfo): string | undefined {
  if (typeof info.session === "string") return info.session;
  if (typeof info.id === "string") return info.id;
  return undefined;
}

function text(value: unknown): string {
  return typeof value === "string" ? value : "";
}

/** The commands of an `ollie/listCommands` result; malformed entries are dropped. */
export function parseCommandList(raw: unknown): SlashCommand[] {
  const commands = isObject(raw) && Array.isArray(raw.commands) ? raw.commands : [];
  return commands
    .filter((c): c is Record<string, unknown> => isObject(c) && typeof c.name === "string" && c.name.startsWith("/"))
    .map((c) => ({ name: c.name as string, args: text(c.args), description: text(c.description), destructive: c.destructive === true }));
}

/** The models of an `ollie/listModels` result and the one in use. */
export function parseModelList(raw: unknown): Choices {
  const models = isObject(raw) && Array.isArray(raw.models) ? raw.models : [];
  const current = isObject(raw) && typeof raw.current === "string" ? raw.current : undefined;
  return { current, choices: models.filter((m): m is string => typeof m === "string").map((name) => ({ name, description: "" })) };
}

/** The model/agent pick's placeholder; an empty list (the backend is down) must not read as "nothing to pick". */
export function choicePlaceholder(current: string | undefined, count: number): string {
  const how = count ? "pick or type a name" : "none listed (is the backend up?): type a name";
  return current ? `current: ${current} — ${how}` : how;
}

/** The agents of an `ollie/listAgents` result, each with its description (or why it cannot load). */
export function parseAgentList(raw: unknown): Choices {
  const agents = isObject(raw) && Array.isArray(raw.agents) ? raw.agents : [];
  const current = isObject(raw) && typeof raw.current === "string" ? raw.current : undefined;
  const choices = agents
    .filter((a): a is Record<string, unknown> => isObject(a) && typeof a.name === "string")
    .map((a) => ({ name: a.name as string, description: text(a.error) ? `cannot load: ${text(a.error)}` : text(a.description) }));
  return { current, choices };
}

// vscode-jsonrpc's codes for a request that never got its answer because the connection went away (write or read
// error, pending response rejected on dispose, connection inactive).
const CONNECTION_LOST = new Set([-32099, -32098, -32097, -32096]);

/** The `uris` of an `ollie/saveDocuments` request; undefined when they are not a list of strings. */
export function parseSaveDocumentsParams(raw: unknown): string[] | undefined {
  const uris = (raw as { uris?: unknown } | null)?.uris;
  return Array.isArray(uris) && uris.every((u) => typeof u === "string") ? uris : undefined;
}

/** Whether a failed request failed because the daemon went away (it exited or was killed), not by its answer. */
export function isDaemonGone(err: unknown): boolean {
  return typeof err === "object" && err !== null && CONNECTION_LOST.has((err as { code?: unknown }).code as number);
}

/** What the chat says about a turn whose daemon went away (the client's own text is jargon). */
export const DAEMON_LOST =
  "The Ollie daemon stopped during this turn, so the turn was lost. It restarts by itself: send the prompt again (the Ollie output says why it stopped).";

/** What the chat a crashed daemon's restart brought back says. */
export const DAEMON_RESTARTED =
  "The Ollie daemon stopped unexpectedly and was restarted (the Ollie output says why). A turn that was running was lost: send its prompt again.";

/** What it says when the running turn's answer was saved before the daemon stopped (nothing to send again). */
export const DAEMON_RESTARTED_SAVED =
  "The Ollie daemon stopped unexpectedly and was restarted (the Ollie output says why). The running turn's answer was saved: it is above.";
