// A prompt as the daemon saves and announces it: the editor-context blocks before the text the user typed.

// The daemon prefixes a prompt's editor context as `<editor-context>\nFile: a.py (python)\n...</editor-context>`, one
// block per context item; injects it joined have each one's blocks before its own line. The engine's rules
// (core/ollie/agent/editorcontext.py `_BLOCK`), linear in a hostile prompt: a few whitespace characters before a
// block, looked for only before the last close (`splitEditorContext`).
const EDITOR_CONTEXT = /^\s{0,16}<editor-context>\n?([\s\S]*?)<\/editor-context>\n*/gm;
const CLOSE = "</editor-context>";

// The engine tells the model of the user's undos after the next prompt (ollie.agent.review); not the user's words.
const UNDO_NOTE = /\n\nthe user undid these changes of yours \(turn \d+\): [^\n]*/g;

// A block's label as the daemon words it (ollie_lsp/editor.py `context_labels`), for a daemon that sends none.
function blockLabel(body: string): string {
  const header = body.split("```", 1)[0];
  const resource = /^MCP resource: (\S+) \(server ([^)\n]+)\)$/m.exec(header);
  if (resource) return `${resource[2]}: ${resource[1]}`;
  // No parens in the language: a header full of ` (` is then read once, not from each one to the line's end.
  const path = /^File: (.+?)(?: \([^()\n]*\))?$/m.exec(header)?.[1] ?? "editor context";
  // `Showing lines 3-5:` (a range), `Location: lines 3-5` (where a selection is).
  const lines = /^(?:Showing|Location:) lines? (\d+)(?:-(\d+))?:?$/m.exec(header);
  if (lines) return !lines[2] || lines[1] === lines[2] ? `${path}:${lines[1]}` : `${path}:${lines[1]}-${lines[2]}`;
  return header.includes("\nSelected text:") ? `${path} (selection)` : path;
}

/** A saved user message split into the prompt the user typed and one label per editor-context block in it. */
export function splitEditorContext(saved: string): { prompt: string; contextLabels?: string[] } {
  const contextLabels: string[] = [];
  const text = saved.replace(UNDO_NOTE, "");
  // Blocks end before the last close (and the line breaks after it): an open after it is closed by none, and each
  // such open would be scanned to the end.
  const last = text.lastIndexOf(CLOSE);
  let cut = last < 0 ? 0 : last + CLOSE.length;
  while (text[cut] === "\n") cut++;
  const prompt = text.slice(0, cut).replace(EDITOR_CONTEXT, (_block, body: string) => {
    contextLabels.push(blockLabel(body));
    return "";
  }) + text.slice(cut);
  return contextLabels.length > 0 ? { prompt, contextLabels } : { prompt };
}

/** What the user typed of a prompt the daemon announces or queues: its editor-context blocks left out. */
export const typedText = (prompt: string): string => splitEditorContext(prompt).prompt;

/** `image: png, 12 KB` for each image the daemon lists on a saved prompt (or a queued one's `user` event). */
export function imageLabels(value: unknown): string[] {
  if (!Array.isArray(value)) return [];
  return value.map((image: { mime?: unknown; bytes?: unknown }) => {
    const kind = typeof image?.mime === "string" ? image.mime.replace(/^image\//, "") : "image";
    const size = typeof image?.bytes === "number" ? `, ${Math.max(1, Math.round(image.bytes / 1024))} KB` : "";
    return `image: ${kind}${size}`;
  });
}
