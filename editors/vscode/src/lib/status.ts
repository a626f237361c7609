// Human text for the daemon's state and cost (status bar, chat view header).

import { shownLabel } from "./steps";

/** `idle`, `thinking`, `calling tool: X` from the protocol's `state` string. */
export function describeState(state: string): string {
  const calling = /^calling:\s*(.*)$/.exec(state);
  // The tool's name is the model's: a `$(question) Ollie: waiting for your answer` in it is text, not the status bar's.
  if (calling) return calling[1] ? `calling tool: ${shownLabel(calling[1])}` : "calling tool";
  return shownLabel(state) || "idle";
}

/** A cost value from `ollie/stateChanged` as dollars; numbers, numeric strings and `{total}` objects. */
export function formatCost(cost: unknown): string {
  if (cost === undefined || cost === null) return "";
  if (typeof cost === "object") {
    const total = (cost as Record<string, unknown>).total ?? (cost as Record<string, unknown>).session;
    return total === undefined ? "" : formatCost(total);
  }
  const value = typeof cost === "number" ? cost : Number(String(cost).replace(/^\$/, ""));
  if (!Number.isFinite(value)) return String(cost);
  return `$${value < 0.01 && value > 0 ? value.toFixed(4) : value.toFixed(2)}`;
}

/** The status bar text: codicon, state, and the cost when there is one; `asking`: an approval question waits for the
 * user (the turn's state said "thinking" meanwhile, its spinner turning). */
export function statusBarText(state: string, cost: unknown, connected: boolean, starting = false, asking = false): string {
  if (!connected) return starting ? "$(sync~spin) Ollie: starting" : "$(circle-slash) Ollie: stopped";
  const price = formatCost(cost);
  if (asking) return `$(question) Ollie: waiting for your answer${price ? ` · ${price}` : ""}`;
  const icon = state === "idle" || state === "" ? "$(comment-discussion)" : "$(sync~spin)";
  return `${icon} Ollie: ${describeState(state)}${price ? ` · ${price}` : ""}`;
}

/** The status bar item's hover, from its text: what it says, the cost named, and what a click does. */
export function statusBarTooltip(text: string): string {
  return `${text.replace(/^\$\([^)]*\) /, "").replace(" · ", ", session cost ")}. Click to open the chat.`;
}
