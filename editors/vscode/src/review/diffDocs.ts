// Read-only virtual documents (`ollie-diff:` scheme) for VS Code's diff editor, and `ollie.openDiff`.

import * as vscode from "vscode";
import { shownPath } from "../lib/steps";

export const DIFF_SCHEME = "ollie-diff";

/** Holds the text of every `ollie-diff:` document; setting a text again refreshes open editors. */
export class DiffDocuments implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly texts = new Map<string, string>();
  private readonly changeEmitter = new vscode.EventEmitter<vscode.Uri>();
  private next = 0;
  readonly onDidChange = this.changeEmitter.event;

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.texts.get(uri.toString()) ?? "";
  }

  /** A new document URI for `path` (its extension picks the language; shown escaped, as in its tab); `tag` names the side. */
  uriFor(path: string, tag: string): vscode.Uri {
    const clean = shownPath(path.replace(/\\/g, "/").replace(/^\/+/, ""));
    return vscode.Uri.from({ scheme: DIFF_SCHEME, path: `/${clean}`, query: `${tag}-${++this.next}` });
  }

  /** Set (or replace) a document's text. */
  set(uri: vscode.Uri, text: string): void {
    this.texts.set(uri.toString(), text);
    this.changeEmitter.fire(uri);
  }

  /** Drop a closed document's text. */
  forget(uri: vscode.Uri): void {
    this.texts.delete(uri.toString());
  }

  /** Open VS Code's diff editor on two texts; returns the right side's URI. */
  async open(title: string, path: string, oldText: string, newText: string, tags = ["before", "after"]): Promise<vscode.Uri> {
    const left = this.uriFor(path, tags[0]);
    const right = this.uriFor(path, tags[1]);
    this.set(left, oldText);
    this.set(right, newText);
    await vscode.commands.executeCommand("vscode.diff", left, right, title, { preview: false });
    return right;
  }

  dispose(): void {
    this.changeEmitter.dispose();
    this.texts.clear();
  }
}

/** `ollie.openDiff` args: `{title, path, oldText, newText}` (a null text is an absent side). */
export interface OpenDiffArgs {
  title?: string;
  path: string;
  oldText: string | null;
  newText: string | null;
}

function parseOpenDiff(raw: unknown): OpenDiffArgs {
  const args = (typeof raw === "object" && raw !== null ? raw : {}) as Record<string, unknown>;
  if (typeof args.path !== "string") throw new Error("ollie.openDiff: path must be a string");
  const side = (value: unknown): string | null => (typeof value === "string" ? value : null);
  return { title: typeof args.title === "string" ? args.title : undefined, path: args.path, oldText: side(args.oldText), newText: side(args.newText) };
}

/** `ollie.openDiff {title, path, oldText, newText}`: VS Code's diff editor on two read-only texts. */
export async function openDiff(docs: DiffDocuments, raw: unknown): Promise<void> {
  const { title, path, oldText, newText } = parseOpenDiff(raw);
  await docs.open(title ?? `${shownPath(path)} (before ↔ after)`, path, oldText ?? "", newText ?? "");
}

/** Register the `ollie-diff:` provider (and forget the text of closed documents). */
export function registerDiffDocuments(docs: DiffDocuments): vscode.Disposable[] {
  return [
    vscode.workspace.registerTextDocumentContentProvider(DIFF_SCHEME, docs),
    vscode.workspace.onDidCloseTextDocument((doc) => {
      if (doc.uri.scheme === DIFF_SCHEME) docs.forget(doc.uri);
    }),
  ];
}
