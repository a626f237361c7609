// Text for a VS Code notification. VS Code makes `[label](command:id?args)` (and `https:`, `file:`) in a
// notification's message a link it opens with commands allowed: a model's answer, a step's title or the name of a file
// a step made would run any command, with its arguments, at the user's click.

/** `text` with each `](` broken by a zero-width space: shown as written, no part of it a link. */
export function unlinked(text: string): string {
  return text.replace(/\]\(/g, "]\u200b(");
}
