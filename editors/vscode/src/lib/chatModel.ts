// The conversation as the chat view shows it, built from `ollie/event` notifications.

import type { OllieEvent } from "./protocol";

export type NoticeLevel = "info" | "error" | "exec" | "retry";

export type ChatItem =
  | { kind: "user"; id: number; text: string; note?: "queued" | "injected"; contextLabel?: string }
  | { kind: "assistant"; id: number; text: string }
  | { kind: "reasoning"; id: number; text: string }
  | { kind: "tool"; id: number; name: string; args: string; result?: string; isError: boolean }
  | { kind: "notice"; id: number; level: NoticeLevel; text: string }
  | { kind: "turnEnd"; id: number; stop: string };

const NOTICE_ROLES: Record<string, NoticeLevel> = { info: "info", error: "error", exec: "exec", limitretry: "retry" };

// The engine reports tool failures as text: a leading `error: ...`, or a section header like
// `[call 2 file_read] exit 1` / `error: ...` / `timed out ...` / `killed by signal 9`.
const FAILURE = String.raw`(error\b|exit (code |status )?[1-9]\d*\b|timed out\b|killed by signal\b|traceback\b|permission denied\b)`;
const FIRST_LINE_ERROR = new RegExp(String.raw`^\s*` + FAILURE, "i");
const SECTION_ERROR = new RegExp(String.raw`^\[[^\]\n]*\]\s*` + FAILURE, "im");

/** Whether a tool result's text reports a failure. */
export function isToolError(content: string): boolean {
  return FIRST_LINE_ERROR.test(content) || SECTION_ERROR.test(content);
}

function isSideNote(item: ChatItem): boolean {
  return item.kind === "user" && item.note !== undefined;
}

/** The conversation of one session: a list of items and the reducer that folds events into it. */
export class ChatModel {
  readonly items: ChatItem[] = [];
  running = false;
  lastSeq = 0;
  /** How many events were skipped in `seq` (a client that missed notifications can say so). */
  missed = 0;
  private nextId = 1;

  /** Fold one event into the conversation; returns the items it added or changed. */
  apply(event: OllieEvent): ChatItem[] {
    if (event.seq <= this.lastSeq) return [];
    if (this.lastSeq > 0 && event.seq > this.lastSeq + 1) this.missed += event.seq - this.lastSeq - 1;
    this.lastSeq = event.seq;
    switch (event.role) {
      case "assistant":
      case "reasoning":
        return [this.appendText(event.role, event.content)];
      case "call":
        return [this.push({ kind: "tool", id: 0, name: event.name ?? "", args: event.content, isError: false })];
      case "tool":
        return [this.toolResult(event.name ?? "", event.content)];
      case "turn":
        return this.turnEdge(event.content);
      default: {
        const level = NOTICE_ROLES[event.role];
        if (!level || event.content === "") return [];
        return [this.push({ kind: "notice", id: 0, level, text: event.content })];
      }
    }
  }

  /** Record a prompt the user sent (the daemon does not echo prompts as events). */
  addUser(text: string, options: { note?: "queued" | "injected"; contextLabel?: string } = {}): ChatItem {
    return this.push({ kind: "user", id: 0, text, ...options });
  }

  /** Record a message from the extension itself (a command's output, a failed request). */
  addNotice(level: NoticeLevel, text: string): ChatItem {
    return this.push({ kind: "notice", id: 0, level, text });
  }

  private push<T extends ChatItem>(item: T): T {
    item.id = this.nextId++;
    this.items.push(item);
    return item;
  }

  private appendText(kind: "assistant" | "reasoning", delta: string): ChatItem {
    // Prompts queued or injected while the reply streams do not split it in two.
    let index = this.items.length - 1;
    while (index >= 0 && isSideNote(this.items[index])) index--;
    const target = this.items[index];
    if (target && target.kind === kind) {
      target.text += delta;
      return target;
    }
    return this.push({ kind, id: 0, text: delta });
  }

  private toolResult(name: string, content: string): ChatItem {
    for (let i = this.items.length - 1; i >= 0; i--) {
      const item = this.items[i];
      if (item.kind === "tool" && item.result === undefined && (item.name === name || name === "")) {
        item.result = content;
        item.isError = isToolError(content);
        return item;
      }
    }
    return this.push({ kind: "tool", id: 0, name, args: "", result: content, isError: isToolError(content) });
  }

  private turnEdge(content: string): ChatItem[] {
    if (content === "start") {
      this.running = true;
      return [];
    }
    this.running = false;
    return [this.push({ kind: "turnEnd", id: 0, stop: content })];
  }
}
