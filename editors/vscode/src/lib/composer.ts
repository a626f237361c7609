// What a key press in the chat input does.

export interface KeyPress {
  key: string;
  shiftKey: boolean;
  ctrlKey: boolean;
  metaKey: boolean;
  altKey: boolean;
}

export type ComposerAction = "submit" | "queue" | "inject" | "newline" | "complete" | "nextCompletion" | "previousCompletion" | "closeCompletion" | "none";

/**
 * Enter sends (a new turn when idle, queued when a turn runs), Ctrl/Cmd+Enter injects into the
 * running turn, Shift+Enter is a new line; while completions show, arrows move, Tab/Enter accept.
 */
export function composerAction(key: KeyPress, state: { running: boolean; completing: boolean }): ComposerAction {
  if (state.completing) {
    if (key.key === "ArrowDown") return "nextCompletion";
    if (key.key === "ArrowUp") return "previousCompletion";
    if (key.key === "Escape") return "closeCompletion";
    if (key.key === "Tab" || (key.key === "Enter" && !key.shiftKey)) return "complete";
  }
  if (key.key !== "Enter") return "none";
  if (key.shiftKey) return "newline";
  if (key.ctrlKey || key.metaKey || key.altKey) return state.running ? "inject" : "submit";
  return state.running ? "queue" : "submit";
}
