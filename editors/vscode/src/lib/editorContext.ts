// The `context` object sent with a prompt about what the user is looking at.

import type { EditorContext } from "./protocol";
import type { ImageSource } from "./webviewMessages";
import { shownPath } from "./steps";

export interface Position {
  line: number;
  character: number;
}

export interface EditorSnapshot {
  uri: string;
  languageId?: string;
  selectionStart: Position;
  selectionEnd: Position;
  selectedText: string;
}

/** Build `ollie/submit`'s `context` from the active editor; an empty selection sends just the file. */
export function buildEditorContext(editor: EditorSnapshot): EditorContext {
  const context: EditorContext = { uri: editor.uri };
  if (editor.languageId) context.languageId = editor.languageId;
  const empty =
    editor.selectionStart.line === editor.selectionEnd.line &&
    editor.selectionStart.character === editor.selectionEnd.character;
  if (!empty && editor.selectedText !== "") {
    context.range = {
      start: { line: editor.selectionStart.line, character: editor.selectionStart.character },
      end: { line: editor.selectionEnd.line, character: editor.selectionEnd.character },
    };
    context.selection = editor.selectedText;
  }
  return context;
}

/** `context` for a request: none, the one object (every daemon takes it), or the list (several items, PROTOCOL.md). */
export function contextParam(contexts: readonly EditorContext[]): EditorContext | EditorContext[] | undefined {
  if (contexts.length === 0) return undefined;
  return contexts.length === 1 ? contexts[0] : [...contexts];
}

/** A short human label for a context, e.g. `main.py:3-7` (1-based lines); its names escaped (`shownPath`): a file's
 * is the workspace's, a resource's its server's. */
export function describeEditorContext(context: EditorContext): string {
  if (context.mcpServer) return shownPath(`${context.mcpServer}: ${context.uri}`);
  const file = shownPath(labelPath(context.uri));
  if (!context.range) return file;
  const first = context.range.start.line + 1;
  // A selection that ends at column 0 does not include that last line.
  const endLine = context.range.end.character === 0 && context.range.end.line > context.range.start.line
    ? context.range.end.line
    : context.range.end.line + 1;
  const last = context.selection === undefined ? endLine : Math.min(endLine, first + keptLineEnds(context.selection));
  return first === last ? `${file}:${first}` : `${file}:${first}-${last}`;
}

// How a label names a file: its workspace-relative path once the extension says how (`labelPathsBy`), as the daemon's
// saved prompts and Neovim name it (the name alone is ambiguous: every Python package has an `__init__.py`).
let labelPath = (uri: string): string => decodeURIComponent(uri.replace(/^.*\//, ""));

/** Name the files of context labels by `path` (the extension's activation: the workspace-relative path). */
export function labelPathsBy(path: (uri: string) => string): void {
  labelPath = path;
}

/** The daemon sends at most this many characters (code points) of a selection, cut at a line's end. */
const MAX_CONTEXT_CHARS = 20_000;

/** How many line ends of `text` the daemon keeps: all, or those within its first MAX_CONTEXT_CHARS when it is cut
 * (so a 200,000-line selection's label says the lines the model got, as the daemon's `Location:` does). */
function keptLineEnds(text: string): number {
  let chars = 0;
  let ends = 0;
  for (const ch of text) { // (code points, as the daemon counts; stops at the cap, never walks 20 MB)
    if (chars === MAX_CONTEXT_CHARS) return Math.max(ends - 1, 0); // (the line the cut runs into is left out)
    chars += 1;
    if (ch === "\n") ends += 1;
  }
  return text.endsWith("\n") ? ends - 1 : ends;
}

/** The `images` of an `ollie/submit` or `ollie/queue` (none: no field). */
export function imagesParam(images: readonly ImageSource[]): { images?: object[] } {
  return images.length > 0 ? { images: images.map((i) => ("path" in i ? { path: i.path } : { data: i.data, name: i.name })) } : {};
}

/** A prompt's chat labels: its context items', then its images'. */
export function promptLabels(contexts: readonly EditorContext[], images: readonly ImageSource[] = []): string[] {
  return [...contexts.map(describeEditorContext), ...images.map((i) => `image: ${shownPath(i.name)}`)];
}
