// Messages between the chat webview and the extension host; everything from the webview is validated.

import type { Onboarding } from "./backend";
import type { ChatItem } from "./chatModel";
import type { PlanStep, SlashCommand } from "./protocol";
import { shownPath } from "./steps";

/** The longest prompt accepted from the webview (characters). */
export const MAX_PROMPT_LENGTH = 1_000_000;
/** The longest code block the webview may ask to copy, insert or apply (characters). */
export const MAX_CODE_LENGTH = 5_000_000;

export const APPROVAL_MODES = ["ask", "auto-edit", "auto", "read-only"] as const;
export type ApprovalMode = (typeof APPROVAL_MODES)[number];

/** The answers to a question (`allow_session`: a network question's alone; the daemon takes any other as a rejection). */
export const PERMISSION_OUTCOMES = ["allow_once", "allow_session", "allow_always", "reject", "reject_with_feedback"] as const;
export type PermissionOutcome = (typeof PERMISSION_OUTCOMES)[number];

/** A context chip on the input (`@file`, `#selection`): the host keeps what it stands for. */
export interface Chip {
  id: string;
  kind: "file" | "selection" | "image" | "resource";
  label: string;
}

/** An image pasted or dropped on the input: its name and its bytes as a `data:image/...;base64,` URL. */
export interface PromptImage {
  name: string;
  data: string;
}

/** An image for the daemon: pasted bytes, or a workspace file it reads itself (`path`). */
export type ImageSource = PromptImage | { name: string; path: string };

/** Whether a file name is an image's (by its suffix: the daemon checks what the bytes are). */
export function isImageName(name: string): boolean {
  return /\.(png|jpe?g|gif|webp)$/i.test(name);
}

/** The most images one prompt carries (the daemon's own limit). */
export const MAX_IMAGES = 8;
/** The longest image data URL accepted from the webview: 5 MiB as base64 and its header (the daemon checks exactly). */
export const MAX_IMAGE_DATA = Math.ceil((5 * 1024 * 1024) / 3) * 4 + 64;

export type FromWebview =
  | { type: "ready" }
  | { type: "submit"; text: string; chips?: string[]; images?: PromptImage[] }
  | { type: "queue"; text: string; chips?: string[]; images?: PromptImage[] }
  | { type: "inject"; text: string; chips?: string[] }
  | { type: "interrupt" }
  | { type: "newSession" }
  | { type: "switchModel" }
  | { type: "checkBackend" }
  | { type: "setApiKey" }
  | { type: "openServerEnv" }
  | { type: "pickFile" }
  | { type: "addSelection" }
  | { type: "loadEarlier" }
  | { type: "runHeld" }
  | { type: "takeBack" }
  | { type: "openFile"; path: string; line?: number }
  | { type: "openDiff"; item: number; path: string }
  | { type: "openChange"; item: number; path: string }
  | { type: "undo"; item: number; path?: string }
  | { type: "code"; action: "copy" | "insert" | "apply"; code: string; file?: string }
  | { type: "permission"; item: number; outcome: PermissionOutcome; feedback?: string }
  | { type: "setApproval"; mode: ApprovalMode }
  | { type: "checkPaths"; paths: string[] }
  | { type: "fork"; turn: number };

/** What the view header shows: the session's title and its approval mode; the composer, its agent and model. */
export interface Header {
  title: string;
  approval: ApprovalMode | "";
  agent: string;
  model: string;
  /** The agent's task plan ([]: none), a checklist above the prompt. */
  plan: PlanStep[];
}

/** The composer's line naming the session's agent and model (Copilot Chat and Claude Code show theirs by the input;
 * here only `/model` said it): the agent left out while it is the default one. */
export function modelLabel(header: Pick<Header, "agent" | "model">): string {
  // The model's id is its server's text (a U+202E reversed the line): drawn escaped.
  return [header.agent && header.agent !== "default" ? header.agent : "", header.model].filter(Boolean).map(shownPath).join(" · ");
}

export type ToWebview =
  | { type: "reset"; session: string; items: ChatItem[]; running: boolean; header: Header; commands: SlashCommand[]; earlier: number; loading: boolean }
  | { type: "items"; items: ChatItem[] }
  | { type: "earlier"; items: ChatItem[]; earlier: number }
  | { type: "status"; running: boolean }
  | { type: "header"; header: Header }
  | { type: "onboarding"; onboarding: Onboarding | null }
  | { type: "chip"; chip: Chip }
  | { type: "unsent"; text: string; chips: Chip[]; images: PromptImage[]; note?: string }
  | { type: "focusInput" }
  // The host has the oldest prompt the page sent and has not heard of since (the page keeps it until then).
  | { type: "taken" }
  | { type: "paths"; existing: string[]; missing: string[] };

const TEXT_TYPES = new Set(["submit", "queue", "inject"]);
/** The most context chips one prompt carries. */
export const MAX_CHIPS = 20;
const BARE_TYPES = new Set(["ready", "interrupt", "newSession", "switchModel", "checkBackend", "setApiKey", "openServerEnv", "pickFile", "addSelection", "loadEarlier", "runHeld", "takeBack"]);
const CODE_ACTIONS = new Set(["copy", "insert", "apply"]);
// A workspace-relative (or absolute) path as the model writes it: any a file may have (one with a newline is drawn
// escaped, `shownPath`, and its link opens the real file: a click on it did nothing), never a NUL.
const PATH = /^[^\0]{1,1024}$/;

function isPath(value: unknown): value is string {
  return typeof value === "string" && PATH.test(value);
}

function isItemId(value: unknown): value is number {
  return typeof value === "number" && Number.isInteger(value) && value > 0;
}

