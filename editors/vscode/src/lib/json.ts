// Narrowing what the daemon (or the webview) sent: the checks every parser of a wire shape starts with.

/** Whether a value is a JSON object (not null, not an array). */
export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** A string, or null for anything else (an absent side of a diff). */
export function textOrNull(value: unknown): string | null {
  return typeof value === "string" ? value : null;
}
