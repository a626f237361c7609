// What a key press in the chat input does.

export interface KeyPress {
  key: string;
  shiftKey: boolean;
  ctrlKey: boolean;
  metaKey: boolean;
  altKey: boolean;
}

export type ComposerAction = "submit" | "queue" | "inject" | "newline" | "complete" | "nextCompletion" | "previousCompletion" | "closeCompletion" | "stop" | "takeBack" | "none";

/**
 * Enter sends (a new turn when idle, queued when a turn runs), Ctrl/Cmd+Enter injects into the
 * running turn, Shift+Enter is a new line; while completions show, arrows move, Tab/Enter accept, but Enter sends a
 * command `typedWhole` (its completion changed nothing: the command took a second Enter); ArrowUp in an `empty` input
 * takes back the latest queued prompt to edit (as in Claude Code).
 */
export function composerAction(key: KeyPress, state: { running: boolean; completing: boolean; typedWhole?: boolean; empty?: boolean }): ComposerAction {
  if (state.completing && !(key.key === "Enter" && state.typedWhole)) {
    if (key.key === "ArrowDown") return "nextCompletion";
    if (key.key === "ArrowUp") return "previousCompletion";
    if (key.key === "Escape") return "closeCompletion";
    if (key.key === "Tab" || (key.key === "Enter" && !key.shiftKey)) return "complete";
  }
  // As in Claude Code: Escape in the prompt box stops the running turn (a completion list open takes it first).
  if (key.key === "Escape") return state.running ? "stop" : "none";
  if (key.key === "ArrowUp" && state.empty && !key.shiftKey) return "takeBack";
  if (key.key !== "Enter") return "none";
  if (key.shiftKey) return "newline";
  if (key.ctrlKey || key.metaKey || key.altKey) return state.running ? "inject" : "submit";
  return state.running ? "queue" : "submit";
}

/** A context chip offered for the word being typed: `@…` a file, `#sel…` the editor's selection. */
export interface ContextTrigger {
  kind: "file" | "selection";
  /** Where the typed word starts and ends in the input (it is removed when the chip is added). */
  start: number;
  end: number;
}

/** The chip the word before the caret asks for: `@` (then any letters) for a file, `#` + a prefix of `selection`. */
export function contextTrigger(input: string, caret: number): ContextTrigger | undefined {
  const before = input.slice(0, caret);
  const match = /(^|\s)([@#])([\w.-]*)$/.exec(before);
  if (!match) return undefined;
  const start = caret - match[2].length - match[3].length;
  if (match[2] === "@") return { kind: "file", start, end: caret };
  return "selection".startsWith(match[3].toLowerCase()) ? { kind: "selection", start, end: caret } : undefined;
}
