// A prompt as the daemon saves and announces it: the editor-context blocks before the text the user typed.

// The daemon prefixes a prompt's editor context as `<editor-context>\nFile: a.py (python)\n...</editor-context>`, one
// block per context item; injects it joined have each one's blocks before its own line.
const EDITOR_CONTEXT = /(?<=^|\n)\s*<editor-context>\n([\s\S]*?)\n<\/editor-context>\n*/g;

// The engine tells the model of the user's undos after the next prompt (ollie.agent.review); not the user's words.
const UNDO_NOTE = /\n\nthe user undid these changes of yours \(turn \d+\): [^\n]*/g;

// A block's label as the daemon words it (ollie_lsp/editor.py `context_labels`), for a daemon that sends none.
function blockLabel(body: string): string {
  const header = body.split("```", 1)[0];
  const resource = /^MCP resource: (\S+) \(server ([^)\n]+)\)$/m.exec(header);
  if (resource) return `${resource[2]}: ${resource[1]}`;
  const path = /^File:\s*(.+?)(?:\s+\([^)\n]*\))?$/m.exec(header)?.[1] ?? "editor context";
  // `Showing lines 3-5:` (a range), `Location: lines 3-5` (where a selection is).
  const lines = /^(?:Showing|Location:) lines? (\d+)(?:-(\d+))?:?$/m.exec(header);
  if (lines) return !lines[2] || lines[1] === lines[2] ? `${path}:${lines[1]}` : `${path}:${lines[1]}-${lines[2]}`;
  return /^Selected text:$/m.test(header) ? `${path} (selection)` : path;
}

/** A saved user message split into the prompt the user typed and one label per editor-context block in it. */
export function splitEditorContext(saved: string): { prompt: string; contextLabels?: string[] } {
  const contextLabels: string[] = [];
  const prompt = saved.replace(UNDO_NOTE, "").replace(EDITOR_CONTEXT, (_block, body: string) => {
    contextLabels.push(blockLabel(body));
    return "";
  });
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
