// Messages between the chat webview and the extension host; everything from the webview is validated.

import type { ChatItem } from "./chatModel";
import type { SlashCommand } from "./protocol";

/** The longest prompt accepted from the webview (characters). */
export const MAX_PROMPT_LENGTH = 1_000_000;

export type FromWebview =
  | { type: "ready" }
  | { type: "submit"; text: string }
  | { type: "queue"; text: string }
  | { type: "inject"; text: string }
  | { type: "interrupt" }
  | { type: "newSession" };

export type ToWebview =
  | { type: "reset"; items: ChatItem[]; running: boolean; title: string; commands: SlashCommand[] }
  | { type: "items"; items: ChatItem[] }
  | { type: "status"; running: boolean; state: string; cost: string };

const TEXT_TYPES = new Set(["submit", "queue", "inject"]);
const BARE_TYPES = new Set(["ready", "interrupt", "newSession"]);

/** The message if it is one the webview may send, else undefined; extra fields are dropped. */
export function parseWebviewMessage(raw: unknown): FromWebview | undefined {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) return undefined;
  const { type, text } = raw as Record<string, unknown>;
  if (typeof type !== "string") return undefined;
  if (BARE_TYPES.has(type)) return { type } as FromWebview;
  if (!TEXT_TYPES.has(type)) return undefined;
  if (typeof text !== "string" || text.trim() === "" || text.length > MAX_PROMPT_LENGTH) return undefined;
  return { type, text } as FromWebview;
}
