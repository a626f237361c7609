// Errors as the chat and the log show them.

/** What went wrong, as text: an Error's message, anything else thrown as a string. */
export function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
