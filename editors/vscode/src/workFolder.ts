// Where a session works: the workspace folder of the file the prompt is about (multi-root), else the first
// folder, else the home folder (a window with no folder open).

import * as os from "node:os";
import * as path from "node:path";
import * as vscode from "vscode";
import { within } from "./lib/workspacePath";

/** The paths of the workspace folders on disk, in the window's order. */
export function folderPaths(): string[] {
  return (vscode.workspace.workspaceFolders ?? []).filter((f) => f.uri.scheme === "file").map((f) => f.uri.fsPath);
}

/** Where the daemon and its first session start: the first workspace folder, else home (never the editor's own cwd). */
export function startFolder(): string {
  return folderPaths()[0] ?? os.homedir();
}

/** The workspace folder on disk that holds `uri` (a file URI string or Uri); undefined for none. */
export function folderOf(uri: string | vscode.Uri | undefined): string | undefined {
  if (uri === undefined) return undefined;
  let parsed: vscode.Uri;
  try {
    parsed = typeof uri === "string" ? vscode.Uri.parse(uri, true) : uri;
  } catch {
    return undefined;
  }
  const folder = parsed.scheme === "file" ? vscode.workspace.getWorkspaceFolder(parsed) : undefined;
  return folder?.uri.fsPath;
}

/** What the empty chat says about where Ollie works when that is not obvious (no folder open); undefined otherwise. */
export function workspaceNote(): string | undefined {
  if (folderPaths().length > 0 || (vscode.workspace.workspaceFolders?.length ?? 0) > 0) return undefined;
  return `No folder is open: Ollie works in your home folder (${os.homedir()}), which it may read but not change. Open a folder to work on a project.`;
}

/** What a prompt about `contextUris` needs in a multi-root window, for a session working in `cwd`. */
export type Placement = { move: string } | { outside: { file: string; folder: string } } | undefined;

/**
 * Multi-root: a session's first prompt (`fresh`) moves it to the folder of the file the prompt is about (else of the
 * active file); a later prompt about a file of another folder is `outside` (the session's tools cannot change it).
 */
export function placement(contextUris: readonly string[], cwd: string, fresh: boolean): Placement {
  if (folderPaths().length < 2) return undefined;
  const about = contextUris.find((uri) => folderOf(uri) !== undefined);
  const uri = about ?? (fresh ? vscode.window.activeTextEditor?.document.uri.toString() : undefined);
  const folder = folderOf(uri);
  if (uri === undefined || folder === undefined) return undefined;
  const file = vscode.Uri.parse(uri, true).fsPath;
  if (within(file, cwd)) return undefined;
  return fresh ? { move: folder } : { outside: { file: path.relative(path.dirname(folder), file), folder } };
}