function includes<T extends string>(list: readonly T[], value: unknown): value is T {
  return typeof value === "string" && (list as readonly string[]).includes(value);
}

// The message types with fields beyond `type`, each validated on its own.
const PARSERS: Record<string, (m: Record<string, unknown>) => FromWebview | undefined> = {
  openFile: ({ path, line }) =>
    isPath(path) ? (typeof line === "number" && Number.isInteger(line) && line > 0 ? { type: "openFile", path, line } : { type: "openFile", path }) : undefined,
  openDiff: ({ item, path }) => (isItemId(item) && isPath(path) ? { type: "openDiff", item, path } : undefined),
  openChange: ({ item, path }) => (isItemId(item) && isPath(path) ? { type: "openChange", item, path } : undefined),
  undo: ({ item, path }) => {
    if (!isItemId(item)) return undefined;
    if (path === undefined) return { type: "undo", item };
    return isPath(path) ? { type: "undo", item, path } : undefined;
  },
  code: ({ action, code, file }) => {
    if (typeof action !== "string" || !CODE_ACTIONS.has(action) || typeof code !== "string" || code.length > MAX_CODE_LENGTH) return undefined;
    const message = { type: "code", action, code } as FromWebview & { file?: string };
    if (isPath(file)) message.file = file;
    return message;
  },
  permission: ({ item, outcome, feedback }) => {
    if (!isItemId(item) || !includes(PERMISSION_OUTCOMES, outcome)) return undefined;
    if (typeof feedback === "string" && feedback.length <= MAX_PROMPT_LENGTH) return { type: "permission", item, outcome, feedback };
    return { type: "permission", item, outcome };
  },
  fork: ({ turn }) => (isItemId(turn) ? { type: "fork", turn } : undefined),
  setApproval: ({ mode }) => (includes(APPROVAL_MODES, mode) ? { type: "setApproval", mode } : undefined),
  checkPaths: ({ paths }) =>
    Array.isArray(paths) && paths.length <= 200 && paths.every(isPath) ? { type: "checkPaths", paths: paths as string[] } : undefined,
};

function isImage(value: unknown): value is PromptImage {
  if (typeof value !== "object" || value === null) return false;
  const { name, data } = value as Record<string, unknown>;
  return typeof name === "string" && name.length <= 256 && !/[\0-\x1f]/.test(name) &&
    typeof data === "string" && data.length <= MAX_IMAGE_DATA && /^data:image\/[a-z+.-]+;base64,/.test(data);
}

/** The images of a submit, when every one is well formed (else undefined: the prompt is refused, not sent without). */
function images(raw: unknown): PromptImage[] | undefined {
  if (!Array.isArray(raw) || raw.length > MAX_IMAGES || !raw.every(isImage)) return undefined;
  return raw.map(({ name, data }) => ({ name, data }));
}

/** The message if it is one the webview may send, else undefined; extra fields are dropped. */
export function parseWebviewMessage(raw: unknown): FromWebview | undefined {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) return undefined;
  const message = raw as Record<string, unknown>;
  const { type, text, chips } = message;
  if (typeof type !== "string") return undefined;
  if (BARE_TYPES.has(type)) return { type } as FromWebview;
  if (Object.prototype.hasOwnProperty.call(PARSERS, type)) return PARSERS[type](message);
  if (!TEXT_TYPES.has(type)) return undefined;
  if (typeof text !== "string" || text.trim() === "" || text.length > MAX_PROMPT_LENGTH) return undefined;
  const ids = Array.isArray(chips) && chips.length > 0 && chips.length <= MAX_CHIPS && chips.every((c) => typeof c === "string" && c.length <= 64);
  const parsed = (ids ? { type, text, chips: [...(chips as string[])] } : { type, text }) as FromWebview;
  if (message.images === undefined) return parsed;
  // Images go with a prompt sent now or queued (injected text joins a tool result: no pictures there).
  const pictures = type !== "inject" ? images(message.images) : undefined;
  return pictures ? ({ ...parsed, images: pictures } as FromWebview) : undefined;
}

/** Why a prompt the page sent is not one `parseWebviewMessage` takes, with its text to put back; undefined for a
 * message that is no prompt, or one with no text to give back. */
export function refusedPrompt(raw: unknown): { text: string; why: string } | undefined {
  const { type, text, images: pictures } = (raw ?? {}) as Record<string, unknown>;
  if (typeof type !== "string" || !TEXT_TYPES.has(type) || typeof text !== "string" || parseWebviewMessage(raw)) return undefined;
  if (text.length > MAX_PROMPT_LENGTH) return { text, why: `it is over ${MAX_PROMPT_LENGTH.toLocaleString("en")} characters` };
  if (pictures !== undefined && type === "inject") return { text, why: "images do not go into a running turn (queue the prompt)" };
  if (pictures !== undefined) return { text, why: `an image was refused (at most ${MAX_IMAGES} go, each of at most 5 MiB, its name at most 256 characters)` };
  return { text, why: "it is empty" };
}

/** Messages for a chat page that is not up yet (the chat not opened since the window started, or its page loading):
 * held until it says it is ready, and kept for the next page when this one goes before it was. */
export class Unposted<T> {
  private held: T[] | undefined = [];

  /** Post `message` with `send` now (the page is up), or hold it. */
  post(message: T, send: (message: T) => void): void {
    if (this.held) this.held.push(message);
    else send(message);
  }

  /** The page is up: the messages held for it, to post; later ones go at once. */
  ready(): T[] {
    const held = this.held ?? [];
    this.held = undefined;
    return held;
  }

  /** The page went: the next one is held for; what this one never took waits for it (it was lost with the page). */
  disposed(): void {
    this.held ??= [];
  }
}
